"""The asset specs match a reviewed snapshot (as dagster-open-platform snapshots its defs).

Keys, dependencies, partitions, backfill policy, group, kinds, owners, tags, code versions,
descriptions, definition metadata (the column schema with every column's description) and the
asset checks with their descriptions: a change to any of them shows up here as a diff to review.

Regenerate after a deliberate change, then review the diff of the JSON file:

    AGRAG_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest \
        agrag_pipeline_tests/dagster/test_dagster_asset_specs_snapshot.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from agrag_pipeline.definitions import build_definitions
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

SNAPSHOT = Path(__file__).with_name("snapshots") / "asset_specs.json"


def _metadata_value(value: Any) -> Any:
    if isinstance(value, dg.TableSchema):
        return [
            {"name": c.name, "type": c.type, "description": c.description} for c in value.columns
        ]
    return getattr(value, "value", value)


def asset_specs_snapshot(defs: dg.Definitions) -> dict[str, Any]:
    graph = defs.resolve_asset_graph()
    assets: dict[str, Any] = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        policy = node.backfill_policy
        checks = [
            {
                "name": check_key.name,
                "description": graph.get(check_key).description,
                "partitioned": graph.get(check_key).partitions_def is not None,
            }
            for check_key in sorted(node.check_keys, key=lambda k: k.name)
        ]
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "group": node.group_name,
            "description": node.description,
            "code_version": node.code_version,
            "kinds": sorted(node.kinds),
            "owners": list(node.owners),
            "tags": {
                k: v for k, v in sorted(node.tags.items()) if not k.startswith("dagster/kind/")
            },
            "partitions": getattr(node.partitions_def, "name", None),
            "backfill_policy": (
                {
                    "type": policy.policy_type.value,
                    "max_partitions_per_run": policy.max_partitions_per_run,
                }
                if policy
                else None
            ),
            "metadata": {k: _metadata_value(v) for k, v in sorted(node.metadata.items())},
            "checks": checks,
        }
    return assets


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("specs")
    (tmp / "raw").mkdir()
    resource = PipelineResource(
        raw_root=str(tmp / "raw"),
        warehouse_root=str(tmp / "warehouse"),
        settings_path=str(DEFAULT_SETTINGS_PATH),
    )
    # Resolving the asset graph reads Dagster's defs-state storage from the current instance;
    # a test instance of its own keeps an earlier test's closed instance out of it.
    with dg.instance_for_test():
        return json.loads(json.dumps(asset_specs_snapshot(build_definitions(resource))))


def test_asset_specs_match_the_reviewed_snapshot(snapshot: dict[str, Any]) -> None:
    if os.environ.get("AGRAG_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(snapshot, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    reviewed = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert snapshot == reviewed, (
        "asset specs differ from the reviewed snapshot; if the change is deliberate, regenerate "
        f"it (see this module's docstring) and review the diff of {SNAPSHOT}"
    )


def test_every_column_and_check_is_described(snapshot: dict[str, Any]) -> None:
    for asset, spec in snapshot.items():
        assert spec["description"] and spec["owners"] and spec["kinds"], asset
    # The column descriptions come from the storage tables' Arrow schemas.
    tables = [
        (asset, "dagster/column_schema")
        for asset in ("sections", "chunks", "embeddings", "graph", "search_index")
    ] + [("graph", "graph_edges columns")]
    for asset, key in tables:
        columns = snapshot[asset]["metadata"][key]
        assert len(columns) >= 4, (asset, key)
        for column in columns:
            assert column["description"], f"{asset}.{column['name']} has no description"
    for asset, spec in snapshot.items():
        for check in spec["checks"]:
            assert check["description"] and check["partitioned"], (asset, check)


def test_each_code_version_folds_in_exactly_the_assets_upstream(snapshot: dict[str, Any]) -> None:
    """The chain of code versions follows the assets' real dependencies, so a changed setting
    marks exactly the assets downstream of it "Unsynced" (``defs/code_versions.py``)."""
    from agrag_pipeline.defs.code_versions import PARENTS, chain

    assert {a: tuple(sorted(p)) for a, p in PARENTS.items()} == {
        asset: tuple(snapshot[asset]["deps"]) for asset in PARENTS
    }
    own = {asset: f"{asset}-1" for asset in PARENTS}
    before = chain(own)
    after = chain({**own, "chunks": "chunks-2"})
    changed = {asset for asset in PARENTS if before[asset] != after[asset]}
    downstream = {"embeddings", "graph", "search_index", "extractions", "entity_graph"}
    assert changed == {"chunks"} | downstream
