"""The Celery executor for real: PostgreSQL (the instance), Redis (broker and result backend)
and two Celery workers on loopback run the ingest job's steps; the outputs equal a local run's.

A worker is killed (``kill -9``) as it takes the first step: the step is acknowledged only
when done (``CELERY_REDELIVERY``), so Redis hands it to the other worker and the run completes
instead of waiting forever. Left out here: the S3 server, the daemon and webserver (the runs
are executed with ``execute_job`` from the test, their steps on the workers)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from agrag_pipeline.pipeline import run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings
from agrag_pipeline_tests.deploy.postgres import running_postgres
from agrag_pipeline_tests.deploy.test_deploy_s3_warehouse import (
    DOCS,
    _contents,
    _raw_root,
    assert_same_outputs,
)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
REPO = DEPLOY.parent


def _kill_first_taker(
    tmp_path: Path, workers: list[tuple[subprocess.Popen[bytes], Any]], killed: list[str]
) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for name, (process, _) in zip(("w1", "w2"), workers, strict=True):
            if "] received" in (tmp_path / f"{name}.log").read_text(errors="replace"):
                os.killpg(process.pid, signal.SIGKILL)
                killed.append(name)
                return
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.timeout(300)  # a lost step that is never redelivered would wait forever
def test_the_ingest_job_runs_on_two_celery_workers_and_writes_what_a_local_run_writes(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _raw_root(tmp_path)
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    config = tmp_path / "celery.yaml"
    with running_postgres() as url:
        env = {
            "DAGSTER_HOME": str(home),
            "AGRAG_POSTGRES_URL": url.replace("postgresql://", "postgresql+psycopg2://", 1),
            "AGRAG_RAW_ROOT": str(raw),
            "AGRAG_WAREHOUSE_ROOT": str(tmp_path / "warehouse"),
            "AGRAG_CACHE_DIR": str(tmp_path / "cache"),
            "AGRAG_EXECUTOR": "celery",
            "AGRAG_CELERY_BROKER": redis_url,
            "AGRAG_CELERY_BACKEND": redis_url,
            "PYTHONPATH": str(REPO),
            # dagster-celery starts `celery` by name: the environment's own, first on PATH.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        # Imported only now: the module builds its Definitions (and executor) from the env.
        from agrag_pipeline.definitions import CELERY_REDELIVERY

        celery_config = {
            "broker": redis_url,
            "backend": redis_url,
            "config_source": CELERY_REDELIVERY,
        }
        config.write_text(yaml.safe_dump({"execution": {"config": celery_config}}))
        # The instance's schema first, once: two workers starting together on a fresh
        # database would both create it, and dagster-postgres does not guard that race.
        with dg.DagsterInstance.get():
            pass
        celery_cli = str(Path(sys.executable).with_name("dagster-celery"))
        workers = []
        for name in ("w1", "w2"):
            log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed with the worker
            argv = [celery_cli, "worker", "start", "-A", "dagster_celery.app", "-y", str(config)]
            argv += ["-n", name]
            argv += ["-i", "agrag_pipeline_tests.deploy.celery_job", "--", "--concurrency=1"]
            workers.append(
                (
                    subprocess.Popen(
                        argv,
                        env=dict(os.environ),
                        cwd=REPO,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # its own group: the celery child is stopped too
                    ),
                    log,
                )
            )
        try:
            deadline = time.monotonic() + 120
            for name, (process, _) in zip(("w1", "w2"), workers, strict=True):
                while "ready." not in (tmp_path / f"{name}.log").read_text(errors="replace"):
                    assert process.poll() is None, (tmp_path / f"{name}.log").read_text()[-2000:]
                    assert time.monotonic() < deadline, f"worker {name} not ready in 120 s"
                    time.sleep(0.5)
            from agrag_pipeline_tests.deploy import celery_job

            # Building the job resolves the asset graph against the current instance's
            # defs-state storage; a test instance of its own keeps an earlier test's closed
            # instance out of it (as in the asset-specs snapshot test).
            with dg.instance_for_test():
                job = dg.reconstructable(celery_job.ingest_job)
            with dg.DagsterInstance.get() as instance:
                instance.add_dynamic_partitions("documents", sorted(DOCS))
                # kill -9 the worker that takes the first step of the first run, mid-run.
                killed: list[str] = []
                killer = threading.Thread(
                    target=_kill_first_taker, args=(tmp_path, workers, killed)
                )
                killer.start()
                for key in sorted(DOCS):
                    with dg.execute_job(job, instance, tags={"dagster/partition": key}) as result:
                        assert result.success, key
                        events = result.all_events
                    started = [e for e in events if e.event_type_value == "STEP_START"]
                    assert len(started) >= 4
                killer.join(timeout=5)
                assert len(killed) == 1  # the step it held went to the other worker
                (survivor,) = {"w1", "w2"} - set(killed)
                # Every step, the lost one included, finished on the surviving worker.
                assert (tmp_path / f"{survivor}.log").read_text().count("succeeded") >= 8
        finally:
            for process, log in workers:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)
                    try:
                        process.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        os.killpg(process.pid, signal.SIGKILL)
                        process.wait(timeout=30)
                log.close()

    local_root = tmp_path / "local"
    local = Runtime(load_settings(DEFAULT_SETTINGS_PATH), raw, str(local_root), tmp_path / "c2")
    for key in sorted(DOCS):
        run_document(local, key)
    celery_root = tmp_path / "warehouse"
    ours = {k: v for k, v in _contents(local.warehouse.fs, str(celery_root)).items()}
    theirs = _contents(local.warehouse.fs, str(local_root))
    tables = ("raw/", "text/", "documents/", "sections/", "chunks/", "embeddings/")
    assert_same_outputs(
        {k: v for k, v in ours.items() if k.startswith(tables)},
        {k: v for k, v in theirs.items() if k.startswith(tables)},
    )
    assert any(k.startswith("embeddings/") for k in ours)
