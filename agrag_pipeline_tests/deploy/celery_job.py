"""The ingest job as a reconstructable target, so Celery workers can load it by module name."""

from __future__ import annotations

import dagster as dg


def ingest_job() -> dg.JobDefinition:
    from agrag_pipeline.definitions import defs

    return defs.resolve_job_def("ingest_documents")
