"""Run the real ``dagster dev`` (webserver and daemon) for a test, and talk to it over GraphQL.

``dagster dev`` is started in a session of its own, so its webserver, daemon, code servers and
run workers share one process group that the test can signal as a whole: a background
``dagster dev`` ignores a SIGTERM sent to its pid alone, and its children would outlive it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow.parquet as pq
import requests

from agrag_pipeline.models import Document
from agrag_pipeline.storage.tables import chunks_from_table

T = TypeVar("T")

GROUP = "ingestion"
PARTITIONS_DEF = "documents"
PIPELINE = ("raw_documents", "sections", "chunks", "embeddings")
EMBEDDING_DIMENSION = 384  # all-MiniLM-L6-v2, the default in data/pipeline.yaml
INSTANCE_TEMPLATE = Path("agrag_pipeline") / "instance" / "dagster.yaml"

#: How long ``dagster dev`` may take to answer with its code location loaded (2 cores, cold).
READY_DEADLINE_S = 180.0
#: How long SIGTERM may take to bring the whole process group down before SIGKILL.
STOP_GRACE_S = 30.0

# -- GraphQL documents (Dagster 1.13 schema) --------------------------------------------------

WORKSPACE_QUERY = """
query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name repositories { name } }
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message }
  }
}
"""

DAEMONS_QUERY = """
query Daemons {
  instance { daemonHealth { allDaemonStatuses { daemonType required healthy } } }
}
"""

ADD_PARTITION_MUTATION = """
mutation AddPartition($repo: RepositorySelector!, $name: String!, $key: String!) {
  addDynamicPartition(repositorySelector: $repo, partitionsDefName: $name, partitionKey: $key) {
    __typename
    ... on AddDynamicPartitionSuccess { partitionsDefName partitionKey }
    ... on Error { message }
  }
}
"""

ASSET_GRAPH_QUERY = """
query AssetGraph($group: AssetGroupSelector!) {
  assetNodes(group: $group) {
    assetKey { path }
    dependencyKeys { path }
    isPartitioned
    partitionDefinition { type name dimensionTypes { dynamicPartitionsDefinitionName } }
    partitionKeys
    backfillPolicy { policyType maxPartitionsPerRun }
  }
}
"""

PARTITION_STATUS_QUERY = """
query PartitionStatus($group: AssetGroupSelector!) {
  assetNodes(group: $group) {
    assetKey { path }
    assetPartitionStatuses {
      __typename
      ... on DefaultPartitionStatuses {
        materializedPartitions failedPartitions materializingPartitions
      }
    }
    partitionStats { numMaterialized numFailed numMaterializing numPartitions }
  }
}
"""

LAUNCH_BACKFILL_MUTATION = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PartitionKeysNotFoundError { message partitionKeys }
    ... on PythonError { message stack }
    ... on Error { message }
  }
}
"""

RUN_FIELDS = """
  runId status jobName
  tags { key value }
"""

