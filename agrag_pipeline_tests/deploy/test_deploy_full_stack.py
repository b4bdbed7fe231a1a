"""The shared deployment as a whole, for real, on loopback: PostgreSQL (Dagster's instance
through ``deploy/dagster.yaml``), SeaweedFS (the raw root and the warehouse as ``s3://``
prefixes, credentials from the environment only), Redis (Celery's broker and backend), two
Celery workers, a code-location server (``deploy/workspace.yaml``), ``dagster-daemon run`` and
``dagster-webserver`` with ``AGRAG_EXECUTOR=celery``.

Documents dropped into the raw bucket are found by the sensor on the daemon's own ticks (no
tick is faked), its runs execute their steps on the workers and reach SUCCESS, seen through the
webserver's GraphQL, and the bucket holds what a local run writes. Then a document is edited
and the worker that takes the first step of the sensor's new run is killed with ``kill -9``
(its whole process group): the run must end, retried to success by the other worker or
cleanly failed, and the warehouse must hold no half-written object and no document whose
tables are of two versions.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import s3fs
import yaml

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings
from agrag_pipeline.storage.warehouse import Warehouse
from agrag_pipeline_tests.dagster.dagster_dev_support import (
    PARTITION_STATUS_QUERY,
    PIPELINE,
    RUN_FIELDS,
    SENSOR_QUERY,
    DagsterDev,
    wait_for,
)
from agrag_pipeline_tests.deploy.postgres import running_postgres
from agrag_pipeline_tests.deploy.seaweed import BUCKET, SeaweedS3
from agrag_pipeline_tests.deploy.stack import (
    Service,
    free_port,
    services,
    start_service,
    wait_for_log,
)
from agrag_pipeline_tests.deploy.test_deploy_s3_warehouse import (
    _contents,
    _settings,
    assert_same_outputs,
)

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CORPUS = REPO.parent / "shared" / "corpus"
#: Small real documents of two formats; keys keep the corpus' folder names.
DOCS = {
    key: f"markdown/{key}" if key.endswith(".md") else key
    for key in (
        "rust-book/ch04-00-understanding-ownership.md",
        "rust-book/ch06-00-enums.md",
        "html/unit_test_01.html",
    )
}
EDITED = "rust-book/ch06-00-enums.md"
EDIT = "\n## Matching\n\nThe edited version: a `match` arm for every variant.\n"
TABLES = ("raw/", "text/", "documents/", "sections/", "chunks/", "embeddings/")
SENSOR = "raw_documents_sensor"
WORKERS = ("w1", "w2")
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}

RUNS_QUERY = """
query Runs { runsOrError { __typename ... on Runs { results { RUN_FIELDS } } } }
""".replace("RUN_FIELDS", RUN_FIELDS)

RUN_EVENTS_QUERY = """
query RunEvents($runId: ID!) {
  logsForRun(runId: $runId, limit: 10000) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message stepKey timestamp }
        ... on EngineEvent { metadataEntries { label ... on TextMetadataEntry { text } } }
      }
    }
  }
}
"""


def _env(tmp: Path, s3: SeaweedS3, postgres_url: str, redis_url: str, prefix: str) -> dict:
    home = tmp / "dagster_home"
    home.mkdir()
    shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    env = dict(os.environ)
    env.pop("AGRAG_AUTOMATION", None)  # the sensor runs by default, as deployed
    env.update(s3.env)  # credentials and endpoint: from the environment only
    env.update(
        DAGSTER_HOME=str(home),
        AGRAG_POSTGRES_URL=postgres_url.replace("postgresql://", "postgresql+psycopg2://", 1),
        AGRAG_RAW_ROOT=f"{prefix}/raw",
        AGRAG_WAREHOUSE_ROOT=f"{prefix}/warehouse",
        AGRAG_SETTINGS=str(_settings(tmp)),  # the graph database on a local path
        AGRAG_CACHE_DIR=str(tmp / "cache"),
        AGRAG_EXECUTOR="celery",
        AGRAG_CELERY_BROKER=redis_url,
        AGRAG_CELERY_BACKEND=redis_url,
        AGRAG_CODE_SERVER_HOST="127.0.0.1",
        AGRAG_CODE_SERVER_PORT=str(free_port()),
        DAGSTER_EVENT_BATCH_SIZE="50",  # as deploy/dagster.yaml asks for PostgreSQL
        DAGSTER_DISABLE_TELEMETRY="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=str(REPO),
        # dagster-celery starts `celery` by name: the environment's own, first on PATH.
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return env


def _cli(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _start_stack(tmp: Path, env: dict[str, str], started: list[Service]) -> DagsterDev:
    """Code server and workers, then daemon and webserver; the webserver once it answers."""
    from agrag_pipeline.definitions import CELERY_REDELIVERY

    # The instance's schema first, once: the processes below would race to create it.
    subprocess.run(
        [sys.executable, "-c", "import dagster as dg; dg.DagsterInstance.get().dispose()"],
        env=env,
        check=True,
        capture_output=True,
    )
    config = tmp / "celery.yaml"
    celery = {"broker": env["AGRAG_CELERY_BROKER"], "backend": env["AGRAG_CELERY_BACKEND"]}
    celery["config_source"] = CELERY_REDELIVERY  # type: ignore[assignment]
    config.write_text(yaml.safe_dump({"execution": {"config": celery}}))

    host, port = env["AGRAG_CODE_SERVER_HOST"], env["AGRAG_CODE_SERVER_PORT"]
    code = [_cli("dagster"), "code-server", "start", "-m", "agrag_pipeline.definitions"]
    started.append(start_service("code-server", [*code, "-h", host, "-p", port], env, tmp, REPO))
    for name in WORKERS:
        argv = [_cli("dagster-celery"), "worker", "start", "-A", "dagster_celery.app"]
        argv += ["-y", str(config), "-n", name, "--", "--concurrency=1"]
        started.append(start_service(name, argv, env, tmp, REPO))

    health = [_cli("dagster"), "api", "grpc-health-check", "-h", host, "-p", port]
    deadline = time.monotonic() + 180
    while subprocess.run(health, env=env, capture_output=True).returncode != 0:
        started[0].assert_running()
        assert time.monotonic() < deadline, "the code server did not answer in 180 s"
        time.sleep(1)

    workspace = str(DEPLOY / "workspace.yaml")
    started.append(
        start_service("daemon", [_cli("dagster-daemon"), "run", "-w", workspace], env, tmp, REPO)
    )
    web_port = free_port()
    argv = [_cli("dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(web_port)]
    webserver = start_service("webserver", argv, env, tmp, REPO)
    started.append(webserver)
    for service in started[1:3]:
        wait_for_log(service, "ready.", 180)
    return DagsterDev(webserver.process, web_port, webserver.log_path)


def _sensor_runs(web: DagsterDev) -> dict[str, dict[str, Any]]:
    """The runs the sensor launched (the tag it sets), by run id."""
    runs = web.graphql(RUNS_QUERY)["runsOrError"]["results"]
    return {
        run["runId"]: run
        for run in runs
        if {"key": "agrag/trigger", "value": "sensor"} in run["tags"]
    }


def _tag(run: dict[str, Any], key: str) -> str | None:
    return next((t["value"] for t in run["tags"] if t["key"] == key), None)


def _materialized(web: DagsterDev, repository: dict[str, str], keys: list[str]) -> bool:
    group = {"groupName": "ingestion", **repository}
    nodes = web.graphql(PARTITION_STATUS_QUERY, {"group": group})["assetNodes"]
    by_key = {"/".join(n["assetKey"]["path"]): n["assetPartitionStatuses"] for n in nodes}
    return all(set(keys) <= set(by_key[a]["materializedPartitions"]) for a in PIPELINE)


def _step_workers(web: DagsterDev, run_id: str) -> dict[str, list[str]]:
    """For each step, the Celery workers that reported executing it (dagster-celery's engine
    event, sent from inside the worker), in order."""
    events = web.graphql(RUN_EVENTS_QUERY, {"runId": run_id})["logsForRun"]["events"]
    found: dict[str, list[str]] = {}
    for event in events:
        if event["__typename"] == "EngineEvent" and "in celery worker" in event["message"]:
            worker = {e["label"]: e.get("text") for e in event["metadataEntries"]}
            # The worker's Celery hostname: ``-n w1`` makes it ``w1@<host>``.
            name = str(worker["Celery worker"]).split("@")[0]
            found.setdefault(event["stepKey"], []).append(name)
    return found


def _succeeded_steps(web: DagsterDev, run_id: str) -> set[str]:
    events = web.graphql(RUN_EVENTS_QUERY, {"runId": run_id})["logsForRun"]["events"]
    return {e["stepKey"] for e in events if e["__typename"] == "ExecutionStepSuccessEvent"}


def _versions(warehouse: Warehouse, key: str) -> set[str | None]:
    """The content hashes the stored parts of ``key`` belong to (one, if none is torn)."""
    document_id = Document.node_id_for(key)
    document = warehouse.get_document(document_id)
    found = {document.content_hash if document else None}
    for table in ("sections", "chunks", "embeddings"):
        meta = warehouse.table_metadata(table, document_id)
        found.add(meta.get("content_hash") if meta else None)
        if meta is not None:
            rows = warehouse.read_table(table, document_id).column("content_hash").to_pylist()
            assert set(rows) == {meta["content_hash"]}, (key, table, "rows of another version")
    return found


def _assert_nothing_half_written(fs: s3fs.S3FileSystem, base: str) -> None:
    """Every Parquet and JSON object under the warehouse's tables reads whole."""
    for path in fs.find(base):
        name = path[len(base) :].lstrip("/")
        if not name.startswith(TABLES):
            continue
        data = fs.cat_file(path)
        if name.endswith(".parquet"):
            pq.read_table(pa.BufferReader(data))  # a torn file has no footer: this raises
        elif name.endswith(".json"):
            json.loads(data)


