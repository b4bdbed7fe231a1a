"""The graph step: a document's stored sections, chunks and vectors -> node and edge tables ->
the graph database. Plain Python, called by the Dagster ``graph`` asset and by the tests.

The Parquet tables (``graph_nodes``, ``graph_edges``) are written first, atomically like every
table; then the store is made to hold exactly them. The tables are what the graph should hold,
so a check can compare the store with them, and a store lost or swapped can be reloaded from
them without re-chunking.

Repairs, on the next run, without ``--force``: a graph table that is truncated or fails its page
checksums is named, set aside as ``<name>.corrupt-<time>`` and rebuilt from the chunks; a
document whose store nodes or edges differ from its tables is written again; and once per open
store (``reconcile_store``) every document the tables hold but the store lacks (a database
started afresh after damage, emptied or swapped) is written back from its tables.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pyarrow as pa

from agrag_pipeline.models import Document
from agrag_pipeline.sinks.graph.model import (
    SHAPE_EDGE_COLUMNS,
    SHAPE_NODE_COLUMNS,
    DocumentGraph,
    GraphShape,
    document_graph,
    edges_table,
    graph_from_tables,
    nodes_table,
    shape_from_tables,
)
from agrag_pipeline.sinks.graph.settings import GraphSettings
from agrag_pipeline.sinks.graph.store import GraphStore
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import read_metadata, sections_from_table, with_metadata
from agrag_pipeline.storage.warehouse import DamagedFileError
from agrag_pipeline.stored import load_chunks
from agrag_pipeline.validation import CheckOutcome

#: Bumped when the nodes or edges written for the same inputs change.
GRAPH_VERSION = "1"

#: The two tables of a document's graph.
GRAPH_TABLES = ("graph_nodes", "graph_edges")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphResult:
    document: Document
    counts: dict[str, int]
    nodes_path: str
    edges_path: str
    store: str
    superseded: int = 0
    reused: bool = False


def make_graph_store(settings: GraphSettings, warehouse_root: str) -> GraphStore | None:
    """The configured store, or None when ``backend: none``."""
    if settings.backend == "none":
        return None
    if settings.backend == "neo4j":
        from agrag_pipeline.sinks.graph.neo4j_store import Neo4jGraphStore

        if settings.neo4j is None:
            raise ValueError("graph.backend is neo4j but graph.neo4j (uri, user) is not set")
        return Neo4jGraphStore(
            settings.neo4j.uri,
            settings.neo4j.user,
            settings.neo4j.password_env,
            settings.neo4j.database,
        )
    from agrag_pipeline.sinks.graph.ladybug_store import LadybugGraphStore

    if settings.path:
        path = Path(settings.path)
    elif "://" in warehouse_root:
        raise ValueError(
            "the embedded graph database needs a local path: set graph.path when the "
            "warehouse is on object storage"
        )
    else:
        path = Path(warehouse_root) / "_graph" / "graph.lbdb"
    return LadybugGraphStore(path)


def document_graph_from_warehouse(
    warehouse: Warehouse, document: Document, *, with_vectors: bool = True
) -> DocumentGraph:
    """The graph of the stored version of ``document`` (sections, chunks, and vectors)."""
    assert document.id is not None
    chunks = load_chunks(warehouse, document)  # first: it names an upstream failure, if any
    sections = sections_from_table(warehouse.read_table("sections", document.id))
    vectors = _vectors(warehouse, document) if with_vectors else None
    return document_graph(document, sections, chunks, vectors)


def build_graph(
    warehouse: Warehouse,
    document: Document,
    store: GraphStore | None,
    *,
    with_vectors: bool = True,
    force: bool = False,
) -> GraphResult:
    """Write the node and edge tables of ``document`` and make ``store`` hold exactly them
    (``store`` None, with ``graph.backend: none``: the tables alone).

    When the stored tables already belong to this version, chunker and embedding model, are
    sound, and the store holds exactly their nodes and edges, nothing is rewritten unless
    ``force``. A damaged table is set aside and rebuilt; the first call on an open store
    reconciles it with every document's tables first (``reconcile_store``).
    """
    assert document.id is not None
    if store is not None and store.reconciled_with != warehouse.root:
        reconcile_store(warehouse, store)
    chunks_meta = warehouse.table_metadata("chunks", document.id) or {}
    embeddings_meta = warehouse.table_metadata("embeddings", document.id) or {}
    wanted = {
        "content_hash": document.content_hash,
        "chunker_hash": chunks_meta.get("chunker_hash", ""),
        "embedding_fingerprint": embeddings_meta.get("embedding_fingerprint", "")
        if with_vectors
        else "",
        "graph_version": GRAPH_VERSION,
    }
    nodes_path = warehouse.table_path("graph_nodes", document.id)
    edges_path = warehouse.table_path("graph_edges", document.id)
    graph = None if force else _current_graph(warehouse, document, wanted)
    if graph is not None:
        problems = store_problems(GraphShape.of(graph), store) if store is not None else []
        if not problems:
            name = store.name if store is not None else "none"
            return GraphResult(document, graph.counts(), nodes_path, edges_path, name, reused=True)
        assert store is not None
        warehouse.report_repair(
            f"{document.source_key}: the graph database {store.name} differs from its graph "
            f"tables ({'; '.join(problems)}); written again from them"
        )
        # Every node of the document goes first, those its edges no longer reach included.
        store.delete_document(graph.document_id)
    else:
        graph = document_graph_from_warehouse(warehouse, document, with_vectors=with_vectors)
        metadata: dict[str, Any] = {
            "document_id": str(document.id),
            "source_key": document.source_key,
            **wanted,
        }
        warehouse.write_table(
            "graph_nodes", document.id, with_metadata(nodes_table(graph), metadata)
        )
        warehouse.write_table(
            "graph_edges", document.id, with_metadata(edges_table(graph), metadata)
        )
    if store is None:
        return GraphResult(document, graph.counts(), nodes_path, edges_path, "none")
    stats = store.write_document(graph)
    return GraphResult(
        document, graph.counts(), nodes_path, edges_path, store.name, superseded=stats.superseded
    )


def reconcile_store(warehouse: Warehouse, store: GraphStore) -> int:
    """Write back into ``store``, from their tables, the documents the graph tables hold but
    the store lacks; how many.

    Why: the tables are what the graph should hold. A database started afresh after damage,
    emptied or swapped for another would otherwise lack every document whose graph step does
    not run again (the sensor reruns changed documents only). Costs a listing of the two graph
    tables' folders and one query; a document's tables are read only when the store lacks it.
    Documents the store holds beyond the tables are left alone: a Neo4j may serve more than one
    warehouse, and a deleted document leaves the store through ``freshness.remove_deleted``
    (the sinks go first).
    """
    in_store = store.document_ids()
    with_tables = {str(document_id) for document_id in warehouse.ids_with_tables(*GRAPH_TABLES)}
    written = 0
    for document_id in sorted(with_tables - in_store):
        graph = _graph_from_stored_tables(warehouse, UUID(document_id))
        if graph is None:
            continue
        try:
            store.write_document(graph)
        except Exception as exc:  # one document never stops the others (nor its own step)
            log.warning("%s: not written back from its graph tables: %s", document_id, exc)
            continue
        written += 1
    if written:
        warehouse.report_repair(
            f"the graph database {store.name} lacked {written} documents of the graph tables; "
            "written back from them"
        )
    store.reconciled_with = warehouse.root
    return written


def _graph_from_stored_tables(warehouse: Warehouse, document_id: UUID) -> DocumentGraph | None:
    """A document's graph from its tables alone (its version from their footer); None when a
    table is damaged (set aside: the document's graph step rebuilds it)."""
    tables = [_read_graph_table(warehouse, t, document_id) for t in GRAPH_TABLES]
    nodes, edges = tables
    if nodes is None or edges is None:
        return None
    content_hash = read_metadata(nodes).get("content_hash", "")
    return graph_from_tables(nodes, edges, content_hash)


def _current_graph(
    warehouse: Warehouse, document: Document, wanted: dict[str, str]
) -> DocumentGraph | None:
    """The stored graph of ``document`` if both tables are of ``wanted`` and sound; a damaged
    one is named and set aside (then None: the caller rebuilds it)."""
    assert document.id is not None
    tables = []
    for table in GRAPH_TABLES:
        try:
            meta = warehouse.table_metadata(table, document.id)
        except DamagedFileError as exc:
            _set_aside(warehouse, table, document.id, exc)
            return None
        if meta is None or any(meta.get(k, "") != v for k, v in wanted.items()):
            return None
        found = _read_graph_table(warehouse, table, document.id)
        if found is None:
            return None
        tables.append(found)
    return graph_from_tables(tables[0], tables[1], document.content_hash)


def _read_graph_table(warehouse: Warehouse, table: str, document_id: UUID) -> pa.Table | None:
    """A graph table, or None if missing or damaged (a damaged one is set aside, named)."""
    try:
        return warehouse.read_table(table, document_id)
    except FileNotFoundError:
        return None
    except DamagedFileError as exc:
        _set_aside(warehouse, table, document_id, exc)
        return None


def _set_aside(warehouse: Warehouse, table: str, document_id: UUID, exc: DamagedFileError) -> None:
    warehouse.set_aside(
        warehouse.table_path(table, document_id), f"{exc.problem}; rebuilt from the chunks"
    )


def stored_shape(warehouse: Warehouse, document: Document) -> GraphShape:
    """The node ids and edges the stored graph tables of ``document`` list (their properties
    not read)."""
    assert document.id is not None
    return shape_from_tables(
        warehouse.read_table("graph_nodes", document.id, SHAPE_NODE_COLUMNS),
        warehouse.read_table("graph_edges", document.id, SHAPE_EDGE_COLUMNS),
    )


def store_problems(shape: GraphShape, store: GraphStore) -> list[str]:
    """How the store differs from ``shape`` (empty: it holds exactly its nodes and edges)."""
    problems: list[str] = []
    stored_ids = store.node_ids(shape.document_id)
    for label, ids in stored_ids.items():
        wanted = shape.node_ids.get(label, set())
        if ids != wanted:
            problems.append(
                f"{label}: {len(wanted - ids)} missing, {len(ids - wanted)} not in the tables"
            )
    stored_edges = store.edges(shape.document_id)
    if stored_edges != shape.edges:
        problems.append(
            f"edges: {len(shape.edges - stored_edges)} missing, "
            f"{len(stored_edges - shape.edges)} not in the tables"
        )
    return problems


def graph_problems(warehouse: Warehouse, document: Document, store: GraphStore) -> list[str]:
    """How the store differs from the tables for ``document`` (empty: it holds exactly them)."""
    return store_problems(stored_shape(warehouse, document), store)


#: The graph asset's check (one per document).
GRAPH_CHECKS = ("graph_matches_tables",)


def check_graph(
    warehouse: Warehouse, source_key: str, store: GraphStore | None
) -> list[CheckOutcome]:
    """Does the graph database hold exactly the nodes and edges the document's tables list?"""
    name = GRAPH_CHECKS[0]
    try:
        document = warehouse.get_document(Document.node_id_for(source_key))
        if document is None or document.id is None:
            return [CheckOutcome(name, False, "no snapshot of this document is stored")]
        if not warehouse.has_table("graph_nodes", document.id):
            return [CheckOutcome(name, False, "no graph tables are stored for this document")]
        shape = stored_shape(warehouse, document)
        if store is None:
            return [CheckOutcome(name, True, "graph.backend is none: the tables alone")]
        problems = store_problems(shape, store)
    except Exception as exc:  # a check reports; it never fails the step
        return [CheckOutcome(name, False, f"could not be checked: {type(exc).__name__}: {exc}")]
    counts = shape.counts()
    if problems:
        return [CheckOutcome(name, False, "; ".join(problems), {"expected": counts})]
    nodes = sum(counts[label] for label in shape.node_ids)
    return [
        CheckOutcome(
            name,
            True,
            f"{store.name} holds exactly the {counts['Chunk']} chunks, {counts['Section']} "
            f"sections and {len(shape.edges)} edges of the tables",
            {"nodes": nodes, "edges": len(shape.edges)},
        )
    ]


def _vectors(warehouse: Warehouse, document: Document) -> dict[str, list[float]] | None:
    assert document.id is not None
    if not warehouse.has_table("embeddings", document.id):
        return None
    table = warehouse.read_table("embeddings", document.id)
    if read_metadata(table).get("content_hash") != document.content_hash:
        return None
    ids = table.column("chunk_id").to_pylist()
    vectors = table.column("vector").to_pylist()
    return {i: [float(x) for x in v] for i, v in zip(ids, vectors, strict=True)}
