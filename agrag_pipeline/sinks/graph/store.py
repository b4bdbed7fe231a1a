"""One small interface over Cypher graph databases, and the statements every backend sends.

Every backend (``ladybug_store`` embedded, ``neo4j_store`` for a server) runs the same Cypher,
written in the subset that LadybugDB (the maintained Kuzu fork) and Neo4j both accept
(``MERGE``/``CREATE``/``DETACH DELETE``, ``UNWIND $rows``, back-quoted property names: ``index``
is a keyword in Kuzu's grammar). So the tests that run the embedded database also run the
Cypher the Neo4j backend sends; only schema creation, the transport and the way a list value is
typed (``ValueExpression``) differ.

Writing a document is one transaction: upsert its Document node, delete its sections and
chunks, create the new version's sections and chunks together with their ``HAS_SECTION``/
``HAS_CHUNK`` edges, then derive ``SUBSECTION_OF``, ``FROM_SECTION`` and ``NEXT_CHUNK`` inside
the document. Every statement starts from the Document node found by its id, so nothing of
another document is matched, and the cost of a write is the document's size, not the graph's.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agrag_pipeline.models import Chunk
from agrag_pipeline.sinks.graph.model import (
    EDGE_TYPES,
    NODE_PROPERTIES,
    DocumentGraph,
    PropertyType,
)

Statement = tuple[str, dict[str, Any]]

#: Rows per UNWIND: large enough to amortise a round trip, small enough for a server's limits.
BATCH_ROWS = 1000


@dataclass(frozen=True)
class WriteStats:
    """What one document write did."""

    nodes: int
    edges: int
    superseded: int


#: How a statement reads a property from its parameter row: the one place the dialects differ.
#: Neo4j takes the value as it is; LadybugDB infers parameter types from the values, so a
#: batch whose list property is null or empty everywhere would be typed STRING and refused,
#: unless the value is cast to the column's type.
ValueExpression = Callable[[str, PropertyType], str]


def plain_value(name: str, kind: PropertyType) -> str:
    return f"r.`{name}`"


def _property_map(label: str, value: ValueExpression) -> str:
    return ", ".join(
        ["id: r.id"]
        + [f"`{name}`: {value(name, kind)}" for name, kind in NODE_PROPERTIES[label].items()]
    )


def upsert_document_statement(value: ValueExpression = plain_value) -> str:
    assignments = ", ".join(
        f"n.`{name}` = {value(name, kind)}" for name, kind in NODE_PROPERTIES["Document"].items()
    )
    # MERGE on the parameter itself, so the node is found through the primary-key index.
    return f"MERGE (n:Document {{id: $document_id}}) WITH n UNWIND $rows AS r SET {assignments}"


def create_owned_nodes_statement(label: str, value: ValueExpression = plain_value) -> str:
    """Create a document's sections (or chunks) together with the edge from their Document:
    no node is looked up by id, so the cost is the rows', whatever the graph's size."""
    return (
        "MATCH (d:Document {id: $document_id}) UNWIND $rows AS r "
        f"CREATE (d)-[:{OWNING_EDGE[label]}]->(n:{label} {{{_property_map(label, value)}}})"
    )


#: The edges that are not ownership edges, derived inside one document from the properties that
#: define them (the same rule ``model.document_graph`` applies; the graph check compares the
#: result with the edge table). Each join stays within the document's own nodes.
DERIVED_EDGE_STATEMENTS = {
    "SUBSECTION_OF": (
        "MATCH (d:Document {id: $document_id})-[:HAS_SECTION]->(s:Section), "
        "(d)-[:HAS_SECTION]->(p:Section) WHERE s.parent_id = p.id "
        "CREATE (s)-[:SUBSECTION_OF]->(p)"
    ),
    "FROM_SECTION": (
        "MATCH (d:Document {id: $document_id})-[:HAS_CHUNK]->(c:Chunk), "
        "(d)-[:HAS_SECTION]->(s:Section) WHERE s.id IN c.section_ids "
        "CREATE (c)-[:FROM_SECTION]->(s)"
    ),
    "NEXT_CHUNK": (
        "MATCH (d:Document {id: $document_id})-[:HAS_CHUNK]->(a:Chunk), "
        "(d)-[:HAS_CHUNK]->(b:Chunk) WHERE b.`index` = a.`index` + 1 "
        "CREATE (a)-[:NEXT_CHUNK]->(b)"
    ),
}

#: The edge from a Document to each of its nodes of a label. Every per-document statement walks
#: from the Document node (found by its primary key) along these edges, so its cost is the
#: document's size, not the graph's: a filter on ``document_id`` would scan every node of the
#: label in LadybugDB, which has no secondary indexes (quadratic over a backfill).
OWNING_EDGE = {"Section": "HAS_SECTION", "Chunk": "HAS_CHUNK"}


def of_document(label: str, variable: str = "n") -> str:
    """A pattern matching the nodes of ``label`` that belong to ``$document_id``."""
    if label == "Document":
        return f"({variable}:Document {{id: $document_id}})"
    return f"(:Document {{id: $document_id}})-[:{OWNING_EDGE[label]}]->({variable}:{label})"


def delete_document_statements(document_id: str) -> list[Statement]:
    """Chunks and sections first (found through their Document), then any node still naming
    the document (none, unless written by hand), then the Document node itself."""
    params = {"document_id": document_id}
    return [
        (f"MATCH {of_document('Chunk')} DETACH DELETE n", params),
        (f"MATCH {of_document('Section')} DETACH DELETE n", params),
        *(
            (f"MATCH (n:{label}) WHERE n.document_id = $document_id DETACH DELETE n", params)
            for label in ("Chunk", "Section")
        ),
        (f"MATCH {of_document('Document')} DETACH DELETE n", params),
    ]


def write_statements(graph: DocumentGraph, value: ValueExpression = plain_value) -> list[Statement]:
    """The statements that make the store hold exactly ``graph`` for its document.

    The document's sections and chunks are replaced, not merged one by one: their ids are
    deterministic (the same version and settings give the same ids), so replacing them is
    idempotent, superseded ones go in the same transaction, and no statement has to find a node
    by an id taken from a parameter row (which LadybugDB answers by scanning the whole label).
    """
    params = {"document_id": graph.document_id}
    statements: list[Statement] = [
        (f"MATCH {of_document('Chunk')} DETACH DELETE n", params),
        (f"MATCH {of_document('Section')} DETACH DELETE n", params),
        (
            upsert_document_statement(value),
            {
                **params,
                "rows": [_row("Document", n.id, n.properties) for n in graph.nodes_of("Document")],
            },
        ),
    ]
    for label in ("Section", "Chunk"):
        rows = [_row(label, n.id, n.properties) for n in graph.nodes_of(label)]
        statements.extend(
            (create_owned_nodes_statement(label, value), {**params, "rows": batch})
            for batch in _batches(rows)
        )
    statements.extend((cypher, params) for cypher in DERIVED_EDGE_STATEMENTS.values())
    return statements


def _row(label: str, node_id: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """A node's parameter row: its id and every property of its label (missing ones null)."""
    return {"id": node_id, **{name: properties.get(name) for name in NODE_PROPERTIES[label]}}


