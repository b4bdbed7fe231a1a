"""Fingerprints: canonical JSON and the SHA-256 hashes that tie every output to its inputs.

One function (``canonical_json``) makes the bytes every fingerprint hashes, so the same settings
written in another key order, or loaded from YAML instead of built in code, give the same hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

#: Dagster tag values hold at most 63 characters of [A-Za-z0-9_.-]; 16 hex digits (64 bits)
#: are plenty to filter runs by while staying readable.
SHORT_LENGTH = 16


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8; NaN and infinities refused."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """64 lowercase hex digits."""
    return hashlib.sha256(data).hexdigest()


#: SHA-256 of files already hashed by this process (or the process it was forked from), by the
#: file's identity: model weights (90 MB, 0.05 CPU s) and OCR trained data go into fingerprints
#: that every run computes again.
_FILE_HASHES: dict[tuple[str, int, int, int, int, int], str] = {}
#: How many it keeps: a process hashes a model's weights and a few OCR languages' data.
_FILE_HASHES_MAX = 64


def _file_identity(path: Path) -> tuple[str, int, int, int, int, int]:
    """What changes whenever a file's content can have: its inode, size, and modification and
    status-change times (the latter set by the kernel on any write, never by a user)."""
    status = path.stat()
    return (
        str(path.resolve()),
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


def file_sha256(path: Path) -> str:
    """The file's SHA-256, hashed again unless this very file, unchanged, was hashed before."""
    identity = _file_identity(path)
    known = _FILE_HASHES.get(identity)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    hexdigest = digest.hexdigest()
    if _file_identity(path) == identity:  # not written while it was read
        while len(_FILE_HASHES) >= _FILE_HASHES_MAX:
            del _FILE_HASHES[next(iter(_FILE_HASHES))]
        _FILE_HASHES[identity] = hexdigest
    return hexdigest


def fingerprint(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value``."""
    return sha256_hex(canonical_json(value))


def content_hash(raw: bytes) -> str:
    """The content hash of a document version: SHA-256 of its raw bytes."""
    return sha256_hex(raw)


def short(full: str) -> str:
    """A fingerprint shortened for a Dagster tag value or a ``code_version``."""
    return full[:SHORT_LENGTH]


def chunker_hash(name: str, version: str, settings: BaseModel | Mapping[str, Any]) -> str:
    """Fingerprint of a chunker: its name, version and settings."""
    return fingerprint({"name": name, "version": version, "settings": settings_dict(settings)})


def settings_dict(settings: BaseModel | Mapping[str, Any]) -> Any:
    """A JSON-safe plain form of settings, for hashing."""
    if isinstance(settings, BaseModel):
        return settings.model_dump(mode="json")
    return dict(settings)
