"""End to end through the real ``dagster dev``: webserver, daemon, GraphQL, backfill, Parquet.

What a user does in the UI, done over the webserver's GraphQL API: register documents as
partitions, read the asset graph, launch a backfill (which the daemon turns into batched runs
under the assets' ``BackfillPolicy``), wait for it, then read what the run wrote.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster_dev_support import (
    ADD_PARTITION_MUTATION,
    ASSET_GRAPH_QUERY,
    BACKFILL_QUERY,
    INSTANCE_TEMPLATE,
    LAUNCH_BACKFILL_MUTATION,
    PARTITIONS_DEF,
    PIPELINE,
    ProjectDirs,
    Served,
    assert_outputs,
    serve,
    wait_for,
)

from agrag_pipeline.defs.partitions import DOCUMENTS_PER_RUN

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


@pytest.fixture
def served(tmp_path: Path, repo_root: Path, corpus_dir: Path) -> Iterator[Served]:
    """``dagster dev`` with automation off, over a raw root holding ``DOCUMENTS``."""
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
    for key in keys:
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
    assert set(nodes) == set(PIPELINE)
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
