"""A document version as graph nodes and edges, and as the two Parquet tables that hold them.

Nodes take the pipeline's ids as they are (DESIGN.md, "Identity"): a ``Document`` node is the
``document_id``, a ``Section`` node its section id, a ``Chunk`` node ``Chunk.id`` with exactly the
properties ``Chunk.to_node_record()`` writes. An edge is identified by (type, source, target), so
writing the same document version twice is idempotent.

Edges (names aligned with neo4j-graphrag's ``NEXT_CHUNK`` where it costs nothing):

- ``(Document)-[:HAS_SECTION]->(Section)`` for every section of the current version;
- ``(Section)-[:SUBSECTION_OF]->(Section)`` from a section to its parent section;
- ``(Document)-[:HAS_CHUNK]->(Chunk)`` for every chunk;
- ``(Chunk)-[:FROM_SECTION]->(Section)`` for each section whose text the chunk holds;
- ``(Chunk)-[:NEXT_CHUNK]->(Chunk)`` between consecutive chunks of the document.

Versions: only the current version's sections and chunks are in the graph. A superseded
version's nodes are deleted when the new version is written (chunks and sections still name
their ``content_hash``, so a retriever can tell which version it read); the Document node
carries the current ``content_hash``. Keeping superseded nodes would leave retrievers to filter
every query by version, which is the stale-node complaint this sink exists to avoid.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa

from agrag_pipeline.models import Chunk, Document, Section

PropertyType = Literal["STRING", "INT64", "DOUBLE", "STRING[]", "INT64[]", "DOUBLE[]"]

#: Every node label's properties and their types (besides ``id``, the primary key). The
#: ``Chunk`` properties are those of ``Chunk.to_node_record()``; ``document_id`` is on every
#: node so that one document's nodes are found (and deleted) without walking edges.
NODE_PROPERTIES: dict[str, dict[str, PropertyType]] = {
    "Document": {
        "document_id": "STRING",
        "source_key": "STRING",
        "content_hash": "STRING",
        "media_type": "STRING",
        "size_bytes": "INT64",
    },
    "Section": {
        "document_id": "STRING",
        "content_hash": "STRING",
        "ordinal": "INT64",
        "heading": "STRING",
        "level": "INT64",
        "heading_path": "STRING[]",
        "kind": "STRING",
        "parent_id": "STRING",
        "char_start": "INT64",
        "char_end": "INT64",
        "pages": "INT64[]",
    },
    "Chunk": {
        "document_id": "STRING",
        "content_hash": "STRING",
        "index": "INT64",
        "text": "STRING",
        "provenance": "STRING",
        "heading_path": "STRING[]",
        "content_kind": "STRING",
        "chunker": "STRING",
        "chunker_hash": "STRING",
        "schema_fingerprint": "STRING",
        "extraction_fingerprint": "STRING",
        "section_ids": "STRING[]",
        "embedding": "DOUBLE[]",
        "created_at": "STRING",
        "metadata": "STRING",
    },
}

#: Edge type -> (source label, target label).
EDGE_TYPES: dict[str, tuple[str, str]] = {
    "HAS_SECTION": ("Document", "Section"),
    "SUBSECTION_OF": ("Section", "Section"),
    "HAS_CHUNK": ("Document", "Chunk"),
    "FROM_SECTION": ("Chunk", "Section"),
    "NEXT_CHUNK": ("Chunk", "Chunk"),
}

NODES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), metadata={"description": "Node id (the pipeline's own id)."}),
        pa.field("label", pa.string(), metadata={"description": "Document, Section or Chunk."}),
        pa.field(
            "document_id", pa.string(), metadata={"description": "The document the node is of."}
        ),
        pa.field(
            "properties",
            pa.large_string(),
            metadata={"description": "The node's properties as canonical JSON text."},
        ),
    ]
)

EDGES_SCHEMA = pa.schema(
    [
        pa.field("type", pa.string(), metadata={"description": "Edge type, e.g. NEXT_CHUNK."}),
        pa.field("source_id", pa.string(), metadata={"description": "Id of the source node."}),
        pa.field("target_id", pa.string(), metadata={"description": "Id of the target node."}),
        pa.field(
            "document_id", pa.string(), metadata={"description": "The document the edge is of."}
        ),
    ]
)


@dataclass(frozen=True)
class GraphNode:
    label: str
    id: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class GraphEdge:
    type: str
    source_id: str
    target_id: str


@dataclass
class DocumentGraph:
    """One document version's nodes and edges, ready to write to any graph store."""

    document_id: str
    content_hash: str
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)

    def nodes_of(self, label: str) -> list[GraphNode]:
        return [n for n in self.nodes if n.label == label]

    def edges_of(self, edge_type: str) -> list[GraphEdge]:
        return [e for e in self.edges if e.type == edge_type]

    def counts(self) -> dict[str, int]:
        """Nodes per label and edges per type (every label and type, zeros included)."""
        counts = {label: 0 for label in NODE_PROPERTIES}
        counts.update({edge_type: 0 for edge_type in EDGE_TYPES})
        for node in self.nodes:
            counts[node.label] += 1
        for edge in self.edges:
            counts[edge.type] += 1
        return counts


