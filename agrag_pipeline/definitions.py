"""The one ``Definitions`` of the project (``dagster dev`` loads it through workspace.yaml)."""

from __future__ import annotations

import os
import warnings

import dagster as dg

from agrag_pipeline.defs.assets import build_assets
from agrag_pipeline.defs.code_versions import asset_code_versions
from agrag_pipeline.defs.extraction import build_extraction_assets
from agrag_pipeline.defs.graph import build_graph_asset
from agrag_pipeline.defs.index import build_index_assets
from agrag_pipeline.defs.resources import PipelineResource, default_pipeline_resource
from agrag_pipeline.defs.schedules import ingest_job, nightly_refresh
from agrag_pipeline.defs.sensors import raw_documents_sensor


def build_definitions(pipeline: PipelineResource | None = None) -> dg.Definitions:
    """Definitions for one configuration; code versions fold in its settings fingerprints and
    those of everything upstream (``defs/code_versions.py``)."""
    pipeline = pipeline or default_pipeline_resource()
    code_versions = asset_code_versions(pipeline.runtime())
    with warnings.catch_warnings():
        # BackfillPolicy is a beta parameter of @asset in Dagster 1.13; we rely on it knowingly.
        warnings.simplefilter("ignore", dg.BetaWarning)
        assets = [
            *build_assets(code_versions),
            build_graph_asset(code_versions["graph"]),
            *build_extraction_assets(code_versions),
            *build_index_assets(code_versions["search_index"]),
        ]
    return dg.Definitions(
        assets=assets,
        jobs=[ingest_job],
        sensors=[raw_documents_sensor],
        schedules=[nightly_refresh],
        resources={"pipeline": pipeline},
        # One process per run: each asset already loops over its documents and isolates their
        # failures, and the parts (the embedding model above all) load once per run. Dagster's
        # default multiprocess executor would start a process per step and load the model twice.
        executor=_executor(),
    )


def _executor() -> dg.ExecutorDefinition:
    """In-process unless ``AGRAG_EXECUTOR=celery``: then each step goes to Celery workers
    (dagster-celery) through the broker and result backend named by ``AGRAG_CELERY_BROKER``
    and ``AGRAG_CELERY_BACKEND`` (e.g. ``redis://host:6379/0``), workers that may be on other
    machines sharing the instance (PostgreSQL) and the warehouse (object storage)."""
    if os.environ.get("AGRAG_EXECUTOR", "in_process") != "celery":
        return dg.in_process_executor
    from dagster_celery import celery_executor

    return celery_executor.configured(
        {
            "broker": {"env": "AGRAG_CELERY_BROKER"},
            "backend": {"env": "AGRAG_CELERY_BACKEND"},
            "config_source": CELERY_REDELIVERY,
        }
    )


#: A worker killed mid-step (kill -9, a lost machine) must not lose its step and leave the run
#: waiting forever: acknowledge a step only when it finished, so Redis hands it to another
#: worker once the visibility timeout passes (the steps are idempotent). Workers read the same
#: settings from their ``-y`` YAML (``execution.config.config_source``).
CELERY_REDELIVERY = {
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "worker_prefetch_multiplier": 1,
    "broker_transport_options": {"visibility_timeout": 30},
}


defs = build_definitions()
