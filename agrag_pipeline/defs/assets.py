"""raw_documents -> sections -> chunks -> embeddings, one dynamic partition per document.

How runs are cut: each asset body loops over ``context.partition_keys`` (a backfill hands it up
to ``DOCUMENTS_PER_RUN`` documents in one process, under ``BackfillPolicy.multi_run``), calls
the core per document, writes files itself through the warehouse and returns one
``MaterializeResult``; per-document metadata goes to each partition with
``add_asset_metadata(partition_key=...)``. We chose this over an IO manager because a run
covers many partitions: an IO manager would get one object for the whole range and could not
report per-document metadata or isolate one bad document from the others.

How checks are reported: defined on the assets (``check_specs``), evaluated by the asset step
right after its materialisations, one evaluation per document and check that targets that
document's materialisation (``checks.py`` says why ``AssetCheckResult`` cannot do this).

How data versions are recorded, and the trade-off: Dagster 1.13 records one data version for all
partitions of a run (dagster-io/dagster#18649, #34013) and computes the logical version of a
ranged run from a hash over the whole range, so any content-derived or Dagster-computed data
version differs between a batched run and a single-document run of the same, unchanged
document, and the UI then shows the downstream partition as falsely "Unsynced". So every asset
records its *code version* (which folds in the settings fingerprints) as its data version: the
same in batched and single runs, so Dagster's staleness is exactly "these outputs were made with
other settings or code", for every partition. What it cannot show is a changed raw file: that is
found by content hash (the sensor and the nightly refresh), which re-runs the whole chain for
the document; each partition's metadata names its real version (``content_hash``) and links the
upstream materialisation it was made from. The alternative (per-document materialisation events
logged by hand after the framework's) doubles the materialisation events and was not chosen.
"""

import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import dagster as dg
from dagster._core.events import DagsterEventType
from dagster._core.launcher import DefaultRunLauncher
from dagster._core.storage.tags import BACKFILL_ID_TAG
from pydantic import Field

from agrag_pipeline.batch import Outcome, run_isolated
from agrag_pipeline.defs import metadata as md
from agrag_pipeline.defs.checks import check_specs, report_checks
from agrag_pipeline.defs.partitions import batched_backfills, documents_partitions
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.defs.run_launcher import worker_tags
from agrag_pipeline.embedding.threads import limit_threads, share_of_cores
from agrag_pipeline.pipeline import (
    build_chunks,
    build_embeddings,
    build_sections,
    current_document,
    snapshot_document,
)
from agrag_pipeline.runtime import PARSE_VERSION, Runtime
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.validation import CheckOutcome, check_chunks, check_embeddings, check_sections

T = TypeVar("T")

GROUP = "ingestion"
OWNERS = ["team:agrag-pipeline"]
ASSET_NAMES = ("raw_documents", "sections", "chunks", "embeddings")


class StepConfig(dg.Config):
    force: bool = Field(
        default=False,
        description="Recompute even when the stored output already matches this version "
        "and these settings.",
    )


def latest_materializations(
    instance: dg.DagsterInstance, asset: str, keys: list[str]
) -> dict[str, md.Pointer]:
    """The latest materialisation of each of ``keys`` of ``asset`` (two queries, any count)."""
    asset_key = dg.AssetKey(asset)
    ids = instance.event_log_storage.get_latest_storage_id_by_partition(
        asset_key, DagsterEventType.ASSET_MATERIALIZATION, set(keys)
    )
    if not ids:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, storage_ids=list(ids.values())),
        limit=len(ids),
    ).records
    return {
        r.partition_key: md.Pointer(asset, r.partition_key, r.run_id, r.storage_id, r.timestamp)
        for r in records
        if r.partition_key is not None
    }


def _tag_run(context: dg.AssetExecutionContext, runtime: Runtime) -> None:
    """Give the run the fingerprint tags, however it was launched (UI, sensor, CLI), so runs
    can be filtered by fingerprint, and its worker's pid and host, so run monitoring can fail
    it if that process dies (``run_launcher.py``); one write, only when a tag is missing."""
    tags = {**runtime.fingerprint_tags(), **worker_tags()}
    if any(context.run.tags.get(k) != v for k, v in tags.items()):
        context.instance.add_run_tags(context.run.run_id, tags)


