"""Entity and relation identity, and the per-document mention tables.

An entity is UUIDv5 of (type, normalised name) under the project namespace, so the same entity
named in two documents is one node; a relation is identified by (type, source id, target id).
Each mention row names its ``chunk_id`` (and so the document version and every fingerprint):
the tables are the provenance, and the merged graph is what they say together.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from agrag_pipeline.extraction.extract import ChunkExtraction
from agrag_pipeline.models import PROJECT_NAMESPACE


def entity_id(entity_type: str, normalised_name: str) -> str:
    return str(uuid.uuid5(PROJECT_NAMESPACE, f"entity:{entity_type}:{normalised_name}"))


def relation_id(relation_type: str, source_id: str, target_id: str) -> str:
    return str(uuid.uuid5(PROJECT_NAMESPACE, f"relation:{relation_type}:{source_id}:{target_id}"))


_PROVENANCE = [
    pa.field("document_id", pa.string(), nullable=False),
    pa.field("content_hash", pa.string(), nullable=False),
    pa.field("chunk_id", pa.string(), nullable=False),
    pa.field("schema_fingerprint", pa.string()),
    pa.field("extraction_fingerprint", pa.string()),
    pa.field("model", pa.string()),
    pa.field("cache_key", pa.string()),
]

ENTITY_MENTIONS_SCHEMA = pa.schema(
    [
        pa.field("entity_id", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("normalised_name", pa.string(), nullable=False),
        pa.field("description", pa.string()),
        pa.field("properties", pa.string()),  # JSON object
        *_PROVENANCE,
    ]
)

RELATION_MENTIONS_SCHEMA = pa.schema(
    [
        pa.field("relation_id", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("source_id", pa.string(), nullable=False),
        pa.field("target_id", pa.string(), nullable=False),
        pa.field("source_name", pa.string(), nullable=False),
        pa.field("target_name", pa.string(), nullable=False),
        pa.field("description", pa.string()),
        pa.field("strength", pa.float64()),
        *_PROVENANCE,
    ]
)


def mention_tables(
    extractions: Sequence[ChunkExtraction],
    *,
    schema_fingerprint: str,
    extraction_fingerprint: str,
    model: str,
) -> tuple[pa.Table, pa.Table]:
    """The entity and relation mention tables of one document's chunk extractions (failed
    chunks give no rows)."""
    entities: list[dict[str, Any]] = []
    relations: list[dict[str, Any]] = []
    for ex in extractions:
        if ex.failure is not None:
            continue
        provenance = {
            "document_id": str(ex.chunk.document_id),
            "content_hash": ex.chunk.content_hash,
            "chunk_id": str(ex.chunk.id),
            "schema_fingerprint": schema_fingerprint,
            "extraction_fingerprint": extraction_fingerprint,
            "model": model,
            "cache_key": ex.cache_key,
        }
        for e in ex.entities:
            entities.append(
                {
                    "entity_id": entity_id(e.type, e.normalised_name),
                    "type": e.type,
                    "name": e.name,
                    "normalised_name": e.normalised_name,
                    "description": e.description,
                    "properties": json.dumps(e.properties, sort_keys=True, ensure_ascii=False),
                    **provenance,
                }
            )
        for r in ex.relations:
            source = entity_id(r.source_type, r.source)
            target = entity_id(r.target_type, r.target)
            relations.append(
                {
                    "relation_id": relation_id(r.type, source, target),
                    "type": r.type,
                    "source_id": source,
                    "target_id": target,
                    "source_name": r.source,
                    "target_name": r.target,
                    "description": r.description,
                    "strength": r.strength,
                    **provenance,
                }
            )
    return (
        pa.Table.from_pylist(entities, schema=ENTITY_MENTIONS_SCHEMA),
        pa.Table.from_pylist(relations, schema=RELATION_MENTIONS_SCHEMA),
    )


@dataclass
class DocumentFacts:
    """What one document contributes to the merged graph: entities, which chunk mentions
    which entity, and which chunks assert which relation."""

    entities: dict[str, dict[str, str]] = field(default_factory=dict)
    mentions: set[tuple[str, str]] = field(default_factory=set)  # (chunk_id, entity_id)
    relations: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_tables(cls, entities: pa.Table, relations: pa.Table) -> DocumentFacts:
        facts = cls()
        for row in entities.to_pylist():
            facts.entities.setdefault(
                row["entity_id"],
                {
                    "type": row["type"],
                    "name": row["name"],
                    "normalised_name": row["normalised_name"],
                    "description": row["description"] or "",
                },
            )
            facts.mentions.add((row["chunk_id"], row["entity_id"]))
        for row in relations.to_pylist():
            key = (row["type"], row["source_id"], row["target_id"])
            entry = facts.relations.setdefault(
                key,
                {"chunk_ids": set(), "description": row["description"] or "", "strength": None},
            )
            entry["chunk_ids"].add(row["chunk_id"])
            if row["strength"] is not None:
                entry["strength"] = max(entry["strength"] or 0.0, float(row["strength"]))
        return facts

    def chunk_ids(self) -> set[str]:
        return {c for c, _ in self.mentions} | {
            c for entry in self.relations.values() for c in entry["chunk_ids"]
        }
