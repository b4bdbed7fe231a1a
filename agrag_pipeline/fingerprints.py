"""Fingerprints: canonical JSON and the SHA-256 hashes that tie every output to its inputs.

One function (``canonical_json``) makes the bytes every fingerprint hashes, so the same settings
written in another key order, or loaded from YAML instead of built in code, give the same hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
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
