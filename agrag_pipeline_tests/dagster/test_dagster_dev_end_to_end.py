"""End to end through the real ``dagster dev``: webserver, daemon, GraphQL, backfill, Parquet.

What a user does in the UI, done over the webserver's GraphQL API: register documents as
partitions, read the asset graph, launch a backfill (which the daemon turns into batched runs
under the assets' ``BackfillPolicy``), wait for it, then read what the run wrote; re-materialise
one partition as the UI's Materialize button does; then ask the UI's own views, for every
partition, whether its checks passed and whether it is fresh, and which tags the runs carry.
And the run monitoring of the shipped ``dagster.yaml``: run workers killed with SIGKILL end as
failed within a bounded time and free their slots, so queued runs proceed.

One ``dagster dev`` serves the whole module (tests run in file order; each registers what it
needs).
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from dagster_dev_support import (
    ADD_PARTITION_MUTATION,
    ASSET_GRAPH_QUERY,
    BACKFILL_QUERY,
    INSTANCE_TEMPLATE,
    LAUNCH_BACKFILL_MUTATION,
    LAUNCH_RUN_MUTATION,
    PARTITION_STATUS_QUERY,
    PARTITION_TRUTH_QUERY,
    PARTITIONS_DEF,
    PIPELINE,
    RUN_MESSAGES_QUERY,
    RUN_QUERY,
    ProjectDirs,
    Served,
    assert_outputs,
    serve,
    wait_for,
)

from agrag_pipeline.defs.partitions import DOCUMENTS_PER_RUN
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

pytestmark = pytest.mark.slow

#: source key in the temporary raw root -> file in the reference corpus (small: seconds to embed)
DOCUMENTS = {
    "docling-md/duck.md": "markdown/docling/duck.md",
    "docling-html/table_with_heading_01.html": "html/table_with_heading_01.html",
    "rust-book/ch03-04-comments.md": "markdown/rust-book/ch03-04-comments.md",
}
#: The backfill daemon ticks every 30 s: it picks the backfill up, then the run loads the model.
BACKFILL_DEADLINE_S = 150.0
FAILED_BACKFILL = {"FAILED", "COMPLETED_FAILED", "CANCELED", "CANCELING", "FAILING"}
FAILED_RUN = {"FAILURE", "CANCELED", "CANCELING"}
TRIGGER_TAG = {"key": "agrag/trigger", "value": "end-to-end-test"}
CHECKED = ("sections", "chunks", "embeddings")
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"
#: Dagster's implicit job for assets, which the UI's Materialize button launches.
ASSET_JOB = "__ASSET_JOB"
#: The run monitoring daemon polls every 15 s (shipped dagster.yaml); slack for a loaded machine.
KILLED_RUN_DEADLINE_S = 120.0
RUN_DEADLINE_S = 150.0


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, repo_root: Path, corpus_dir: Path
) -> Iterator[Served]:
    """``dagster dev`` with automation off, over a raw root holding ``DOCUMENTS``."""
    tmp_path = tmp_path_factory.mktemp("dagster_dev")
    dirs = ProjectDirs.under(tmp_path, repo_root / INSTANCE_TEMPLATE)
    for key, corpus_path in DOCUMENTS.items():
        target = dirs.raw_root / key
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus_dir / corpus_path, target)
    yield from serve(repo_root, dirs, "off", tmp_path / "dagster_dev.log")


def wait_for_backfill(served: Served, backfill_id: str, keys: list[str]) -> dict[str, Any]:
    """Poll until the backfill's runs succeeded and every partition is materialised.

    The backfill itself turns COMPLETED_SUCCESS only on the daemon's next 30 s tick; the
    materialisations are what the user waits for.
    """
    server = served.server

    def finished() -> dict[str, Any] | None:
        backfill = server.graphql(BACKFILL_QUERY, {"id": backfill_id})["partitionBackfillOrError"]
        assert backfill["__typename"] == "PartitionBackfill", backfill
        failed_runs = [r for r in backfill["runs"] if r["status"] in FAILED_RUN]
        if failed_runs or backfill["status"] in FAILED_BACKFILL:
            errors = "\n".join(
                f"run {r['runId']} {r['status']}:\n{server.run_errors(r['runId'])}"
                for r in failed_runs
            )
            raise AssertionError(
                f"backfill {backfill_id} is {backfill['status']} "
                f"(error: {backfill['error']})\n{errors}\n--- log ---\n{server.log_tail()}"
            )
        runs_done = backfill["runs"] and all(r["status"] == "SUCCESS" for r in backfill["runs"])
        return backfill if runs_done and served.materialized(keys) else None

    try:
        return wait_for(f"backfill {backfill_id}", finished, BACKFILL_DEADLINE_S, 2.0)
    except TimeoutError as exc:
        backfill = server.graphql(BACKFILL_QUERY, {"id": backfill_id})
        raise AssertionError(f"{exc}: {backfill}\n--- log ---\n{server.log_tail()}") from exc


def register(served: Served, keys: list[str]) -> None:
    registered = served.asset_nodes(ASSET_GRAPH_QUERY)["raw_documents"]["partitionKeys"]
    for key in [k for k in keys if k not in registered]:
        result = served.server.graphql(
            ADD_PARTITION_MUTATION,
            {"repo": served.repository, "name": PARTITIONS_DEF, "key": key},
        )["addDynamicPartition"]
        assert result == {
            "__typename": "AddDynamicPartitionSuccess",
            "partitionsDefName": PARTITIONS_DEF,
            "partitionKey": key,
        }


def assert_asset_graph(served: Served, keys: list[str]) -> None:
    """raw_documents -> sections -> chunks -> embeddings, all on the registered documents."""
    nodes = served.asset_nodes(ASSET_GRAPH_QUERY)
    assert set(PIPELINE) <= set(nodes)  # sinks (index, graph) hang off the spine too
    upstream = {asset: [k["path"] for k in nodes[asset]["dependencyKeys"]] for asset in PIPELINE}
    assert upstream == {
        "raw_documents": [],
        "sections": [["raw_documents"]],
        "chunks": [["sections"]],
        "embeddings": [["chunks"]],
    }
    for asset in PIPELINE:
        node = nodes[asset]
        partitions = node["partitionDefinition"]
        assert node["isPartitioned"], asset
        assert partitions["type"] == "DYNAMIC", asset
        dimensions = [d["dynamicPartitionsDefinitionName"] for d in partitions["dimensionTypes"]]
        assert dimensions == [PARTITIONS_DEF], asset
        assert sorted(node["partitionKeys"]) == keys, asset
        assert node["backfillPolicy"]["policyType"] == "MULTI_RUN", asset


def test_dagster_dev_materialises_registered_documents_through_graphql(served: Served) -> None:
    server = served.server
    keys = sorted(DOCUMENTS)
    started = time.monotonic()

    register(served, keys)
    assert_asset_graph(served, keys)

    launched = server.graphql(
        LAUNCH_BACKFILL_MUTATION,
        {
            "params": {
                "assetSelection": [{"path": [asset]} for asset in PIPELINE],
                "partitionNames": keys,
                "tags": [TRIGGER_TAG],
                "title": "end-to-end test",
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill = wait_for_backfill(served, launched["backfillId"], keys)
    runs = backfill["runs"]
    print(
        f"backfill {backfill['id']}: {len(runs)} run(s) succeeded "
        f"{time.monotonic() - started:.1f} s after registration (status {backfill['status']})"
    )
    # BackfillPolicy.multi_run: one run per DOCUMENTS_PER_RUN documents, all four assets in it.
    assert len(runs) == math.ceil(len(keys) / DOCUMENTS_PER_RUN)
    assert all(TRIGGER_TAG in run["tags"] for run in runs)

    evaluations = [e for run in runs for e in server.check_evaluations(run["runId"])]
    checked = {(e["assetKey"]["path"][-1], e["partition"]) for e in evaluations}
    assert checked == {(a, k) for a in ("sections", "chunks", "embeddings") for k in keys}
    failed = [e for e in evaluations if not e["success"]]
    assert not failed, failed

    for key in keys:
        assert_outputs(served.dirs.warehouse_root, key)


def launch_partition_run(served: Served, key: str, assets: tuple[str, ...] = PIPELINE) -> str:
    """What the UI's Materialize button does for one partition: a run of the asset job."""
    launched = served.server.graphql(
        LAUNCH_RUN_MUTATION,
        {
            "params": {
                "selector": {
                    **served.repository,
                    "jobName": ASSET_JOB,
                    "assetSelection": [{"path": [asset]} for asset in assets],
                },
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": key}]},
            }
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return str(launched["run"]["runId"])


def run_status(served: Served, run_id: str) -> dict[str, Any]:
    run = served.server.graphql(RUN_QUERY, {"runId": run_id})["runOrError"]
    assert run["__typename"] == "Run", run
    return dict(run)


def wait_for_run(
    served: Served, run_id: str, statuses: set[str], deadline_s: float = RUN_DEADLINE_S
) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        run = run_status(served, run_id)
        if run["status"] in statuses:
            return run
        if run["status"] in FAILED_RUN | {"SUCCESS"}:
            raise AssertionError(
                f"run {run_id} ended {run['status']}, expected {statuses}:\n"
                f"{served.server.run_errors(run_id)}\n--- log ---\n{served.server.log_tail()}"
            )
        return None

    return wait_for(f"run {run_id} to reach {statuses}", done, deadline_s, 0.5)


def assert_every_partition_checked_and_fresh(served: Served, keys: list[str]) -> None:
    """The UI's own views, per partition: every check passed (none missing), every asset fresh."""
    nodes = served.server.graphql(
        PARTITION_TRUTH_QUERY, {"group": served.group, "partitions": keys}
    )
    by_asset = {"/".join(n["assetKey"]["path"]): n for n in nodes["assetNodes"]}
    for asset in PIPELINE:
        node = by_asset[asset]
        stale = dict(zip(keys, node["staleStatusByPartition"], strict=True))
        assert set(stale.values()) == {"FRESH"}, (asset, stale, node["staleCausesByPartition"])
        checks = node["assetChecksOrError"]["checks"]
        assert bool(checks) == (asset in CHECKED), asset
        for check in checks:
            assert check["description"], f"{asset}.{check['name']} has no description"
            statuses = check["partitionStatuses"]
            assert sorted(statuses["succeededPartitions"]) == keys, (asset, check)
            missing_or_bad = [
                statuses[f]
                for f in (
                    "failedPartitions",
                    "inProgressPartitions",
                    "skippedPartitions",
                    "executionFailedPartitions",
                )
            ]
            assert missing_or_bad == [[], [], [], []], (asset, check)


def assert_fingerprint_tags(served: Served, run_ids: list[str]) -> None:
    """Every run, however launched, carries the agrag/* fingerprint tags of the settings."""
    expected = Runtime.from_files(DEFAULT_SETTINGS_PATH).fingerprint_tags()
    for run_id in run_ids:
        tags = {t["key"]: t["value"] for t in run_status(served, run_id)["tags"]}
        assert expected.items() <= tags.items(), (run_id, tags)
        # The runs list shows no internal tag of ours (worker pid and host are hidden).
        ours = {k for k in tags if not k.startswith("dagster/")}
        assert ours <= {*expected, "agrag/trigger"}, (run_id, ours)


def test_dagster_dev_shows_every_partition_checked_fresh_and_tagged_after_batched_and_single_runs(
    served: Served,
) -> None:
    keys = sorted(DOCUMENTS)
    register(served, keys)
    launched = served.server.graphql(
        LAUNCH_BACKFILL_MUTATION,
        {
            "params": {
                "assetSelection": [{"path": [asset]} for asset in PIPELINE],
                "partitionNames": keys,
                "title": "batched backfill",
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill = wait_for_backfill(served, launched["backfillId"], keys)
    run_ids = [r["runId"] for r in backfill["runs"]]
    assert_every_partition_checked_and_fresh(served, keys)

    # One unchanged document again, alone, as the Materialize button does it.
    single = launch_partition_run(served, keys[1])
    wait_for_run(served, single, {"SUCCESS"})
    assert_every_partition_checked_and_fresh(served, keys)
    assert_fingerprint_tags(served, [*run_ids, single])
    # The Runs page lists the backfill as one row (its runs hidden): filtering by a fingerprint
    # finds it, though it was launched without tags.
    fingerprint = next(iter(Runtime.from_files(DEFAULT_SETTINGS_PATH).fingerprint_tags().items()))
    feed = served.server.graphql(
        RUNS_FEED_QUERY, {"tags": [{"key": fingerprint[0], "value": fingerprint[1]}]}
    )["runsFeedOrError"]
    assert launched["backfillId"] in {entry["id"] for entry in feed["results"]}, feed


#: Broken documents a user may drop among good ones: both fail at sections.
BROKEN = ("broken/truncated.pdf", "broken/junk.docx")
#: Every per-document asset, sinks included.
PER_DOCUMENT = (*PIPELINE, "graph", "search_index")
FINISHED_RUN = {"SUCCESS", "FAILURE", "CANCELED"}

RUNS_FEED_QUERY = """
query RunsFeed($tags: [ExecutionTag!]) {
  runsFeedOrError(limit: 50, view: ROOTS, filter: {tags: $tags}) {
    __typename
    ... on RunsFeedConnection { results { __typename id tags { key value } } }
    ... on PythonError { message stack }
  }
}
"""

STEP_FAILURES_QUERY = """
query StepFailures($runId: ID!) {
  logsForRun(runId: $runId, limit: 10000) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message level stepKey }
        ... on ExecutionStepFailureEvent { error { message } }
      }
    }
    ... on Error { message }
  }
}
"""

SCHEDULE_DRY_RUN_MUTATION = """
mutation DryRun($selector: ScheduleSelector!, $timestamp: Float) {
  scheduleDryRun(selectorData: $selector, timestamp: $timestamp) {
    __typename
    ... on DryRunInstigationTick {
      evaluationResult {
        runRequests { runKey tags { key value } }
        skipReason
        error { message stack }
      }
    }
    ... on PythonError { message stack }
  }
}
"""


def write_broken_documents(served: Served, corpus_dir: Path) -> None:
    """A PDF cut in half and a .docx of random bytes, among the good documents."""
    pdf = (corpus_dir / "pdf" / "2305.03393v1-pg9.pdf").read_bytes()
    target = served.dirs.raw_root / BROKEN[0]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(pdf[: len(pdf) // 2])
    (served.dirs.raw_root / BROKEN[1]).write_bytes(random.Random(21).randbytes(4096))


def wait_for_backfill_runs(served: Served, backfill_id: str) -> list[dict[str, Any]]:
    """The backfill's runs, once it has launched them and every one has finished."""

    def finished() -> list[dict[str, Any]] | None:
        backfill = served.server.graphql(BACKFILL_QUERY, {"id": backfill_id})
        runs = backfill["partitionBackfillOrError"]["runs"]
        return runs if runs and all(r["status"] in FINISHED_RUN for r in runs) else None

    try:
        return wait_for(f"backfill {backfill_id}'s runs", finished, BACKFILL_DEADLINE_S, 2.0)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n--- log ---\n{served.server.log_tail()}") from exc


def assert_failed_exactly(served: Served, good: list[str], broken: list[str], run_id: str) -> None:
    """Dagster's own partition status, as the UI's Partitions tab and the Materialize dialog's
    "Failed" preset read it: the broken documents failed on every asset after raw_documents,
    the good ones materialised on every asset."""
    nodes = served.asset_nodes(PARTITION_STATUS_QUERY)
    keys = set(good) | set(broken)
    seen = {}
    for asset in PER_DOCUMENT:
        statuses = nodes[asset]["assetPartitionStatuses"]
        seen[asset] = (
            sorted(set(statuses["materializedPartitions"]) & keys),
            sorted(set(statuses["failedPartitions"]) & keys),
        )
    expected = {
        asset: (sorted(keys), []) if asset == "raw_documents" else (sorted(good), sorted(broken))
        for asset in PER_DOCUMENT
    }
    assert seen == expected, f"run {run_id}:\n{served.server.run_errors(run_id)}"
    # The lineage node's "N% filled (M failed)" counts (over every registered document): the
    # broken ones are failed, not "filled".
    for asset in PER_DOCUMENT[1:]:
        stats = nodes[asset]["partitionStats"]
        assert stats["numFailed"] == len(broken), (asset, stats)
        assert stats["numMaterialized"] <= stats["numPartitions"] - len(broken), (asset, stats)


def step_failures_and_errors(served: Served, run_id: str) -> tuple[list[str], list[str]]:
    """A run's step failure messages, and its ERROR lines other than step and run failures."""
    logs = served.server.graphql(STEP_FAILURES_QUERY, {"runId": run_id})["logsForRun"]
    failures, errors = [], []
    for event in logs["events"]:
        if event["__typename"] == "ExecutionStepFailureEvent":
            failures.append(event["error"]["message"])
        elif event.get("level") == "ERROR" and event["__typename"] == "LogMessageEvent":
            errors.append(event["message"])
    return failures, errors


def test_dagster_dev_shows_broken_documents_failed_on_every_asset_they_did_not_reach(
    served: Served, corpus_dir: Path
) -> None:
    """Two broken files among good ones, through the real webserver and daemon: after a batched
    backfill, after a run of one broken document alone (the "Failed" preset's retry) and after
    the nightly schedule's run, each asset's partition status says failed for exactly the broken
    documents and materialised for the others; the batched run failed, saying how many."""
    good = sorted(DOCUMENTS)
    broken = sorted(BROKEN)
    write_broken_documents(served, corpus_dir)
    register(served, [*good, *broken])
    launched = served.server.graphql(
        LAUNCH_BACKFILL_MUTATION,
        {
            "params": {
                "assetSelection": [{"path": [asset]} for asset in PER_DOCUMENT],
                "partitionNames": [*good, *broken],
                "title": "good and broken documents",
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    [run] = wait_for_backfill_runs(served, launched["backfillId"])
    assert run["status"] == "FAILURE"
    assert_failed_exactly(served, good, broken, run["runId"])
    # The run says how many documents failed and which, once: one step failure naming both,
    # one ERROR line per broken document (where it failed), none repeated at later steps.
    failures, errors = step_failures_and_errors(served, run["runId"])
    assert len(failures) == 1 and "2 of 5 documents failed" in failures[0], failures
    assert all(f"{key}: sections failed" in failures[0] for key in broken), failures
    assert sorted(e.split(":")[1].strip() for e in errors) == broken, errors

    # One broken document alone, all its assets, as a retry from the UI: failed again.
    single = launch_partition_run(served, BROKEN[0], PER_DOCUMENT)
    wait_for_run(served, single, {"FAILURE"})
    assert_failed_exactly(served, good, broken, single)

    # The nightly schedule, tested from the UI: it leaves the broken documents (they would fail
    # the same way) and refreshes a changed one; its run changes no partition's status but that.
    changed = served.dirs.raw_root / good[-1]
    changed.write_text(changed.read_text(encoding="utf-8") + "\n\nOne more line.\n")
    selector = {**served.repository, "scheduleName": "nightly_refresh"}
    dry_run = served.server.graphql(
        SCHEDULE_DRY_RUN_MUTATION, {"selector": selector, "timestamp": time.time()}
    )["scheduleDryRun"]
    evaluation = dry_run["evaluationResult"]
    assert evaluation["error"] is None, evaluation["error"]
    [request] = evaluation["runRequests"]
    tags = {t["key"]: t["value"] for t in request["tags"]}
    assert (tags[RANGE_START], tags[RANGE_END]) == (good[-1], good[-1])
    nightly = served.server.graphql(
        LAUNCH_RUN_MUTATION,
        {
            "params": {
                "selector": {**served.repository, "jobName": "ingest_documents"},
                "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
            }
        },
    )["launchRun"]
    assert nightly["__typename"] == "LaunchRunSuccess", nightly
    wait_for_run(served, nightly["run"]["runId"], {"SUCCESS"})
    assert_failed_exactly(served, good, broken, nightly["run"]["runId"])


def run_worker_pid(served: Served, run_id: str) -> int | None:
    """The pid the run worker recorded ("Started process for run (pid: N)."), once it has."""
    logs = served.server.graphql(RUN_MESSAGES_QUERY, {"runId": run_id})["logsForRun"]
    for event in logs.get("events", []):
        found = re.search(r"Started process for run \(pid: (\d+)\)", event.get("message") or "")
        if found:
            return int(found.group(1))
    return None


def kill_mid_run(served: Served, run_id: str) -> int | None:
    """Kill the run's worker with SIGKILL while its run is provably not over: stop it with SIGSTOP
    as soon as it has recorded its pid, confirm the run has not ended (a frozen worker cannot
    finish between that check and the kill), then kill it at once. Not left frozen: a worker
    stopped inside a write holds SQLite's write lock, and the webserver could launch no other
    run until it was killed. Returns the pid, or None if the run ended before it could be frozen
    (a small run on a fast machine: the caller launches another)."""
    pid = wait_for(
        f"run {run_id} to start its worker", lambda: run_worker_pid(served, run_id), 120, 0.1
    )
    try:
        os.kill(pid, signal.SIGSTOP)
        alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (ProcessLookupError, psutil.NoSuchProcess):
        alive = False
    if alive and run_status(served, run_id)["status"] in {"STARTING", "STARTED"}:
        os.kill(pid, signal.SIGKILL)
        return pid
    if alive:
        os.kill(pid, signal.SIGCONT)
    wait_for_run(served, run_id, {"SUCCESS"})
    return None


def test_dagster_dev_fails_killed_runs_and_runs_the_queued_one(served: Served) -> None:
    """Both run slots (max_concurrent_runs: 2) held by runs whose workers get SIGKILL mid-run:
    the run monitoring daemon must fail them in bounded time, and a third, queued run must run."""
    keys = sorted(DOCUMENTS)
    register(served, keys)
    doomed: dict[str, int] = {}
    for _attempt in range(6):
        run_id = launch_partition_run(served, keys[len(doomed)])
        pid = kill_mid_run(served, run_id)
        if pid is not None:
            doomed[run_id] = pid
        if len(doomed) == 2:
            break
    assert len(doomed) == 2, f"only {len(doomed)} runs could be caught mid-run in 6 attempts"
    killed_at = time.monotonic()
    queued = launch_partition_run(served, keys[2], ("raw_documents",))
    for run_id in doomed:
        run = wait_for_run(served, run_id, {"FAILURE", "CANCELED"}, KILLED_RUN_DEADLINE_S)
        print(f"killed run {run_id} ended {run['status']} {time.monotonic() - killed_at:.1f} s on")
    wait_for_run(served, queued, {"SUCCESS"})
    assert time.monotonic() - killed_at < KILLED_RUN_DEADLINE_S + RUN_DEADLINE_S
