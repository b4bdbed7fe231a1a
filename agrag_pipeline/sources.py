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
from typing import TYPE_CHECKING, NamedTuple

from agrag_pipeline.derived import expand_containers
from agrag_pipeline.raw_files import (
    NotRegularFileError,
    OutsideRootError,
    RawRootReader,
    file_kind,
    is_inside,
    open_in_root,
    read_head,
    read_regular_file,
    real_path,
    resolve_in_root,
)
from agrag_pipeline.source_keys import (
    HEAD_BYTES,
    MAX_SOURCE_KEY_LENGTH,
    SAVED_PAGE_FOLDER_SUFFIXES,
    FileTooLargeError,
    ScanProblem,
    ScanResult,
    SourceFile,
    SourceKeyError,
    default_detect,
    display_name,
    saved_page_of,
    saved_page_reason,
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


def source_key_for(raw_root: Path, path: Path) -> str:
    return path.relative_to(raw_root).as_posix()


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
        result = scan_object_root(remote, documents, detect=detect)
        expand_containers(result, raw_root, documents, detect)
        return result
    if not raw_root.is_dir():
        raise FileNotFoundError(f"the raw root {raw_root} does not exist or is not a folder")
    if detect is None:
        detect = default_detect()
    real_root = os.path.realpath(raw_root)
    skip_saved_pages = documents is None or documents.skip_saved_page_folders
    result = ScanResult()
    with RawRootReader(raw_root) as reader:  # every folder listed, every head read, through it
        # (folder path as given, key prefix, the real paths of the folder and its ancestors)
        root = str(raw_root)  # one string shared by every ``SourceFile`` of the scan
        pending: list[tuple[str, str, tuple[str, ...]]] = [(root, "", (real_root,))]
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
            sibling_names: set[str] | None = None  # made for a folder that may need it
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
                    page = None
                    if skip_saved_pages and name.lower().endswith(SAVED_PAGE_FOLDER_SUFFIXES):
                        if sibling_names is None:
                            sibling_names = {sibling.lower() for sibling, _lstat in entries}
                        page = saved_page_of(name, sibling_names)
                    if page is not None:
                        _add(result.skipped, key + "/", saved_page_reason(page))
                    else:
                        subfolders.append((path, key + "/", (*chain, real)))
                    continue
                _classify_file(result, reader, key, path, root, st, documents, detect, known)
            pending.extend(reversed(subfolders))
    result.files.sort(key=lambda f: f.source_key)
    # E-mail attachments and archive members are documents too, listed beside their file.
    expand_containers(result, raw_root, documents, detect, known)
    return result


class _Refused(Exception):
    pass


class _Stat(NamedTuple):
    """The three facts of an entry's ``lstat`` the scan uses. A folder's listing holds one per
    entry while the folder is read: a flat folder of 100,000 files would hold 100,000
    ``os.stat_result`` (~650 bytes each with their fields) at the scan's peak."""

    st_mode: int
    st_size: int
    st_mtime_ns: int


def _list_folder(
    reader: RawRootReader, folder: str, prefix: str
) -> list[tuple[str, _Stat | OSError]]:
    """The folder's entries that are not hidden, sorted by name, each with its ``lstat`` (or
    why it failed). A folder below the root is opened through ``reader``, never through a
    symlink swapped in (which would list a folder outside), and its entries are examined while
    it is open, relative to it. Each ``os.DirEntry`` (and the stat it caches) is let go as
    soon as it is examined: a flat folder of 100,000 files holds a name and a ``_Stat`` each."""
    fd = reader.open_folder(prefix.rstrip("/")) if prefix else None
    try:
        with os.scandir(folder if fd is None else fd) as listing:
            entries = [(e.name, _lstat(e)) for e in listing if not e.name.startswith(".")]
    finally:
        if fd is not None:
            os.close(fd)
    entries.sort(key=_name)
    return entries


def _name(entry: tuple[str, _Stat | OSError]) -> str:
    return entry[0]


def _lstat(entry: os.DirEntry[str]) -> _Stat | OSError:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return exc
    return _Stat(st.st_mode, st.st_size, st.st_mtime_ns)


def _stat_entry(
    name: str, lstat: _Stat | OSError, path: str, real_root: str, chain: tuple[str, ...]
) -> tuple[_Stat | os.stat_result, str]:
    """The entry's stat (through a symlink when the rule allows it) and its real path
    (``lstat`` as listed, ``path`` the entry's path under the raw root as given).

    ``chain`` holds the real paths of the folder being listed and of its ancestors, as the
    scan reached them: a symlinked folder already in it is a loop."""
    if isinstance(lstat, OSError):
        raise lstat
    st: _Stat | os.stat_result = lstat
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
    real = real_path(path)
    if not is_inside(real, real_root):
        raise _Refused(
            f"a symlink to {display_name(real)}, outside the raw root (only symlinks within the "
            "raw root are followed)"
        )
    if stat.S_ISDIR(st.st_mode) and (real in chain or is_inside(chain[-1], real)):
        raise _Refused(
            f"a symlink loop: it points to {display_name(real)}, a folder that contains it"
        )
    return st, real


def _classify_file(
    result: ScanResult,
    reader: RawRootReader,
    key: str,
    path: str,
    root: str,
    st: _Stat | os.stat_result,
    documents: DocumentsSettings | None,
    detect: Callable[[str, bytes], tuple[str | None, str | None]],
    known: Mapping[str, tuple[int, int]] | None = None,
) -> None:
    if not stat.S_ISREG(st.st_mode):
        _add(result.skipped, key, f"not a regular file ({file_kind(st.st_mode)}); it is never read")
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
        result.files.append(SourceFile(key, root, st.st_size, st.st_mtime_ns))
        return
    try:
        head, st = read_head(path, HEAD_BYTES, root=reader)
    except OutsideRootError as exc:  # swapped for a symlink out since the check above
        _add(result.refused, key, f"{exc}; it was replaced while the scan read it", key)
        return
    except FileNotFoundError:
        _add(result.skipped, key, "it vanished during the scan", key)
        return
    except NotRegularFileError as exc:
        _add(result.skipped, key, str(exc), key)
        return
    except OSError as exc:
        _add(result.refused, key, f"cannot be read: {_why(exc)}", key)
        return
    media_type, why = detect(key, head)
    if media_type is None:
        _add(result.skipped, key, why or "no parser reads it", key)
        return
    result.files.append(SourceFile(key, root, st.st_size, st.st_mtime_ns, media_type))


def _add(into: list[ScanProblem], name: str, reason: str, key: str | None = None) -> None:
    into.append(ScanProblem(display_name(name), reason, key))


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)
