"""Dagster's default run launcher, with run workers forked from a loaded code location and a
health check of the run worker process.

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

Launching: a run of a code location loaded on this machine (``workspace.yaml``'s
``python_module``, the code server ``dagster dev`` starts) is forked from a forkserver that has
loaded it once (``run_forkserver``) instead of being spawned by the code server as a fresh
interpreter, which costs about 2.5 CPU seconds a run here. Any other run (a code server on
another host, an image), or one the forkserver cannot take, is launched the default way, through
the code server. The forkserver is started by the daemon and has its environment variables: a
code server you start yourself on this machine with other variables needs ``fork_runs: false``.
Terminating a forked run interrupts its process, as the code server does its own.

Configured in ``dagster.yaml`` (with ``run_monitoring: enabled: true``)::

    run_launcher:
      module: agrag_pipeline.defs.run_launcher
      class: LocalProcessRunLauncher
      config:
        fork_runs: true   # false: every run spawned by the code server, as Dagster's default
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Mapping
from typing import Any

import dagster as dg
import psutil
from dagster import DagsterEventType, DagsterRun, DefaultRunLauncher

from agrag_pipeline.defs.dagster_internals import (
    GRPC_INFO_TAG,
    HIDDEN_TAG_PREFIX,
    CheckRunHealthResult,
    ConfigurableClassData,
    GrpcServerCodeLocationOrigin,
    JobPythonOrigin,
    ManagedGrpcPythonEnvCodeLocationOrigin,
    WorkerStatus,
)
from agrag_pipeline.defs.run_forkserver import ForkserverUnavailable, RunForkserver

log = logging.getLogger(__name__)

#: Internal run tags, under Dagster's hidden-tag prefix (``.dagster/``): the UI (its GraphQL
#: ``Run.tags``) leaves them out, as it does Dagster's own ``.dagster/run_worker``, so the runs
#: list shows only the tags a user filters by; run monitoring still reads them from storage.
PID_TAG = f"{HIDDEN_TAG_PREFIX}agrag_worker_pid"
HOST_TAG = f"{HIDDEN_TAG_PREFIX}agrag_worker_host"

#: Host names of a code server on this machine.
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

#: Seconds a process may appear to predate its own start event (clock granularity, slack).
_CLOCK_SLACK_S = 5.0


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:63]


def worker_tags() -> dict[str, str]:
    """Run tags naming this process as the run's worker (for runs launched without us)."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: _host()}


def _served_here(location: object) -> bool:
    """Whether a code location is loaded on this machine: by Dagster from ``workspace.yaml``, or
    by a code server on a local socket or the loopback address (``dagster dev`` starts one)."""
    if isinstance(location, ManagedGrpcPythonEnvCodeLocationOrigin):
        return True
    if isinstance(location, GrpcServerCodeLocationOrigin):
        return bool(location.socket) or location.host in _LOOPBACK_HOSTS
    return False


class LocalProcessRunLauncher(DefaultRunLauncher):
    def __init__(self, inst_data: ConfigurableClassData | None = None, fork_runs: bool = True):
        super().__init__(inst_data=inst_data)
        self._fork_runs = fork_runs
        self._forkservers: dict[str, RunForkserver] = {}
        self._fork_lock = threading.Lock()

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"fork_runs": dg.Field(bool, is_required=False, default_value=True)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> LocalProcessRunLauncher:
        return cls(inst_data=inst_data, fork_runs=config_value.get("fork_runs", True))

    def launch_run(self, context: dg.LaunchRunContext) -> None:
        run = context.dagster_run
        forkserver = self._forkserver_for(run)
        if forkserver is None:
            super().launch_run(context)
            return
        with self._fork_lock:
            try:
                forkserver.fork_run(run.run_id, dg.serialize_value(self._instance.get_ref()))
            except ForkserverUnavailable as error:
                log.warning("run %s launched through the code server: %s", run.run_id, error)
                self._instance.report_engine_event(
                    f"Launched through the code server: the run forkserver failed ({error}).",
                    run,
                    cls=self.__class__,
                )
                super().launch_run(context)
                return
        self._run_ids.add(run.run_id)

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if run is None or run.is_finished or GRPC_INFO_TAG in run.tags:
            return super().terminate(run_id)  # Dagster's: through the code server that has it
        self._instance.report_run_canceling(run)
        pid, alive = self._worker(run)
        if pid is None or not alive:
            self._instance.report_engine_event(
                "No live run worker to interrupt: the run is marked canceling only.",
                run,
                cls=self.__class__,
            )
            return False
        os.kill(pid, signal.SIGINT)  # as Dagster's code server interrupts its run workers
        return True

    def dispose(self) -> None:
        with self._fork_lock:
            for forkserver in self._forkservers.values():
                forkserver.close()
            self._forkservers.clear()
        super().dispose()

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        pid, alive = self._worker(run)
        if pid is None:  # nothing to check (yet): never fail a run on a guess
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no local run worker pid recorded")
        if alive:
            return CheckRunHealthResult(WorkerStatus.RUNNING, run_worker_id=str(pid))
        return CheckRunHealthResult(
            WorkerStatus.FAILED,
            f"the run worker process (pid {pid}) is gone: it was killed or crashed",
            run_worker_id=str(pid),
        )

    def _forkserver_for(self, run: DagsterRun) -> RunForkserver | None:
        """The forkserver of the run's code location, if a local interpreter loads it."""
        origin, remote = run.job_code_origin, run.remote_job_origin
        # Linux only: macOS's system frameworks do not survive a fork (Python spawns there too)
        if not self._fork_runs or not sys.platform.startswith("linux") or remote is None:
            return None
        if not _served_here(remote.repository_origin.code_location_origin):
            return None  # a code server elsewhere: only it can start the run
        if not isinstance(origin, JobPythonOrigin):
            return None
        repository = origin.repository_origin
        if repository.container_image or not os.path.exists(repository.executable_path):
            return None
        key = dg.serialize_value(repository)
        with self._fork_lock:
            if key not in self._forkservers:
                directory = getattr(repository.code_pointer, "working_directory", None)
                self._forkservers[key] = RunForkserver(repository.executable_path, key, directory)
            return self._forkservers[key]

    def _worker(self, run: DagsterRun) -> tuple[int | None, bool]:
        """The recorded pid of the run's local worker, and whether that process still lives."""
        started = self._worker_start(run)
        if started is None:
            return None, False
        pid, timestamp = started
        try:
            process = psutil.Process(pid)
            alive = process.status() != psutil.STATUS_ZOMBIE
            reused = process.create_time() > timestamp + _CLOCK_SLACK_S
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            alive, reused = False, False
        return pid, alive and not reused

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
