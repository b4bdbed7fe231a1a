"""The warehouse: every generated file under one root, laid out by document id.

Layout (``<root>`` is a local path or an fsspec URI such as ``s3://bucket/prefix``)::

    <root>/raw/<document_id>/<content_hash>            the version's bytes (immutable)
    <root>/text/<document_id>/<content_hash>.txt       its text layer, UTF-8 (immutable)
    <root>/text/<document_id>/<content_hash>.layout.parquet   its page layout (PDF only)
    <root>/documents/<document_id>.json                the latest snapshotted version (Document)
    <root>/sections/<document_id>.parquet              the latest version's sections
    <root>/chunks/<document_id>.parquet                the latest version's chunks
    <root>/embeddings/<document_id>.parquet            the latest version's embeddings
    <root>/failures/<document_id>.json                 why a step failed on the latest version
    <root>/locks/<document_id>.lock                    held while a write is checked and renamed

Raw bytes and text layers are content-addressed and kept, so a superseded chunk still names
text that can be read back; the per-document tables hold the latest version and are replaced
atomically. Paths never contain a user-supplied name, only ids and hashes.

What is read back is verified, never trusted: a raw snapshot against its content hash (a cut
short one is rewritten by the next snapshot and refused by a read), Parquet files through their
footer and page checksums, JSON records by parsing them. A damaged file raises
``DamagedFileError`` naming it, so the step that owns it rebuilds it from what is still sound;
a damaged record (``documents/``, ``failures/``) or page layout is set aside as
``<name>.corrupt-<time>`` and treated as absent. Each repair is logged as a warning and listed in
``Warehouse.repairs``.

A failure record names the version it is about (``content_hash``: the version the failing step
read through this warehouse), and every change to it is a read-modify-write under the document's
lock: a failure of a version another writer has since replaced is not recorded, a new version's
snapshot drops the records of the old one, and a success clears the records of the steps it
vouches for (``VOUCHES_FOR``), so a document that succeeded never shows a failure.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
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

#: The folders of files named ``<document_id>.<suffix>`` that hold a document's current outputs
#: (raw snapshots and text layers are content-addressed history, kept when a document goes).
HELD = (("documents", ".json"), ("failures", ".json"), *((t, ".parquet") for t in TABLES))

#: The failure records a step's success makes stale, for the version it succeeded on: its own,
#: and those of the steps whose output it could not have succeeded without (each reads its
#: predecessor's output of that version). ``core`` (``agrag core``) runs the first steps in one
#: and embeds only when asked, so a chunks success does not vouch for it but an embeddings one
#: does; the Dagster steps and ``core`` clear each other's records that way. A step not named
#: here (``search_index``, which succeeds by removing the rows of a document without chunks)
#: clears its own record only.
_THROUGH_CHUNKS = ("raw_documents", "sections", "chunks")
VOUCHES_FOR: dict[str, tuple[str, ...]] = {
    "raw_documents": ("raw_documents",),
    "sections": ("raw_documents", "sections"),
    "chunks": _THROUGH_CHUNKS,
    "core": (*_THROUGH_CHUNKS, "core"),
    "embeddings": (*_THROUGH_CHUNKS, "core", "embeddings"),
    "graph": (*_THROUGH_CHUNKS, "graph"),
}

#: A file named by a document id (canonical lower-case UUID) and one of the suffixes of HELD.
_ID_NAMED = re.compile(r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(\.\w+)$")

#: Where a record names its document's source key (read from a damaged record's bytes).
_SOURCE_KEY = re.compile(rb'"source_key"\s*:\s*("(?:[^"\\]|\\.)*")')

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


#: Documents whose version a ``Warehouse`` remembers (the most recently read or written): far
#: more than a step works on between reading a record and recording its outcome, and flat
#: (about 1 MB) however many documents one object sees. A forgotten one is recorded without
#: its version, which no later version supersedes.
RECENT_VERSIONS = 4096


class _RecentVersions(OrderedDict[UUID, str]):
    """document id -> content hash, the least recently set dropped beyond ``limit``."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, document_id: UUID, version: str) -> None:
        super().__setitem__(document_id, version)
        self.move_to_end(document_id)
        while len(self) > self.limit:
            self.popitem(last=False)


