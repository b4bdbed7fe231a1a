"""The merged entity graph in the graph database, beside the lexical graph.

``Entity`` nodes (id: UUIDv5 of type and normalised name), ``(Chunk)-[:MENTIONS]->(Entity)``
edges, and one edge type per schema relation type between entities, carrying the ``chunk_ids``
that assert it. Written per document from its mention tables, taking back first what the same
document wrote last time (kept in its ``entity_graph`` table): its mentions go, its chunk ids
leave the relations they supported (a relation no chunk supports any more goes), and an entity
no chunk mentions any more goes. Other documents' facts are only touched where they share an
entity or relation, and then only by id.

This module adds to the store through its public ``query`` and the transaction every backend
runs (``_run``), so the lexical graph's files stay as they are. The graph step rewrites a
changed document's chunks with ``DETACH DELETE``, which takes their MENTIONS edges with them;
the ``entity_graph`` asset therefore runs after ``graph``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from agrag_pipeline.extraction.merge import DocumentFacts
from agrag_pipeline.extraction.step import read_mentions
from agrag_pipeline.models import Document
from agrag_pipeline.sinks.graph.model import EDGE_TYPES, NODE_PROPERTIES
from agrag_pipeline.sinks.graph.store import GraphStore, Statement
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import read_metadata, with_metadata
from agrag_pipeline.validation import CheckOutcome

ENTITY_GRAPH_CHECKS = ("entity_graph_matches_tables",)

ENTITY_PROPERTIES = {
    "type": "STRING",
    "name": "STRING",
    "normalised_name": "STRING",
    "description": "STRING",
}

STATE_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string(), nullable=False),  # "mention" or "relation"
        pa.field("chunk_id", pa.string(), nullable=False),
        pa.field("entity_id", pa.string()),
        pa.field("relation_type", pa.string()),
        pa.field("source_id", pa.string()),
        pa.field("target_id", pa.string()),
    ]
)

_MENTIONS_OF_DOCUMENT = (
    "MATCH (d:Document {id: $document_id})-[:HAS_CHUNK]->(c:Chunk)-[m:MENTIONS]->(e:Entity)"
)


class EntitySchemaError(ValueError):
    """A relation type whose name the lexical graph already uses for its own edges."""


def ensure_entity_schema(store: GraphStore, relation_types: list[str]) -> None:
    """Create the Entity table and the edge tables (embedded database; Neo4j needs none)."""
    reserved = {*EDGE_TYPES, "MENTIONS", *NODE_PROPERTIES, "Entity"}
    clash = sorted(set(relation_types) & reserved)
    if clash:
        raise EntitySchemaError(
            f"graph_schema relation types {clash} clash with the graph's own names "
            f"{sorted(reserved)}"
        )
    if not store.name.startswith("ladybug:"):
        return
    columns = ", ".join(f"`{name}` {kind}" for name, kind in ENTITY_PROPERTIES.items())
    store.query(f"CREATE NODE TABLE IF NOT EXISTS Entity(id STRING PRIMARY KEY, {columns})")
    store.query("CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Chunk TO Entity)")
    for name in sorted(set(relation_types)):
        store.query(
            f"CREATE REL TABLE IF NOT EXISTS `{name}`(FROM Entity TO Entity, "
            "chunk_ids STRING[], description STRING, strength DOUBLE)"
        )


@dataclass(frozen=True)
class EntityGraphResult:
    document: Document
    entities: int
    mentions: int
    relations: int
    removed_entities: int
    store: str
    reused: bool = False
    configured: bool = True


def facts_from_state(table: pa.Table) -> DocumentFacts:
    facts = DocumentFacts()
    for row in table.to_pylist():
        if row["kind"] == "mention":
            facts.mentions.add((row["chunk_id"], row["entity_id"]))
            facts.entities.setdefault(row["entity_id"], {})
        else:
            key = (row["relation_type"], row["source_id"], row["target_id"])
            entry = facts.relations.setdefault(key, {"chunk_ids": set()})
            entry["chunk_ids"].add(row["chunk_id"])
    return facts


def state_table(facts: DocumentFacts) -> pa.Table:
    rows: list[dict[str, Any]] = [
        {"kind": "mention", "chunk_id": c, "entity_id": e} for c, e in sorted(facts.mentions)
    ]
    for (kind, source, target), entry in sorted(facts.relations.items()):
        rows.extend(
            {
                "kind": "relation",
                "chunk_id": c,
                "relation_type": kind,
                "source_id": source,
                "target_id": target,
            }
            for c in sorted(entry["chunk_ids"])
        )
    return pa.Table.from_pylist(rows, schema=STATE_SCHEMA)


def replace_document_facts(
    store: GraphStore, document_id: str, old: DocumentFacts, new: DocumentFacts
) -> int:
    """Make the store hold ``new`` instead of ``old`` for one document, in one transaction;
    returns how many entities went because nothing mentions them any more."""
    old_chunks = old.chunk_ids()
    params = {"document_id": document_id}
    statements: list[Statement] = [(f"{_MENTIONS_OF_DOCUMENT} DELETE m", params)]
    # Mentions of superseded chunks went with their Chunk nodes; any left (a chunk node kept
    # while its extraction changed) are taken back here by id.
    statements.extend(
        (
            "MATCH (c:Chunk {id: $chunk_id})-[m:MENTIONS]->(e:Entity {id: $entity_id}) DELETE m",
            {"chunk_id": c, "entity_id": e},
        )
        for c, e in sorted(old.mentions - new.mentions)
    )
    for entity_id, entity in sorted(new.entities.items()):
        statements.append(
            (
                "MERGE (e:Entity {id: $id}) ON CREATE SET e.type = $type, e.name = $name, "
                "e.normalised_name = $normalised_name, e.description = $description",
                {"id": entity_id, **entity},
            )
        )
    statements.extend(
        (
            "MATCH (c:Chunk {id: $chunk_id}), (e:Entity {id: $entity_id}) "
            "CREATE (c)-[:MENTIONS]->(e)",
            {"chunk_id": c, "entity_id": e},
        )
        for c, e in sorted(new.mentions)
    )
    for key in sorted(set(old.relations) | set(new.relations)):
        kind, source, target = key
        ends = {"source": source, "target": target}
        stored = store.query(
            f"MATCH (a:Entity {{id: $source}})-[r:`{kind}`]->(b:Entity {{id: $target}}) "
            "RETURN r.chunk_ids AS chunk_ids, r.description AS description, "
            "r.strength AS strength",
            ends,
        )
        chunk_ids: set[str] = set()
        description, strength = "", None
        for row in stored:
            chunk_ids |= set(row["chunk_ids"] or [])
            description = description or row["description"] or ""
            strength = row["strength"] if strength is None else strength
        chunk_ids -= old_chunks
        if key in new.relations:
            entry = new.relations[key]
            chunk_ids |= entry["chunk_ids"]
            description = description or entry["description"]
            if entry["strength"] is not None:
                strength = max(strength or 0.0, entry["strength"])
        statements.append(
            (
                f"MATCH (a:Entity {{id: $source}})-[r:`{kind}`]->(b:Entity {{id: $target}}) "
                "DELETE r",
                ends,
            )
        )
        if chunk_ids:
            statements.append(
                (
                    "MATCH (a:Entity {id: $source}), (b:Entity {id: $target}) "
                    f"CREATE (a)-[:`{kind}` {{chunk_ids: $chunk_ids, description: $description, "
                    "strength: CAST($strength AS DOUBLE)}]->(b)",
                    {
                        **ends,
                        "chunk_ids": sorted(chunk_ids),
                        "description": description,
                        "strength": strength,
                    },
                )
            )
    candidates = sorted(set(old.entities) | set(new.entities))
    before = _existing(store, candidates)
    statements.extend(
        (
            "MATCH (e:Entity {id: $id}) WHERE NOT EXISTS { MATCH (:Chunk)-[:MENTIONS]->(e) } "
            "DETACH DELETE e",
            {"id": entity_id},
        )
        for entity_id in candidates
    )
    store._run(statements)
    return len(before - _existing(store, candidates))


def _existing(store: GraphStore, ids: list[str]) -> set[str]:
    return {
        entity_id
        for entity_id in ids
        if store.query("MATCH (e:Entity {id: $id}) RETURN e.id AS id", {"id": entity_id})
    }


def stored_mentions(store: GraphStore, document_id: str) -> set[tuple[str, str]]:
    rows = store.query(
        f"{_MENTIONS_OF_DOCUMENT} RETURN c.id AS c, e.id AS e", {"document_id": document_id}
    )
    return {(r["c"], r["e"]) for r in rows}


def build_entity_graph(
    warehouse: Warehouse,
    document: Document,
    store: GraphStore | None,
    relation_types: list[str],
    *,
    force: bool = False,
) -> EntityGraphResult:
    """Make the graph database hold the document's current mentions (see the module doc)."""
    assert document.id is not None
    document_id = str(document.id)
    old_state = (
        warehouse.read_table("entity_graph", document.id)
        if warehouse.has_table("entity_graph", document.id)
        else None
    )
    old = facts_from_state(old_state) if old_state is not None else DocumentFacts()
    configured = warehouse.has_table("entity_mentions", document.id)
    if configured:
        entities, relations = read_mentions(warehouse, document)
        new = DocumentFacts.from_tables(entities, relations)
        batch = read_metadata(entities).get("extraction_batch", "")
    else:  # extraction not configured (or turned off): nothing of this document stays
        new, batch = DocumentFacts(), ""
    name = store.name if store is not None else "none"
    if (
        not force
        and old_state is not None
        and read_metadata(old_state).get("extraction_batch", "") == batch
        and (store is None or stored_mentions(store, document_id) == new.mentions)
    ):
        return EntityGraphResult(
            document,
            len(new.entities),
            len(new.mentions),
            len(new.relations),
            removed_entities=0,
            store=name,
            reused=True,
            configured=configured,
        )
    removed = 0
    if store is not None:
        ensure_entity_schema(store, relation_types)
        removed = replace_document_facts(store, document_id, old, new)
    warehouse.write_table(
        "entity_graph",
        document.id,
        with_metadata(
            state_table(new),
            {
                "document_id": document_id,
                "content_hash": document.content_hash,
                "extraction_batch": batch,
            },
        ),
    )
    return EntityGraphResult(
        document,
        len(new.entities),
        len(new.mentions),
        len(new.relations),
        removed_entities=removed,
        store=name,
        configured=configured,
    )


