"""The ``extractions`` and ``entity_graph`` assets: entities and relations per chunk, and the
merged entity graph in the graph database.

``extractions`` (downstream of ``chunks``) calls the chat model once per chunk plus gleanings,
through the response cache, and writes each document's mention tables; its runs share the
Dagster pool ``llm``, which bounds how many call the model at once (``dagster.yaml``'s
``concurrency.pools``). With no ``llm:`` endpoint in the settings it reports "extraction not
configured" per document and writes nothing. ``entity_graph`` (downstream of ``extractions``
and ``graph``, whose rewrite of a changed document's chunks takes their MENTIONS edges with it)
makes the graph database hold each document's current facts. Logic lives in the core
(``extraction.step``, ``sinks.graph.entities``).
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from agrag_pipeline.defs import metadata as md
from agrag_pipeline.defs.assets import StepConfig, _materialize, per_document_asset
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.extraction.merge import ENTITY_MENTIONS_SCHEMA
from agrag_pipeline.extraction.prompt import PROMPT_VERSION
from agrag_pipeline.extraction.step import (
    NOT_CONFIGURED,
    ExtractionResult,
    build_extractions,
    check_extractions,
    llm_parts,
)
from agrag_pipeline.fingerprints import short
from agrag_pipeline.pipeline import current_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.sinks.graph.entities import (
    EntityGraphResult,
    build_entity_graph,
    check_entity_graph,
    graph_summary,
)
from agrag_pipeline.storage import Warehouse

#: The Dagster pool every extraction step takes a slot of (see the module doc).
LLM_POOL = "llm"


def extraction_metadata(result: ExtractionResult, warehouse: Warehouse) -> dict[str, Any]:
    if not result.configured:
        return {
            "agrag/status": "not configured",
            "dagster/row_count": 0,
            "source_key": result.document.source_key,
            "extraction": NOT_CONFIGURED,
        }
    preview = "\n".join(
        f"| {p['type']} | {p['name']} | {(p['description'] or '')[:80]} |" for p in result.preview
    )
    return {
        "agrag/status": "reused" if result.reused else "ok",
        "dagster/row_count": result.entities + result.relations,
        "source_key": result.document.source_key,
        "content_hash": result.document.content_hash,
        "chunks": result.chunks,
        "calls": result.calls,
        "cache_hits": result.cache_hits,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "seconds": round(result.seconds, 3),
        "entities": result.entities,
        "relations": result.relations,
        "entities_by_type": dg.MetadataValue.json(result.entity_types),
        "relations_by_type": dg.MetadataValue.json(result.relation_types),
        "dropped_by_reason": dg.MetadataValue.json(result.dropped),
        "failed_chunks": dg.MetadataValue.json(result.failed_chunks),
        "preview": dg.MetadataValue.md("| type | name | description |\n|---|---|---|\n" + preview),
        "dagster/uri": dg.MetadataValue.path(warehouse.uri(result.entities_path)),
        "relations_path": dg.MetadataValue.path(warehouse.uri(result.relations_path)),
    }


def extraction_code_versions(runtime: Runtime) -> dict[str, str]:
    """The two assets' own code versions: the prompt and extraction fingerprints, the schema's."""
    return {
        "extractions": f"extract-{PROMPT_VERSION}-{short(runtime.extraction_fingerprint)}",
        "entity_graph": f"entities-{short(runtime.schema_fingerprint)}",
    }


def build_extraction_assets(code_versions: dict[str, str]) -> list[dg.AssetsDefinition]:
    """The two assets, with their code versions (``code_versions.py``)."""
    version = code_versions["extractions"]

    @dg.asset(
        deps=["chunks"],
        **per_document_asset(
            "extractions",
            version,
            {"dagster/column_schema": md.table_schema(ENTITY_MENTIONS_SCHEMA)},
        ),
        kinds={"python", "parquet"},
        pool=LLM_POOL,
        description="Entities and relations of the graph schema, extracted per chunk by the "
        "configured chat model (JSON-Schema constrained, cached by request): entity_mentions and "
        "relation_mentions Parquet tables, every row naming its chunk_id. Without an llm endpoint "
        "in the settings: 'extraction not configured', no rows.",
    )
    def extractions(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        client, cache = llm_parts(rt.settings, rt.embedding_cache_dir)
        if client is None:
            context.log.info(NOT_CONFIGURED)
        try:
            yield from _materialize(
                context,
                rt,
                "extractions",
                lambda key: build_extractions(
                    rt.warehouse,
                    current_document(rt.warehouse, key),
                    rt.settings,
                    client,
                    cache,
                    force=config.force,
                ),
                extraction_metadata,
                upstream="chunks",
                evaluate=lambda key: check_extractions(rt.warehouse, key),
            )
        finally:
            if cache is not None:
                cache.close()

    @dg.asset(
        deps=["extractions", "graph"],
        **per_document_asset("entity_graph", code_versions["entity_graph"]),
        kinds={"python", "graph"},
        description="The merged entity graph: Entity nodes (one per type and normalised name, "
        "across documents), MENTIONS edges from Chunk nodes, typed relation edges carrying the "
        "chunk ids that assert them; a changed or deleted document's facts replaced or removed, "
        "entities nothing mentions any more removed.",
    )
    def entity_graph(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        store = rt.graph_store
        relation_types = [r.name for r in rt.settings.graph_schema.relation_types]
        summary: dict[str, Any] = {}

        def describe(result: EntityGraphResult, warehouse: Warehouse) -> dict[str, Any]:
            if store is not None and not summary:
                summary.update(graph_summary(store))  # once per step: the whole graph's figures
            return {
                "agrag/status": "reused" if result.reused else "ok",
                "dagster/row_count": result.mentions,
                "source_key": result.document.source_key,
                "graph_store": result.store,
                "entities": result.entities,
                "mentions": result.mentions,
                "relations": result.relations,
                "orphaned_entities_removed": result.removed_entities,
                **{k: dg.MetadataValue.json(v) for k, v in summary.items()},
            }

        try:
            yield from _materialize(
                context,
                rt,
                "entity_graph",
                lambda key: build_entity_graph(
                    rt.warehouse,
                    current_document(rt.warehouse, key),
                    store,
                    relation_types,
                    force=config.force,
                ),
                describe,
                upstream="extractions",
                evaluate=lambda key: check_entity_graph(rt.warehouse, key, store),
                also_upstream=("graph",),
            )
        finally:
            if store is not None:
                store.close()

    return [extractions, entity_graph]