def _materialize(
    context: dg.AssetExecutionContext,
    runtime: Runtime,
    step: str,
    work: Callable[[str], T],
    describe: Callable[[T, Warehouse], dict[str, Any]],
    upstream: str | None = None,
    evaluate: Callable[[str], list[CheckOutcome]] | None = None,
) -> Iterator[Any]:
    """Run ``work`` per document, report each partition, then its checks.

    Fails the step only if every document failed; otherwise a failed document is a partition
    whose metadata says ``agrag/status: failed`` with the error, and whose checks fail.
    """
    _tag_run(context, runtime)
    keys = list(context.partition_keys)
    outcomes: list[Outcome[T]] = run_isolated(
        step, keys, work, runtime.warehouse, on_error=lambda _key, msg: context.log.error(msg)
    )
    inputs = latest_materializations(context.instance, upstream, keys) if upstream else {}
    reused = 0
    for outcome in outcomes:
        if outcome.ok:
            assert outcome.result is not None
            meta = describe(outcome.result, runtime.warehouse)
            reused += meta.get("agrag/status") == "reused"
        else:
            meta = md.failure_metadata(outcome.source_key, outcome.error or "")
        if upstream:
            meta.update(md.pointer_metadata(inputs.get(outcome.source_key), upstream))
        context.add_asset_metadata(meta, partition_key=outcome.source_key)
    failed = [o for o in outcomes if not o.ok]
    if failed and len(failed) == len(outcomes):
        raise dg.Failure(
            description=f"{step} failed for every document of this run: "
            + "; ".join(o.error or "" for o in failed[:5]),
        )
    context.log.info(
        f"{step}: {len(outcomes) - len(failed)} of {len(outcomes)} documents done "
        f"({reused} already current), {len(failed)} failed"
    )
    code_version = context.assets_def.code_versions_by_key[dg.AssetKey(step)]
    yield dg.MaterializeResult(
        data_version=dg.DataVersion(code_version) if code_version else None,
        tags=runtime.fingerprint_tags(),
    )
    if evaluate is not None:
        targets = latest_materializations(context.instance, step, keys)
        yield from report_checks(context, step, targets, evaluate)


def embedding_threads(context: dg.AssetExecutionContext, configured: int | None) -> int | None:
    """The local model's CPU threads in this run: the setting, else, in a backfill's run whose
    steps run where its sibling runs do (a local run launcher, not the Celery executor), this
    run's share of the cores beside the other runs the instance runs at once (see
    ``embedding.threads``); a run on its own, a pod per run or a Celery worker keeps torch's
    default (every core it has)."""
    if configured is not None or BACKFILL_ID_TAG not in context.run.tags:
        return configured
    on_this_machine = isinstance(context.instance.run_launcher, DefaultRunLauncher)
    if not on_this_machine or os.environ.get("AGRAG_EXECUTOR", "in_process") == "celery":
        return None
    queue = context.instance.get_concurrency_config().run_queue_config
    at_once = queue.max_concurrent_runs if queue is not None else 1
    return share_of_cores(at_once) if at_once and at_once > 1 else None


def per_document_asset(
    name: str, code_version: str, metadata: dict[str, Any] | None = None, stage: str | None = None
) -> dict[str, Any]:
    """The ``@dg.asset`` arguments every per-document asset shares: one partition per document,
    batched backfills, the group and owners, its checks and its stage tag."""
    return {
        "name": name,
        "partitions_def": documents_partitions,
        "backfill_policy": batched_backfills,
        "group_name": GROUP,
        "owners": OWNERS,
        "code_version": code_version,
        "metadata": metadata or {},
        "check_specs": check_specs(name),
        "tags": {"agrag/stage": stage or name},
    }


def build_assets(code_versions: dict[str, str]) -> list[dg.AssetsDefinition]:
    """The four assets, with code versions that fold in the settings fingerprints."""

    def common(name: str) -> dict[str, Any]:
        return per_document_asset(name, code_versions[name], md.definition_metadata(name))

    @dg.asset(
        kinds={"python", "file"},
        description="Each document version's bytes, snapshotted into the warehouse "
        "(so later steps never read a file that changed under them).",
        **common("raw_documents"),
    )
    def raw_documents(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator:
        rt = pipeline.runtime()
        # Once per run, as `agrag core` does per call: files writers killed mid-write left
        # (a live writer's are kept, so concurrent runs are safe).
        try:
            for path in rt.warehouse.remove_stale_temporaries():
                context.log.info(f"removed {path}, left by a writer that was killed")
        except OSError as exc:
            context.log.warning(f"could not clean temporary files: {exc}")
        yield from _materialize(
            context,
            rt,
            "raw_documents",
            lambda key: snapshot_document(rt.warehouse, rt.raw_root, key),
            md.snapshot_metadata,
        )

    @dg.asset(
        deps=[raw_documents],
        kinds={"python", "parquet"},
        description="The document's text layer and section tree (headings, tables, spans).",
        **common("sections"),
    )
    def sections(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        yield from _materialize(
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
            upstream="raw_documents",
            evaluate=lambda key: check_sections(
                rt.warehouse, key, warn_below=rt.settings.parsing.quality.warn_below
            ),
        )

    @dg.asset(
        deps=[sections],
        kinds={"python", "parquet"},
        description="Retrieval-sized chunks (the Chunk model), one Parquet file per document, "
        "tagged with chunker, schema and extraction fingerprints.",
        **common("chunks"),
    )
    def chunks(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        yield from _materialize(
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
            upstream="sections",
            evaluate=lambda key: check_chunks(
                rt.warehouse, key, expected_chunker_hash=rt.chunker_hash
            ),
        )

    @dg.asset(
        deps=[chunks],
        kinds={"python", "parquet", "pytorch"},
        # The embedding backend (a model in memory, a GPU, a rate-limited service) is shared:
        # a deployment limits how many steps use it at once (deploy/dagster.yaml, "pools").
        pool="embedding",
        description="One vector per chunk (of its contextual_text), cached by content.",
        **common("embeddings"),
    )
    def embeddings(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        limit_threads(embedding_threads(context, rt.settings.embedding.threads))
        yield from _materialize(
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
            upstream="chunks",
            evaluate=lambda key: check_embeddings(
                rt.warehouse, key, dimension=rt.embedder.dimension
            ),
        )

    return [raw_documents, sections, chunks, embeddings]
