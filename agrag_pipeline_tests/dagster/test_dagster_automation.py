"""Sensor, schedule and code versions, evaluated in process on an ephemeral instance."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import yaml
from dagster_support import RANGE_END, RANGE_START, make_project

from agrag_pipeline.defs.partitions import DOCUMENTS_PER_RUN, RANGE_END_TAG, RANGE_START_TAG
from agrag_pipeline.defs.schedules import nightly_refresh
from agrag_pipeline.defs.sensors import raw_documents_sensor
from agrag_pipeline.freshness import contiguous_runs
from agrag_pipeline.models import Document
from agrag_pipeline.storage import Warehouse

DOCS: dict[str, Path | bytes] = {
    "keep.md": b"# Keep\n\nUnchanged text.\n",
    "edit.md": b"# Edit\n\nFirst version.\n",
    "gone.md": b"# Gone\n\nAbout to be deleted.\n",
}


def _tick(project, defs: dg.Definitions, cursor: str | None):  # type: ignore[no-untyped-def]
    result = project.sensor_tick(raw_documents_sensor, cursor, defs)
    assert isinstance(result, dg.SensorResult)
    return result


def _apply_partition_requests(instance: dg.DagsterInstance, result: dg.SensorResult) -> None:
    for request in result.dynamic_partitions_requests or []:
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(
                request.partitions_def_name, list(request.partition_keys)
            )
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)


def _requested_partitions(result: dg.SensorResult) -> set[str]:
    keys: set[str] = set()
    for request in result.run_requests or []:
        subset = request.asset_graph_subset
        assert subset is not None, "the sensor requests backfills, which batch documents per run"
        for asset_partition in subset.iterate_asset_partitions():
            keys.add(asset_partition.partition_key)
    return keys


def test_sensor_handles_new_changed_deleted_and_unchanged_documents(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, DOCS)
        defs = project.definitions()

        first = _tick(project, defs, None)
        assert _requested_partitions(first) == set(DOCS)
        _apply_partition_requests(instance, first)
        assert sorted(instance.get_dynamic_partitions("documents")) == sorted(DOCS)
        assert first.run_requests[0].tags["agrag/trigger"] == "sensor"

        keys = sorted(DOCS)
        assert project.materialize(keys).success
        gone_id = Document.node_id_for("gone.md")
        warehouse = Warehouse(str(project.warehouse))
        assert warehouse.has_table("chunks", gone_id)

        repeat = _tick(project, defs, first.cursor)
        assert repeat.run_requests == [] and not repeat.dynamic_partitions_requests

        (project.raw_root / "edit.md").write_bytes(b"# Edit\n\nSecond version.\n")
        (project.raw_root / "gone.md").unlink()
        (project.raw_root / "new.md").write_bytes(b"# New\n\nJust arrived.\n")
        second = _tick(project, defs, repeat.cursor)
        assert _requested_partitions(second) == {"edit.md", "new.md"}
        _apply_partition_requests(instance, second)
        assert sorted(instance.get_dynamic_partitions("documents")) == [
            "edit.md",
            "keep.md",
            "new.md",
        ]
        # The deleted document's derived tables are gone; its raw history stays.
        assert not warehouse.has_table("chunks", gone_id)
        assert not warehouse.has_table("embeddings", gone_id)
        assert warehouse.get_document(gone_id) is None
        assert any((project.warehouse / "raw" / str(gone_id)).iterdir())

        third = _tick(project, defs, second.cursor)
        assert third.run_requests == []

        # A tick that only removes a deleted document says so in its result, as the UI shows it.
        (project.raw_root / "keep.md").unlink()
        fourth = _tick(project, defs, third.cursor)
        assert fourth.run_requests == []
        assert fourth.skip_reason is not None
        message = fourth.skip_reason.skip_message or ""
        assert message.startswith("removed 1 deleted document(s) and their outputs: keep.md;")
        assert "1 deleted" in message


def test_changed_documents_scattered_over_the_partitions_are_taken_in_one_run(
    tmp_path: Path,
) -> None:
    docs: dict[str, Path | bytes] = {
        f"doc{i:02d}.md": f"# Doc {i}\n\nFirst version.\n".encode() for i in range(12)
    }
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, docs)
        defs = project.definitions()
        first = _tick(project, defs, None)
        order = instance.get_dynamic_partitions("documents")
        assert order == sorted(docs)

        # Three documents apart from each other change and one arrives: Dagster cuts a backfill
        # into runs of neighbouring partitions, so in the order of registration that would be
        # four runs. The changed ones move to the end, the new one comes after them: one run.
        changed = [order[1], order[5], order[9]]
        for key in changed:
            (project.raw_root / key).write_bytes(b"# Changed\n\nSecond version.\n")
        (project.raw_root / "late.md").write_bytes(b"# Late\n\nJust arrived.\n")
        second = _tick(project, defs, first.cursor)
        requested = _requested_partitions(second)
        assert requested == {*changed, "late.md"}
        after = instance.get_dynamic_partitions("documents")
        assert after == [k for k in order if k not in changed] + [*changed, "late.md"]
        assert len(contiguous_runs(after, requested, DOCUMENTS_PER_RUN)) == 1

        # A document inside the range of a run not finished yet stays where it is (that run
        # reads its range when it executes); the others move.
        waiting = dg.DagsterRun(
            job_name="ingest",
            run_id="0" * 32,
            status=dg.DagsterRunStatus.NOT_STARTED,
            tags={RANGE_START_TAG: after[0], RANGE_END_TAG: after[2]},
        )
        instance.add_run(waiting)
        again = [after[1], after[4], after[7]]
        for key in again:
            (project.raw_root / key).write_bytes(b"# Changed\n\nThird version.\n")
        _tick(project, defs, second.cursor)
        last = instance.get_dynamic_partitions("documents")
        assert last[:3] == after[:3]
        assert last[-2:] == [after[4], after[7]]
        assert len(contiguous_runs(last, again, DOCUMENTS_PER_RUN)) == 2


def test_a_fresh_sensor_over_a_materialised_warehouse_redoes_nothing(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, DOCS)
        keys = sorted(DOCS)
        project.register(keys)
        assert project.materialize(keys).success
        result = _tick(project, project.definitions(), None)
        assert result.run_requests == []


def _settings_with(project, **chunker: object) -> None:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(project.settings.read_text())
    data["chunker"].update(chunker)
    project.settings.write_text(yaml.safe_dump(data))


def test_a_changed_chunker_setting_changes_the_code_version_of_chunks_and_all_downstream(
    tmp_path: Path,
) -> None:
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, DOCS)
        before = _code_versions(project.definitions())
        _settings_with(project, target_tokens=120)
        after = _code_versions(project.definitions())
    assert before["raw_documents"] == after["raw_documents"]
    assert before["sections"] == after["sections"]
    # Dagster does not pass a stale upstream on: each code version folds in those upstream
    # (defs/code_versions.py), so everything made from the chunks reads "Unsynced" at once.
    for asset in ("chunks", "embeddings", "graph", "search_index", "extractions", "entity_graph"):
        assert before[asset] != after[asset], asset
    # The asset's own part is unchanged (the embedding settings did not change).
    assert before["embeddings"].split("~")[0] == after["embeddings"].split("~")[0]


def _code_versions(defs: dg.Definitions) -> dict[str, str | None]:
    graph = defs.resolve_asset_graph()
    return {key.to_user_string(): graph.get(key).code_version for key in graph.get_all_asset_keys()}


def test_a_changed_setting_marks_chunks_stale_in_the_instance(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, {"doc.md": b"# Doc\n\nText.\n"})
        project.register(["doc.md"])
        assert project.materialize(["doc.md"]).success
        _settings_with(project, target_tokens=120)
        defs = project.definitions()
        # Dagster's own staleness resolver, as the UI uses it (its constructor is internal).
        from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
        from dagster._core.loader import LoadingContextForTest

        resolver = CachingStaleStatusResolver(
            instance, defs.resolve_asset_graph(), LoadingContextForTest(instance)
        )
        status = resolver.get_status(dg.AssetKey("chunks"), "doc.md")
        assert status == StaleStatus.STALE
        # Made from those chunks: stale too, before chunks are redone (their code versions
        # fold in the chunker's, defs/code_versions.py); what is upstream stays fresh.
        assert resolver.get_status(dg.AssetKey("embeddings"), "doc.md") == StaleStatus.STALE
        assert resolver.get_status(dg.AssetKey("raw_documents"), "doc.md") == StaleStatus.FRESH


def test_nightly_refresh_requests_only_missing_or_stale_documents_in_as_few_runs_as_it_can(
    tmp_path: Path,
) -> None:
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, DOCS)
        keys = sorted(DOCS)
        project.register(keys)
        assert project.materialize(keys).success

        def evaluate() -> list[dg.RunRequest]:
            context = dg.build_schedule_context(
                instance=instance,
                resources={"pipeline": project.resource},
                scheduled_execution_time=datetime(2026, 11, 29, 2, 0, tzinfo=UTC),
            )
            return [r for r in nightly_refresh(context) if isinstance(r, dg.RunRequest)]

        assert evaluate() == []
        data = yaml.safe_load(project.settings.read_text())
        data["embedding"]["batch_size"] = 7  # how fast vectors are made, not what they are
        project.settings.write_text(yaml.safe_dump(data))
        assert evaluate() == []
        data["embedding"]["normalize"] = False  # other vectors: every document is stale
        project.settings.write_text(yaml.safe_dump(data))
        assert [(r.tags[RANGE_START], r.tags[RANGE_END]) for r in evaluate()] == [
            ("edit.md", "keep.md")
        ]
        data["embedding"]["normalize"] = True
        project.settings.write_text(yaml.safe_dump(data))
        (project.raw_root / "edit.md").write_bytes(b"# Edit\n\nChanged overnight.\n")
        (project.raw_root / "zzz.md").write_bytes(b"# Late\n\nArrived today.\n")
        requests = evaluate()
        # The changed and the new document, apart in the order, are moved together to its end:
        # one run takes both.
        assert instance.get_dynamic_partitions("documents") == [
            "gone.md",
            "keep.md",
            "edit.md",
            "zzz.md",
        ]
        ranges = [(r.tags[RANGE_START], r.tags[RANGE_END]) for r in requests]
        assert ranges == [("edit.md", "zzz.md")]
        assert [r.run_key for r in requests] == ["nightly-20261129T0200-0"]


def test_nightly_refresh_does_not_rerun_a_document_that_failed_on_its_version_and_settings(
    tmp_path: Path,
) -> None:
    """A broken file fails every night the same way: the nightly leaves it until its file or the
    failing step's settings change (or a user retries it); the others are refreshed as usual."""
    files: dict[str, Path | bytes] = {
        "bad.md": b"\x00\x01 binary behind a text extension",
        "good.md": b"# Good\n\nText.\n",
    }
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, files)
        keys = sorted(files)
        project.register(keys)
        project.materialize(keys, raise_on_error=False)  # bad.md fails at sections

        def evaluate() -> tuple[list[tuple[str, str]], list[str]]:
            context = dg.build_schedule_context(
                instance=instance,
                resources={"pipeline": project.resource},
                scheduled_execution_time=datetime(2026, 11, 29, 2, 0, tzinfo=UTC),
            )
            results = list(nightly_refresh(context))
            runs = [
                (r.tags[RANGE_START], r.tags[RANGE_END])
                for r in results
                if isinstance(r, dg.RunRequest)
            ]
            skips = [r.skip_message or "" for r in results if isinstance(r, dg.SkipReason)]
            return runs, skips

        runs, skips = evaluate()
        assert runs == [] and "1 failed on their current version and settings" in skips[0]
        # Other chunker settings: good.md is stale; bad.md failed at sections, whose settings
        # did not change, so it would fail the same way.
        data = yaml.safe_load(project.settings.read_text())
        data["chunker"]["target_tokens"] = data["chunker"]["target_tokens"] // 2
        project.settings.write_text(yaml.safe_dump(data))
        assert evaluate()[0] == [("good.md", "good.md")]
        # A new version of the broken file is tried again.
        (project.raw_root / "bad.md").write_bytes(b"\x00\x02 still binary, another version")
        assert evaluate()[0] == [("bad.md", "good.md")]


def test_a_partition_added_for_a_missing_file_is_removed_by_the_next_tick(tmp_path: Path) -> None:
    """The Materialize dialog's "Add a partition" can add a key no file has (partitions.py)."""
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, DOCS)
        project.register([*sorted(DOCS), "ghost.md"])
        result = _tick(project, project.definitions(), None)
        deleted = [
            key
            for request in result.dynamic_partitions_requests or []
            if isinstance(request, dg.DeleteDynamicPartitionsRequest)
            for key in request.partition_keys
        ]
        assert deleted == ["ghost.md"]
        # The tick's cursor is a short pointer, not the per-file state.
        assert result.cursor is not None and result.cursor.startswith("v2:")
        assert len(result.cursor) < 40
