"""The search index sink: chunks with their vectors in LanceDB, for dense and full-text search.

Why LanceDB: embedded (a folder of Lance files, no server), vector search and BM25 full-text
search over the same table, and the same folder works on object storage (``s3://...``), which
is the scale-out path DESIGN.md asks of every sink. GraphRAG and cognee use it by default.

Updated per document, never rebuilt: ``upsert_document`` deletes the document's rows by
``document_id`` and adds its current ones; ``delete_document`` removes them. The full-text index
is built once (``ensure_fts_index``); rows added after it are still searched (LanceDB scans
what its index does not cover yet), and ``optimize`` folds them in.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from agrag_pipeline.storage.tables import read_metadata

if TYPE_CHECKING:
    from agrag_pipeline.storage import Warehouse

#: The table's name inside the index folder.
TABLE = "chunks"
#: The column the full-text index covers: what is embedded (label + text, markup left out).
FTS_COLUMN = "contextual_text"

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
    "vector",
)


class IndexSinkError(RuntimeError):
    """The index cannot take these rows (mismatched tables, another vector dimension)."""


def index_rows(chunks: pa.Table, embeddings: pa.Table) -> pa.Table:
    """One document's index rows: its chunks table joined to its embeddings table by chunk id."""
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
    for name in INDEX_COLUMNS[1:-1]:
        columns[name] = chunks.column(name)
    columns["vector"] = vectors
    return pa.table(columns)


@dataclass(frozen=True)
class RawHit:
    row: dict[str, Any]
    score: float


class SearchIndex:
    """A LanceDB table of chunks and vectors under ``uri`` (a folder or an object-store URI)."""

    #: How ``freshness.remove_deleted`` names this sink (``DocumentSink``).
    name = "search index"

    def __init__(self, uri: str, table: str = TABLE) -> None:
        import lancedb

        self.uri = uri
        self.table_name = table
        # Every read sees the latest version, also one another handle or process wrote (the
        # asset writes while a CLI or a retriever reads); LanceDB's default never looks again.
        self._db = lancedb.connect(uri, read_consistency_interval=timedelta(0))
        self._table: Any = None
        self._fts = False

    # -- writes -----------------------------------------------------------------------------
    def _open(self) -> Any:
        if self._table is None and self.table_name in self._db.list_tables().tables:
            self._table = self._db.open_table(self.table_name)
        return self._table

    def upsert_document(self, document_id: str, rows: pa.Table) -> int:
        """Replace one document's rows with ``rows`` (delete by document id, then add)."""
        table = self._open()
        if table is None:
            if rows.num_rows == 0:
                return 0
            self._table = self._db.create_table(self.table_name, data=rows)
            return rows.num_rows
        table.delete(f"document_id = '{_quoted(document_id)}'")
        if rows.num_rows:
            table.add(rows)
        return rows.num_rows

    def delete_document(self, document_id: str) -> int:
        """Remove every row of a document (a file deleted from the raw root); how many."""
        table = self._open()
        if table is None:
            return 0
        where = f"document_id = '{_quoted(document_id)}'"
        count = len(self.document_chunk_ids(document_id))
        if count:
            table.delete(where)
        return count

    def ensure_fts_index(self, rebuild: bool = False) -> None:
        """Build the BM25 index over ``contextual_text`` once (later rows are searched too)."""
        table = self._open()
        if table is None or (self._fts and not rebuild):
            return
        if rebuild or not any(FTS_COLUMN in i.columns for i in table.list_indices()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # create_fts_index: the documented native FTS
                table.create_fts_index(
                    FTS_COLUMN, use_tantivy=False, replace=True, stem=True, remove_stop_words=True
                )
        self._fts = True

    def build_vector_index(self) -> None:
        """An IVF-PQ index for approximate dense search on large tables (below ~100,000 rows
        exact search is fast enough and is what a fresh index does)."""
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
        table = self._open()
        if table is not None:
            table.optimize()

    # -- reads ------------------------------------------------------------------------------
    def count(self) -> int:
        table = self._open()
        return 0 if table is None else int(table.count_rows())

    def document_chunk_ids(self, document_id: str) -> set[str]:
        table = self._open()
        if table is None:
            return set()
        found = (
            table.search()
            .where(f"document_id = '{_quoted(document_id)}'")
            .select(["chunk_id"])
            .limit(1_000_000)
            .to_arrow()
        )
        return set(found.column("chunk_id").to_pylist())

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

    def bm25(self, query: str, k: int) -> list[RawHit]:
        """Best chunks by BM25 over ``contextual_text``."""
        table = self._open()
        if table is None or not query.strip():
            return []
        self.ensure_fts_index()
        found = table.search(query, query_type="fts", fts_columns=FTS_COLUMN).limit(k).to_arrow()
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

    document_id = Document.node_id_for(source_key)
    document = warehouse.get_document(document_id)
    if document is None or not warehouse.has_table("chunks", document_id):
        index.delete_document(str(document_id))
        return IndexUpdate(source_key, str(document_id), 0, removed=True)
    chunks = warehouse.read_table("chunks", document_id)
    embeddings = warehouse.read_table("embeddings", document_id)
    versions = {read_metadata(t).get("content_hash") for t in (chunks, embeddings)} | {
        document.content_hash
    }
    if len(versions) != 1:
        raise IndexSinkError(
            f"{source_key}: chunks, embeddings and snapshot are of different versions "
            "(materialise embeddings first)"
        )
    rows = index_rows(chunks, embeddings)
    index.upsert_document(str(document_id), rows)
    return IndexUpdate(source_key, str(document_id), rows.num_rows)


def remove_document(index: SearchIndex, source_key: str) -> IndexUpdate:
    """Take a deleted document's rows out of the index."""
    from agrag_pipeline.models import Document

    document_id = str(Document.node_id_for(source_key))
    index.delete_document(document_id)
    return IndexUpdate(source_key, document_id, 0, removed=True)
