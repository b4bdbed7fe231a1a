"""The warehouse: every generated file under one root, laid out by document id.

Layout (``<root>`` is a local path or an fsspec URI such as ``s3://bucket/prefix``)::

    <root>/raw/<document_id>/<content_hash>            the version's bytes (immutable)
    <root>/text/<document_id>/<content_hash>.txt       its text layer, UTF-8 (immutable)
    <root>/text/<document_id>/<content_hash>.layout.parquet   its page layout (PDF only)
    <root>/documents/<document_id>.json                the latest snapshotted version (Document)
    <root>/sections/<document_id>.parquet              the latest version's sections
    <root>/chunks/<document_id>.parquet                the latest version's chunks
    <root>/embeddings/<document_id>.parquet            the latest version's embeddings
    <root>/failures/<document_id>.json                 why the latest version failed, if it did
    <root>/locks/<document_id>.lock                    held while a write is checked and renamed

Raw bytes and text layers are content-addressed and kept, so a superseded chunk still names
text that can be read back; the per-document tables hold the latest version and are replaced
atomically. Paths never contain a user-supplied name, only ids and hashes.

What is read back is verified, never trusted: a raw snapshot against its content hash (a cut
short one is rewritten by the next snapshot and refused by a read), Parquet files through their
footer and page checksums, JSON records by parsing them. A damaged file raises
``DamagedFileError`` naming it, so the step that owns it rebuilds it from what is still sound;
a damaged record (``documents/``, ``failures/``) is set aside as ``<name>.corrupt-<time>`` and
treated as absent. Each repair is logged as a warning and listed in ``Warehouse.repairs``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Document
from agrag_pipeline.storage.atomic import (
    file_lock,
    remove_stale_temporaries,
    write_atomic,
    write_bytes_atomic,
)

#: The derived tables, in pipeline order (``graph_nodes``/``graph_edges``: the graph sink's;
#: ``entity_mentions``/``relation_mentions``: extraction's; ``entity_graph``: what the entity
#: graph step last wrote to the graph database, so the next write can take it back).
TABLES = (
    "sections",
    "chunks",
    "embeddings",
    "graph_nodes",
    "graph_edges",
    "entity_mentions",
    "relation_mentions",
    "entity_graph",
)

#: ``requires`` key that names the document record rather than a table.
DOCUMENT = "document"

log = logging.getLogger(__name__)


class DamagedFileError(Exception):
    """A stored file that cannot be read back as what it should be (truncated, corrupt,
    missing although its index says it exists). ``str()`` names the file."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path} is damaged: {problem}")
        self.path = path
        self.problem = problem


class InputChangedError(RuntimeError):
    """The input a step read was replaced by another version before the step could write."""


