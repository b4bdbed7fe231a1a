"""The raw root: which documents exist, under which source keys, and whether they changed.

A source key is the document's path relative to the raw root in POSIX form. It is the Dagster
partition key, so keys Dagster cannot hold (control characters, ``...``) are refused with a
message naming the file; nothing is silently renamed. Hidden files (a component starting with
``.``) are editor and OS droppings, not documents, and are skipped.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

#: Substrings Dagster refuses in partition keys (besides control characters).
_FORBIDDEN_SUBSTRINGS = ("...",)
#: Dagster's partition key length limit is generous, but a path this long is a mistake.
MAX_SOURCE_KEY_LENGTH = 1024


class SourceKeyError(ValueError):
    """A file whose path cannot be a source key."""


@dataclass(frozen=True)
class SourceFile:
    """A file under the raw root and the cheap facts used to notice it changed."""

    source_key: str
    path: Path
    size: int
    mtime_ns: int


def validate_source_key(source_key: str) -> str:
    """Return ``source_key`` if Dagster can hold it as a partition key, else raise."""
    problem = source_key_problem(source_key)
    if problem:
        raise SourceKeyError(f"{source_key!r}: {problem}")
    return source_key


def source_key_problem(source_key: str) -> str | None:
    if not source_key:
        return "an empty path cannot be a source key"
    if len(source_key) > MAX_SOURCE_KEY_LENGTH:
        return f"the path is longer than {MAX_SOURCE_KEY_LENGTH} characters"
    if any(unicodedata.category(ch) == "Cc" for ch in source_key):
        return "the path contains a control character, which a Dagster partition key cannot hold"
    for bad in _FORBIDDEN_SUBSTRINGS:
        if bad in source_key:
            return f"the path contains {bad!r}, which a Dagster partition key cannot hold"
    if source_key.startswith("/") or "\\" in source_key:
        return "a source key is a relative POSIX path"
    return None


def source_key_for(raw_root: Path, path: Path) -> str:
    return path.relative_to(raw_root).as_posix()


def scan_raw_root(raw_root: Path) -> tuple[list[SourceFile], list[str]]:
    """Every document under ``raw_root`` (sorted by key), and one message per refused file."""
    files: list[SourceFile] = []
    refused: list[str] = []
    if not raw_root.is_dir():
        raise FileNotFoundError(f"the raw root {raw_root} does not exist or is not a folder")
    for dirpath, dirnames, filenames in os.walk(raw_root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            key = source_key_for(raw_root, path)
            problem = source_key_problem(key)
            if problem:
                refused.append(f"{path}: {problem}")
                continue
            stat = path.stat()
            files.append(SourceFile(key, path, stat.st_size, stat.st_mtime_ns))
    files.sort(key=lambda f: f.source_key)
    return files, refused
