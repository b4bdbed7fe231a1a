"""The run launcher's worker health check against a real process killed with SIGKILL.

A run executed outside the daemon (``agrag materialize`` runs the job in its own process) tags
itself with its worker's pid and host; when that process is killed, run monitoring must be able
to tell, or the run stays STARTED forever and holds a run slot. (The daemon side, with workers
launched by ``dagster dev``, is proven in ``test_dagster_dev_end_to_end.py``.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.launcher.base import WorkerStatus
from dagster._core.storage.dagster_run import DagsterRunStatus

from agrag_pipeline.defs.run_launcher import LocalProcessRunLauncher

REPO_ROOT = Path(__file__).resolve().parents[2]

#: A stand-in run worker: takes the run over as ``agrag_pipeline.defs.assets._tag_run`` does
#: (the same tags, from the same function), marks it started, then works until killed.
WORKER = """
import sys, time
import dagster as dg
from agrag_pipeline.defs.run_launcher import worker_tags
instance = dg.DagsterInstance.get()
run_id = sys.argv[1]
instance.add_run_tags(run_id, worker_tags())
run = instance.get_run_by_id(run_id)
instance.handle_run_event(run_id, dg.DagsterEvent(
    event_type_value="PIPELINE_START", job_name=run.job_name, message="started"))
print("ready", flush=True)
time.sleep(600)
"""


def _started_run(instance: dg.DagsterInstance) -> dg.DagsterRun:
    @dg.op
    def work() -> None: ...

    @dg.job
    def agrag_job() -> None:
        work()

    return instance.create_run_for_job(agrag_job, status=DagsterRunStatus.NOT_STARTED)


def test_a_killed_run_worker_is_reported_failed_and_a_live_one_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        (REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml").read_text()
    )
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, LocalProcessRunLauncher)
        assert instance.run_monitoring_enabled
        run = _started_run(instance)
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, run.run_id],
            env=env,
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready"
            live = instance.get_run_by_id(run.run_id)
            assert live is not None and live.status == DagsterRunStatus.STARTED
            health = launcher.check_run_worker_health(live)
            assert health.status == WorkerStatus.RUNNING, health
            assert health.run_worker_id == str(worker.pid)

            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
            time.sleep(0.1)
            health = launcher.check_run_worker_health(live)
            assert health.status == WorkerStatus.FAILED, health
            assert f"pid {worker.pid}" in (health.msg or "")
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=30)


def test_a_run_without_a_recorded_worker_is_never_failed_on_a_guess(tmp_path: Path) -> None:
    with dg.instance_for_test(
        overrides={
            "run_launcher": {
                "module": "agrag_pipeline.defs.run_launcher",
                "class": "LocalProcessRunLauncher",
            }
        }
    ) as instance:
        run = _started_run(instance)
        health = instance.run_launcher.check_run_worker_health(run)
        assert health.status == WorkerStatus.RUNNING