def _batches(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), BATCH_ROWS):
        yield rows[start : start + BATCH_ROWS]


def count_nodes_statement(label: str) -> str:
    return f"MATCH {of_document(label)} RETURN count(n) AS n"


def count_edges_statement(edge_type: str) -> str:
    source, target = EDGE_TYPES[edge_type]
    return f"MATCH {of_document(source, 'a')}-[e:{edge_type}]->(b:{target}) RETURN count(e) AS n"


#: One document's node ids with their labels, every label in one round trip.
NODE_IDS_QUERY = " UNION ALL ".join(
    f"MATCH {of_document(label)} RETURN '{label}' AS label, n.id AS id" for label in NODE_PROPERTIES
)

#: One document's edges as (type, source id, target id), every type in one round trip.
EDGES_QUERY = " UNION ALL ".join(
    f"MATCH {of_document(source, 'a')}-[:{edge_type}]->(b:{target}) "
    f"RETURN '{edge_type}' AS type, a.id AS s, b.id AS t"
    for edge_type, (source, target) in EDGE_TYPES.items()
)


class GraphStore(abc.ABC):
    """A graph database holding Document, Section and Chunk nodes, written per document."""

    #: Shown in metadata and messages, e.g. "ladybug:/path/graph.lbdb".
    name: str = "graph"

    #: How this backend's statements read a property value (see ``ValueExpression``).
    value_expression: ValueExpression = staticmethod(plain_value)

    #: The warehouse whose graph tables this open store was last reconciled with
    #: (``step.reconcile_store``, once per session); None until then and after ``close``.
    reconciled_with: str | None = None

    @abc.abstractmethod
    def _run(self, statements: Sequence[Statement]) -> None:
        """Run ``statements`` in one write transaction."""

    @abc.abstractmethod
    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query; rows as dicts keyed by the RETURN names."""

    @abc.abstractmethod
    def ensure_schema(self) -> None:
        """Create what the database needs before the first write (idempotent)."""

    def close(self) -> None:
        """Release the connection (a backend that holds one releases it, then calls this)."""
        self.reconciled_with = None

    @contextmanager
    def session(self) -> Iterator[GraphStore]:
        """Hold the store open across several writes (one open, one close)."""
        try:
            yield self
        finally:
            self.close()

    # -- writes ---------------------------------------------------------------------------
    def write_document(self, graph: DocumentGraph) -> WriteStats:
        """Make the store hold exactly ``graph`` for its document (idempotent)."""
        before = self.node_ids(graph.document_id)
        self._run(write_statements(graph, self.value_expression))
        new_ids = {n.id for n in graph.nodes}
        superseded = sum(len(before[label] - new_ids) for label in ("Section", "Chunk"))
        return WriteStats(nodes=len(graph.nodes), edges=len(graph.edges), superseded=superseded)

    def delete_document(self, document_id: str) -> int:
        """Remove every node (and so every edge) of ``document_id``; how many nodes went."""
        before = self.counts(document_id)
        self._run(delete_document_statements(document_id))
        return sum(before[label] for label in NODE_PROPERTIES)

    # -- reads ----------------------------------------------------------------------------
    def counts(self, document_id: str) -> dict[str, int]:
        """Nodes per label and edges per type of one document, as stored."""
        params = {"document_id": document_id}
        counts: dict[str, int] = {}
        for label in NODE_PROPERTIES:
            rows = self.query(count_nodes_statement(label), params)
            counts[label] = int(rows[0]["n"]) if rows else 0
        for edge_type in EDGE_TYPES:
            rows = self.query(count_edges_statement(edge_type), params)
            counts[edge_type] = int(rows[0]["n"]) if rows else 0
        return counts

    def node_ids(self, document_id: str) -> dict[str, set[str]]:
        """Ids of one document's nodes per label (one query)."""
        found: dict[str, set[str]] = {label: set() for label in NODE_PROPERTIES}
        for row in self.query(NODE_IDS_QUERY, {"document_id": document_id}):
            found[row["label"]].add(row["id"])
        return found

    def edges(self, document_id: str) -> set[tuple[str, str, str]]:
        """(type, source id, target id) of one document's edges (one query)."""
        rows = self.query(EDGES_QUERY, {"document_id": document_id})
        return {(r["type"], r["s"], r["t"]) for r in rows}

    def document_ids(self) -> set[str]:
        """The ids of every Document node the store holds."""
        return {r["id"] for r in self.query("MATCH (n:Document) RETURN n.id AS id")}

    def chunks(self, document_id: str) -> list[Chunk]:
        """The document's chunks in order, rebuilt from their nodes through ``Chunk.from_node``."""
        returns = ", ".join(f"c.`{p}` AS `{p}`" for p in NODE_PROPERTIES["Chunk"])
        rows = self.query(
            f"MATCH {of_document('Chunk', 'c')} RETURN c.id AS id, {returns} ORDER BY c.`index`",
            {"document_id": document_id},
        )
        return [Chunk.from_node(row) for row in rows]
