"""The raw-root sensor under the real ``dagster dev`` daemon: a dropped document gets processed.

With ``AGRAG_AUTOMATION=on`` the sensor starts RUNNING. A document copied into the raw root
while the server runs must be registered as a partition by a sensor tick, and the backfill
that tick requests must materialise it, with no user action.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster_dev_support import (
    ASSET_GRAPH_QUERY,
    INSTANCE_TEMPLATE,
    PIPELINE,
    RUNS_BY_TAG_QUERY,
    SENSOR_QUERY,
    ProjectDirs,
    Served,
    assert_outputs,
    serve,
    wait_for,
)

pytestmark = pytest.mark.slow

SENSOR = "raw_documents_sensor"
SOURCE_KEY = "inbox/duck.md"
CORPUS_FILE = "markdown/docling/duck.md"
#: One sensor interval (30 s), one backfill daemon tick (30 s), one run (model load), slack.
SENSOR_DEADLINE_S = 150.0


@pytest.fixture
def served(tmp_path: Path, repo_root: Path) -> Iterator[Served]:
    """``dagster dev`` with automation on, over an empty raw root."""
    dirs = ProjectDirs.under(tmp_path, repo_root / INSTANCE_TEMPLATE)
    yield from serve(repo_root, dirs, "on", tmp_path / "dagster_dev.log")


def drop(source: Path, raw_root: Path, source_key: str) -> None:
    """Copy a file in the way a careful uploader does: hidden name first, then one rename."""
    target = raw_root / source_key
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")  # hidden: the sensor skips it
    shutil.copyfile(source, partial)
    partial.rename(target)


def sensor(served: Served) -> dict[str, Any]:
    selector = {**served.repository, "sensorName": SENSOR}
    result = served.server.graphql(SENSOR_QUERY, {"selector": selector})["sensorOrError"]
    assert result["__typename"] == "Sensor", result
    return dict(result)


def sensor_runs(served: Served) -> list[dict[str, Any]]:
    """Runs launched for the sensor's requests (tagged by it, through its backfill)."""
    runs = served.server.graphql(RUNS_BY_TAG_QUERY, {"key": "agrag/trigger", "value": "sensor"})
    return list(runs["runsOrError"]["results"])


def test_dagster_dev_sensor_registers_and_processes_a_dropped_document(
    served: Served, corpus_dir: Path
) -> None:
    server = served.server
    state = sensor(served)
    assert state["sensorState"]["status"] == "RUNNING"
    assert state["minIntervalSeconds"] == 30

    drop(corpus_dir / CORPUS_FILE, served.dirs.raw_root, SOURCE_KEY)
    dropped = time.monotonic()

    def processed() -> bool | None:
        ticks = sensor(served)["sensorState"]["ticks"]
        failed = [t for t in ticks if t["status"] == "FAILURE"]
        assert not failed, f"sensor ticks failed: {failed}\n{server.log_tail()}"
        runs = sensor_runs(served)
        for run in runs:
            assert run["status"] not in {"FAILURE", "CANCELED"}, (
                f"run {run['runId']} {run['status']}:\n{server.run_errors(run['runId'])}"
            )
        runs_done = runs and all(run["status"] == "SUCCESS" for run in runs)
        nodes = served.asset_nodes(ASSET_GRAPH_QUERY)
        registered = all(SOURCE_KEY in nodes[a]["partitionKeys"] for a in PIPELINE)
        return True if runs_done and registered and served.materialized([SOURCE_KEY]) else None

    try:
        wait_for(f"the sensor to process {SOURCE_KEY}", processed, SENSOR_DEADLINE_S, 2.0)
    except TimeoutError as exc:
        ticks = sensor(served)["sensorState"]["ticks"]
        raise AssertionError(f"{exc}\nticks: {ticks}\n--- log ---\n{server.log_tail()}") from exc
    print(f"{SOURCE_KEY} processed {time.monotonic() - dropped:.1f} s after it was dropped")

    runs = sensor_runs(served)
    # The sensor requests a backfill (batched by the BackfillPolicy), not a run per document.
    assert all(any(t["key"] == "dagster/backfill" for t in run["tags"]) for run in runs), runs
    assert_outputs(served.dirs.warehouse_root, SOURCE_KEY)