class Warehouse:
    """Reads and writes the warehouse layout under ``root`` (a path or an fsspec URI)."""

    def __init__(self, root: str, **storage_options: Any) -> None:
        self.root = root.rstrip("/")
        fs, base = fsspec.core.url_to_fs(self.root, **storage_options)
        self.fs: fsspec.AbstractFileSystem = fs
        self._base = base.rstrip("/")
        #: What this object repaired or set aside (also logged as warnings).
        self.repairs: list[str] = []

    # -- paths -------------------------------------------------------------------------------
    def raw_path(self, document_id: UUID, content_hash: str) -> str:
        return f"{self._base}/raw/{document_id}/{content_hash}"

    def text_path(self, document_id: UUID, content_hash: str) -> str:
        return f"{self._base}/text/{document_id}/{content_hash}.txt"

    def layout_path(self, document_id: UUID, content_hash: str) -> str:
        return f"{self._base}/text/{document_id}/{content_hash}.layout.parquet"

    def document_path(self, document_id: UUID) -> str:
        return f"{self._base}/documents/{document_id}.json"

    def table_path(self, table: str, document_id: UUID) -> str:
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}; expected one of {TABLES}")
        return f"{self._base}/{table}/{document_id}.parquet"

    def failure_path(self, document_id: UUID) -> str:
        return f"{self._base}/failures/{document_id}.json"

    def lock_path(self, document_id: UUID) -> str:
        return f"{self._base}/locks/{document_id}.lock"

    def uri(self, path: str) -> str:
        """A path as a user would paste it (with the protocol for remote stores)."""
        return self.fs.unstrip_protocol(path) if not self._is_local else path

    @property
    def _is_local(self) -> bool:
        return "file" in _protocols(self.fs)

    # -- repairs -----------------------------------------------------------------------------
    def report_repair(self, message: str) -> None:
        """Log ``message`` (a damaged file found, and what was done) and keep it in ``repairs``."""
        self.repairs.append(message)
        log.warning("%s", message)

    def set_aside(self, path: str, problem: str) -> str | None:
        """Rename a damaged file to ``<path>.corrupt-<UTC time>`` (kept for inspection)."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = f"{path}.corrupt-{stamp}"
        try:
            self.fs.mv(path, target)
        except FileNotFoundError:
            return None  # another process set it aside (or replaced it) first
        self.report_repair(f"{self.uri(path)} is damaged ({problem}); set aside as {target}")
        return target

    def remove_stale_temporaries(self, grace_s: float | None = None) -> list[str]:
        """Delete temporary files writers killed mid-write left behind (local roots only);
        a live writer's file is never touched (see ``atomic.remove_stale_temporaries``)."""
        if not self._is_local:
            return []  # object-store writes are single PUTs: they leave no temporaries
        folders = [f"{self._base}/{name}" for name in ("documents", "failures", *TABLES)]
        for layered in ("raw", "text"):
            with contextlib.suppress(FileNotFoundError):
                folders.extend(e.path for e in os.scandir(f"{self._base}/{layered}") if e.is_dir())
        kwargs = {} if grace_s is None else {"grace_s": grace_s}
        removed = remove_stale_temporaries(folders, **kwargs)
        for path in removed:
            log.info("removed %s, left by a writer that was killed", path)
        return removed

    # -- raw versions and text layers ---------------------------------------------------------
    def put_raw(self, document_id: UUID, content_hash: str, data: bytes) -> str:
        """Snapshot a version's bytes (written once; a stored copy that no longer matches its
        hash, e.g. cut short, is replaced by these bytes)."""
        path = self.raw_path(document_id, content_hash)
        if self.fs.exists(path):
            problem = self._raw_problem(path, content_hash)
            if problem is None:
                return path
            self.report_repair(f"{self.uri(path)} is damaged ({problem}); snapshotted again")
        write_bytes_atomic(self.fs, path, data)
        return path

    def get_raw(self, document_id: UUID, content_hash: str) -> bytes:
        """The snapshot's bytes, verified against its content hash.

        Raises:
            DamagedFileError: missing, or bytes that are not the version's (never parsed).
        """
        path = self.raw_path(document_id, content_hash)
        try:
            data = bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            raise DamagedFileError(
                self.uri(path), "the snapshot is missing; snapshot the document again"
            ) from None
        problem = _hash_problem(data, content_hash)
        if problem is not None:
            raise DamagedFileError(
                self.uri(path), f"{problem}; snapshot the document again (it is not parsed)"
            )
        return data

    def _raw_problem(self, path: str, expected_hash: str) -> str | None:
        try:
            return _hash_problem(bytes(self.fs.cat_file(path)), expected_hash)
        except FileNotFoundError:
            return "missing"

    def put_text_layer(self, document_id: UUID, content_hash: str, text: str) -> str:
        """Store a version's text layer (immutable; a stored copy that differs is replaced)."""
        path = self.text_path(document_id, content_hash)
        data = text.encode("utf-8", "surrogatepass")
        if self.fs.exists(path):
            try:
                if bytes(self.fs.cat_file(path)) == data:
                    return path
            except FileNotFoundError:
                pass
            self.report_repair(f"{self.uri(path)} differed from its version's text; rewritten")
        write_bytes_atomic(self.fs, path, data)
        return path

    def get_text_layer(
        self, document_id: UUID, content_hash: str, *, sha256: str | None = None
    ) -> str:
        """The text layer; with ``sha256`` (recorded with the sections) it is verified.

        Raises:
            DamagedFileError: missing, not UTF-8, or not the text the sections were built on.
        """
        path = self.text_path(document_id, content_hash)
        try:
            data = bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            raise DamagedFileError(self.uri(path), "the text layer is missing") from None
        if sha256 is not None and content_hash_of(data) != sha256:
            raise DamagedFileError(
                self.uri(path), "its SHA-256 is not the one recorded with the sections"
            )
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise DamagedFileError(self.uri(path), f"not UTF-8: {exc}") from None

    def put_layout(self, document_id: UUID, content_hash: str, data: pa.Table) -> str:
        path = self.layout_path(document_id, content_hash)
        write_atomic(self.fs, path, lambda handle: _write_parquet(data, handle))
        return path

    def get_layout(self, document_id: UUID, content_hash: str) -> pa.Table | None:
        path = self.layout_path(document_id, content_hash)
        if not self.fs.exists(path):
            return None
        return self._read_parquet(path)

    # -- the current version of each document -------------------------------------------------
    def put_document(self, document: Document) -> str:
        """Record ``document`` as the latest snapshotted version of its logical document."""
        assert document.id is not None  # Document always derives its id
        path = self.document_path(document.id)
        with file_lock(self.fs, self.lock_path(document.id)):
            write_bytes_atomic(self.fs, path, document.model_dump_json(indent=2).encode())
        return path

    def get_document(self, document_id: UUID) -> Document | None:
        """The latest snapshotted version, or None; a record that is not a valid Document is
        set aside (so the next snapshot writes a sound one) and reads as None."""
        path = self.document_path(document_id)
        document, problem = self._read_document(path)
        if problem is not None:
            self.set_aside(path, problem)
        return document

    def _read_document(self, path: str) -> tuple[Document | None, str | None]:
        try:
            data = self.fs.cat_file(path)
        except FileNotFoundError:
            return None, None
        try:
            return Document.model_validate_json(data), None
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            return None, f"not a Document record: {_first_line(exc)}"

    def remove_document(self, document_id: UUID) -> None:
        path = self.document_path(document_id)
        if self.fs.exists(path):
            self.fs.rm(path)

    # -- per-document tables ------------------------------------------------------------------
    def write_table(
        self,
        table: str,
        document_id: UUID,
        data: pa.Table,
        *,
        requires: Mapping[str, Mapping[str, str]] | None = None,
    ) -> str:
        """Replace a document's table atomically. Fingerprints travel in the schema metadata.

        ``requires`` names the inputs the table was built from and the metadata they had when
        read (``{"chunks": {"content_hash": ..., "chunker_hash": ...}}``; ``"document"`` for
        the document record). Under the document's lock, just before the rename, they are read
        again: if another writer replaced one meanwhile, nothing is written and
        ``InputChangedError`` says which input changed.
        """
        path = self.table_path(table, document_id)

        def check() -> None:
            for source, wanted in (requires or {}).items():
                found = self._current_metadata(source, document_id)
                changed = {k: v for k, v in wanted.items() if (found or {}).get(k, "") != v}
                if changed:
                    now = {k: (found or {}).get(k, "(none)")[:12] for k in changed}
                    raise InputChangedError(
                        f"{self.uri(path)} not written: the {source} it was built from were "
                        f"replaced meanwhile by another writer (read {_short(changed)}, now "
                        f"{_short(now)})"
                    )

        with file_lock(self.fs, self.lock_path(document_id)):
            write_atomic(
                self.fs,
                path,
                lambda handle: _write_parquet(data, handle),
                before_replace=check if requires else None,
            )
        return path

    def _current_metadata(self, source: str, document_id: UUID) -> dict[str, str] | None:
        if source == DOCUMENT:
            document, _ = self._read_document(self.document_path(document_id))
            return None if document is None else {"content_hash": document.content_hash}
        try:
            return self.table_metadata(source, document_id)
        except DamagedFileError:
            return None

    def read_table(self, table: str, document_id: UUID) -> pa.Table:
        """A document's table, its page checksums verified.

        Raises:
            FileNotFoundError: no such table.
            DamagedFileError: a file that is not whole, valid Parquet.
        """
        return self._read_parquet(self.table_path(table, document_id))

    def table_metadata(self, table: str, document_id: UUID) -> dict[str, str] | None:
        """The ``agrag.*`` metadata of a document's table (reads only the footer), or None.

        Raises:
            DamagedFileError: the footer cannot be read (a truncated or garbage file).
        """
        from agrag_pipeline.storage.tables import read_metadata

        path = self.table_path(table, document_id)
        try:
            with self.fs.open(path, "rb") as handle:
                schema = pq.read_schema(handle)
        except FileNotFoundError:
            return None
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _not_parquet(self.uri(path), exc) from None
        return read_metadata(schema)

    def _read_parquet(self, path: str) -> pa.Table:
        with self.fs.open(path, "rb") as handle:
            data = handle.read()
        try:
            return pq.read_table(io.BytesIO(data), page_checksum_verification=True)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _not_parquet(self.uri(path), exc) from None

    def has_table(self, table: str, document_id: UUID) -> bool:
        return bool(self.fs.exists(self.table_path(table, document_id)))

    def remove_outputs(self, document_id: UUID) -> list[str]:
        """Remove a document's derived tables and failure record (raw snapshots are kept)."""
        removed = []
        for path in [self.table_path(t, document_id) for t in TABLES] + [
            self.failure_path(document_id)
        ]:
            if self.fs.exists(path):
                self.fs.rm(path)
                removed.append(path)
        return removed

    # -- failures -----------------------------------------------------------------------------
    def record_failure(self, document_id: UUID, step: str, record: dict[str, Any]) -> str:
        """Record why ``step`` failed for the document's latest version (one entry per step)."""
        failures = self.read_failures(document_id)
        failures[step] = record
        return self._write_failures(document_id, failures)

    def clear_failure(self, document_id: UUID, step: str) -> None:
        path = self.failure_path(document_id)
        if not self.fs.exists(path):
            return
        failures = self.read_failures(document_id)
        if failures.pop(step, None) is None:
            return
        if failures:
            self._write_failures(document_id, failures)
        else:
            self.fs.rm(path)

    def read_failures(self, document_id: UUID) -> dict[str, dict[str, Any]]:
        """step -> failure record, for the steps that failed on the latest version; a record
        file that is not a JSON object of records is set aside and reads as none."""
        path = self.failure_path(document_id)
        try:
            data = self.fs.cat_file(path)
        except FileNotFoundError:
            return {}
        try:
            failures = json.loads(data)
            if not isinstance(failures, dict) or not all(
                isinstance(v, dict) for v in failures.values()
            ):
                raise ValueError("not a JSON object of failure records")
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            self.set_aside(path, _first_line(exc))
            return {}
        return failures

    def _write_failures(self, document_id: UUID, failures: dict[str, Any]) -> str:
        path = self.failure_path(document_id)
        write_bytes_atomic(self.fs, path, json.dumps(failures, sort_keys=True, indent=2).encode())
        return path


def content_hash_of(data: bytes) -> str:
    """The SHA-256 a text layer is recorded with (the same function as content hashes)."""
    return content_hash(data)


def _write_parquet(data: pa.Table, handle: Any) -> None:
    pq.write_table(data, handle, write_page_checksum=True)


def _hash_problem(data: bytes, expected_hash: str) -> str | None:
    actual = content_hash(data)
    if actual == expected_hash:
        return None
    return f"its {len(data):,} bytes hash to {actual[:12]}, not to {expected_hash[:12]}"


def _not_parquet(path: str, exc: BaseException) -> DamagedFileError:
    return DamagedFileError(path, f"not a whole Parquet file: {_first_line(exc)}")


def _short(values: Mapping[str, str]) -> str:
    return ", ".join(f"{k} {v[:12]}" for k, v in values.items())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)
