"""The ingest job as a reconstructable target, so Celery workers can load it by module name."""

from __future__ import annotations

import dagster as dg


def ingest_job() -> dg.JobDefinition:
    """Built from the environment at call time (roots, ``AGRAG_EXECUTOR``), not from the
    module-level ``defs``, which an earlier import in the same process froze with other roots."""
    from agrag_pipeline.definitions import build_definitions

    return build_definitions().resolve_job_def("ingest_documents")
