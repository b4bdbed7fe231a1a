"""The raw root: which documents exist, under which source keys, and whether they changed.

A source key is the document's path relative to the raw root in POSIX form. It is the Dagster
partition key, so keys Dagster cannot hold (control characters, ``...``, a name that is not
valid UTF-8) are refused with a message naming the file; nothing is silently renamed. Hidden
files (a component starting with ``.``) are editor and OS droppings, not documents, and are
skipped without a word.

The scan never aborts on one bad entry and never blocks. Each entry ends up in one of three
lists of a ``ScanResult``:

- ``files``: regular files that are documents (their first ``HEAD_BYTES`` are read, without
  blocking, to detect the media type by content);
- ``skipped``: deliberately not documents, with the reason: excluded by the ``documents:``
  settings, no parser reads them, not a regular file (a FIFO, socket or device is never
  opened for reading), or gone between listing and reading;
- ``refused``: entries the user must fix, with the reason: a name that cannot be a source key,
  a symlink that loops, dangles or leads outside the raw root, a file or folder that cannot be
  read. Outputs already stored for a refused entry are kept (``ScanResult.is_unknown``): an
  unreadable folder is not a deleted one.

Symlink rule: a symlink is followed only when its target resolves inside the raw root (the
document is read through it, under the link's own key); any other symlink is refused naming
the link and its target. A symlink to a folder that contains the link (a loop) is refused.
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agrag_pipeline.settings import DocumentsSettings

#: Substrings Dagster refuses in partition keys (besides control characters).
_FORBIDDEN_SUBSTRINGS = ("...",)
#: Dagster's partition key length limit is generous, but a path this long is a mistake.
MAX_SOURCE_KEY_LENGTH = 1024
#: How much of each regular file the scan reads to detect its media type.
HEAD_BYTES = 8192
#: Opening flags for reading a document: never block (a FIFO swapped in after the stat) and
#: never become the controlling terminal.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class SourceKeyError(ValueError):
    """A file whose path cannot be a source key."""


@dataclass(frozen=True)
class SourceFile:
    """A file under the raw root and the cheap facts used to notice it changed."""

    source_key: str
    path: Path
    size: int
    mtime_ns: int
    #: Detected from the file's first bytes (None when the scan did not detect).
    media_type: str | None = None


@dataclass(frozen=True)
class ScanProblem:
    """A raw-root entry that is not a document, and why (``name`` is printable as-is)."""

    name: str
    reason: str
    #: The source key, when the entry's path can be one (for keeping or deleting outputs).
    source_key: str | None = None

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass
class ScanResult:
    """The documents under the raw root (sorted by key) and every entry that is not one."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[ScanProblem] = field(default_factory=list)
    refused: list[ScanProblem] = field(default_factory=list)
    #: Folders (source-key prefixes ending in ``/``) that could not be listed.
    unreadable_folders: list[str] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return [f.source_key for f in self.files]

    def is_unknown(self, source_key: str) -> bool:
        """True when the scan could not tell whether ``source_key`` still exists."""
        if any(p.source_key == source_key for p in self.refused):
            return True
        return any(source_key.startswith(prefix) for prefix in self.unreadable_folders)

    def absent(self, known_keys: set[str] | list[str]) -> list[str]:
        """Of ``known_keys``, those that are no longer documents (deleted, renamed, excluded)."""
        present = set(self.keys)
        return sorted(k for k in known_keys if k not in present and not self.is_unknown(k))


def validate_source_key(source_key: str) -> str:
    """Return ``source_key`` if Dagster can hold it as a partition key, else raise."""
    problem = source_key_problem(source_key)
    if problem:
        raise SourceKeyError(f"{display_name(source_key)!r}: {problem}")
    return source_key


def source_key_problem(source_key: str) -> str | None:
    if not source_key:
        return "an empty path cannot be a source key"
    if len(source_key) > MAX_SOURCE_KEY_LENGTH:
        return f"the path is longer than {MAX_SOURCE_KEY_LENGTH} characters"
    if _has_surrogates(source_key):
        return (
            "the file name is not valid UTF-8, which a source key (a Dagster partition key) "
            "must be; rename the file"
        )
    if any(unicodedata.category(ch) == "Cc" for ch in source_key):
        return "the path contains a control character, which a Dagster partition key cannot hold"
    for bad in _FORBIDDEN_SUBSTRINGS:
        if bad in source_key:
            return f"the path contains {bad!r}, which a Dagster partition key cannot hold"
    if source_key.startswith("/") or "\\" in source_key:
        return "a source key is a relative POSIX path"
    if any(part in ("", ".", "..") for part in source_key.split("/")):
        return "a source key has no empty, '.' or '..' components"
    return None


