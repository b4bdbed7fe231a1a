"""Atomic writes: a reader sees the old file or the new one, never half of one.

On a local filesystem the bytes go to a temporary name in the same folder, are flushed to disk,
and are renamed into place (``os.replace`` is atomic within one filesystem). On an object store
(s3://, gs://, …) a single PUT is already atomic: the bytes are made in memory and PUT once
whole, so a writer that fails midway leaves the old object.

A temporary name says who writes it: ``.<name>.tmp-<host>-<pid>-<random>``. A process killed
mid-write (``kill -9``, power loss) leaves it behind; ``remove_stale_temporaries`` deletes those
whose writer is gone (same host, pid no longer alive) or that are older than a grace period, and
never one a live writer on this host is still writing.

``before_replace`` runs just before the rename, after the bytes are on disk: a step uses it to
verify, under the document's ``file_lock``, that the input it read is still the current one, so
what it writes belongs to the version it read or is not written at all.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import IO

import fsspec
from fsspec.implementations.local import LocalFileSystem

#: A temporary file older than this is removed even if its writer cannot be checked.
TEMP_GRACE_S = 3600.0

_HOST = hashlib.sha1(socket.gethostname().encode(), usedforsecurity=False).hexdigest()[:8]
_TEMP = re.compile(r"^\..+\.tmp-(?:(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-)?[0-9a-f]{32}$")


def is_local(fs: fsspec.AbstractFileSystem) -> bool:
    return isinstance(fs, LocalFileSystem)


def temporary_name(path: str) -> str:
    """The temporary sibling ``path`` is written to before its rename."""
    parent, name = path.rsplit("/", 1)
    return f"{parent}/.{name}.tmp-{_HOST}-{os.getpid()}-{uuid.uuid4().hex}"


def is_temporary(name: str) -> bool:
    return _TEMP.match(name) is not None


def write_atomic(
    fs: fsspec.AbstractFileSystem,
    path: str,
    write: Callable[[IO[bytes]], None],
    *,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Write ``path`` through ``write(file)`` so that it appears whole or not at all.

    ``before_replace()`` may raise to abandon the write (the old file stays).
    """
    parent = path.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    if not is_local(fs):
        # The bytes are made in memory and sent in one PUT only once whole: an fsspec file
        # opened for writing uploads what it holds when closed, even when ``write`` raised, so
        # writing through it would replace the old object with half of the new one.
        buffer = io.BytesIO()
        write(buffer)
        if before_replace is not None:
            before_replace()
        fs.pipe_file(path, buffer.getvalue())
        return
    tmp = temporary_name(path)
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(
    fs: fsspec.AbstractFileSystem,
    path: str,
    data: bytes,
    *,
    before_replace: Callable[[], None] | None = None,
) -> None:
    def write(handle: IO[bytes]) -> None:
        handle.write(data)

    write_atomic(fs, path, write, before_replace=before_replace)


@contextlib.contextmanager
def file_lock(fs: fsspec.AbstractFileSystem, lock_path: str) -> Iterator[None]:
    """An exclusive advisory lock (``flock``) on ``lock_path`` for a local filesystem; held
    only for a check and a rename, so waits are short. Object stores have no lock: there the
    check before the PUT narrows, but cannot close, the window."""
    if not is_local(fs):
        yield
        return
    import fcntl

    fs.makedirs(lock_path.rsplit("/", 1)[0], exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def remove_stale_temporaries(
    folders: list[str], *, grace_s: float = TEMP_GRACE_S, now: float | None = None
) -> list[str]:
    """Delete the temporary files crashed writers left in ``folders`` (local paths, not
    recursive); returns the paths removed. A file a live writer on this host holds, or one
    younger than ``grace_s`` whose writer cannot be checked (another host), is kept."""
    now = time.time() if now is None else now
    removed: list[str] = []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            match = _TEMP.match(entry.name)
            if match is None:
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                young = now - entry.stat(follow_symlinks=False).st_mtime < grace_s
            except FileNotFoundError:
                continue  # renamed into place or removed meanwhile
            host, pid = match.group("host"), match.group("pid")
            writer_gone = host == _HOST and pid is not None and not _alive(int(pid))
            if young and not writer_gone:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(entry.path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OSError as exc:
        return exc.errno != errno.ESRCH
    # A zombie (killed, not yet reaped) is not a writer any more.
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True
