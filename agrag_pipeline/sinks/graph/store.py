"""One small interface over Cypher graph databases, and the statements every backend sends.

Every backend (``ladybug_store`` embedded, ``neo4j_store`` for a server) runs the same Cypher:
written in the subset that LadybugDB (the maintained Kuzu fork) and Neo4j both accept —
``UNWIND $rows AS r MERGE (n:Label {id: r.id}) SET n.`prop` = r.`prop`, ...``, ``DETACH DELETE``,
back-quoted property names (``index`` is a keyword in Kuzu's grammar). So the tests that run the
embedded database also run the Cypher the Neo4j backend sends; only schema creation and the
transport differ.

Writing a document is one transaction: upsert the Document node, delete the sections and chunks
of the document that are not in the new version (superseded), upsert the new nodes, then merge
the edges. Nothing of another document is matched: every statement is keyed by ids or by
``document_id``.
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


def upsert_nodes_statement(label: str, value: ValueExpression = plain_value) -> str:
    assignments = ", ".join(
        f"n.`{name}` = {value(name, kind)}" for name, kind in NODE_PROPERTIES[label].items()
    )
    return f"UNWIND $rows AS r MERGE (n:{label} {{id: r.id}}) SET {assignments}"


def merge_edges_statement(edge_type: str) -> str:
    source, target = EDGE_TYPES[edge_type]
    return (
        f"UNWIND $rows AS r MATCH (a:{source} {{id: r.s}}), (b:{target} {{id: r.t}}) "
        f"MERGE (a)-[:{edge_type}]->(b)"
    )


def delete_superseded_statement(label: str) -> str:
    return (
        f"MATCH (n:{label}) WHERE n.document_id = $document_id AND NOT n.id IN $keep "
        "DETACH DELETE n"
    )


def delete_document_statements(document_id: str) -> list[Statement]:
    params = {"document_id": document_id}
    return [
        (f"MATCH (n:{label}) WHERE n.document_id = $document_id DETACH DELETE n", params)
        for label in ("Chunk", "Section", "Document")
    ]


def write_statements(graph: DocumentGraph, value: ValueExpression = plain_value) -> list[Statement]:
    """The statements that make the store hold exactly ``graph`` for its document."""
    statements: list[Statement] = []
    for label in ("Section", "Chunk"):
        keep = [n.id for n in graph.nodes_of(label)]
        statements.append(
            (
                delete_superseded_statement(label),
                {"document_id": graph.document_id, "keep": keep},
            )
        )
    for label in ("Document", "Section", "Chunk"):
        rows = [_row(label, n.id, n.properties) for n in graph.nodes_of(label)]
        statements.extend(
            (upsert_nodes_statement(label, value), {"rows": batch}) for batch in _batches(rows)
        )
    for edge_type in EDGE_TYPES:
        rows = [{"s": e.source_id, "t": e.target_id} for e in graph.edges_of(edge_type)]
        statements.extend(
            (merge_edges_statement(edge_type), {"rows": batch}) for batch in _batches(rows)
        )
    return statements


def _row(label: str, node_id: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """A node's parameter row: its id and every property of its label (missing ones null)."""
    return {"id": node_id, **{name: properties.get(name) for name in NODE_PROPERTIES[label]}}


def _batches(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), BATCH_ROWS):
        yield rows[start : start + BATCH_ROWS]


#: Counts of one document's nodes per label and edges per type, in the store.
COUNT_NODES = "MATCH (n:{label}) WHERE n.document_id = $document_id RETURN count(n) AS n"
COUNT_EDGES = (
    "MATCH (a:{source})-[e:{edge_type}]->(b:{target}) "
    "WHERE a.document_id = $document_id AND b.document_id = $document_id RETURN count(e) AS n"
)


class GraphStore(abc.ABC):
    """A graph database holding Document, Section and Chunk nodes, written per document."""

    #: Shown in metadata and messages, e.g. "ladybug:/path/graph.lbdb".
    name: str = "graph"

    #: How this backend's statements read a property value (see ``ValueExpression``).
    value_expression: ValueExpression = staticmethod(plain_value)

    @abc.abstractmethod
    def _run(self, statements: Sequence[Statement]) -> None:
        """Run ``statements`` in one write transaction."""

    @abc.abstractmethod
    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query; rows as dicts keyed by the RETURN names."""

    @abc.abstractmethod
    def ensure_schema(self) -> None:
        """Create what the database needs before the first write (idempotent)."""

    def close(self) -> None:  # noqa: B027 - backends without resources need nothing
        """Release the connection."""

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
            rows = self.query(COUNT_NODES.format(label=label), params)
            counts[label] = int(rows[0]["n"]) if rows else 0
        for edge_type, (source, target) in EDGE_TYPES.items():
            cypher = COUNT_EDGES.format(source=source, target=target, edge_type=edge_type)
            rows = self.query(cypher, params)
            counts[edge_type] = int(rows[0]["n"]) if rows else 0
        return counts

    def node_ids(self, document_id: str) -> dict[str, set[str]]:
        """Ids of one document's nodes per label."""
        return {
            label: {
                r["id"]
                for r in self.query(
                    f"MATCH (n:{label}) WHERE n.document_id = $document_id RETURN n.id AS id",
                    {"document_id": document_id},
                )
            }
            for label in NODE_PROPERTIES
        }

    def edges(self, document_id: str) -> set[tuple[str, str, str]]:
        """(type, source id, target id) of one document's edges."""
        found: set[tuple[str, str, str]] = set()
        for edge_type, (source, target) in EDGE_TYPES.items():
            rows = self.query(
                f"MATCH (a:{source})-[:{edge_type}]->(b:{target}) "
                "WHERE a.document_id = $document_id RETURN a.id AS s, b.id AS t",
                {"document_id": document_id},
            )
            found.update((edge_type, r["s"], r["t"]) for r in rows)
        return found

    def chunks(self, document_id: str) -> list[Chunk]:
        """The document's chunks in order, rebuilt from their nodes through ``Chunk.from_node``."""
        returns = ", ".join(f"c.`{p}` AS `{p}`" for p in NODE_PROPERTIES["Chunk"])
        rows = self.query(
            f"MATCH (c:Chunk) WHERE c.document_id = $document_id RETURN c.id AS id, {returns} "
            "ORDER BY c.`index`",
            {"document_id": document_id},
        )
        return [Chunk.from_node(row) for row in rows]
