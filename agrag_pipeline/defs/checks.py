"""Per-document asset checks, defined on the assets and reported with their materialisations.

Why not ``AssetCheckResult``: in a run over many partitions (how documents are batched), Dagster
1.13 gives an ``AssetCheckResult`` no partition, so the check's Partitions tab stays "Missing"
for every document. Each asset step therefore records, after its materialisations, one
``AssetCheckEvaluation`` per document and check whose ``target_materialization_data`` names
that document's materialisation in this run: that is what Dagster's per-partition check status
is computed from (an evaluation counts for a partition only if it targets the partition's
latest materialisation), so the UI's status agrees with the evaluation in batched and single
runs alike. The step then yields the check's (empty) output, which Dagster expects of every
selected check; nothing else is logged per check.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence

import dagster as dg

from agrag_pipeline.defs.dagster_internals import AssetCheckEvaluationTargetMaterializationData
from agrag_pipeline.defs.event_batches import EventBatcher
from agrag_pipeline.defs.metadata import Pointer
from agrag_pipeline.defs.partitions import documents_partitions
from agrag_pipeline.extraction.step import EXTRACTION_CHECKS
from agrag_pipeline.sinks.graph.entities import ENTITY_GRAPH_CHECKS
from agrag_pipeline.sinks.graph.step import GRAPH_CHECKS
from agrag_pipeline.sinks.index_step import INDEX_CHECKS
from agrag_pipeline.validation import CHUNK_CHECKS, EMBEDDING_CHECKS, SECTION_CHECKS, CheckOutcome

#: What each check verifies, shown on the check's page (the definition, not one evaluation).
CHECK_DESCRIPTIONS: dict[str, str] = {
    "section_spans_reproduce_text": "Every section is a valid row of the parser contract: its "
    "span lies inside the document's text layer, sections are in order, and together they cover "
    "the text (parsing/contract.py).",
    "reading_quality": "The parse's reading-quality score (0-1: words of the document's "
    "language, misread and garbled words, mojibake, unmapped glyphs, OCR confidence; "
    "parsing/quality.py) is at least parsing.quality.warn_below; below it the check warns, with "
    "the reasons, and never fails.",
    "chunk_offsets_reproduce_text": "Each chunk's provenance offsets, applied to the stored text "
    "layer, give back exactly the chunk's text.",
    "chunk_indices_contiguous": "Chunk indices run 0, 1, 2, ... with no gap or repeat.",
    "chunk_fingerprints_well_formed": "Every chunk carries a 64-hex chunker_hash equal to the "
    "current chunker's, and well-formed schema and extraction fingerprints.",
    "embedding_per_chunk": "One vector per chunk, in chunk order, joined by chunk_id.",
    "embedding_dimension": "Every vector has the embedding model's dimension.",
    "embedding_finite_unit_norm": "Every vector is finite and, when normalisation is on, of "
    "unit length.",
    "graph_matches_tables": "The graph database holds exactly the document's nodes and edges "
    "listed in its graph_nodes/graph_edges tables: none missing, none left over.",
    "mentions_name_current_chunks": "Every entity and relation mention names one of the "
    "document's current chunks (so every fact traces to the chunk and version it came from).",
    "entity_graph_matches_tables": "The graph database holds exactly the MENTIONS edges from "
    "the document's chunks that its entity_mentions table lists: none missing, none left over.",
    "index_matches_embeddings": "The search index holds exactly one row per chunk of the "
    "document's embeddings: none missing, none left over.",
}

_SEVERITY = {"error": dg.AssetCheckSeverity.ERROR, "warn": dg.AssetCheckSeverity.WARN}

CHECKS_BY_ASSET: dict[str, Sequence[str]] = {
    "sections": SECTION_CHECKS,
    "chunks": CHUNK_CHECKS,
    "embeddings": EMBEDDING_CHECKS,
    "graph": GRAPH_CHECKS,
    "extractions": EXTRACTION_CHECKS,
    "entity_graph": ENTITY_GRAPH_CHECKS,
    "search_index": INDEX_CHECKS,
}


def check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    """The asset's check specs, partitioned like it (one status per document)."""
    # Partitioned check specs are a preview feature in Dagster 1.13; we rely on it knowingly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [
            dg.AssetCheckSpec(
                name,
                asset=asset,
                description=CHECK_DESCRIPTIONS[name],
                partitions_def=documents_partitions,
            )
            for name in CHECKS_BY_ASSET.get(asset, ())
        ]


def report_checks(
    context: dg.AssetExecutionContext,
    asset: str,
    keys: list[str],
    targets: dict[str, Pointer],
    evaluate: Callable[[str], list[CheckOutcome]],
) -> Iterator[dg.Output[None] | dg.DagsterEvent]:
    """Evaluate the selected checks for each of ``keys`` (the documents materialised in this
    step); log one evaluation per document and check. A document that was not materialised is
    not evaluated: its checks read "execution failed" in a failed run."""
    asset_key = dg.AssetKey(asset)
    selected = {k.name for k in context.selected_asset_check_keys if k.asset_key == asset_key}
    if not selected:
        return
    failed = warned = 0
    evaluations = EventBatcher(context)
    for key in keys:
        target = targets.get(key)
        for outcome in evaluate(key):
            if outcome.name not in selected:
                continue
            failed += 0 if outcome.passed or outcome.severity == "warn" else 1
            warned += 0 if outcome.passed or outcome.severity != "warn" else 1
            yield from evaluations.add(
                dg.AssetCheckEvaluation(
                    asset_key=asset_key,
                    check_name=outcome.name,
                    passed=outcome.passed,
                    # The partition names the document: the description and metadata say
                    # only what was found (the UI lists them beside the partition key).
                    partition=key,
                    description=outcome.description,
                    metadata={k: v for k, v in outcome.metadata.items() if v is not None},
                    severity=_SEVERITY[outcome.severity],
                    target_materialization_data=(
                        AssetCheckEvaluationTargetMaterializationData(
                            storage_id=target.storage_id,
                            run_id=target.run_id,
                            timestamp=target.timestamp,
                        )
                        if target is not None
                        else None
                    ),
                )
            )
    yield from evaluations.flush()
    if failed:
        context.log.warning(f"{asset}: {failed} check evaluations failed (see the checks tab)")
    if warned:
        context.log.warning(f"{asset}: {warned} check evaluations warn (see the checks tab)")
    assets_def = context.assets_def
    for name in sorted(selected):
        output = assets_def.get_output_name_for_asset_check_key(dg.AssetCheckKey(asset_key, name))
        yield dg.Output(None, output_name=output)