class EntityGraphSink:
    """Takes a deleted document's facts out of the graph database (a ``DocumentSink``)."""

    def __init__(self, store: GraphStore, warehouse: Warehouse, relation_types: list[str]) -> None:
        self.store = store
        self.warehouse = warehouse
        self.relation_types = relation_types
        self.name = f"entities in {store.name}"

    def delete_document(self, document_id: str) -> int:
        from uuid import UUID

        doc = UUID(document_id)
        if not self.warehouse.has_table("entity_graph", doc):
            return 0
        old = facts_from_state(self.warehouse.read_table("entity_graph", doc))
        if not old.mentions and not old.relations:
            return 0
        ensure_entity_schema(self.store, self.relation_types)
        removed = replace_document_facts(self.store, document_id, old, DocumentFacts())
        return len(old.mentions) + removed

    def close(self) -> None:
        self.store.close()


def check_entity_graph(
    warehouse: Warehouse, source_key: str, store: GraphStore | None
) -> list[CheckOutcome]:
    """Does the graph database hold exactly the mentions the document's tables list?"""
    name = ENTITY_GRAPH_CHECKS[0]
    try:
        document = warehouse.get_document(Document.node_id_for(source_key))
        if document is None or document.id is None:
            return [CheckOutcome(name, False, "no snapshot of this document is stored")]
        if not warehouse.has_table("entity_mentions", document.id):
            return [CheckOutcome(name, True, "no mention tables (extraction not configured)")]
        entities, relations = read_mentions(warehouse, document)
        facts = DocumentFacts.from_tables(entities, relations)
        if store is None:
            return [CheckOutcome(name, True, "graph.backend is none: the tables alone")]
        stored = stored_mentions(store, str(document.id))
    except Exception as exc:  # a check reports; it never fails the step
        return [CheckOutcome(name, False, f"could not be checked: {type(exc).__name__}: {exc}")]
    if stored != facts.mentions:
        return [
            CheckOutcome(
                name,
                False,
                f"MENTIONS: {len(facts.mentions - stored)} missing, "
                f"{len(stored - facts.mentions)} not in the tables",
            )
        ]
    return [
        CheckOutcome(
            name,
            True,
            f"{store.name} holds exactly the {len(stored)} mentions of "
            f"{len(facts.entities)} entities of the tables",
        )
    ]


def graph_summary(store: GraphStore, top: int = 10) -> dict[str, Any]:
    """The merged graph's entity and relation counts by type, and its most mentioned entities."""
    try:
        entity_types = {
            r["t"]: int(r["n"])
            for r in store.query("MATCH (e:Entity) RETURN e.type AS t, count(e) AS n")
        }
        top_entities = [
            {"name": r["name"], "type": r["type"], "chunks": int(r["n"])}
            for r in store.query(
                "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN e.name AS name, e.type AS type, "
                f"count(c) AS n ORDER BY n DESC, name LIMIT {int(top)}"
            )
        ]
        relation_types = {
            r["t"]: int(r["n"])
            for r in store.query(
                "MATCH (:Entity)-[r]->(:Entity) RETURN label(r) AS t, count(r) AS n"
                if store.name.startswith("ladybug:")
                else "MATCH (:Entity)-[r]->(:Entity) RETURN type(r) AS t, count(r) AS n"
            )
        }
    except Exception as exc:  # figures for the UI: never fail the step for them
        return {"graph_summary_error": f"{type(exc).__name__}: {exc}"}
    return {
        "graph_entities_by_type": entity_types,
        "graph_relations_by_type": relation_types,
        "graph_top_entities": top_entities,
    }