BACKFILL_QUERY = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {
      id status numPartitions
      error { message stack }
      runs { RUN_FIELDS }
    }
    ... on Error { message }
  }
}
""".replace("RUN_FIELDS", RUN_FIELDS)

RUN_ERRORS_QUERY = """
query RunErrors($runId: ID!) {
  logsForRun(runId: $runId, limit: 10000) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message level stepKey }
        ... on ExecutionStepFailureEvent { error { message stack } }
        ... on RunFailureEvent { error { message stack } }
        ... on EngineEvent { error { message stack } }
      }
    }
    ... on Error { message }
  }
}
"""

RUN_CHECKS_QUERY = """
query RunChecks($runId: ID!) {
  logsForRun(runId: $runId, limit: 10000) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on AssetCheckEvaluationEvent {
          evaluation { checkName success partition description assetKey { path } }
        }
      }
    }
    ... on Error { message }
  }
}
"""

RUNS_BY_TAG_QUERY = """
query RunsByTag($key: String!, $value: String!) {
  runsOrError(filter: {tags: [{key: $key, value: $value}]}) {
    __typename
    ... on Runs { results { RUN_FIELDS } }
    ... on Error { message }
  }
}
""".replace("RUN_FIELDS", RUN_FIELDS)

SENSOR_QUERY = """
query Sensor($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor {
      name minIntervalSeconds
      sensorState {
        status
        ticks(limit: 10) { status timestamp skipReason runIds error { message stack } }
      }
    }
    ... on Error { message }
  }
}
"""


# -- process handling -------------------------------------------------------------------------


def free_port() -> int:
    """A loopback port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def live_group_members(pgid: int) -> list[str]:
    """Processes of group ``pgid`` that are still running (zombies are dead: not counted).

    Read from /proc because ``killpg(pgid, 0)`` also succeeds for zombies that the container's
    init has not reaped yet.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [f"process group {pgid}"]
    alive = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces or parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in {"Z", "X"}:
            alive.append(f"{entry.name} {stat[: stat.rindex(')') + 1]} state={state}")
    return alive


def stop_group(process: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> list[str]:
    """SIGTERM ``process``'s whole group (started with ``start_new_session``), wait up to
    ``grace_s``, SIGKILL what is left; return the members still alive (none, normally)."""
    pgid = process.pid
    with suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    while time.monotonic() < end and live_group_members(pgid):
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.5)
    if live_group_members(pgid):
        with suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        time.sleep(1)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    return live_group_members(pgid)


def wait_for(
    what: str, probe: Callable[[], T | None], deadline_s: float, interval_s: float = 1.0
) -> T:
    """Call ``probe`` until it returns something other than None; fail after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > end:
            raise TimeoutError(f"gave up after {deadline_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


@dataclass
class DagsterDev:
    """One ``dagster dev`` process group, its port and its log."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError as exc:
            return f"(no log: {exc})"

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """POST one GraphQL document; return ``data`` or raise with the server's errors."""
        response = requests.post(
            self.url, json={"query": query, "variables": dict(variables or {})}, timeout=60
        )
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise AssertionError(f"GraphQL errors: {body['errors']}")
        return dict(body["data"])

    def repository_selector(self) -> dict[str, str] | None:
        """The loaded repository's selector, or None while the code location loads."""
        try:
            data = self.graphql(WORKSPACE_QUERY)
        except requests.RequestException:
            return None
        workspace = data["workspaceOrError"]
        for entry in workspace.get("locationEntries", []):
            location = entry.get("locationOrLoadError") or {}
            if location.get("__typename") == "PythonError":
                raise AssertionError(
                    f"code location {entry['name']} failed to load: {location['message']}\n"
                    + "".join(location.get("stack", []))
                )
            if entry["loadStatus"] == "LOADED" and location.get("repositories"):
                return {
                    "repositoryLocationName": location["name"],
                    "repositoryName": location["repositories"][0]["name"],
                }
        return None

    def unhealthy_daemons(self) -> list[str] | None:
        """Required daemons not yet healthy, or None when every one of them is."""
        statuses = self.graphql(DAEMONS_QUERY)["instance"]["daemonHealth"]["allDaemonStatuses"]
        waiting = [s["daemonType"] for s in statuses if s["required"] and not s["healthy"]]
        return waiting or None

    def run_errors(self, run_id: str) -> str:
        """The error events of a run, as text for an assertion message."""
        logs = self.graphql(RUN_ERRORS_QUERY, {"runId": run_id})["logsForRun"]
        lines = []
        for event in logs.get("events", []):
            error = event.get("error")
            if event.get("level") in {"ERROR", "CRITICAL"} or error:
                lines.append(f"[{event['__typename']} {event.get('stepKey')}] {event['message']}")
                if error:
                    lines.append(error["message"] + "".join(error.get("stack", [])))
        return "\n".join(lines) or "(no error events)"

    def check_evaluations(self, run_id: str) -> list[dict[str, Any]]:
        """The asset check evaluations a run logged."""
        logs = self.graphql(RUN_CHECKS_QUERY, {"runId": run_id})["logsForRun"]
        return [e["evaluation"] for e in logs.get("events", []) if "evaluation" in e]

    def stop(self) -> list[str]:
        """SIGTERM the whole group, wait, SIGKILL what is left; return what still runs."""
        return stop_group(self.process)


@dataclass(frozen=True)
class ProjectDirs:
    """The temporary folders one ``dagster dev`` works in."""

    raw_root: Path
    warehouse_root: Path
    dagster_home: Path
    cache_dir: Path

    @classmethod
    def under(cls, base: Path, instance_template: Path) -> ProjectDirs:
        dirs = cls(base / "raw", base / "warehouse", base / "dagster_home", base / "cache")
        for path in (dirs.raw_root, dirs.warehouse_root, dirs.dagster_home, dirs.cache_dir):
            path.mkdir(parents=True)
        shutil.copy(instance_template, dirs.dagster_home / "dagster.yaml")
        return dirs

    def environment(self, automation: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DAGSTER_HOME=str(self.dagster_home),
            AGRAG_RAW_ROOT=str(self.raw_root),
            AGRAG_WAREHOUSE_ROOT=str(self.warehouse_root),
            AGRAG_CACHE_DIR=str(self.cache_dir),
            AGRAG_AUTOMATION=automation,
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            DAGSTER_DISABLE_TELEMETRY="1",
            PYTHONUNBUFFERED="1",
        )
        env.pop("AGRAG_SETTINGS", None)  # the project's data/pipeline.yaml
        return env


@contextmanager
def dagster_dev(
    repo_root: Path, env: Mapping[str, str], log_path: Path, workspace: str = "workspace.yaml"
) -> Iterator[DagsterDev]:
    """Start ``dagster dev`` from ``repo_root``; always stop its whole process group after.

    Fails (with the log's tail) if any process of the group survives SIGKILL.
    """
    port = free_port()
    command = [
        str(repo_root / ".venv" / "bin" / "dagster"),
        "dev",
        "-w",
        workspace,
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=repo_root,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = DagsterDev(process, port, log_path)
    try:
        yield server
    finally:
        survivors = server.stop()
        assert not survivors, f"processes of dagster dev survived SIGKILL: {survivors}"


# -- a served project, and what its runs wrote --------------------------------------------------


@dataclass
class Served:
    """A ``dagster dev`` that answered, with its folders and its repository's selector."""

    server: DagsterDev
    dirs: ProjectDirs
    repository: dict[str, str]

    @property
    def group(self) -> dict[str, str]:
        return {"groupName": GROUP, **self.repository}

    def asset_nodes(self, query: str) -> dict[str, dict[str, Any]]:
        nodes = self.server.graphql(query, {"group": self.group})["assetNodes"]
        return {"/".join(node["assetKey"]["path"]): node for node in nodes}

    def materialized(self, keys: list[str]) -> bool:
        """Whether every asset shows every key materialised; fails on a failed partition."""
        nodes = self.asset_nodes(PARTITION_STATUS_QUERY)
        done = True
        for asset in PIPELINE:
            statuses = nodes[asset]["assetPartitionStatuses"]
            failed = set(statuses["failedPartitions"]) & set(keys)
            assert not failed, f"{asset} failed for {sorted(failed)}\n{self.server.log_tail()}"
            done = done and set(keys) <= set(statuses["materializedPartitions"])
        return done


def serve(
    repo_root: Path,
    dirs: ProjectDirs,
    automation: str,
    log_path: Path,
    workspace: str = "workspace.yaml",
) -> Iterator[Served]:
    """Start ``dagster dev``, wait for its code location; stop every process afterwards.

    A generator for a pytest fixture to ``yield from``: teardown runs when pytest resumes it.
    """
    started = time.monotonic()
    with dagster_dev(repo_root, dirs.environment(automation), log_path, workspace) as server:

        def loaded() -> dict[str, str] | None:
            if server.process.poll() is not None:
                raise AssertionError(
                    f"dagster dev exited with {server.process.returncode}:\n{server.log_tail()}"
                )
            return server.repository_selector()

        try:
            repository = wait_for("dagster dev to load the code location", loaded, READY_DEADLINE_S)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n--- dagster dev log ---\n{server.log_tail()}") from exc
        print(f"dagster dev answered after {time.monotonic() - started:.1f} s: {repository}")
        yield Served(server, dirs, repository)
    print(f"dagster dev stopped; {time.monotonic() - started:.1f} s from start to stop")


def assert_outputs(warehouse: Path, source_key: str) -> None:
    """The Parquet a run wrote: chunks reproduce the text layer, one 384-d vector per chunk."""
    document_id = Document.node_id_for(source_key)
    chunks = chunks_from_table(pq.read_table(warehouse / "chunks" / f"{document_id}.parquet"))
    assert chunks, f"no chunks for {source_key}"
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.document_id == document_id
        text_layer = warehouse / "text" / str(document_id) / f"{chunk.content_hash}.txt"
        assert chunk.provenance.extract(text_layer.read_text(encoding="utf-8")) == chunk.text, (
            source_key,
            chunk.index,
        )

    embeddings = pq.read_table(warehouse / "embeddings" / f"{document_id}.parquet")
    assert embeddings.column("chunk_id").to_pylist() == [str(c.id) for c in chunks]
    assert embeddings.schema.field("vector").type.list_size == EMBEDDING_DIMENSION
    vectors = np.array(embeddings.column("vector").to_pylist(), dtype=np.float32)
    assert vectors.shape == (len(chunks), EMBEDDING_DIMENSION)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


# -- what the UI shows per partition: check status, staleness, run tags ------------------------

PARTITION_TRUTH_QUERY = """
query PartitionTruth($group: AssetGroupSelector!, $partitions: [String!]!) {
  assetNodes(group: $group) {
    assetKey { path }
    description
    staleStatusByPartition(partitions: $partitions)
    staleCausesByPartition(partitions: $partitions) { reason key { path } partitionKey }
    assetChecksOrError {
      __typename
      ... on AssetChecks {
        checks {
          name
          description
          partitionStatuses {
            __typename
            ... on AssetCheckDefaultPartitionStatuses {
              succeededPartitions failedPartitions inProgressPartitions
              skippedPartitions executionFailedPartitions
            }
          }
        }
      }
    }
  }
}
"""

LAUNCH_RUN_MUTATION = """
mutation LaunchRun($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId status } }
    ... on PythonError { message stack }
    ... on Error { message }
  }
}
"""

RUN_QUERY = """
query Run($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { RUN_FIELDS }
    ... on Error { message }
  }
}
""".replace("RUN_FIELDS", RUN_FIELDS)

RUN_MESSAGES_QUERY = """
query RunMessages($runId: ID!) {
  logsForRun(runId: $runId, limit: 10000) {
    __typename
    ... on EventConnection { events { __typename ... on MessageEvent { message level } } }
    ... on Error { message }
  }
}
"""
