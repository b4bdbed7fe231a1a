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

Raw bytes and text layers are content-addressed and kept, so a superseded chunk still names
text that can be read back; the per-document tables hold the latest version and are replaced
atomically. Paths never contain a user-supplied name, only ids and hashes.
"""

from __future__ import annotations

import io
import json
from typing import Any
from uuid import UUID

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from agrag_pipeline.models import Document
from agrag_pipeline.storage.atomic import write_atomic, write_bytes_atomic

#: The derived tables, in pipeline order.
TABLES = ("sections", "chunks", "embeddings")


class Warehouse:
    """Reads and writes the warehouse layout under ``root`` (a path or an fsspec URI)."""

    def __init__(self, root: str, **storage_options: Any) -> None:
        self.root = root.rstrip("/")
        fs, base = fsspec.core.url_to_fs(self.root, **storage_options)
        self.fs: fsspec.AbstractFileSystem = fs
        self._base = base.rstrip("/")

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

    def uri(self, path: str) -> str:
        """A path as a user would paste it (with the protocol for remote stores)."""
        return self.fs.unstrip_protocol(path) if not self._is_local else path

    @property
    def _is_local(self) -> bool:
        return "file" in _protocols(self.fs)

    # -- raw versions and text layers ---------------------------------------------------------
    def put_raw(self, document_id: UUID, content_hash: str, data: bytes) -> str:
        """Snapshot a version's bytes (idempotent: a version is written once)."""
        path = self.raw_path(document_id, content_hash)
        if not self.fs.exists(path):
            write_bytes_atomic(self.fs, path, data)
        return path

    def get_raw(self, document_id: UUID, content_hash: str) -> bytes:
        return bytes(self.fs.cat_file(self.raw_path(document_id, content_hash)))

    def put_text_layer(self, document_id: UUID, content_hash: str, text: str) -> str:
        path = self.text_path(document_id, content_hash)
        if not self.fs.exists(path):
            write_bytes_atomic(self.fs, path, text.encode("utf-8", "surrogatepass"))
        return path

    def get_text_layer(self, document_id: UUID, content_hash: str) -> str:
        return bytes(self.fs.cat_file(self.text_path(document_id, content_hash))).decode(
            "utf-8", "surrogatepass"
        )

    def put_layout(self, document_id: UUID, content_hash: str, data: pa.Table) -> str:
        path = self.layout_path(document_id, content_hash)
        write_atomic(self.fs, path, lambda handle: pq.write_table(data, handle))
        return path

    def get_layout(self, document_id: UUID, content_hash: str) -> pa.Table | None:
        path = self.layout_path(document_id, content_hash)
        if not self.fs.exists(path):
            return None
        with self.fs.open(path, "rb") as handle:
            return pq.read_table(io.BytesIO(handle.read()))

    # -- the current version of each document -------------------------------------------------
    def put_document(self, document: Document) -> str:
        """Record ``document`` as the latest snapshotted version of its logical document."""
        assert document.id is not None  # Document always derives its id
        path = self.document_path(document.id)
        write_bytes_atomic(self.fs, path, document.model_dump_json(indent=2).encode())
        return path

    def get_document(self, document_id: UUID) -> Document | None:
        path = self.document_path(document_id)
        if not self.fs.exists(path):
            return None
        return Document.model_validate_json(self.fs.cat_file(path))

    def remove_document(self, document_id: UUID) -> None:
        path = self.document_path(document_id)
        if self.fs.exists(path):
            self.fs.rm(path)

    # -- per-document tables ------------------------------------------------------------------
    def write_table(self, table: str, document_id: UUID, data: pa.Table) -> str:
        """Replace a document's table atomically. Fingerprints travel in the schema metadata."""
        path = self.table_path(table, document_id)
        write_atomic(self.fs, path, lambda handle: pq.write_table(data, handle))
        return path

    def read_table(self, table: str, document_id: UUID) -> pa.Table:
        path = self.table_path(table, document_id)
        with self.fs.open(path, "rb") as handle:
            return pq.read_table(io.BytesIO(handle.read()))

    def table_metadata(self, table: str, document_id: UUID) -> dict[str, str] | None:
        """The ``agrag.*`` metadata of a document's table (reads only the footer), or None."""
        from agrag_pipeline.storage.tables import read_metadata

        path = self.table_path(table, document_id)
        if not self.fs.exists(path):
            return None
        with self.fs.open(path, "rb") as handle:
            return read_metadata(pq.read_schema(handle))

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
        """step -> failure record, for the steps that failed on the latest version."""
        path = self.failure_path(document_id)
        if not self.fs.exists(path):
            return {}
        return dict(json.loads(self.fs.cat_file(path)))

    def _write_failures(self, document_id: UUID, failures: dict[str, Any]) -> str:
        path = self.failure_path(document_id)
        write_bytes_atomic(self.fs, path, json.dumps(failures, sort_keys=True, indent=2).encode())
        return path


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)
