"""Atomic writes: a reader sees the old file or the new one, never half of one.

On a local filesystem the bytes go to a temporary name in the same folder, are flushed to disk,
and are renamed into place (``os.replace`` is atomic within one filesystem). On an object store
(s3://, gs://, …) a single PUT is already atomic, so the object is written directly.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from typing import IO

import fsspec
from fsspec.implementations.local import LocalFileSystem


def is_local(fs: fsspec.AbstractFileSystem) -> bool:
    return isinstance(fs, LocalFileSystem)


def write_atomic(
    fs: fsspec.AbstractFileSystem, path: str, write: Callable[[IO[bytes]], None]
) -> None:
    """Write ``path`` through ``write(file)`` so that it appears whole or not at all."""
    parent = path.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    if not is_local(fs):
        with fs.open(path, "wb") as handle:
            write(handle)
        return
    tmp = f"{parent}/.{path.rsplit('/', 1)[1]}.tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    def write(handle: IO[bytes]) -> None:
        handle.write(data)

    write_atomic(fs, path, write)
