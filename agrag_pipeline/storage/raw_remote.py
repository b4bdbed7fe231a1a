"""A raw root on object storage (``s3://bucket/prefix`` or any fsspec URI): scanned by listing.

The scan is one paginated LIST: each object's size, ETag and last-modified time come from it,
and no unchanged object is downloaded. Only an object not seen before (or whose ETag changed)
is read, and only its first ``HEAD_BYTES`` (one ranged GET), to detect its media type; what was
detected is remembered per (object, ETag, size) for the life of the process, so a sensor's
repeated ticks list and nothing more. The snapshot step reads an object's bytes through fsspec
(``read_object``), refusing one over the size limit before reading it.

The rules of the local scan hold: a source key is the object's path under the prefix, keys that
cannot be Dagster partition keys are refused naming the object, hidden names (a component
starting with ``.``) are skipped, and the ``documents:`` include/exclude globs apply.

Reads never leave the root, as on a local disk: an object store has no symlinks, so the
guarantee is that a key names exactly one object under the root's prefix. A key is validated
before it is joined to the root (``object_uri``: no ``..``, ``.`` or empty component, no leading
``/``, no backslash), and the joined URI is read as a literal path (``_object_path``), never
re-parsed as an fsspec chain (``a::file:/etc/passwd`` is one object's key, not two URLs).

A ``Path`` made from a URI loses a slash (``s3:/bucket/raw``); ``object_root_uri`` reads both
forms, so callers that hold the raw root as a ``Path`` pass it unchanged. Credentials and the
endpoint come from the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_ENDPOINT_URL``), as for the warehouse; never from the settings file.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec

from agrag_pipeline.source_keys import (
    HEAD_BYTES,
    FileTooLargeError,
    SavedPageFolders,
    ScanProblem,
    ScanResult,
    SourceFile,
    default_detect,
    display_name,
    source_key_problem,
    validate_source_key,
)

if TYPE_CHECKING:
    from agrag_pipeline.settings import DocumentsSettings

#: ``protocol:/rest`` or ``protocol://rest``; two letters at least, so no drive letter matches.
_URI = re.compile(r"^(?P<protocol>[A-Za-z][A-Za-z0-9+.-]+):/+(?P<rest>.+)$")
#: Media types detected per (object path, ETag, size); bounded so a huge bucket cannot grow it.
_DETECTED: OrderedDict[tuple[str, str, int], tuple[str | None, str | None]] = OrderedDict()
MAX_REMEMBERED = 500_000


def object_root_uri(raw_root: str | Path) -> str | None:
    """``raw_root`` as a URI when it names an object store, else None (a local folder)."""
    match = _URI.match(str(raw_root))
    if match is None or match["protocol"].lower() == "file":
        return None
    return f"{match['protocol'].lower()}://{match['rest'].rstrip('/')}"


@dataclass(frozen=True, slots=True)
class ObjectSourceFile(SourceFile):
    """A document in a bucket. ``path`` is the object's path in the store (``root``: the
    prefix's); ``mtime_ns`` is the
    last-modified time (whole seconds on S3) with a digest of the ETag in its sub-second
    digits, so an object overwritten in the same second with the same size still differs."""

    uri: str = ""
    etag: str = ""

    def read(self, max_bytes: int | None = None) -> bytes:
        return read_object(self.uri, max_bytes)


def scan_object_root(
    root_uri: str,
    documents: DocumentsSettings | None = None,
    *,
    detect: Callable[[str, bytes], tuple[str | None, str | None]] | None = None,
    fs: fsspec.AbstractFileSystem | None = None,
) -> ScanResult:
    """Every document under the prefix (sorted by key) and each object that is not one."""
    if fs is None:
        fs, base = fsspec.core.url_to_fs(root_uri)
    else:
        base = fs._strip_protocol(root_uri)
    base = base.rstrip("/")
    if detect is None:
        detect = default_detect()
    try:
        listing: dict[str, dict[str, Any]] = fs.find(base, detail=True)
    except FileNotFoundError:
        listing = {}
    if not listing and not fs.exists(base):
        raise FileNotFoundError(f"the raw root {root_uri} does not exist (no such bucket)")
    result = ScanResult()
    saved_pages = SavedPageFolders(
        (path[len(base) + 1 :] for path in listing),
        skip=documents is None or documents.skip_saved_page_folders,
    )
    for path, info in sorted(listing.items()):
        if info.get("type", "file") != "file" or not path.startswith(base + "/"):
            continue
        key = path[len(base) + 1 :]
        if any(part.startswith(".") for part in key.split("/")):
            continue  # hidden, as on a local disk
        saved_page = saved_pages.skipped(key)
        if saved_page is not None:  # skipped as the local scan skips it: once, as a folder
            folder, reason = saved_page
            if reason is not None:
                result.skipped.append(ScanProblem(display_name(folder + "/"), reason))
            continue
        problem = source_key_problem(key)
        if problem:
            result.refused.append(ScanProblem(display_name(key), problem))
            continue
        reason = documents.skip_reason(key) if documents is not None else None
        if reason:
            result.skipped.append(ScanProblem(display_name(key), reason, key))
            continue
        size = int(info.get("size") or 0)
        etag = str(info.get("ETag") or info.get("etag") or "").strip('"')
        remembered = (path, etag, size)
        detected = _DETECTED.get(remembered) if etag else None
        if detected is None:
            try:
                head = bytes(fs.cat_file(path, start=0, end=HEAD_BYTES))
            except FileNotFoundError:
                result.skipped.append(ScanProblem(display_name(key), "it vanished during the scan"))
                continue
            except OSError as exc:
                result.refused.append(ScanProblem(display_name(key), f"cannot be read: {exc}", key))
                continue
            detected = detect(key, head)
            _remember(remembered, detected)
        media_type, why = detected
        if media_type is None:
            result.skipped.append(ScanProblem(display_name(key), why or "no parser reads it", key))
            continue
        uri = fs.unstrip_protocol(path)
        mtime_ns = _mtime_ns(info, etag)
        result.files.append(
            ObjectSourceFile(key, base, size, mtime_ns, media_type, uri=uri, etag=etag)
        )
    return result


def object_uri(root_uri: str, source_key: str) -> str:
    """The object of ``source_key`` under the root (raises ``SourceKeyError`` for a bad key)."""
    return f"{root_uri.rstrip('/')}/{validate_source_key(source_key)}"


def read_object(uri: str, max_bytes: int | None = None) -> bytes:
    """An object's bytes; one larger than ``max_bytes`` is refused before it is downloaded.

    Raises:
        FileTooLargeError: over ``max_bytes`` (by its listed size, or by what arrived).
        FileNotFoundError: no such object.
    """
    fs, path = _object_path(uri)
    if max_bytes is not None:
        size = int(fs.info(path).get("size") or 0)
        if size > max_bytes:
            raise FileTooLargeError(size, max_bytes)
    data = bytes(fs.cat_file(path))
    if max_bytes is not None and len(data) > max_bytes:  # replaced by a larger one meanwhile
        raise FileTooLargeError(len(data), max_bytes)
    return data


def _object_path(uri: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The store and the object path ``uri`` names, read literally, as ``url_to_fs`` does but
    for chains: it reads a key holding ``::`` as a chain of file systems, and then fetches
    another object (``<root>/x`` for the key ``x::file:/etc/passwd``) or fails."""
    match = _URI.match(uri)
    if match is None:
        raise ValueError(f"{uri} is not an object-store URI")
    protocol = match["protocol"].lower()
    options = fsspec.get_filesystem_class(protocol)._get_kwargs_from_urls(uri)
    fs = fsspec.filesystem(protocol, **options)
    return fs, fs._strip_protocol(uri)


def _remember(key: tuple[str, str, int], detected: tuple[str | None, str | None]) -> None:
    if not key[1]:
        return  # no ETag: nothing to tell a changed object by
    _DETECTED[key] = detected
    while len(_DETECTED) > MAX_REMEMBERED:
        _DETECTED.popitem(last=False)


def _mtime_ns(info: dict[str, Any], etag: str) -> int:
    modified = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
    if isinstance(modified, datetime):
        seconds = int(modified.timestamp())
    elif isinstance(modified, int | float):
        seconds = int(modified)
    else:
        seconds = 0
    digest = int(hashlib.sha256(etag.encode()).hexdigest()[:8], 16) % 1_000_000_000
    return seconds * 1_000_000_000 + digest