@pytest.mark.slow
@pytest.mark.timeout(600)  # a run stuck STARTED, or a lost step, would wait forever
def test_the_sensor_runs_documents_from_a_bucket_on_celery_workers_and_survives_a_killed_worker(
    tmp_path: Path, s3_env: SeaweedS3, redis_url: str
) -> None:
    began = time.monotonic()
    prefix = f"s3://{BUCKET}/{secrets.token_hex(6)}"
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    raw_base = f"{prefix}/raw".removeprefix("s3://")
    warehouse_base = f"{prefix}/warehouse".removeprefix("s3://")
    originals = {key: (CORPUS / path).read_bytes() for key, path in DOCS.items()}
    for key, data in originals.items():
        fs.pipe_file(f"{raw_base}/{key}", data)
    fs.pipe_file(f"{warehouse_base}/.keep", b"")  # the bucket and prefix exist, as deployed

    with running_postgres() as postgres_url, services() as started:
        env = _env(tmp_path, s3_env, postgres_url, redis_url, prefix)
        web = _start_stack(tmp_path, env, started)
        workers = {s.name: s for s in started if s.name in WORKERS}

        def loaded() -> dict[str, str] | None:
            for service in started:
                service.assert_running()
            return web.repository_selector()

        repository = wait_for("the webserver to load the code location", loaded, 180)
        print(f"stack up after {time.monotonic() - began:.0f} s")

        # 1. The sensor's own ticks register the documents and launch their runs.
        keys = sorted(DOCS)
        selector = {**repository, "sensorName": SENSOR}

        def ingested() -> bool | None:
            for service in started:
                service.assert_running()
            runs = _sensor_runs(web)
            failed = [r for r in runs.values() if r["status"] in {"FAILURE", "CANCELED"}]
            assert not failed, "\n".join(web.run_errors(r["runId"]) for r in failed)
            done = runs and all(r["status"] == "SUCCESS" for r in runs.values())
            return True if done and _materialized(web, repository, keys) else None

        try:
            wait_for("the sensor's runs to succeed", ingested, 300, interval_s=2)
        except TimeoutError as exc:
            sensor = web.graphql(SENSOR_QUERY, {"selector": selector})["sensorOrError"]
            daemon = next(s for s in started if s.name == "daemon")
            raise AssertionError(f"{exc}\nsensor: {sensor}\n{daemon.log(4000)}") from exc
        first_runs = _sensor_runs(web)
        print(f"{len(first_runs)} sensor run(s) succeeded after {time.monotonic() - began:.0f} s")
        sensor = web.graphql(SENSOR_QUERY, {"selector": selector})["sensorOrError"]
        assert sensor["sensorState"]["status"] == "RUNNING"
        # The tick names the backfill it requested; the runs carry the backfill's id.
        ticked = {i for tick in sensor["sensorState"]["ticks"] for i in tick["runIds"]}
        for run in first_runs.values():
            assert _tag(run, "dagster/backfill") in ticked, (run, ticked)

        # Every step ran inside a Celery worker, and the worker's own log names it.
        for run_id in first_runs:
            steps = _step_workers(web, run_id)
            assert set(steps) == _succeeded_steps(web, run_id) >= set(PIPELINE), steps
            assert {w for names in steps.values() for w in names} <= set(WORKERS), steps
            # The worker's own log names the step, in the run, as done there.
            for step, names in steps.items():
                lines = workers[names[-1]].log().splitlines()
                assert any(run_id in x and f" - {step} - STEP_SUCCESS - " in x for x in lines)
        # What the first runs wrote, before the edit below changes one document.
        after_first = _tables(_contents(_fresh(), warehouse_base))

        # 2. kill -9 the worker that executes the embedding step of the run the edit causes
        # (the longest step: the worker is surely inside it).
        edited = originals[EDITED] + EDIT.encode()
        mark = " - embeddings - STEP_START - "
        before = {name: w.log().count(mark) for name, w in workers.items()}
        fs.pipe_file(f"{raw_base}/{EDITED}", edited)

        def taker() -> str | None:
            for name, worker in workers.items():
                worker.assert_running()
                if worker.log().count(mark) > before[name]:
                    return name
            return None

        killed = wait_for("a worker to start the new run's embedding step", taker, 180, 0.1)
        workers[killed].kill_group()
        killed_at = time.monotonic()
        (survivor,) = set(WORKERS) - {killed}
        new_runs = wait_for("the new run", lambda: {*_sensor_runs(web)} - {*first_runs} or None, 30)

        def ended() -> dict[str, Any] | None:
            runs = _sensor_runs(web)
            mine = [runs[i] for i in new_runs]
            return mine[0] if all(r["status"] in TERMINAL for r in mine) else None

        run = wait_for("the run with the killed worker to end", ended, 240, interval_s=2)
        print(
            f"after kill -9 of {killed}: run {run['status']} in "
            f"{time.monotonic() - killed_at:.0f} s; {time.monotonic() - began:.0f} s in all"
        )
        assert run["status"] in {"SUCCESS", "FAILURE"}, run  # never stuck STARTED
        steps = _step_workers(web, run["runId"])
        if run["status"] == "SUCCESS":
            # Every step finished; the one the killed worker held was handed to the survivor
            # and done there, the steps after it too; every other step ran once.
            assert set(steps) == _succeeded_steps(web, run["runId"]) >= set(PIPELINE), steps
            assert steps.pop("embeddings") == [killed, survivor], steps
            assert all(len(names) == 1 for names in steps.values()), steps
            downstream = set(steps) - set(PIPELINE)  # the sinks: graph, search index
            assert downstream and all(steps[s] == [survivor] for s in downstream), steps
            lost = [line for line in workers[killed].log().splitlines() if run["runId"] in line]
            assert any(" - embeddings - STEP_START - " in line for line in lost)
            assert not any(" - embeddings - STEP_SUCCESS - " in line for line in lost)
        else:
            print(web.run_errors(run["runId"]))

    # 3. The warehouse: nothing half-written, every document of one version (read with a
    # fresh client: one caches its listings).
    fs = _fresh()
    _assert_nothing_half_written(fs, warehouse_base)
    warehouse = Warehouse(f"{prefix}/warehouse")
    warehouse.fs.invalidate_cache()
    for key in keys:
        versions = _versions(warehouse, key)
        assert len(versions) == 1, (key, versions)
        if key != EDITED:
            assert versions == {content_hash(originals[key])}, key
    if run["status"] == "SUCCESS":
        assert _versions(warehouse, EDITED) == {content_hash(edited)}

    # 4. What the sensor's first runs wrote equals a local run of the same documents.
    raw = tmp_path / "local-raw"
    for key, data in originals.items():
        (raw / key).parent.mkdir(parents=True, exist_ok=True)
        (raw / key).write_bytes(data)
    local_root = tmp_path / "local-warehouse"
    local = Runtime(load_settings(DEFAULT_SETTINGS_PATH), raw, str(local_root), tmp_path / "c2")
    for key in keys:
        run_document(local, key)
    assert_same_outputs(after_first, _tables(_contents(local.warehouse.fs, str(local_root))))
    assert {k.split("/")[0] for k in after_first} == {t.rstrip("/") for t in TABLES}


def _fresh() -> s3fs.S3FileSystem:
    """An S3 client without cached listings (credentials and endpoint from the environment)."""
    return s3fs.S3FileSystem(skip_instance_cache=True)


def _tables(found: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in found.items() if k.startswith(TABLES)}
