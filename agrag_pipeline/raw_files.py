"""Opening a document's bytes under the raw root, never outside it.

The lowest layer of reading the raw root: the scan (``sources``) and the readers of e-mail
attachments and archive members (``derived``) both open files through it, so neither imports
the other. Symlink rule (see ``sources``): a symlink is followed only when it resolves inside
the raw root, and the rule holds for the file actually opened: ``RawRootReader`` walks a key
down from the root one component at a time without following symlinks.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from agrag_pipeline.source_keys import (
    FileTooLargeError,
    SourceKeyError,
    display_name,
    validate_source_key,
)

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


def resolve_in_root(raw_root: Path, source_key: str) -> Path:
    """The file of ``source_key`` under ``raw_root``; raises ``SourceKeyError`` when the key is
    not a source key or the path (symlinks followed) leads outside the raw root now.

    An early refusal with the resolved path in the message; what is then opened is checked
    again (``open_in_root``), since the path can change in between."""
    validate_source_key(source_key)
    path = raw_root / source_key
    real_root = os.path.realpath(raw_root)
    try:
        real = real_path(path)
    except OSError:
        return path  # changing under us: the open decides
    if not is_inside(real, real_root):
        raise SourceKeyError(
            f"{display_name(source_key)}: resolves to {display_name(real)}, outside the raw "
            f"root {real_root} (only symlinks within the raw root are followed)"
        )
    return path


def real_path(path: Path | str) -> str:
    """``os.path.realpath``, tried again when a symlink on the path is replaced while it
    resolves (its ``readlink`` then fails with EINVAL or ENOENT)."""
    for attempt in range(3):
        try:
            return os.path.realpath(path)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOENT) or attempt == 2:
                raise
    raise AssertionError("unreachable")


class NotRegularFileError(OSError):
    """The path is no longer a regular file (a FIFO or folder swapped in): never read."""


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
                    real = real_path(os.path.join(folder, target, *parts[i + 1 :]))
                except OSError:
                    return parts  # changing under us: walk again
                if not is_inside(real, real_root):
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
            raise NotRegularFileError(
                f"not a regular file ({file_kind(st.st_mode)}); it is never read"
            )
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


def is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def file_kind(mode: int) -> str:
    """What a directory entry is, in words ("a FIFO"), for messages that refuse it."""
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a file"
