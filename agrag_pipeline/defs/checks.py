"""Per-document asset checks: offsets, indices, fingerprints, embedding counts and norms.

Dagster records one ``AssetCheckResult`` per step, without a partition, when a run covers
several partitions; so each check step logs one ``AssetCheckEvaluation`` per document
(partition) instead, which the UI shows per partition in batched and single runs alike.
"""

import warnings
from collections.abc import Callable, Iterable, Sequence

import dagster as dg

from agrag_pipeline.defs.partitions import documents_partitions
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.validation import (
    CHUNK_CHECKS,
    EMBEDDING_CHECKS,
    SECTION_CHECKS,
    CheckOutcome,
    check_chunks,
    check_embeddings,
    check_sections,
)


def _specs(asset: str, names: Sequence[str]) -> list[dg.AssetCheckSpec]:
    # Partitioned checks are a preview feature in Dagster 1.13; we rely on it knowingly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [
            dg.AssetCheckSpec(name, asset=asset, partitions_def=documents_partitions)
            for name in names
        ]


def _log(
    context: dg.AssetCheckExecutionContext,
    asset: str,
    keys: Iterable[str],
    evaluate: Callable[[str], list[CheckOutcome]],
) -> None:
    for key in keys:
        for outcome in evaluate(key):
            # log_event handles AssetCheckEvaluation (Dagster 1.13), though its hint omits it.
            context.op_execution_context.log_event(
                dg.AssetCheckEvaluation(  # type: ignore[arg-type]
                    asset_key=dg.AssetKey(asset),
                    check_name=outcome.name,
                    passed=outcome.passed,
                    partition=key,
                    description=outcome.description,
                    metadata={k: v for k, v in outcome.metadata.items() if v is not None},
                    severity=dg.AssetCheckSeverity.ERROR,
                    target_materialization_data=None,
                )
            )


@dg.multi_asset_check(specs=_specs("sections", SECTION_CHECKS), can_subset=True)
def sections_checks(context: dg.AssetCheckExecutionContext, pipeline: PipelineResource):
    rt = pipeline.runtime()
    _log(context, "sections", context.partition_keys, lambda k: check_sections(rt.warehouse, k))
    yield from ()


@dg.multi_asset_check(specs=_specs("chunks", CHUNK_CHECKS), can_subset=True)
def chunks_checks(context: dg.AssetCheckExecutionContext, pipeline: PipelineResource):
    rt = pipeline.runtime()
    _log(
        context,
        "chunks",
        context.partition_keys,
        lambda k: check_chunks(rt.warehouse, k, expected_chunker_hash=rt.chunker_hash),
    )
    yield from ()


@dg.multi_asset_check(specs=_specs("embeddings", EMBEDDING_CHECKS), can_subset=True)
def embeddings_checks(context: dg.AssetCheckExecutionContext, pipeline: PipelineResource):
    rt = pipeline.runtime()
    _log(
        context,
        "embeddings",
        context.partition_keys,
        lambda k: check_embeddings(rt.warehouse, k, dimension=rt.embedder.dimension),
    )
    yield from ()


asset_checks = [sections_checks, chunks_checks, embeddings_checks]
