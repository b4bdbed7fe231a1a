"""raw_documents -> sections -> chunks -> embeddings, one dynamic partition per document.

Shape: each asset body loops over ``context.partition_keys`` (a backfill hands it up to
``DOCUMENTS_PER_RUN`` documents in one process), calls the core per document, writes files
itself through the warehouse and returns a ``MaterializeResult`` with per-partition metadata.
We chose this over an IO manager because a run covers many partitions: an IO manager would get
one object for the whole range and could not report per-document metadata or isolate one bad
document from the others.

Known Dagster limitation (dagster-io/dagster#34013): a run over several partitions can record
only one data version for all of them, so ``raw_documents`` reports the content hash as its
data version only in single-document runs; every run records it in per-partition metadata.
"""

from collections.abc import Callable
from typing import Any, TypeVar

import dagster as dg
from pydantic import Field

from agrag_pipeline.batch import Outcome, run_isolated
from agrag_pipeline.defs import metadata as md
from agrag_pipeline.defs.partitions import batched_backfills, documents_partitions
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.pipeline import (
    build_chunks,
    build_embeddings,
    build_sections,
    current_document,
    snapshot_document,
)
from agrag_pipeline.runtime import PARSE_VERSION, Runtime
from agrag_pipeline.storage import Warehouse

T = TypeVar("T")

GROUP = "ingestion"


class StepConfig(dg.Config):
    force: bool = Field(
        default=False,
        description="Recompute even when the stored output already matches this version "
        "and these settings.",
    )


def _materialize(
    context: dg.AssetExecutionContext,
    runtime: Runtime,
    step: str,
    work: Callable[[str], T],
    describe: Callable[[T, Warehouse], dict[str, Any]],
    data_version: Callable[[T], str] | None = None,
) -> dg.MaterializeResult:
    """Run ``work`` per document, report each partition, fail only if nothing succeeded."""
    keys = list(context.partition_keys)
    outcomes: list[Outcome[T]] = run_isolated(
        step, keys, work, runtime.warehouse, on_error=lambda _key, msg: context.log.error(msg)
    )
    for outcome in outcomes:
        if outcome.ok:
            assert outcome.result is not None
            meta = describe(outcome.result, runtime.warehouse)
        else:
            meta = md.failure_metadata(outcome.source_key, outcome.error or "")
        context.add_asset_metadata(meta, partition_key=outcome.source_key)
    failed = [o for o in outcomes if not o.ok]
    if failed and len(failed) == len(outcomes):
        raise dg.Failure(
            description=f"{step} failed for every document of this run: "
            + "; ".join(o.error or "" for o in failed[:5]),
        )
    version = None
    if data_version is not None and len(outcomes) == 1 and outcomes[0].result is not None:
        version = dg.DataVersion(data_version(outcomes[0].result))
    return dg.MaterializeResult(
        data_version=version,
        tags=runtime.fingerprint_tags(),
        metadata={"documents": len(keys), "failed_documents": len(failed)},
    )


def build_assets(code_versions: dict[str, str]) -> list[dg.AssetsDefinition]:
    """The four assets, with code versions that fold in the settings fingerprints."""

    common: dict[str, Any] = {
        "partitions_def": documents_partitions,
        "backfill_policy": batched_backfills,
        "group_name": GROUP,
    }

    @dg.asset(
        code_version=code_versions["raw_documents"],
        kinds={"python", "file"},
        description="Each document version's bytes, snapshotted into the warehouse "
        "(so later steps never read a file that changed under them). Data version: content hash.",
        **common,
    )
    def raw_documents(
        context: dg.AssetExecutionContext, pipeline: PipelineResource
    ) -> dg.MaterializeResult:
        rt = pipeline.runtime()
        return _materialize(
            context,
            rt,
            "raw_documents",
            lambda key: snapshot_document(rt.warehouse, rt.raw_root, key),
            md.snapshot_metadata,
            data_version=lambda r: r.document.content_hash,
        )

    @dg.asset(
        deps=[raw_documents],
        code_version=code_versions["sections"],
        kinds={"python", "parquet"},
        description="The document's text layer and section tree (headings, tables, spans).",
        **common,
    )
    def sections(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> dg.MaterializeResult:
        rt = pipeline.runtime()
        return _materialize(
            context,
            rt,
            "sections",
            lambda key: build_sections(
                rt.warehouse,
                current_document(rt.warehouse, key),
                parse_version=PARSE_VERSION,
                ocr=rt.settings.parsing.ocr,
                force=config.force,
            ),
            md.sections_metadata,
        )

    @dg.asset(
        deps=[sections],
        code_version=code_versions["chunks"],
        kinds={"python", "parquet"},
        description="Retrieval-sized chunks (the Chunk model), one Parquet file per document, "
        "tagged with chunker, schema and extraction fingerprints.",
        **common,
    )
    def chunks(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> dg.MaterializeResult:
        rt = pipeline.runtime()
        return _materialize(
            context,
            rt,
            "chunks",
            lambda key: build_chunks(
                rt.warehouse,
                current_document(rt.warehouse, key),
                rt.chunker,
                schema_fingerprint=rt.schema_fingerprint,
                extraction_fingerprint=rt.extraction_fingerprint,
                force=config.force,
            ),
            md.chunks_metadata,
        )

    @dg.asset(
        deps=[chunks],
        code_version=code_versions["embeddings"],
        kinds={"python", "parquet", "pytorch"},
        description="One vector per chunk (of its contextual_text), cached by content.",
        **common,
    )
    def embeddings(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> dg.MaterializeResult:
        rt = pipeline.runtime()
        return _materialize(
            context,
            rt,
            "embeddings",
            lambda key: build_embeddings(
                rt.warehouse,
                current_document(rt.warehouse, key),
                rt.embedder,
                rt.embedding_cache,
                settings_fingerprint=rt.embedding_settings_fingerprint,
                force=config.force,
            ),
            md.embeddings_metadata,
        )

    return [raw_documents, sections, chunks, embeddings]
