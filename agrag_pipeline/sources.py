"""The raw root: which documents exist, under which source keys, and whether they changed.

A source key is the document's path relative to the raw root in POSIX form, and the Dagster
partition key; its rules, and what a scan returns, are in ``source_keys`` (shared with the
object-store scan, ``storage.raw_remote``). Hidden files (a component starting with ``.``) are
editor and OS droppings, not documents, and are skipped without a word.

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
The rule holds for the file actually opened, not only for the path checked: every read of a
document's bytes (the scan's head, the snapshot, the sensor's hash) goes through
``open_in_root``, which walks the key down from the raw root one component at a time without
following symlinks and follows one only once it resolves inside the root. A symlink to
``/etc/passwd`` swapped in between the scan's check and the read is refused, never read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agrag_pipeline.source_keys import (
    HEAD_BYTES,
    MAX_SOURCE_KEY_LENGTH,
    FileTooLargeError,
    ScanProblem,
    ScanResult,
    SourceFile,
    SourceKeyError,
    default_detect,
    display_name,
    source_key_problem,
    validate_source_key,
)

if TYPE_CHECKING:
    from agrag_pipeline.settings import DocumentsSettings

__all__ = [
    "HEAD_BYTES",
    "MAX_SOURCE_KEY_LENGTH",
    "FileTooLargeError",
    "OutsideRootError",
    "RawRootReader",
    "ScanProblem",
    "ScanResult",
    "SourceFile",
    "SourceKeyError",
    "display_name",
    "open_in_root",
    "read_head",
    "read_regular_file",
    "resolve_in_root",
    "scan_raw_root",
    "source_key_problem",
    "validate_source_key",
]

#: Opening flags for reading a document: never block (a FIFO swapped in after the stat), never
#: become the controlling terminal, never follow a symlink (``open_in_root`` follows them itself).
OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | os.O_NOFOLLOW
)
#: Opening flags for each folder on the way to a document.
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: Symlinks followed on the way to one file before it counts as a loop (Linux's limit).
MAX_SYMLINKS = 40
#: What ``open`` with ``O_NOFOLLOW`` says of a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD),
#: ENOTDIR (a symlink where a folder is expected, with ``O_DIRECTORY``).
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})
#: Components a source key never has.
_NOT_NAMES = frozenset({"", ".", ".."})


class OutsideRootError(OSError):
    """A path that leads out of the raw root through a symlink; nothing outside is opened."""

    def __init__(self, link: str, source_key: str, target: str) -> None:
        where = (
            "a symlink"
            if link == source_key
            else f"it leads through {display_name(link)}, a symlink"
        )
        super().__init__(
            f"{where} to {display_name(target)}, outside the raw root (only symlinks within "
            "the raw root are followed)"
        )
        self.link = link
        self.target = target


def source_key_for(raw_root: Path, path: Path) -> str:
    return path.relative_to(raw_root).as_posix()


def resolve_in_root(raw_root: Path, source_key: str) -> Path:
    """The file of ``source_key`` under ``raw_root``; raises ``SourceKeyError`` when the key is
    not a source key or the path (symlinks followed) leads outside the raw root now.

    An early refusal with the resolved path in the message; what is then opened is checked
    again (``open_in_root``), since the path can change in between."""
    validate_source_key(source_key)
    path = raw_root / source_key
    real_root = os.path.realpath(raw_root)
    try:
        real = _realpath(path)
    except OSError:
        return path  # changing under us: the open decides
    if not _inside(real, real_root):
        raise SourceKeyError(
            f"{display_name(source_key)}: resolves to {display_name(real)}, outside the raw "
            f"root {real_root} (only symlinks within the raw root are followed)"
        )
    return path


def _realpath(path: Path | str) -> str:
    """``os.path.realpath``, tried again when a symlink on the path is replaced while it
    resolves (its ``readlink`` then fails with EINVAL or ENOENT)."""
    for attempt in range(3):
        try:
            return os.path.realpath(path)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOENT) or attempt == 2:
                raise
    raise AssertionError("unreachable")


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
    from agrag_pipeline.derived import expand_containers
    from agrag_pipeline.storage.raw_remote import object_root_uri, scan_object_root

    remote = object_root_uri(raw_root)
    if remote is not None:
        result = scan_object_root(remote, documents, detect=detect)
        expand_containers(result, raw_root, documents, detect)
        return result
    if not raw_root.is_dir():
        raise FileNotFoundError(f"the raw root {raw_root} does not exist or is not a folder")
    if detect is None:
        detect = default_detect()
    real_root = os.path.realpath(raw_root)
    result = ScanResult()
    with RawRootReader(raw_root) as reader:  # every folder listed, every head read, through it
        # (folder path as given, key prefix, the real paths of the folder and its ancestors)
        pending: list[tuple[str, str, tuple[str, ...]]] = [(str(raw_root), "", (real_root,))]
        while pending:
            folder, prefix, chain = pending.pop()
            try:
                entries = _list_folder(reader, folder, prefix)
            except OutsideRootError as exc:  # swapped for a symlink out since it was listed
                result.unreadable_folders.append(prefix)
                _add(result.refused, prefix, f"{exc}; it was replaced while the scan read it")
                continue
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
            for name, lstat in entries:
                key = prefix + name
                path = os.path.join(folder, name)
                try:
                    st, real = _stat_entry(name, lstat, path, real_root, chain)
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
                    subfolders.append((path, key + "/", (*chain, real)))
                    continue
                _classify_file(result, reader, key, Path(path), st, documents, detect, known)
            pending.extend(reversed(subfolders))
    result.files.sort(key=lambda f: f.source_key)
    # E-mail attachments and archive members are documents too, listed beside their file.
    expand_containers(result, raw_root, documents, detect, known)
    return result


class _Refused(Exception):
    pass


def _list_folder(
    reader: RawRootReader, folder: str, prefix: str
) -> list[tuple[str, os.stat_result | OSError]]:
    """The folder's entries that are not hidden, sorted by name, each with its ``lstat`` (or
    why it failed). A folder below the root is opened through ``reader``, never through a
    symlink swapped in (which would list a folder outside), and its entries are examined while
    it is open, relative to it."""
    fd = reader.open_folder(prefix.rstrip("/")) if prefix else None
    try:
        with os.scandir(folder if fd is None else fd) as listing:
            entries = sorted((e for e in listing if not e.name.startswith(".")), key=_name)
            return [(e.name, _lstat(e)) for e in entries]
    finally:
        if fd is not None:
            os.close(fd)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _lstat(entry: os.DirEntry[str]) -> os.stat_result | OSError:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError as exc:
        return exc


def _stat_entry(
    name: str, lstat: os.stat_result | OSError, path: str, real_root: str, chain: tuple[str, ...]
) -> tuple[os.stat_result, str]:
    """The entry's stat (through a symlink when the rule allows it) and its real path
    (``lstat`` as listed, ``path`` the entry's path under the raw root as given).

    ``chain`` holds the real paths of the folder being listed and of its ancestors, as the
    scan reached them: a symlinked folder already in it is a loop."""
    if isinstance(lstat, OSError):
        raise lstat
    st = lstat
    if not stat.S_ISLNK(st.st_mode):
        return st, os.path.join(chain[-1], name)
    try:
        target = os.readlink(path)
    except OSError as exc:
        st = os.lstat(path)
        if exc.errno != errno.EINVAL or stat.S_ISLNK(st.st_mode):
            raise
        return st, os.path.join(chain[-1], name)  # a link no more
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refused(f"a symlink loop (-> {display_name(target)})") from None
        if exc.errno == errno.ENOENT:
            raise _Refused(
                f"a dangling symlink: its target {display_name(target)} does not exist"
            ) from None
        raise
    real = _realpath(path)
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
    reader: RawRootReader,
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
        head, st = read_head(path, HEAD_BYTES, root=reader)
    except OutsideRootError as exc:  # swapped for a symlink out since the check above
        _add(result.refused, key, f"{exc}; it was replaced while the scan read it", key)
        return
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


def open_in_root(raw_root: Path | str, source_key: str) -> int:
    """A descriptor of ``source_key``'s file, opened for reading without blocking, that is
    certainly inside ``raw_root`` (see ``RawRootReader.open``)."""
    with RawRootReader(raw_root) as reader:
        return reader.open(source_key)


class RawRootReader:
    """Opens documents under one raw root, each certainly inside it: the one way the pipeline
    opens a document's bytes.

    Each component is opened relative to the folder before it with ``O_NOFOLLOW``, so what is
    opened is what was checked; a symlink met on the way is resolved, and followed (the walk
    starts again from the root along its real path) only when it resolves inside the raw root.
    The last folder opened stays open for the next file in it: a scan reads folder by folder,
    and so costs one ``open`` per file, as a plain ``open`` of the path did.
    """

    def __init__(self, raw_root: Path | str) -> None:
        self.raw_root = raw_root
        self._root: tuple[int, str] | None = None  # its descriptor and real path, once opened
        self._folder: tuple[str, int] | None = None  # the last folder opened: key prefix, fd

    def __enter__(self) -> RawRootReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._folder is not None:
            os.close(self._folder[1])
            self._folder = None
        if self._root is not None:
            os.close(self._root[0])
            self._root = None

    def open(self, source_key: str) -> int:
        """``source_key``'s file, opened read-only, non-blocking, and never outside the root.

        Raises:
            OutsideRootError: a symlink on the way leads outside the raw root.
            OSError: as ``open`` does (``ELOOP`` after ``MAX_SYMLINKS`` symlinks).
        """
        parts = source_key.split("/")
        if not _NOT_NAMES.isdisjoint(parts):
            raise SourceKeyError(
                f"{display_name(source_key)}: a source key has no empty, '.' or '..' components"
            )
        folder_key = "/".join(parts[:-1])
        if self._folder is not None and self._folder[0] == folder_key:
            folder_fd = self._folder[1]
        elif folder_key:
            folder_fd = self._walk(parts[:-1], _FOLDER_FLAGS, source_key)
            if self._folder is not None:
                os.close(self._folder[1])
            self._folder = (folder_key, folder_fd)
        else:
            folder_fd = self._root_fd()[0]
        try:
            return os.open(parts[-1], OPEN_FLAGS, dir_fd=folder_fd)
        except OSError as exc:
            if exc.errno not in _SYMLINK_ERRNOS:
                raise
        return self._walk(parts, OPEN_FLAGS, source_key)  # a symlink: resolved from the root

    def open_folder(self, folder_key: str) -> int:
        """The folder ``folder_key`` (a key prefix without its ``/``), opened for listing and
        never outside the root; the caller closes it."""
        return self._walk(folder_key.split("/"), _FOLDER_FLAGS, folder_key)

    def _root_fd(self) -> tuple[int, str]:
        if self._root is None:
            real_root = os.path.realpath(self.raw_root)
            self._root = (os.open(self.raw_root, _FOLDER_FLAGS & ~os.O_NOFOLLOW), real_root)
        return self._root

    def _walk(self, parts: list[str], flags: int, source_key: str) -> int:
        root_fd, real_root = self._root_fd()
        for _ in range(MAX_SYMLINKS + 1):
            opened = _open_beneath(root_fd, real_root, parts, flags, source_key)
            if isinstance(opened, int):
                return opened
            parts = opened
        raise OSError(errno.ELOOP, f"{display_name(source_key)}: too many levels of symlinks")


def _open_beneath(
    root_fd: int, real_root: str, parts: list[str], flags: int, source_key: str
) -> int | list[str]:
    """The file or folder at ``parts`` under ``root_fd``, opened with ``flags`` and without
    following a symlink; or, when one is met, the real path (components under the root) to
    walk instead."""
    folders: list[int] = []
    try:
        for i, name in enumerate(parts):
            folder_fd = folders[-1] if folders else root_fd
            last = i == len(parts) - 1
            try:
                fd = os.open(name, flags if last else _FOLDER_FLAGS, dir_fd=folder_fd)
            except OSError as exc:
                if exc.errno not in _SYMLINK_ERRNOS:
                    raise
                try:
                    target = os.readlink(name, dir_fd=folder_fd)
                except OSError:
                    if exc.errno == errno.ENOTDIR and _is_file(name, folder_fd):
                        raise exc from None  # a file where a folder is expected
                    return parts  # a symlink no more (or gone): walk again
                folder = os.path.join(real_root, *parts[:i])  # the folder the link is in
                try:
                    real = _realpath(os.path.join(folder, target, *parts[i + 1 :]))
                except OSError:
                    return parts  # changing under us: walk again
                if not _inside(real, real_root):
                    raise OutsideRootError("/".join(parts[: i + 1]), source_key, real) from None
                return os.path.relpath(real, real_root).split(os.sep)  # ['.']: the root
            if last:
                return fd
            folders.append(fd)
        raise AssertionError("a walk has at least one component")
    finally:
        for fd in folders:
            os.close(fd)


def _is_file(name: str, folder_fd: int) -> bool:
    try:
        mode = os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode
    except OSError:
        return False
    return not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def read_head(
    path: Path | str,
    limit: int,
    *,
    root: Path | str | RawRootReader,
    max_size: int | None = None,
) -> tuple[bytes, os.stat_result]:
    """At most ``limit`` bytes from the start of the regular file ``path`` under the raw root
    ``root`` (or the root a ``RawRootReader`` reads), and its stat; never blocks, never reads
    outside the root.

    Raises ``OSError`` (a subclass saying so when the path is no longer a regular file,
    ``OutsideRootError`` when it leads out of the root, or, before anything is read, when it is
    larger than ``max_size``).
    """
    if isinstance(root, RawRootReader):
        fd = root.open(_key_under(root.raw_root, path))
    else:
        fd = open_in_root(root, _key_under(root, path))
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


def read_regular_file(path: Path | str, max_bytes: int, *, root: Path | str) -> bytes:
    """The bytes of the regular file ``path`` under the raw root ``root``, of at most
    ``max_bytes``; never blocks, never reads more, never reads outside ``root``.

    Raises:
        FileTooLargeError: the file is larger than ``max_bytes`` (nothing past it is read).
        OutsideRootError: the path leads out of the raw root through a symlink.
        OSError: the file cannot be read, or is not a regular file.
    """
    data, _ = read_head(path, max_bytes + 1, root=root, max_size=max_bytes)
    if len(data) > max_bytes:  # it grew while being read
        raise FileTooLargeError(len(data), max_bytes)
    return data


def _key_under(root: Path | str, path: Path | str) -> str:
    """``path``'s components under ``root``, as written (no symlink is resolved here)."""
    root_text, path_text = os.fspath(root).rstrip("/"), os.fspath(path)
    if path_text.startswith(root_text + "/"):  # the usual case, without pathlib's cost
        return path_text[len(root_text) + 1 :]
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        raise SourceKeyError(
            f"{display_name(str(path))} is not under the raw root {root}"
        ) from None


def _add(into: list[ScanProblem], name: str, reason: str, key: str | None = None) -> None:
    into.append(ScanProblem(display_name(name), reason, key))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


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
