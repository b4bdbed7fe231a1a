"""Execute a job of this code location as a real job run, from outside ``dagster dev``.

Why: ``job.execute_in_process`` records a run without a code-location origin, so the UI shows it
apart from the job ("Jobless asset materializations") and warns on re-execution that the job
may differ. A run created with the origin ``dagster dev`` gives the same code location (the
module ``agrag_pipeline.definitions`` of ``workspace.yaml``) is the job's own run: it appears
under the job, with its asset lineage, and re-executes from the UI like any other. It still
executes in this process, like ``execute_in_process``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

import dagster as dg
from dagster import JobExecutionResult

from agrag_pipeline.defs.dagster_internals import (
    SINGLETON_REPOSITORY_NAME,
    LoadableTargetOrigin,
    ManagedGrpcPythonEnvCodeLocationOrigin,
    ReconstructableJob,
    ReconstructableRepository,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
    execute_run,
)
from agrag_pipeline.runtime import PROJECT_ROOT

#: As workspace.yaml loads it (``python_module``), so runs match ``dagster dev``'s location.
MODULE = "agrag_pipeline.definitions"
ATTRIBUTE = "defs"


def create_job_run(
    instance: dg.DagsterInstance,
    job_name: str,
    *,
    run_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    run_config: Mapping[str, Any] | None = None,
    asset_selection: Iterable[dg.AssetKey] | None = None,
) -> tuple[ReconstructableJob, dg.DagsterRun]:
    """Create a run of ``job_name`` (of ``asset_selection`` only, if given) with this code
    location's origin, not started."""
    working_directory = str(PROJECT_ROOT)
    recon_job = ReconstructableRepository.for_module(
        MODULE, ATTRIBUTE, working_directory
    ).get_reconstructable_job(job_name)
    location = ManagedGrpcPythonEnvCodeLocationOrigin(
        LoadableTargetOrigin(
            executable_path=sys.executable,
            module_name=MODULE,
            working_directory=working_directory,
        ),
        MODULE,
    )
    run = instance.create_run_for_job(
        recon_job.get_definition(),
        run_id=run_id,
        run_config=dict(run_config or {}),
        tags=dict(tags or {}),
        remote_job_origin=RemoteJobOrigin(
            RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME), job_name
        ),
        job_code_origin=recon_job.get_python_origin(),
        asset_selection=frozenset(asset_selection) if asset_selection is not None else None,
    )
    return recon_job, run


def execute_job_run(
    instance: dg.DagsterInstance,
    job_name: str,
    *,
    run_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    run_config: Mapping[str, Any] | None = None,
) -> JobExecutionResult:
    """Create the run with this code location's origin and execute it here."""
    recon_job, run = create_job_run(
        instance, job_name, run_id=run_id, tags=tags, run_config=run_config
    )
    return execute_run(recon_job, run, instance, raise_on_error=False)