@dataclass(frozen=True)
class GraphShape:
    """What the graph check compares with the store: node ids per label and the edges as
    (type, source id, target id), without the nodes' properties."""

    document_id: str
    node_ids: dict[str, set[str]]
    edges: set[tuple[str, str, str]]

    @classmethod
    def of_rows(
        cls,
        document_id: str,
        nodes: Iterable[tuple[str, str]],
        edges: Iterable[tuple[str, str, str]],
    ) -> GraphShape:
        """From (node id, label) and (type, source id, target id) rows."""
        node_ids: dict[str, set[str]] = {label: set() for label in NODE_PROPERTIES}
        for node_id, label in nodes:
            node_ids.setdefault(label, set()).add(node_id)
        return cls(document_id, node_ids, set(edges))

    @classmethod
    def of(cls, graph: DocumentGraph) -> GraphShape:
        return cls.of_rows(
            graph.document_id,
            ((n.id, n.label) for n in graph.nodes),
            ((e.type, e.source_id, e.target_id) for e in graph.edges),
        )

    def counts(self) -> dict[str, int]:
        """Nodes per label and edges per type, as ``DocumentGraph.counts``."""
        counts = {label: len(self.node_ids.get(label, ())) for label in NODE_PROPERTIES}
        counts.update({edge_type: 0 for edge_type in EDGE_TYPES})
        for edge_type, _, _ in self.edges:
            counts[edge_type] += 1
        return counts


#: The columns ``shape_from_tables`` reads: a check need not decode the properties.
SHAPE_NODE_COLUMNS = ("id", "label", "document_id")
SHAPE_EDGE_COLUMNS = ("type", "source_id", "target_id")


def shape_from_tables(nodes: pa.Table, edges: pa.Table) -> GraphShape:
    """The shape of the graph that ``nodes_table`` and ``edges_table`` wrote (only the
    ``SHAPE_*_COLUMNS`` are read)."""
    document_id = nodes.column("document_id")[0].as_py() if nodes.num_rows else ""
    return GraphShape.of_rows(
        document_id,
        zip(nodes.column("id").to_pylist(), nodes.column("label").to_pylist(), strict=True),
        zip(*(edges.column(name).to_pylist() for name in SHAPE_EDGE_COLUMNS), strict=True),
    )


def document_graph(
    document: Document,
    sections: Sequence[Section],
    chunks: Sequence[Chunk],
    vectors: Mapping[str, Sequence[float]] | None = None,
) -> DocumentGraph:
    """The graph of one document version; ``vectors`` (by chunk id) go on the Chunk nodes."""
    assert document.id is not None
    doc_id = str(document.id)
    graph = DocumentGraph(document_id=doc_id, content_hash=document.content_hash)
    graph.nodes.append(
        GraphNode(
            "Document",
            doc_id,
            {
                "document_id": doc_id,
                "source_key": document.source_key,
                "content_hash": document.content_hash,
                "media_type": document.media_type,
                "size_bytes": document.size_bytes,
            },
        )
    )
    for section in sections:
        section_id = str(section.id)
        graph.nodes.append(GraphNode("Section", section_id, _section_properties(section)))
        graph.edges.append(GraphEdge("HAS_SECTION", doc_id, section_id))
        if section.parent_id is not None:
            graph.edges.append(GraphEdge("SUBSECTION_OF", section_id, str(section.parent_id)))
    previous: str | None = None
    for chunk in sorted(chunks, key=lambda c: c.index):
        if vectors is not None and str(chunk.id) in vectors:
            chunk = chunk.model_copy(update={"embedding": list(vectors[str(chunk.id)])})
        record = chunk.to_node_record()
        graph.nodes.append(GraphNode("Chunk", record.id, dict(record.properties)))
        graph.edges.append(GraphEdge("HAS_CHUNK", doc_id, record.id))
        for chunk_section in chunk.section_ids:
            graph.edges.append(GraphEdge("FROM_SECTION", record.id, str(chunk_section)))
        if previous is not None:
            graph.edges.append(GraphEdge("NEXT_CHUNK", previous, record.id))
        previous = record.id
    return graph


def _section_properties(section: Section) -> dict[str, Any]:
    return {
        "document_id": str(section.document_id),
        "content_hash": section.content_hash,
        "ordinal": section.ordinal,
        "heading": section.heading,
        "level": section.level,
        "heading_path": list(section.heading_path),
        "kind": section.kind,
        "parent_id": str(section.parent_id) if section.parent_id else None,
        "char_start": section.start,
        "char_end": section.end,
        "pages": list(section.pages),
    }


def nodes_table(graph: DocumentGraph) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": n.id,
                "label": n.label,
                "document_id": graph.document_id,
                "properties": _canonical(n.properties),
            }
            for n in graph.nodes
        ],
        schema=NODES_SCHEMA,
    )


def edges_table(graph: DocumentGraph) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "type": e.type,
                "source_id": e.source_id,
                "target_id": e.target_id,
                "document_id": graph.document_id,
            }
            for e in graph.edges
        ],
        schema=EDGES_SCHEMA,
    )


def graph_from_tables(nodes: pa.Table, edges: pa.Table, content_hash: str) -> DocumentGraph:
    """The graph that ``nodes_table`` and ``edges_table`` wrote (for checks and re-loading)."""
    node_rows = nodes.to_pylist()
    document_id = node_rows[0]["document_id"] if node_rows else ""
    return DocumentGraph(
        document_id=document_id,
        content_hash=content_hash,
        nodes=[GraphNode(r["label"], r["id"], json.loads(r["properties"])) for r in node_rows],
        edges=[GraphEdge(r["type"], r["source_id"], r["target_id"]) for r in edges.to_pylist()],
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
