"""The extraction step: a document's stored chunks -> one model call per chunk (and gleanings),
through the response cache -> the ``entity_mentions`` and ``relation_mentions`` tables.

Plain Python, called by the Dagster ``extractions`` asset and by ``agrag core``. With no
``llm:`` endpoint configured the step says so and writes nothing. A chunk whose call fails for
good is recorded in the tables' metadata with its reason (``failed_chunks``) and gives no rows;
the other chunks go on, and the next run asks again for the failed ones only (the others are
cache hits). The two tables carry one ``extraction_batch`` id: a reader that finds two different
ids knows the pair was half-replaced by a crash and refuses it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agrag_pipeline.extraction.cache import ResponseCache
from agrag_pipeline.extraction.client import ChatClient
from agrag_pipeline.extraction.extract import ChunkExtraction, extract_chunk
from agrag_pipeline.extraction.merge import mention_tables
from agrag_pipeline.extraction.prompt import PROMPT_VERSION
from agrag_pipeline.fingerprints import fingerprint
from agrag_pipeline.models import Document
from agrag_pipeline.settings import PipelineSettings
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import read_metadata, with_metadata
from agrag_pipeline.stored import load_chunks
from agrag_pipeline.validation import CheckOutcome

NOT_CONFIGURED = (
    "extraction not configured: no llm endpoint in the settings (llm.base_url); "
    "no entities or relations are written"
)

#: The extraction asset's checks (one per document).
EXTRACTION_CHECKS = ("mentions_name_current_chunks",)


class HalfWrittenError(RuntimeError):
    """The entity and relation tables of a document come from two different runs."""


@dataclass
class ExtractionResult:
    document: Document
    configured: bool = True
    reused: bool = False
    chunks: int = 0
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    entities: int = 0
    relations: int = 0
    entity_types: dict[str, int] = field(default_factory=dict)
    relation_types: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    failed_chunks: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    preview: list[dict[str, Any]] = field(default_factory=list)
    entities_path: str = ""
    relations_path: str = ""


def build_extractions(
    warehouse: Warehouse,
    document: Document,
    settings: PipelineSettings,
    client: ChatClient | None,
    cache: ResponseCache | None,
    *,
    force: bool = False,
) -> ExtractionResult:
    """Extract every chunk of ``document``'s stored version and write its mention tables."""
    assert document.id is not None
    if settings.llm is None or client is None or cache is None:
        return ExtractionResult(document, configured=False)
    started = time.perf_counter()
    chunks_meta = warehouse.table_metadata("chunks", document.id) or {}
    wanted = {
        "content_hash": document.content_hash,
        "chunker_hash": chunks_meta.get("chunker_hash", ""),
        "schema_fingerprint": settings.schema_fingerprint,
        "extraction_fingerprint": settings.extraction_fingerprint,
        "model": settings.extraction.model,
        "prompt_template": PROMPT_VERSION,
    }
    entities_path = warehouse.table_path("entity_mentions", document.id)
    relations_path = warehouse.table_path("relation_mentions", document.id)
    if not force and _current(warehouse, document, wanted):
        result = summarise(warehouse, document)
        result.reused = True
        result.seconds = time.perf_counter() - started
        return result
    chunks = load_chunks(warehouse, document)
    extractions: list[ChunkExtraction] = [
        extract_chunk(
            chunk,
            settings.graph_schema,
            settings.extraction,
            client,
            cache,
            settings.llm.response_format,
        )
        for chunk in chunks
    ]
    entities, relations = mention_tables(
        extractions,
        schema_fingerprint=settings.schema_fingerprint,
        extraction_fingerprint=settings.extraction_fingerprint,
        model=settings.extraction.model,
    )
    failed = {str(ex.chunk.id): ex.failure for ex in extractions if ex.failure is not None}
    dropped: Counter[str] = Counter()
    for ex in extractions:
        dropped.update(ex.dropped)
    stats = {
        "chunks": len(chunks),
        "calls": sum(ex.calls for ex in extractions),
        "cache_hits": sum(ex.cache_hits for ex in extractions),
        "prompt_tokens": sum(ex.prompt_tokens for ex in extractions),
        "completion_tokens": sum(ex.completion_tokens for ex in extractions),
    }
    batch = fingerprint(
        {**wanted, "keys": [ex.cache_key for ex in extractions], "failed": sorted(failed)}
    )
    metadata = {
        "document_id": str(document.id),
        "source_key": document.source_key,
        **wanted,
        "extraction_batch": batch,
        "failed_chunks": json.dumps(failed, sort_keys=True),
        "dropped": json.dumps(dict(sorted(dropped.items()))),
        "stats": json.dumps(stats, sort_keys=True),
    }
    requires = {
        "chunks": {
            "content_hash": document.content_hash,
            "chunker_hash": chunks_meta.get("chunker_hash", ""),
        }
    }
    # Relations first: a crash between the two writes leaves two batch ids, which readers refuse.
    warehouse.write_table(
        "relation_mentions", document.id, with_metadata(relations, metadata), requires=requires
    )
    warehouse.write_table(
        "entity_mentions", document.id, with_metadata(entities, metadata), requires=requires
    )
    result = summarise(warehouse, document)
    result.calls, result.cache_hits = stats["calls"], stats["cache_hits"]
    result.prompt_tokens = stats["prompt_tokens"]
    result.completion_tokens = stats["completion_tokens"]
    result.seconds = time.perf_counter() - started
    assert result.entities_path == entities_path and result.relations_path == relations_path
    return result


