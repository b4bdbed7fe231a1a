"""The nightly refresh, for users who prefer batches to the sensor.

It registers documents that appeared in the raw root, then requests runs for every registered
document whose outputs are missing, of an older version than the raw file, or made with other
settings (chunker or embedding fingerprints). Runs cover contiguous ranges of documents, at most
``DOCUMENTS_PER_RUN`` each; up-to-date documents cost a hash of their file.

A document whose last run failed on its current version, with the code and settings of today
(its failure record says which), is not run again: it would fail again, every night. It is run
when its file or the failing step's settings change, or when asked: the Materialize dialog's
"Failed" preset, or ``agrag materialize``.
"""

import dagster as dg

from agrag_pipeline.defs.code_versions import asset_code_versions
from agrag_pipeline.defs.partitions import (
    DOCUMENTS_PER_RUN,
    documents_partitions,
    gather_at_end,
)
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.defs.sensors import automation_status
from agrag_pipeline.freshness import contiguous_runs, failed_as_before, stale_documents
from agrag_pipeline.sources import scan_raw_root

NIGHTLY_CRON = "0 2 * * *"

ingest_job = dg.define_asset_job(
    "ingest_documents",
    selection=dg.AssetSelection.groups("ingestion"),  # partitioned by "documents", like them
    description="raw_documents -> sections -> chunks -> embeddings for a range of documents.",
)


@dg.schedule(
    name="nightly_refresh",
    cron_schedule=NIGHTLY_CRON,
    job=ingest_job,
    default_status=dg.DefaultScheduleStatus(automation_status().value),
    description="Every night: register new documents and materialise whatever is stale or missing.",
)
def nightly_refresh(context: dg.ScheduleEvaluationContext, pipeline: PipelineResource):
    rt = pipeline.runtime()
    name = documents_partitions.name or "documents"
    files = scan_raw_root(rt.raw_root, rt.settings.documents).files
    registered = set(context.instance.get_dynamic_partitions(name))
    new = [f.source_key for f in files if f.source_key not in registered]
    if new:
        context.instance.add_dynamic_partitions(name, new)
    ordered = context.instance.get_dynamic_partitions(name)
    present = {f.source_key for f in files}
    stale = stale_documents(
        rt.warehouse,
        rt.raw_root,
        [k for k in ordered if k in present],
        chunker_hash=rt.chunker_hash,
        embedding_settings=rt.embedding_settings_fingerprint,
    )
    known = failed_as_before(rt.warehouse, rt.raw_root, stale, asset_code_versions(rt))
    if known:
        context.log.info(
            f"not run again: {len(known)} documents that failed on their current version with "
            "these settings (retry them with the Materialize dialog's Failed preset): "
            + "; ".join(f"{k} ({known[k][:120]})" for k in sorted(known)[:20])
        )
    stale = [k for k in stale if k not in known]
    if gather_at_end(context.instance, stale, ordered):
        ordered = context.instance.get_dynamic_partitions(name)
    if not stale:
        yield dg.SkipReason(
            "every document is up to date"
            + (f", but {len(known)} failed on their current version and settings" if known else "")
        )
        return
    stamp = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    for i, run in enumerate(contiguous_runs(ordered, stale, DOCUMENTS_PER_RUN)):
        yield dg.RunRequest(
            run_key=f"nightly-{stamp}-{i}",
            tags={
                **rt.fingerprint_tags(),
                "agrag/trigger": "nightly_refresh",
                "dagster/asset_partition_range_start": run[0],
                "dagster/asset_partition_range_end": run[-1],
            },
        )