def display_name(name: str) -> str:
    """``name`` as printable text: bytes that are not UTF-8 as ``\\xff``, controls escaped."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(
        ch if unicodedata.category(ch) != "Cc" else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def source_key_for(raw_root: Path, path: Path) -> str:
    return path.relative_to(raw_root).as_posix()


def resolve_in_root(raw_root: Path, source_key: str) -> Path:
    """The file of ``source_key`` under ``raw_root``; raises ``SourceKeyError`` when the key is
    not a source key or the path (symlinks followed) leads outside the raw root."""
    validate_source_key(source_key)
    path = raw_root / source_key
    real_root = os.path.realpath(raw_root)
    real = os.path.realpath(path)
    if not _inside(real, real_root):
        raise SourceKeyError(
            f"{source_key!r}: resolves to {real}, outside the raw root {real_root} "
            "(only symlinks within the raw root are followed)"
        )
    return path


def scan_raw_root(
    raw_root: Path,
    documents: DocumentsSettings | None = None,
    *,
    detect: Callable[[str, bytes], tuple[str | None, str | None]] | None = None,
    known: Mapping[str, tuple[int, int]] | None = None,
) -> ScanResult:
    """Every document under ``raw_root`` (sorted by key), and each entry that is not one.

    ``documents`` (the settings' include/exclude globs) decides which keys count; ``detect``
    maps (key, first bytes) to (media type, reason when None); the default is
    ``parsing.detect``. ``known`` (key -> size, mtime_ns of a document the last scan found):
    a regular file whose stat still says the same is listed without being opened again
    (``media_type`` None), so a quiet scan of a large root reads no file. A raw root on object
    storage (``s3://…``) is scanned by listing (``storage.raw_remote``).
    """
    from agrag_pipeline.storage.raw_remote import object_root_uri, scan_object_root

    remote = object_root_uri(raw_root)
    if remote is not None:
        return scan_object_root(remote, documents, detect=detect)
    if not raw_root.is_dir():
        raise FileNotFoundError(f"the raw root {raw_root} does not exist or is not a folder")
    if detect is None:
        detect = _default_detect()
    real_root = os.path.realpath(raw_root)
    result = ScanResult()
    # (folder path as given, key prefix, the real paths of the folder and its ancestors)
    pending: list[tuple[str, str, tuple[str, ...]]] = [(str(raw_root), "", (real_root,))]
    while pending:
        folder, prefix, chain = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            if not prefix:
                raise OSError(exc.errno, f"the raw root {raw_root} cannot be listed") from exc
            if exc.errno == errno.ENOENT:
                _add(result.skipped, prefix, "the folder vanished during the scan")
                continue
            result.unreadable_folders.append(prefix)
            _add(result.refused, prefix, f"the folder cannot be listed: {_why(exc)}")
            continue
        subfolders: list[tuple[str, str, tuple[str, ...]]] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            key = prefix + entry.name
            try:
                st, real = _stat_entry(entry, real_root, chain)
            except _Refused as refusal:
                _add(result.refused, key, str(refusal), key)
                continue
            except FileNotFoundError:
                _add(result.skipped, key, "it vanished during the scan")
                continue
            except OSError as exc:
                _add(result.refused, key, f"cannot be examined: {_why(exc)}", key)
                continue
            if stat.S_ISDIR(st.st_mode):
                subfolders.append((entry.path, key + "/", (*chain, real)))
                continue
            _classify_file(result, key, Path(entry.path), st, documents, detect, known)
        pending.extend(reversed(subfolders))
    result.files.sort(key=lambda f: f.source_key)
    return result


class _Refused(Exception):
    pass


def _stat_entry(
    entry: os.DirEntry[str], real_root: str, chain: tuple[str, ...]
) -> tuple[os.stat_result, str]:
    """The entry's stat (through a symlink when the rule allows it) and its real path.

    ``chain`` holds the real paths of the folder being listed and of its ancestors, as the
    scan reached them: a symlinked folder already in it is a loop."""
    if not entry.is_symlink():
        return entry.stat(follow_symlinks=False), os.path.join(chain[-1], entry.name)
    target = os.readlink(entry.path)
    try:
        st = os.stat(entry.path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refused(f"a symlink loop (-> {display_name(target)})") from None
        if exc.errno == errno.ENOENT:
            raise _Refused(
                f"a dangling symlink: its target {display_name(target)} does not exist"
            ) from None
        raise
    real = os.path.realpath(entry.path)
    if not _inside(real, real_root):
        raise _Refused(
            f"a symlink to {display_name(real)}, outside the raw root (only symlinks within the "
            "raw root are followed)"
        )
    if stat.S_ISDIR(st.st_mode) and (real in chain or _inside(chain[-1], real)):
        raise _Refused(
            f"a symlink loop: it points to {display_name(real)}, a folder that contains it"
        )
    return st, real


def _classify_file(
    result: ScanResult,
    key: str,
    path: Path,
    st: os.stat_result,
    documents: DocumentsSettings | None,
    detect: Callable[[str, bytes], tuple[str | None, str | None]],
    known: Mapping[str, tuple[int, int]] | None = None,
) -> None:
    if not stat.S_ISREG(st.st_mode):
        _add(result.skipped, key, f"not a regular file ({_kind(st.st_mode)}); it is never read")
        return
    problem = source_key_problem(key)
    if problem:
        _add(result.refused, key, problem)
        return
    reason = documents.skip_reason(key) if documents is not None else None
    if reason:
        _add(result.skipped, key, reason, key)
        return
    if known is not None and known.get(key) == (st.st_size, st.st_mtime_ns):
        result.files.append(SourceFile(key, path, st.st_size, st.st_mtime_ns))
        return
    try:
        head, st = read_head(path, HEAD_BYTES)
    except FileNotFoundError:
        _add(result.skipped, key, "it vanished during the scan", key)
        return
    except _NotRegular as exc:
        _add(result.skipped, key, str(exc), key)
        return
    except OSError as exc:
        _add(result.refused, key, f"cannot be read: {_why(exc)}", key)
        return
    media_type, why = detect(key, head)
    if media_type is None:
        _add(result.skipped, key, why or "no parser reads it", key)
        return
    result.files.append(SourceFile(key, path, st.st_size, st.st_mtime_ns, media_type))


class _NotRegular(OSError):
    pass


def read_head(
    path: Path | str, limit: int, *, max_size: int | None = None
) -> tuple[bytes, os.stat_result]:
    """At most ``limit`` bytes from the start of a regular file, and its stat; never blocks.

    Raises ``OSError`` (a subclass saying so when the path is no longer a regular file, or,
    before anything is read, when it is larger than ``max_size``).
    """
    fd = os.open(path, OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _NotRegular(f"not a regular file ({_kind(st.st_mode)}); it is never read")
        if max_size is not None and st.st_size > max_size:
            raise FileTooLargeError(st.st_size, max_size)
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0:
            data = os.read(fd, min(remaining, 1 << 20))
            if not data:
                break
            chunks.append(data)
            remaining -= len(data)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def read_regular_file(path: Path | str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; never blocks, never reads more.

    Raises:
        FileTooLargeError: the file is larger than ``max_bytes`` (nothing past it is read).
        OSError: the file cannot be read, or is not a regular file.
    """
    data, _ = read_head(path, max_bytes + 1, max_size=max_bytes)
    if len(data) > max_bytes:  # it grew while being read
        raise FileTooLargeError(len(data), max_bytes)
    return data


class FileTooLargeError(OSError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size:,} bytes is over the limit of {limit:,} bytes")
        self.size = size
        self.limit = limit


def _default_detect() -> Callable[[str, bytes], tuple[str | None, str | None]]:
    from agrag_pipeline.parsing import detect as detect_module

    def detect(key: str, head: bytes) -> tuple[str | None, str | None]:
        media_type = detect_module.detect_media_type(key, head)
        if media_type is not None:
            return media_type, None
        return None, detect_module.undetected_reason(key, head)

    return detect


def _add(into: list[ScanProblem], name: str, reason: str, key: str | None = None) -> None:
    into.append(ScanProblem(display_name(name), reason, key))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _has_surrogates(text: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a file"


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)