class Warehouse:
    """Reads and writes the warehouse layout under ``root`` (a path or an fsspec URI)."""

    def __init__(self, root: str, **storage_options: Any) -> None:
        self.root = root.rstrip("/")
        fs, base = fsspec.core.url_to_fs(self.root, **storage_options)
        self.fs: fsspec.AbstractFileSystem = fs
        self._base = base.rstrip("/")
        #: What this object repaired or set aside (also logged as warnings).
        self.repairs: list[str] = []
        #: The version of each document this object last read or wrote the record of: what a
        #: step working through it is working on, so a failure it records names that version.
        #: The most recent ``RECENT_VERSIONS`` only: a worker's warehouse lives for a whole run.
        self._versions: _RecentVersions = _RecentVersions(RECENT_VERSIONS)

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

    def get_layout(
        self, document_id: UUID, content_hash: str, *, spans: int | None = None
    ) -> pa.Table | None:
        """A version's page layout (None: it has none), verified by its page checksums and,
        with ``spans`` (the count recorded with the sections), by its length.

        Raises:
            DamagedFileError: missing although ``spans`` says there is one, or not whole,
                valid Parquet of ``spans`` rows; a damaged file is set aside first, so the
                sections step writes a sound one in its place.
        """
        path = self.layout_path(document_id, content_hash)
        if not self.fs.exists(path):
            if spans:
                raise DamagedFileError(
                    self.uri(path),
                    f"the page layout of {spans} spans the sections record is missing",
                )
            return None
        try:
            table = self._read_parquet(path)
            if spans is not None and table.num_rows != spans:
                raise DamagedFileError(
                    self.uri(path),
                    f"{table.num_rows} spans, not the {spans} recorded with the sections",
                )
        except DamagedFileError as exc:
            aside = self.set_aside(path, exc.problem)
            raise DamagedFileError(
                self.uri(path), f"{exc.problem}; set aside as {aside}" if aside else exc.problem
            ) from None
        return table

    # -- the current version of each document -------------------------------------------------
    def put_document(self, document: Document) -> str:
        """Record ``document`` as the latest snapshotted version of its logical document."""
        assert document.id is not None  # Document always derives its id
        path = self.document_path(document.id)
        with file_lock(self.fs, self.lock_path(document.id)):
            write_bytes_atomic(self.fs, path, document.model_dump_json(indent=2).encode())
            self._versions[document.id] = document.content_hash
            # The failures of the version this one replaces are about a version that is gone;
            # dropping them is housekeeping, which never fails the snapshot (the step that
            # records or clears the next failure reports a record it cannot write).
            try:
                if self.fs.exists(self.failure_path(document.id)):
                    self._change_failures_locked(document.id, lambda _failures, _current: False)
            except OSError as exc:
                log.warning(
                    "%s: could not drop the failure records of the versions before %s: %s",
                    document.source_key,
                    document.content_hash[:12],
                    exc,
                )
        return path

    def get_document(self, document_id: UUID) -> Document | None:
        """The latest snapshotted version, or None; a record that is not a valid Document is
        set aside (so the next snapshot writes a sound one) and reads as None."""
        path = self.document_path(document_id)
        document, problem = self._read_document(path)
        if problem is not None:
            self.set_aside(path, problem)
        if document is not None:
            self._versions[document_id] = document.content_hash
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

    def read_table(
        self, table: str, document_id: UUID, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """A document's table (or only ``columns`` of it), its page checksums verified.

        Raises:
            FileNotFoundError: no such table.
            DamagedFileError: a file that is not whole, valid Parquet.
        """
        return self._read_parquet(self.table_path(table, document_id), columns)

    def table_metadata(self, table: str, document_id: UUID) -> dict[str, str] | None:
        """The ``agrag.*`` metadata of a document's table (reads only the footer), or None.

        Raises:
            DamagedFileError: the footer cannot be read (a truncated or garbage file).
        """
        from agrag_pipeline.storage.tables import read_metadata

        path = self.table_path(table, document_id)

        def footer() -> pa.Schema:
            with self.fs.open(path, "rb") as handle:
                return pq.read_schema(handle)

        try:
            schema = _read_one_version(footer, lambda: self.fs.invalidate_cache(path))
        except FileNotFoundError:
            return None
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _not_parquet(self.uri(path), exc) from None
        return read_metadata(schema)

    def _read_parquet(self, path: str, columns: Sequence[str] | None = None) -> pa.Table:
        def whole() -> bytes:
            with self.fs.open(path, "rb") as handle:
                return bytes(handle.read())

        data = _read_one_version(whole, lambda: self.fs.invalidate_cache(path))
        try:
            return pq.read_table(
                io.BytesIO(data),
                columns=None if columns is None else list(columns),
                page_checksum_verification=True,
            )
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

    # -- finding a document's outputs from its id --------------------------------------------
    def held_document_ids(self) -> dict[UUID, list[str]]:
        """Every document id that a current output is stored under (its record, in whatever
        state, its failure record, any of its tables), with those paths: every place, not
        only the records, so a document whose record is damaged or missing is still found.
        One listing per folder; no file is opened."""
        held: dict[str, list[str]] = {}
        for folder, suffix in HELD:
            for document_id in self._ids_in(folder, suffix):
                held.setdefault(document_id, []).append(
                    f"{self._base}/{folder}/{document_id}{suffix}"
                )
        return {UUID(document_id): paths for document_id, paths in sorted(held.items())}

    def held_ids(self) -> Iterator[UUID]:
        """The ids ``held_document_ids`` finds, in the same order, without their paths: a
        scan of a large warehouse holds one id string per document, not a path per output
        (~650 bytes a document at its peak)."""
        held: set[str] = set()
        for folder, suffix in HELD:
            held.update(self._ids_in(folder, suffix))
        for document_id in sorted(held):
            yield UUID(document_id)

    def ids_with_tables(self, *tables: str) -> set[UUID]:
        """The documents that hold every one of ``tables``: one listing per table's folder, the
        other folders not read (a graph reconciliation needs two of ten)."""
        for table in tables:
            if table not in TABLES:
                raise ValueError(f"unknown table {table!r}; expected one of {TABLES}")
        found: set[str] | None = None
        for table in tables:
            ids = set(self._ids_in(table, ".parquet"))
            found = ids if found is None else found & ids
        return {UUID(document_id) for document_id in found or ()}

    def held_paths(self, document_id: UUID) -> list[str]:
        """The places ``held_document_ids`` names for one document (for a message)."""
        names = [(f"{self._base}/{folder}", f"{document_id}{suffix}") for folder, suffix in HELD]
        return [f"{where}/{name}" for where, name in names if self.fs.exists(f"{where}/{name}")]

    def _ids_in(self, folder: str, suffix: str) -> Iterator[str]:
        for name in self._names_in(f"{self._base}/{folder}"):
            match = _ID_NAMED.match(name)
            if match is not None and match.group(2) == suffix:
                yield match.group(1)

    def _names_in(self, folder: str) -> list[str]:
        try:
            if self._is_local:
                return os.listdir(folder)
            return [path.rsplit("/", 1)[-1] for path in self.fs.ls(folder, detail=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def named_source_keys(self, document_id: UUID) -> Iterator[tuple[str, str]]:
        """(source key, the file it was read from) from every stored place that names one for
        the document, cheapest first: its record (a damaged one's bytes searched for the key),
        its failure records, its tables' footers, its chunks' rows, its records set aside. A
        place that cannot be read is passed over. The caller checks each key against the id."""
        record = self.document_path(document_id)
        yield from self._keys_in_record(record)
        for failure in self._read_failures_quietly(document_id).values():
            if isinstance(failure.get("source_key"), str):
                yield failure["source_key"], self.failure_path(document_id)
        for table in TABLES:
            try:
                meta = self.table_metadata(table, document_id)
            except DamagedFileError:
                continue
            if meta and meta.get("source_key"):
                yield meta["source_key"], self.table_path(table, document_id)
        yield from self._keys_in_chunk_rows(document_id)
        for aside in sorted(self.fs.glob(f"{record}.corrupt-*")):
            yield from self._keys_in_record(aside)

    def _keys_in_record(self, path: str) -> Iterator[tuple[str, str]]:
        try:
            data = bytes(self.fs.cat_file(path))
        except (FileNotFoundError, IsADirectoryError):
            return
        for match in _SOURCE_KEY.finditer(data):
            with contextlib.suppress(ValueError):
                key = json.loads(match.group(1))
                if isinstance(key, str):
                    yield key, path

    def _read_failures_quietly(self, document_id: UUID) -> dict[str, Any]:
        """The failure records as stored, without setting a damaged file aside."""
        try:
            failures = json.loads(self.fs.cat_file(self.failure_path(document_id)))
        except (FileNotFoundError, IsADirectoryError, ValueError):
            return {}
        if not isinstance(failures, dict):
            return {}
        return {k: v for k, v in failures.items() if isinstance(v, dict)}

    def _keys_in_chunk_rows(self, document_id: UUID) -> Iterator[tuple[str, str]]:
        path = self.table_path("chunks", document_id)
        try:
            with self.fs.open(path, "rb") as handle:
                column = pq.read_table(handle, columns=["source_key"]).column("source_key")
        except (FileNotFoundError, KeyError, pa.ArrowException, OSError, ValueError):
            return
        for key in column.unique().to_pylist():
            if isinstance(key, str):
                yield key, path

    # -- failures -----------------------------------------------------------------------------
    def record_failure(self, document_id: UUID, step: str, record: dict[str, Any]) -> str | None:
        """Record why ``step`` failed (one entry per step), naming the version it failed on:
        the one this warehouse object last read or wrote the record of (``content_hash``).

        Under the document's lock. A failure of a version another writer has replaced since is
        not recorded (None is returned): it is about a version that is no longer the document.
        """
        version = record.get("content_hash") or self._versions.get(document_id)
        entry = {**record, "content_hash": version} if version else dict(record)

        def add(failures: dict[str, dict[str, Any]], current: str | None) -> bool:
            if version and current and version != current:
                log.info(
                    "%s: the failure of %s on version %s is not recorded: version %s is current",
                    record.get("source_key", document_id),
                    step,
                    version[:12],
                    current[:12],
                )
                return False
            failures[step] = entry
            return True

        return self._change_failures(document_id, add)

    def clear_failure(self, document_id: UUID, step: str) -> None:
        """``step`` succeeded: clear the failure records it makes stale (``VOUCHES_FOR``) of
        the version it succeeded on, and any record of a version that is no longer current."""
        if not self.fs.exists(self.failure_path(document_id)):
            return
        version = self._versions.get(document_id)
        vouched = set(VOUCHES_FOR.get(step, (step,)))

        def clear(failures: dict[str, dict[str, Any]], current: str | None) -> bool:
            if version and current and version != current:
                return True  # a success of a replaced version says nothing of the current one
            for name in [n for n, f in failures.items() if n in vouched]:
                if failures[name].get("content_hash") in (None, version):
                    del failures[name]
            return True

        self._change_failures(document_id, clear)

    def read_failures(self, document_id: UUID) -> dict[str, dict[str, Any]]:
        """step -> failure record, for the steps that failed on the latest version (records of
        another version are left out); a record file that is not a JSON object of records is
        set aside and reads as none."""
        failures = self._read_failures(document_id)
        current = self._current_version(document_id) if failures else None
        return {k: v for k, v in failures.items() if not _superseded(v, current)}

    def _read_failures(self, document_id: UUID) -> dict[str, dict[str, Any]]:
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

    def _current_version(self, document_id: UUID) -> str | None:
        document, _ = self._read_document(self.document_path(document_id))
        return None if document is None else document.content_hash

    def _change_failures(self, document_id: UUID, change: FailuresChange) -> str | None:
        """Read, change and write back the document's failure records under its lock (the
        lock a snapshot and a table write hold too), so that two writers never lose each
        other's change. Returns the record file's path if ``change`` recorded something."""
        with file_lock(self.fs, self.lock_path(document_id)):
            return self._change_failures_locked(document_id, change)

    def _change_failures_locked(self, document_id: UUID, change: FailuresChange) -> str | None:
        """``change(failures, current_version)`` edits ``failures`` in place and says whether
        it recorded one; records of a version other than the current one are dropped either
        way. Call with the document's lock held."""
        path = self.failure_path(document_id)
        failures = self._read_failures(document_id)
        before = dict(failures)
        current = self._current_version(document_id)
        recorded = change(failures, current)
        kept = {step: f for step, f in failures.items() if not _superseded(f, current)}
        if not kept:
            if before:
                with contextlib.suppress(FileNotFoundError):
                    self.fs.rm(path)
            return None
        if kept != before:
            write_bytes_atomic(self.fs, path, json.dumps(kept, sort_keys=True, indent=2).encode())
        return path if recorded else None


#: Edits a document's failure records in place, given the current version; True if it
#: recorded a failure.
FailuresChange = Callable[[dict[str, dict[str, Any]], str | None], bool]


def _superseded(failure: Mapping[str, Any], current: str | None) -> bool:
    """A failure of a version that is no longer the document's (unknown versions never are)."""
    version = failure.get("content_hash")
    return bool(version and current and version != current)


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


#: Reads of an object another writer replaced meanwhile, before the error stands.
_REPLACED_READ_ATTEMPTS = 3

_T = TypeVar("_T")


def _read_one_version(read: Callable[[], _T], forget: Callable[[], None]) -> _T:
    """``read()``, again where an object store refused it because the object was replaced
    after the version it opened was listed (s3fs: ``FileExpired``, errno EBUSY: a listing cached
    by this process, or another writer between open and read). That is a replacement, not
    damage: the cached listing is dropped (``forget``) and the new version is read."""
    for attempt in range(_REPLACED_READ_ATTEMPTS):
        try:
            return read()
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt == _REPLACED_READ_ATTEMPTS - 1:
                raise
            forget()
    raise AssertionError("unreachable")


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
