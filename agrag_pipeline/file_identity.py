"""What tells a file apart from itself at another moment, without reading it.

Why: a process that keeps what it derived from a file (a hash, a parsed tokenizer) must notice
when the file changes. Its path, device, inode, size and modification time tell, and the
status-change time too, which the kernel sets on every write and no user can set back: a file
rewritten in place with its old modification time restored is still told apart.

Core module: no Dagster.
"""

from __future__ import annotations

from pathlib import Path

FileIdentity = tuple[str, int, int, int, int, int]


def file_identity(path: Path) -> FileIdentity:
    """The file's resolved path, device, inode, size, and modification and status-change times
    (ns). Raises ``OSError`` as ``stat`` does (a missing file)."""
    status = path.stat()
    return (
        str(path.resolve()),
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )
