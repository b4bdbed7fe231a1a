"""The search index sink: chunks with their vectors in LanceDB, for dense and full-text search.

Why LanceDB: embedded (a folder of Lance files, no server), vector search and BM25 full-text
search over the same table, and the same folder works on object storage (``s3://...``), which is
the scale-out path DESIGN.md asks of every sink. GraphRAG and cognee use it by default.

Updated per document, never rebuilt (but for a damaged one, below): ``upsert_document`` deletes
the document's rows by ``document_id`` and adds its current ones; ``delete_document`` removes
them. The full-text index is built once (``ensure_fts_index``); rows added after it are still
searched (LanceDB scans what its index does not cover yet), and ``optimize`` folds them in.
A second full-text index covers ``bm25_context_text`` (each chunk with its section's
neighbouring text, ``bm25_context``), hybrid search's third ranking.

The index's settings (``IndexSettings``: the BM25 context budget) are recorded beside its table
(``chunks.settings.json``) when the table is made. Rows made under other settings would mix
two kinds of BM25 text, so ``check_index`` rebuilds an index whose record differs from the
settings of the run (or that has none: made before records were kept) from the warehouse's
tables, as it rebuilds a damaged one, and says so.

Concurrent writers: every write (a document's tables read, its delete and its add; removals;
index builds) runs under one exclusive ``flock`` on ``<index>.lock`` beside a local index
(``storage.atomic.file_lock``, the warehouse's per-document lock mechanism), so two
``agrag index`` or two Dagster runs cannot interleave one document's delete and add (which left
duplicate rows, or rows of two versions). One lock for the index, not one per document: its
commits are serial anyway, and writers of different documents raced too (two creating the table;
a delete refused against a concurrent overwrite). On an object store there is no lock. What
holds there is Lance's own commit protocol: a commit is a new manifest written with a
conditional PUT (If-None-Match, which AWS S3 honours; a store that ignores it can lose a
concurrent commit), and a commit racing another is rebased onto it when compatible and refused
when not (that document then fails in that run, named, and the next run writes it). A document's
delete and add are two commits, though, so two writers of one document can still leave
duplicates or two versions' rows: a rewrite is idempotent, and ``check_index`` finds and repairs
that on the next run.

``check_index`` compares the index with the warehouse's tables on every run: one read of every
row's ``(document_id, chunk_id)`` (which also proves every data file readable), duplicate rows
and rows of documents no longer in the warehouse, and, for the documents the run wrote, their
indexed chunk ids against their chunks table. What disagrees is rewritten from the tables (or
removed) and reported. An index LanceDB cannot open or read (a truncated data file, a garbage,
truncated or missing manifest) is set aside as ``<index>.corrupt-<time>`` and rebuilt from the
warehouse's tables, with a warning naming it. A table whose making was cut short (data files
and no manifest yet, no settings recorded) held nothing any reader saw: it is removed, and the
run writes its rows again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from agrag_pipeline.sinks.bm25_context import CONTEXT_TEXT, IndexSettings, context_texts
from agrag_pipeline.storage.atomic import file_lock, is_local
from agrag_pipeline.storage.tables import read_metadata
from agrag_pipeline.storage.warehouse import DamagedFileError

if TYPE_CHECKING:
    from agrag_pipeline.storage import Warehouse

log = logging.getLogger(__name__)

#: The table's name inside the index folder.
TABLE = "chunks"
#: The column the full-text index covers: what is embedded (label + text, markup left out).
FTS_COLUMN = "contextual_text"
#: The second BM25 field: the same with its section's neighbouring text (``bm25_context``),
#: a third ranking of hybrid search when the index's ``bm25_context_chars`` is above 0.
CONTEXT_FTS_COLUMN = CONTEXT_TEXT

INDEX_COLUMNS = (
    "chunk_id",
    "document_id",
    "source_key",
    "content_hash",
    "index",
    "heading_path",
    "pages",
    "char_start",
    "char_end",
    "content_kind",
    "text",
    "contextual_text",
    "bm25_context_text",
    "vector",
)


class IndexSinkError(RuntimeError):
    """The index cannot take these rows (mismatched tables, another vector dimension)."""


def index_rows(chunks: pa.Table, embeddings: pa.Table, settings: IndexSettings) -> pa.Table:
    """One document's index rows: its chunks table joined to its embeddings table by chunk id,
    with the text the context BM25 reads (``bm25_context.context_texts`` under ``settings``)."""
    if chunks.num_rows != embeddings.num_rows:
        raise IndexSinkError(
            f"{chunks.num_rows} chunks but {embeddings.num_rows} embeddings: "
            "materialise embeddings for this version first"
        )
    ids = chunks.column("id").to_pylist()
    order = {cid: i for i, cid in enumerate(embeddings.column("chunk_id").to_pylist())}
    missing = [cid for cid in ids if cid not in order]
    if missing:
        raise IndexSinkError(
            f"no embedding for chunk {missing[0]} (embeddings of another version?)"
        )
    vectors = embeddings.column("vector").take(pa.array([order[c] for c in ids]))
    columns: dict[str, Any] = {"chunk_id": chunks.column("id")}
    for name in INDEX_COLUMNS[1:-2]:
        columns[name] = chunks.column(name)
    context = settings.bm25_context_chars
    wanted = ["document_id", "index", "heading_path", "section_ids", "contextual_text"]
    columns[CONTEXT_TEXT] = pa.array(
        context_texts(chunks.select(wanted).to_pylist(), context), pa.large_string()
    )
    columns["vector"] = vectors
    return pa.table(columns)


@dataclass(frozen=True)
class RawHit:
    row: dict[str, Any]
    score: float


#: What lancedb's own after-fork handler says in every forked child once its loop is reset.
_LANCEDB_FORK_WARNING = "lancedb fork support is experimental"


def import_lancedb_for_forking() -> None:
    """Import lancedb in a process that will fork workers, and leave it running no thread.

    Why: importing lancedb costs a worker 0.18 CPU s (most of it the ``overrides`` decorator
    disassembling its classes' callers), paid by every run that writes the index; a process
    that forks imports it once instead. Its import starts an event loop thread, which a process
    must not hold as it forks (the thread would be copied in whatever state it was in), so the
    loop is stopped and its thread joined here. In each forked child lancedb's own after-fork
    handler starts a fresh loop and resets its Rust runtime; its warning that state might be
    mid-operation is silenced, as no lancedb operation ever ran in this process. Only for a
    process that never uses lancedb itself: its own loop stays stopped.
    """
    import warnings

    import lancedb.background_loop as background

    background_loop = background.LOOP
    if background_loop.thread.is_alive():
        background_loop.loop.call_soon_threadsafe(background_loop.loop.stop)
        background_loop.thread.join()
    warnings.filterwarnings("ignore", message=_LANCEDB_FORK_WARNING, category=RuntimeWarning)


class SearchIndex:
    """A LanceDB table of chunks and vectors under ``uri`` (a folder or an object-store URI)."""

    #: How ``freshness.remove_deleted`` names this sink (``DocumentSink``).
    name = "search index"

    def __init__(self, uri: str, table: str = TABLE, settings: IndexSettings | None = None) -> None:
        self.uri = uri
        self.table_name = table
        #: What this process writes the index with (``bm25_context_text``'s budget).
        self.settings = settings or IndexSettings()
        #: ``context_chars`` as read from the record while this table handle is open (a
        #: search must not read the record again per query on an object store).
        self._context_chars: int | None = None
        self._fs, path = fsspec.core.url_to_fs(uri)
        self._path: str = path.rstrip("/")
        self._db = self._connect()
        self._table: Any = None
        self._fts = False
        # The flock is per open file: a second acquire in this process would wait for itself,
        # so nested writes (a repair calling upsert) count depth instead.
        self._in_process = threading.RLock()
        self._lock_depth = 0
        self._opened_folder: int | None = None

    def _folder_identity(self) -> int | None:
        """The table folder's inode (local), so a writer can tell that another process set the
        folder aside since this one opened it; None (always open again) on an object store."""
        if not is_local(self._fs):
            return None
        try:
            return os.stat(f"{self._path}/{self.table_name}.lance").st_ino
        except FileNotFoundError:
            return None

    def _connect(self) -> Any:
        import lancedb

        # Every read sees the latest version, also one another handle or process wrote (the
        # asset writes while a CLI or a retriever reads); LanceDB's default never looks again.
        return lancedb.connect(self.uri, read_consistency_interval=timedelta(0))

    @property
    def lock_path(self) -> str:
        """The lock file beside the index folder (a local index only)."""
        return f"{self._path}.lock"

    @property
    def settings_path(self) -> str:
        """The file beside the table recording the settings its rows were written with."""
        return f"{self._path}/{self.table_name}.settings.json"

    def recorded_settings(self) -> dict[str, Any] | None:
        """The settings the index's rows were written with (None: no record, an index made
        before settings were recorded, or none yet)."""
        try:
            with self._fs.open(self.settings_path, "rb") as handle:
                recorded = json.loads(handle.read())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {"unreadable": True}  # never equal to settings: the index is rebuilt
        return recorded if isinstance(recorded, dict) else {"unreadable": True}

    def settings_changed(self) -> str | None:
        """Why the index's rows are not what ``settings`` make (a table whose recorded
        settings differ, or that has none), or None."""
        if self._open() is None:
            return None
        wanted = self.settings.model_dump(mode="json")
        recorded = self.recorded_settings()
        if recorded == wanted:
            return None
        if recorded is None:
            return f"index settings not recorded (an index from before they were); now {wanted}"
        return f"index settings changed from {recorded} to {wanted}"

    def _record_settings(self) -> None:
        """Write ``settings`` as the index's record (with the table that now holds them)."""
        self._fs.makedirs(self._path, exist_ok=True)
        body = json.dumps(self.settings.model_dump(mode="json"), sort_keys=True).encode()
        with self._fs.open(self.settings_path, "wb") as handle:
            handle.write(body)
        self._context_chars = None

    def drop(self) -> None:
        """Remove the table and its settings record (a rebuild under other settings)."""
        with self.writing():
            if self._open() is not None:
                self._db.drop_table(self.table_name)
            with contextlib.suppress(FileNotFoundError):
                self._fs.rm(self.settings_path)
            self._table, self._fts, self._opened_folder = None, False, None
            self._context_chars = None

    @property
    def table_uri(self) -> str:
        """The table's folder, as a user would paste it (named in damage reports)."""
        return f"{self.uri.rstrip('/')}/{self.table_name}.lance"

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Exclusive among every process writing this index (a ``flock`` on ``lock_path``;
        on an object store only among this process's threads); re-entrant."""
        with self._in_process:
            if self._lock_depth:
                self._lock_depth += 1
                try:
                    yield
                finally:
                    self._lock_depth -= 1
                return
            with file_lock(self._fs, self.lock_path):
                # A handle from before may name a table another process has since set aside
                # (and rebuilt at the same path): open it again when the folder is not the same.
                if self._opened_folder is None or self._opened_folder != self._folder_identity():
                    self._table = None
                self._lock_depth = 1
                try:
                    yield
                finally:
                    self._lock_depth = 0

    # -- writes -----------------------------------------------------------------------------
    def _open(self, fresh: bool = False) -> Any:
        """The table (None while there is none); ``fresh`` opens it again (a writer under the
        lock must not trust a handle from before another process set the index aside).

        Raises:
            DamagedFileError: the table's folder is there but LanceDB cannot open it (a
                truncated, garbage or missing manifest).
        """
        if fresh:
            self._table = None
        if self._table is None and self.table_name in self._db.list_tables().tables:
            try:
                self._opened_folder = self._folder_identity()
                self._table = self._db.open_table(self.table_name)
                self._context_chars = None
            except (OSError, RuntimeError, ValueError) as exc:
                if not self._lock_depth:
                    # Another process may be making the table this moment (its folder is
                    # there, its first version not yet): it does so under the lock, so ask
                    # again holding it; what still cannot be opened then is damaged.
                    with self.writing():
                        return self._open(fresh=True)
                folder = f"{self._path}/{self.table_name}.lance"
                self._fs.invalidate_cache(folder)
                files = [f for f in self._fs.find(folder) if f.startswith(folder + "/")]
                if not files:
                    # Folders and no file: what an object store that keeps directory entries
                    # (SeaweedFS) shows of a table whose files were removed. No table.
                    return None
                if self._creation_cut_short(folder, files):
                    return None
                raise DamagedFileError(
                    self.table_uri, f"cannot be opened: {_first_line(exc)}"
                ) from None
        return self._table

    def _creation_cut_short(self, folder: str, files: list[str]) -> bool:
        """Remove a table whose making was cut short (a ``kill -9`` between LanceDB writing
        the first rows' data files and committing its first manifest) and say so: no version
        was ever committed and ``append`` had not yet recorded the settings, so nothing a
        reader could have seen is lost, and the rows are the run's own, which writes them
        again. A table that lost the manifests of committed versions still has its settings
        record: that is damage, set aside for inspection."""
        if any(f.startswith(f"{folder}/_versions/") and f.endswith(".manifest") for f in files):
            return False
        if self._fs.exists(self.settings_path):
            return False
        log.info(
            "search index %s: removing a table whose making was cut short "
            "(%d files, no version committed)",
            self.table_uri,
            len(files),
        )
        self._fs.rm(folder, recursive=True)
        self._fs.invalidate_cache(self._path)
        self._table, self._opened_folder = None, None
        return True

    def upsert_document(self, document_id: str, rows: pa.Table) -> int:
        """Replace one document's rows with ``rows`` (delete by document id, then add), under
        the index's lock so no other writer's delete or add of the same document interleaves."""
        with self.writing():
            table = self._open()
            if table is not None:
                table.delete(f"document_id = '{_quoted(document_id)}'")
            self.append(rows)
            return rows.num_rows

    def append(self, rows: pa.Table) -> None:
        """Add rows as they are (no delete first; the table is made by the first rows)."""
        if rows.num_rows == 0:
            return
        with self.writing():
            table = self._open()
            if table is None:
                # Listed although there is no table: only empty folders are left to replace.
                empty = self.table_name in self._db.list_tables().tables
                try:
                    self._table = self._db.create_table(
                        self.table_name, data=rows, mode="overwrite" if empty else "create"
                    )
                    self._opened_folder = self._folder_identity()
                    self._record_settings()
                    return
                except (OSError, RuntimeError, ValueError):
                    # Another writer created it first (an object store has no lock).
                    table = self._open(fresh=True)
                    if table is None:
                        raise
            table.add(rows)

    def replace_documents(self, rows: Mapping[str, pa.Table | None]) -> dict[str, Exception]:
        """Replace the rows of many documents (document id -> its rows; None: it has none now)
        with two commits for them all, under the lock: one delete of every one of them, one
        add of their rows together (a commit per document made a data file and a manifest per
        document, and each delete scanned the whole table). If the add of them together fails,
        each document's rows are added on their own, so an odd table fails only its document;
        what is returned is the documents whose rows could not be added, with the error."""
        if not rows:
            return {}
        failed: dict[str, Exception] = {}
        with self.writing():
            table = self._open()
            if table is not None:
                table.delete(_in_filter(rows))
            tables = [t for t in rows.values() if t is not None and t.num_rows]
            try:
                if tables:
                    self.append(pa.concat_tables(tables, promote_options="default"))
            except (pa.ArrowException, OSError, RuntimeError, ValueError):
                for document_id, one in rows.items():
                    if one is None:
                        continue
                    try:
                        self.append(one)
                    except (pa.ArrowException, OSError, RuntimeError, ValueError) as exc:
                        failed[document_id] = exc
        return failed

    def delete_document(self, document_id: str) -> int:
        """Remove every row of a document (a file deleted from the raw root); how many."""
        with self.writing():
            table = self._open()
            if table is None:
                return 0
            count = len(self.document_rows(document_id))
            if count:
                table.delete(f"document_id = '{_quoted(document_id)}'")
            return count

    def set_aside(self) -> str | None:
        """Rename the whole index folder to ``<index>.corrupt-<UTC time>`` (kept for
        inspection, like the warehouse's damaged records), so the next write starts a fresh
        one; the new name, or None when the folder was gone already."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = f"{self._path}.corrupt-{stamp}"
        with self.writing():
            try:
                if is_local(self._fs):
                    os.rename(self._path, target)  # one atomic rename
                else:
                    # An object store has no folders to rename: each object is copied, then
                    # the originals removed (fsspec's recursive mv stops at the first miss).
                    files = self._fs.find(self._path)
                    if not files:
                        return None
                    for path in files:
                        self._fs.copy(path, target + path[len(self._path) :])
                    self._fs.rm(files)
                    self._fs.invalidate_cache(self._path)
            except FileNotFoundError:
                return None
            finally:
                self._table, self._fts, self._opened_folder = None, False, None
                self._db = self._connect()
        return target if is_local(self._fs) else self._fs.unstrip_protocol(target)

    def ensure_fts_index(self, rebuild: bool = False) -> None:
        """Build the BM25 indexes over ``contextual_text`` and ``bm25_context_text`` once
        (later rows are searched too); a table from before the second column gets the first."""
        if self._fts and not rebuild:
            return
        with self.writing():
            table = self._open()
            if table is None:
                return
            indexed = {c for i in table.list_indices() for c in i.columns}
            # No context (a budget of 0): its column repeats contextual_text, unsearched.
            columns = (FTS_COLUMN, CONTEXT_FTS_COLUMN) if self.context_chars() else (FTS_COLUMN,)
            for column in columns:
                if column not in table.schema.names or (column in indexed and not rebuild):
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # create_fts_index: the documented native FTS
                    table.create_fts_index(
                        column,
                        use_tantivy=False,
                        replace=True,
                        stem=True,
                        remove_stop_words=True,
                    )
            self._fts = True

    def build_vector_index(self) -> None:
        """An IVF-PQ index for approximate dense search on large tables (below ~100,000 rows
        exact search is fast enough and is what a fresh index does)."""
        with self.writing():
            table = self._open()
            if table is None:
                return
            rows = int(table.count_rows())
            dim = int(table.schema.field("vector").type.list_size)
            table.create_index(
                metric="cosine",
                vector_column_name="vector",
                index_type="IVF_PQ",
                num_partitions=max(1, int(rows**0.5)),
                num_sub_vectors=max(1, dim // 8),
                replace=True,
            )

    def optimize(self) -> None:
        """Compact files and fold rows added since into the full-text index."""
        with self.writing():
            table = self._open()
            if table is not None:
                table.optimize()

    # -- reads ------------------------------------------------------------------------------
    def count(self) -> int:
        table = self._open()
        return 0 if table is None else int(table.count_rows())

    def document_chunk_ids(self, document_id: str) -> set[str]:
        return set(self.document_rows(document_id))

    def document_rows(self, document_id: str) -> list[str]:
        """The chunk id of each of the document's rows (a duplicate row appears twice)."""
        table = self._open()
        if table is None:
            return []
        found = (
            table.search()
            .where(f"document_id = '{_quoted(document_id)}'")
            .select(["chunk_id"])
            .limit(None)
            .to_arrow()
        )
        return [str(c) for c in found.column("chunk_id").to_pylist()]

    def documents_rows(self, document_ids: Iterable[str]) -> dict[str, list[str]]:
        """``document_rows`` of many documents in one query: document id -> the chunk id of
        each of its rows (a document without rows is left out)."""
        wanted = sorted(set(document_ids))
        table = self._open()
        if table is None or not wanted:
            return {}
        found = (
            table.search()
            .where(_in_filter(wanted))
            .select(["document_id", "chunk_id"])
            .limit(None)
            .to_arrow()
        )
        rows: dict[str, list[str]] = defaultdict(list)
        for document_id, chunk_id in zip(
            found.column("document_id").to_pylist(),
            found.column("chunk_id").to_pylist(),
            strict=True,
        ):
            rows[str(document_id)].append(str(chunk_id))
        return dict(rows)

    def document_source_key(self, document_id: str) -> str | None:
        """The source key the document's rows name (None without rows)."""
        table = self._open()
        if table is None:
            return None
        found = (
            table.search()
            .where(f"document_id = '{_quoted(document_id)}'")
            .select(["source_key"])
            .limit(1)
            .to_arrow()
        )
        return str(found.column("source_key")[0]) if found.num_rows else None

    def all_rows(self) -> pa.Table:
        """Every row's ``document_id`` and ``chunk_id``: one read of those two columns of every
        data file, which is also what proves each of them readable.

        Raises:
            DamagedFileError: the table cannot be opened, or a data file cannot be read.
        """
        empty = pa.table(
            {"document_id": pa.array([], pa.string()), "chunk_id": pa.array([], pa.string())}
        )
        table = self._open(fresh=True)
        if table is None:
            return empty
        try:
            return table.search().select(["document_id", "chunk_id"]).limit(None).to_arrow()
        except (OSError, RuntimeError, ValueError) as exc:
            raise DamagedFileError(self.table_uri, f"cannot be read: {_first_line(exc)}") from None

    def dense(self, vector: np.ndarray, k: int) -> list[RawHit]:
        """Nearest chunks by cosine similarity (score = 1 - cosine distance)."""
        table = self._open()
        if table is None:
            return []
        found = (
            table.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
            .distance_type("cosine")
            .limit(k)
            .to_arrow()
        )
        return [
            RawHit(_row(r), 1.0 - float(r["_distance"]))
            for r in found.drop_columns(["vector"]).to_pylist()
        ]

    def context_chars(self) -> int:
        """The BM25 context the index's rows were written with (its record, read once per
        opened table; 0 without one)."""
        if self._context_chars is None:
            recorded = self.recorded_settings() or {}
            chars = recorded.get("bm25_context_chars", 0)
            self._context_chars = chars if isinstance(chars, int) else 0
        return self._context_chars

    def bm25(self, query: str, k: int, context: bool = False) -> list[RawHit]:
        """Best chunks by BM25 over ``contextual_text``, or (``context``) over
        ``bm25_context_text``: the same with the section's neighbouring text."""
        table = self._open()
        if table is None or not query.strip():
            return []
        self.ensure_fts_index()
        column = CONTEXT_FTS_COLUMN if context else FTS_COLUMN
        found = table.search(query, query_type="fts", fts_columns=column).limit(k).to_arrow()
        return [
            RawHit(_row(r), float(r["_score"])) for r in found.drop_columns(["vector"]).to_pylist()
        ]

    def hybrid_native(self, vector: np.ndarray, query: str, k: int) -> list[RawHit]:
        """LanceDB's own hybrid query (its RRF reranker, k=60): measured against ours."""
        from lancedb.rerankers import RRFReranker

        table = self._open()
        if table is None:
            return []
        self.ensure_fts_index()
        found = (
            table.search(query_type="hybrid", vector_column_name="vector", fts_columns=FTS_COLUMN)
            .vector(np.asarray(vector, dtype=np.float32))
            .text(query)
            .distance_type("cosine")
            .rerank(RRFReranker())
            .limit(k)
            .to_arrow()
        )
        score = "_relevance_score"
        return [
            RawHit(_row(r), float(r.get(score) or 0.0))
            for r in found.drop_columns(["vector"]).to_pylist()
        ]


def _row(r: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in r.items() if not k.startswith("_")}


def _quoted(value: str) -> str:
    return value.replace("'", "''")


def _in_filter(document_ids: Iterable[str]) -> str:
    """A filter on ``document_id`` matching exactly ``document_ids``."""
    listed = ", ".join(f"'{_quoted(d)}'" for d in sorted(document_ids))
    return f"document_id IN ({listed})"


def _first_line(exc: BaseException) -> str:
    """The error's first line, without the Rust source location LanceDB appends to it."""
    text = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    return _RUST_LOCATION.sub("", text)[:300]


_RUST_LOCATION = re.compile(r",\s*/\S+\.rs:\d+:\d+$")


def index_uri(warehouse_root: str) -> str:
    """Where the index lives: ``index/`` under the warehouse root (a folder or a bucket)."""
    return warehouse_root.rstrip("/") + "/index"


@dataclass(frozen=True)
class IndexUpdate:
    source_key: str
    document_id: str
    rows: int
    removed: bool = False


def update_document(warehouse: Warehouse, index: SearchIndex, source_key: str) -> IndexUpdate:
    """Bring one document's rows in the index up to date with its stored tables.

    A document whose snapshot is gone (deleted from the raw root) leaves the index; one whose
    embeddings belong to another version than its chunks is refused rather than mixed.
    """
    from agrag_pipeline.models import Document

    return _update(warehouse, index, Document.node_id_for(source_key), source_key)


def _update(warehouse: Warehouse, index: SearchIndex, document_id: UUID, label: str) -> IndexUpdate:
    # The tables are read under the index's lock too: of two writers of one document, the one
    # that writes last is the one that read last, so an older version never replaces a newer.
    with index.writing():
        document = warehouse.get_document(document_id)
        if document is None or not warehouse.has_table("chunks", document_id):
            index.delete_document(str(document_id))
            return IndexUpdate(label, str(document_id), 0, removed=True)
        rows = _current_rows(warehouse, document_id, document.content_hash, label, index.settings)
        index.upsert_document(str(document_id), rows)
    return IndexUpdate(label, str(document_id), rows.num_rows)


@dataclass(frozen=True)
class PreparedUpdate:
    """One document's update as ``write_updates`` writes it: what it will be, and its rows
    (None: the document leaves the index)."""

    update: IndexUpdate
    rows: pa.Table | None


def prepare_update(
    warehouse: Warehouse, source_key: str, settings: IndexSettings
) -> PreparedUpdate:
    """What ``update_document`` would write for one document, read from its stored tables but
    not written yet (``write_updates`` writes many at once). Read under the index's lock, as
    ``update_document`` reads: of two writers of one document, the one that writes last is
    the one that read last.

    Raises:
        IndexSinkError: its chunks, embeddings and snapshot are of different versions.
    """
    from agrag_pipeline.models import Document

    document_id = Document.node_id_for(source_key)
    document = warehouse.get_document(document_id)
    if document is None or not warehouse.has_table("chunks", document_id):
        return PreparedUpdate(IndexUpdate(source_key, str(document_id), 0, removed=True), None)
    rows = _current_rows(warehouse, document_id, document.content_hash, source_key, settings)
    return PreparedUpdate(IndexUpdate(source_key, str(document_id), rows.num_rows), rows)


def write_updates(
    index: SearchIndex, prepared: Mapping[str, PreparedUpdate]
) -> dict[str, IndexUpdate | Exception]:
    """Write the prepared updates of many documents (source key -> update) with two commits
    (``SearchIndex.replace_documents``); source key -> its update, or why its rows could not
    be added (the others are written)."""
    failed = index.replace_documents({p.update.document_id: p.rows for p in prepared.values()})
    written: dict[str, IndexUpdate | Exception] = {}
    for key, one in prepared.items():
        problem = failed.get(one.update.document_id)
        if problem is None:
            written[key] = one.update
            continue
        error = IndexSinkError(f"{key}: its rows could not be added to the index: {problem}")
        error.__cause__ = problem
        written[key] = error
    return written


def _current_rows(
    warehouse: Warehouse,
    document_id: UUID,
    content_hash: str,
    label: str,
    settings: IndexSettings,
) -> pa.Table:
    """The index rows of a document's stored chunks and embeddings, which must be of its
    current version (``content_hash``)."""
    chunks = warehouse.read_table("chunks", document_id)
    embeddings = warehouse.read_table("embeddings", document_id)
    versions = {read_metadata(t).get("content_hash") for t in (chunks, embeddings)}
    if versions != {content_hash}:
        raise IndexSinkError(
            f"{label}: chunks, embeddings and snapshot are of different versions "
            "(materialise embeddings first)"
        )
    return index_rows(chunks, embeddings, settings)


def remove_document(index: SearchIndex, source_key: str) -> IndexUpdate:
    """Take a deleted document's rows out of the index."""
    from agrag_pipeline.models import Document

    document_id = str(Document.node_id_for(source_key))
    index.delete_document(document_id)
    return IndexUpdate(source_key, document_id, 0, removed=True)


# -- comparing the index with the warehouse, and repairing it -----------------------------------

#: Rows added at once when an index is rebuilt (one LanceDB commit and data file per batch).
REBUILD_BATCH_ROWS = 20_000


@dataclass
class IndexCheck:
    """What ``check_index`` found and did. Each line names the index and the document."""

    #: Rows the index held when it was read.
    rows: int = 0
    #: What disagreed with the tables and was rewritten or removed (also warehouse.repairs).
    repaired: list[str] = field(default_factory=list)
    #: What disagreed and could not be repaired now (the reason is given).
    problems: list[str] = field(default_factory=list)
    #: Document id -> rows, for the documents a rebuild of a damaged index wrote.
    rebuilt: dict[str, int] = field(default_factory=dict)


def check_index(
    warehouse: Warehouse, index: SearchIndex, source_keys: Iterable[str] = ()
) -> IndexCheck:
    """Compare the index with the warehouse's tables and repair what disagrees.

    One read of every row's ``(document_id, chunk_id)`` finds, index-wide, duplicate rows and
    rows of documents with neither a record nor a chunks table (gone); for ``source_keys`` (the
    documents a run just wrote) each document's indexed chunk ids are also compared with its
    chunks table (one column read each). A disagreement is checked again under the index's
    lock (another writer may be setting it right), then the document is rewritten from its
    tables, or removed, and reported. An index that cannot be opened or read is set aside and
    rebuilt from every document's tables first.
    """
    from agrag_pipeline.models import Document

    result = IndexCheck()
    try:
        rows = index.all_rows()
    except DamagedFileError:
        _rebuild(warehouse, index, result)
        rows = index.all_rows()  # a rebuilt index that cannot be read is an error, not a repair
    if index.settings_changed() is not None:
        # Rows written under other settings (BM25's context) are not what a search expects.
        _rebuild(warehouse, index, result, for_settings=True)
        rows = index.all_rows()
    result.rows = rows.num_rows
    compare = {str(Document.node_id_for(key)) for key in source_keys}
    for document_id in sorted(_suspects(warehouse, rows, compare)):
        _repair(warehouse, index, document_id, result)
    return result


def _suspects(warehouse: Warehouse, rows: pa.Table, compare: set[str]) -> set[str]:
    """Documents whose rows look wrong in ``rows`` (every row's document and chunk id)."""
    suspects: set[str] = set()
    if rows.num_rows:
        pairs = rows.group_by(["document_id", "chunk_id"]).aggregate([("chunk_id", "count")])
        repeated = pairs.filter(pc.greater(pairs.column("chunk_id_count"), 1))
        suspects.update(str(d) for d in repeated.column("document_id").to_pylist())
        present = _stored_ids(warehouse, "documents") | _stored_ids(warehouse, "chunks")
        indexed = pc.unique(rows.column("document_id")).to_pylist()
        suspects.update(str(d) for d in indexed if d not in present)
    if compare:
        mine = rows.filter(pc.is_in(rows.column("document_id"), pa.array(sorted(compare))))
        by_document: dict[str, list[str]] = defaultdict(list)
        for document_id, chunk_id in zip(
            mine.column("document_id").to_pylist(), mine.column("chunk_id").to_pylist(), strict=True
        ):
            by_document[document_id].append(chunk_id)
        for document_id in compare - suspects:
            indexed = by_document.get(document_id, [])
            try:
                # One column read settles the usual case; only a disagreement costs the
                # record and the embeddings' footer (is the document indexable now at all?).
                found = _table_ids(warehouse, UUID(document_id))
                if found is not None and _disagreement(indexed, found[0]) is None:
                    continue
                expected = _expected_chunk_ids(warehouse, UUID(document_id))
            except DamagedFileError:
                continue  # the chunks step names and rebuilds its table; not ours to judge
            if _disagreement(indexed, expected) is not None:
                suspects.add(document_id)
    return suspects


def _stored_ids(warehouse: Warehouse, kind: str) -> set[str]:
    """The document ids with a record (``documents``) or a table of that name: one listing."""
    zero = UUID(int=0)
    path = (
        warehouse.document_path(zero) if kind == "documents" else warehouse.table_path(kind, zero)
    )
    folder, name = path.rsplit("/", 1)
    suffix = name.removeprefix(str(zero))
    warehouse.fs.invalidate_cache(folder)  # an object store's listing may be cached
    try:
        names = warehouse.fs.ls(folder, detail=False)
    except FileNotFoundError:
        return set()
    ids = set()
    for entry in names:
        base = str(entry).rsplit("/", 1)[-1]
        if base.endswith(suffix):  # not a temporary nor a set-aside file
            with contextlib.suppress(ValueError):
                ids.add(str(UUID(base.removesuffix(suffix))))
    return ids


def _table_ids(warehouse: Warehouse, document_id: UUID) -> tuple[list[str], str | None] | None:
    """The chunks table's ids and the version it records (one column read), or None."""
    path = warehouse.table_path("chunks", document_id)
    try:
        with warehouse.fs.open(path, "rb") as handle:
            chunks = pq.ParquetFile(handle)
            ids = chunks.read(columns=["id"]).column("id").to_pylist()
            version = read_metadata(chunks.schema_arrow).get("content_hash")
    except FileNotFoundError:
        return None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DamagedFileError(warehouse.uri(path), _first_line(exc)) from None
    return [str(i) for i in ids], version


def _expected_chunk_ids(warehouse: Warehouse, document_id: UUID) -> list[str] | None:
    """The chunk ids the index should hold for a document, as ``update_document`` decides:
    none without a record or a chunks table (it removes them); None when it cannot be indexed
    now (record, chunks and embeddings of different versions: it refuses, and the run that
    embeds the document indexes it); else the chunks table's ids."""
    document = warehouse.get_document(document_id)
    found = _table_ids(warehouse, document_id)
    if document is None or found is None:
        return []
    ids, version = found
    embedded = warehouse.table_metadata("embeddings", document_id)
    if embedded is None or {version, embedded.get("content_hash")} != {document.content_hash}:
        return None
    return ids


def _disagreement(indexed: list[str], expected: list[str] | None) -> str | None:
    """What is wrong with a document's indexed chunk ids, or None."""
    counts = Counter(indexed)
    repeated = sum(n - 1 for n in counts.values() if n > 1)
    if repeated:
        return f"{repeated} duplicate rows"
    if expected is None:  # not indexable yet: the run that embeds it indexes it
        return None
    if not expected:
        return f"{len(indexed)} rows of a document no longer in the warehouse" if indexed else None
    if set(counts) != set(expected):
        missing, stray = len(set(expected) - set(counts)), len(set(counts) - set(expected))
        return (
            f"indexed chunk ids differ from its chunks table ({missing} missing, "
            f"{stray} not in the table)"
        )
    return None


def _repair(warehouse: Warehouse, index: SearchIndex, document_id: str, result: IndexCheck) -> None:
    with index.writing():
        try:
            expected = _expected_chunk_ids(warehouse, UUID(document_id))
        except DamagedFileError:
            expected = None  # its step names and rebuilds that table; duplicates still show
        problem = _disagreement(index.document_rows(document_id), expected)
        if problem is None:
            return  # another writer set it right meanwhile
        label = _label(warehouse, index, document_id)
        try:
            update = _update(warehouse, index, UUID(document_id), label)
        except Exception as exc:  # one document must not stop the others
            result.problems.append(
                f"search index {index.uri}: {label}: {problem}; not repaired: {exc}"
            )
            log.warning("%s", result.problems[-1])
            return
    done = "removed" if update.removed else f"rewritten from its tables ({update.rows} rows)"
    message = f"search index {index.uri}: {label}: {problem}; {done}"
    result.repaired.append(message)
    warehouse.report_repair(message)


def _label(warehouse: Warehouse, index: SearchIndex, document_id: str) -> str:
    """A document's source key (from its record, else from its rows), else its id."""
    with contextlib.suppress(Exception):
        document = warehouse.get_document(UUID(document_id))
        if document is not None:
            return document.source_key
    return index.document_source_key(document_id) or f"document {document_id}"


def _rebuild(
    warehouse: Warehouse, index: SearchIndex, result: IndexCheck, for_settings: bool = False
) -> None:
    """Set a damaged index aside (or drop one written under other settings) and write every
    indexable document's rows into a new one, under the lock throughout (another writer waits
    rather than writing into half of it)."""
    with index.writing():
        if for_settings:
            reason = index.settings_changed()
            if reason is None:
                return  # another process rebuilt it meanwhile
            index.drop()
            done = "rebuilt"
        else:
            try:
                index.all_rows()
                return  # another process set it aside and rebuilt it meanwhile
            except DamagedFileError as exc:
                reason = str(exc)
            target = index.set_aside()
            aside = f"set aside as {target}" if target else "gone meanwhile"
            done = f"{aside} and rebuilt"
        batch: list[tuple[str, pa.Table]] = []
        indexable = sorted(
            _stored_ids(warehouse, "documents")
            & _stored_ids(warehouse, "chunks")
            & _stored_ids(warehouse, "embeddings")
        )
        for document_id in indexable:
            try:
                document = warehouse.get_document(UUID(document_id))
                if document is None:
                    continue
                rows = _current_rows(
                    warehouse,
                    UUID(document_id),
                    document.content_hash,
                    document.source_key,
                    index.settings,
                )
            except IndexSinkError:
                continue  # not indexable yet, as update_document says when it is tried
            except Exception as exc:  # one document must not stop the others
                result.problems.append(
                    f"search index {index.uri}: not rebuilt for document {document_id}: {exc}"
                )
                continue
            batch.append((document_id, rows))
            if sum(t.num_rows for _, t in batch) >= REBUILD_BATCH_ROWS:
                _add_batch(index, batch, result)
                batch = []
        _add_batch(index, batch, result)
        index.ensure_fts_index(rebuild=True)
    message = (
        f"{reason}; {done} from the warehouse's tables "
        f"({len(result.rebuilt)} documents, {sum(result.rebuilt.values())} rows)"
    )
    result.repaired.append(message)
    warehouse.report_repair(message)


def _add_batch(index: SearchIndex, batch: list[tuple[str, pa.Table]], result: IndexCheck) -> None:
    if not batch:
        return
    try:
        index.append(pa.concat_tables([t for _, t in batch], promote_options="default"))
    except (pa.ArrowException, OSError, RuntimeError, ValueError):
        for document_id, rows in batch:  # one document's odd table must not cost the batch
            try:
                index.append(rows)
            except (pa.ArrowException, OSError, RuntimeError, ValueError) as exc:
                result.problems.append(
                    f"search index {index.uri}: not rebuilt for document {document_id}: {exc}"
                )
                continue
            result.rebuilt[document_id] = rows.num_rows
        return
    result.rebuilt.update((document_id, rows.num_rows) for document_id, rows in batch)


@dataclass
class IndexSync:
    """What ``sync_index`` did."""

    documents: int = 0
    rows: int = 0
    #: Documents not indexed, with the reason.
    problems: list[str] = field(default_factory=list)
    #: What the checks before and after found wrong and repaired.
    repaired: list[str] = field(default_factory=list)


def sync_index(warehouse: Warehouse, index: SearchIndex, source_keys: Iterable[str]) -> IndexSync:
    """Bring the index up to date with ``source_keys`` (every stored document), one document
    at a time, between two checks: before (a damaged index rebuilt, duplicates and rows of
    documents gone repaired) and after (each written document's rows compared with its tables)."""
    from agrag_pipeline.models import Document

    before = check_index(warehouse, index)
    done = IndexSync(problems=list(before.problems), repaired=list(before.repaired))
    written: list[str] = []
    for key in sorted(source_keys):
        document_id = Document.node_id_for(key)
        if str(document_id) in before.rebuilt:  # just written by the rebuild
            done.documents += 1
            done.rows += before.rebuilt[str(document_id)]
            written.append(key)
            continue
        if not warehouse.has_table("embeddings", document_id):
            done.problems.append(f"{key}: no embeddings stored (run agrag core first)")
            continue
        try:
            update = update_document(warehouse, index, key)
        except Exception as exc:  # one document must not stop the others
            done.problems.append(f"{key}: {exc}")
            continue
        done.documents += 1
        done.rows += update.rows
        written.append(key)
    after = check_index(warehouse, index, written)
    done.problems += after.problems
    done.repaired += after.repaired
    index.ensure_fts_index()
    return done
