"""Dagster's default run launcher, plus a health check of the run worker process.

Why: run monitoring ends a run whose worker died (``kill -9``, out of memory) only if the run
launcher can tell; Dagster 1.13's ``DefaultRunLauncher`` cannot (it says "not supported"), so a
killed run stays STARTED forever and holds one of the ``max_concurrent_runs`` slots, and queued
runs never start. On one machine (the local tier: ``dagster dev`` or a daemon beside its code
servers) the worker is a local process that records its pid when it starts ("Started process for
run (pid: N)"), and a run executed in another process (``agrag materialize``,
``execute_in_process``) gets its pid and host as run tags from its first asset step
(``worker_tags``); this launcher reports the run FAILED to the monitoring daemon when that
process is gone (or is a zombie, or is another process that reused the pid). A run whose worker
it cannot find, or that runs on another host, is reported RUNNING: never failed on a guess.
Launching is unchanged.

Configured in ``dagster.yaml`` (with ``run_monitoring: enabled: true``)::

    run_launcher:
      module: agrag_pipeline.defs.run_launcher
      class: LocalProcessRunLauncher
"""

from __future__ import annotations

import os
import re
import socket

import psutil
from dagster import DagsterEventType, DagsterRun, DefaultRunLauncher

from agrag_pipeline.defs.dagster_internals import (
    HIDDEN_TAG_PREFIX,
    CheckRunHealthResult,
    WorkerStatus,
)

#: Internal run tags, under Dagster's hidden-tag prefix (``.dagster/``): the UI (its GraphQL
#: ``Run.tags``) leaves them out, as it does Dagster's own ``.dagster/run_worker``, so the runs
#: list shows only the tags a user filters by; run monitoring still reads them from storage.
PID_TAG = f"{HIDDEN_TAG_PREFIX}agrag_worker_pid"
HOST_TAG = f"{HIDDEN_TAG_PREFIX}agrag_worker_host"

#: Seconds a process may appear to predate its own start event (clock granularity, slack).
_CLOCK_SLACK_S = 5.0


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:63]


def worker_tags() -> dict[str, str]:
    """Run tags naming this process as the run's worker (for runs launched without us)."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: _host()}


class LocalProcessRunLauncher(DefaultRunLauncher):
    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        started = self._worker_start(run)
        if started is None:  # nothing to check (yet): never fail a run on a guess
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no local run worker pid recorded")
        pid, timestamp = started
        try:
            process = psutil.Process(pid)
            alive = process.status() != psutil.STATUS_ZOMBIE
            reused = process.create_time() > timestamp + _CLOCK_SLACK_S
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            alive, reused = False, False
        if alive and not reused:
            return CheckRunHealthResult(WorkerStatus.RUNNING, run_worker_id=str(pid))
        return CheckRunHealthResult(
            WorkerStatus.FAILED,
            f"the run worker process (pid {pid}) is gone: it was killed or crashed",
            run_worker_id=str(pid),
        )

    def _worker_start(self, run: DagsterRun) -> tuple[int, float] | None:
        records = self._instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT)
        for entry in reversed(records):
            if not entry.message.startswith("Started process for run"):
                continue
            event = entry.dagster_event
            data = event.engine_event_data if event is not None else None
            pid = data.metadata.get("pid") if data is not None else None
            if pid is not None:
                return int(str(pid.value)), entry.timestamp
        tagged = run.tags.get(PID_TAG)
        if tagged and tagged.isdigit() and run.tags.get(HOST_TAG) == _host():
            record = self._instance.get_run_record_by_id(run.run_id)
            start = record.start_time if record is not None else None
            return int(tagged), float(start or 0.0)
        return None