def read_mentions(warehouse: Warehouse, document: Document) -> tuple[Any, Any]:
    """The document's (entity, relation) mention tables of its stored version, refusing a pair
    from two runs or of another version."""
    assert document.id is not None
    entities = warehouse.read_table("entity_mentions", document.id)
    relations = warehouse.read_table("relation_mentions", document.id)
    em, rm = read_metadata(entities), read_metadata(relations)
    if em.get("extraction_batch") != rm.get("extraction_batch"):
        raise HalfWrittenError(
            f"{warehouse.table_path('entity_mentions', document.id)} and its relation_mentions "
            "come from two different runs (a write was interrupted); run extractions again"
        )
    if em.get("content_hash") != document.content_hash:
        raise HalfWrittenError(
            f"the mention tables of {document.source_key} belong to another version; "
            "run extractions again"
        )
    return entities, relations


def summarise(warehouse: Warehouse, document: Document) -> ExtractionResult:
    """What the stored tables hold (counts by type, failures, drops, a preview)."""
    assert document.id is not None
    entities, relations = read_mentions(warehouse, document)
    meta = read_metadata(entities)
    stats = json.loads(meta.get("stats", "{}"))
    entity_rows = entities.to_pylist()
    relation_rows = relations.to_pylist()
    return ExtractionResult(
        document,
        chunks=int(stats.get("chunks", 0)),
        entities=len({r["entity_id"] for r in entity_rows}),
        relations=len({r["relation_id"] for r in relation_rows}),
        entity_types=dict(Counter(r["type"] for r in entity_rows)),
        relation_types=dict(Counter(r["type"] for r in relation_rows)),
        dropped=json.loads(meta.get("dropped", "{}")),
        failed_chunks=json.loads(meta.get("failed_chunks", "{}")),
        preview=[
            {k: r[k] for k in ("type", "name", "description", "chunk_id")} for r in entity_rows[:10]
        ],
        entities_path=warehouse.table_path("entity_mentions", document.id),
        relations_path=warehouse.table_path("relation_mentions", document.id),
    )


def _current(warehouse: Warehouse, document: Document, wanted: dict[str, str]) -> bool:
    """Stored tables of this version and settings, with no failed chunk left to retry."""
    assert document.id is not None
    if not warehouse.has_table("relation_mentions", document.id):
        return False
    meta = warehouse.table_metadata("entity_mentions", document.id)
    rel = warehouse.table_metadata("relation_mentions", document.id)
    if meta is None or rel is None or meta.get("extraction_batch") != rel.get("extraction_batch"):
        return False
    return all(meta.get(k, "") == v for k, v in wanted.items()) and meta.get(
        "failed_chunks", "{}"
    ) in ("{}", "")


def check_extractions(warehouse: Warehouse, source_key: str) -> list[CheckOutcome]:
    """Does every mention name one of the document's current chunks?"""
    name = EXTRACTION_CHECKS[0]
    try:
        document = warehouse.get_document(Document.node_id_for(source_key))
        if document is None or document.id is None:
            return [CheckOutcome(name, False, "no snapshot of this document is stored")]
        if not warehouse.has_table("entity_mentions", document.id):
            return [CheckOutcome(name, True, "no mention tables (extraction not configured)")]
        entities, relations = read_mentions(warehouse, document)
        current = {str(c.id) for c in load_chunks(warehouse, document)}
    except Exception as exc:  # a check reports; it never fails the step
        return [CheckOutcome(name, False, f"could not be checked: {type(exc).__name__}: {exc}")]
    named = set(entities.column("chunk_id").to_pylist()) | set(
        relations.column("chunk_id").to_pylist()
    )
    stray = named - current
    if stray:
        return [CheckOutcome(name, False, f"{len(stray)} mentioned chunk ids are not current")]
    return [
        CheckOutcome(
            name,
            True,
            f"{entities.num_rows} entity and {relations.num_rows} relation mentions, all from "
            f"the {len(current)} current chunks",
        )
    ]


def llm_parts(
    settings: PipelineSettings, cache_dir: Any
) -> tuple[ChatClient | None, ResponseCache | None]:
    """The chat client and the response cache (beside the embedding cache), or (None, None)
    when no endpoint is configured."""
    if settings.llm is None:
        return None, None
    from pathlib import Path

    return ChatClient(settings.llm), ResponseCache.in_dir(Path(cache_dir))
