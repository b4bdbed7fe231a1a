"""The shipped SQLite instance storage: a run's event file is Dagster's own, made cheaply.

Each run gets a SQLite file of its own for its events; the shipped storage copies a template of
it instead of building the schema statement by statement (``instance_storage.py`` says why).
"""

from __future__ import annotations

import logging
import multiprocessing
import sqlite3
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest
from alembic.script import ScriptDirectory
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationPlanned,
)
from dagster._core.events import (
    AssetMaterializationPlannedData,
    DagsterEvent,
    DagsterEventType,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from sqlalchemy import event
from sqlalchemy.engine import Engine

from agrag_pipeline.defs.instance_storage import (
    KeptEngineSqliteEventLogStorage,
    KeptEngineSqliteStorage,
    warm_process,
)


def _entry(run_id: str, message: str) -> EventLogEntry:
    return EventLogEntry(
        error_info=None,
        level=logging.INFO,
        user_message=message,
        run_id=run_id,
        timestamp=time.time(),
    )


def _schema(path: Path) -> tuple[list[tuple[str, str, str]], list[tuple[str]]]:
    """Every table, index and trigger of a SQLite file (with its SQL) and its alembic stamp."""
    with sqlite3.connect(path) as db:
        objects = db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        stamp = db.execute("SELECT version_num FROM alembic_version").fetchall()
        mode = db.execute("PRAGMA journal_mode").fetchone()
    return [*objects, ("journal_mode", str(mode[0]), "")], stamp


def test_a_new_run_event_file_is_made_without_schema_statements(tmp_path: Path) -> None:
    storage = KeptEngineSqliteEventLogStorage(str(tmp_path / "history"))
    storage.store_event(_entry(str(uuid.uuid4()), "the first run"))
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    try:
        second = str(uuid.uuid4())
        storage.store_event(_entry(second, "the second run"))
    finally:
        event.remove(Engine, "before_cursor_execute", record)
        storage.dispose()
    schema_statements = [s for s in statements if s.lstrip().upper().startswith("CREATE")]
    assert schema_statements == [], schema_statements[:3]
    assert [
        e.user_message
        for e in SqliteEventLogStorage(str(tmp_path / "history")).get_logs_for_run(second)
    ] == ["the second run"]


def test_run_event_files_are_those_dagster_makes(tmp_path: Path) -> None:
    ours = KeptEngineSqliteEventLogStorage(str(tmp_path / "ours"))
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    run_ids = [str(uuid.uuid4()) for _ in range(2)]
    try:
        for run_id in run_ids:  # the first makes the template, the second is a copy of it
            ours.store_event(_entry(run_id, f"ours {run_id}"))
            stock.store_event(_entry(run_id, f"stock {run_id}"))
        copied = _schema(tmp_path / "ours" / f"{run_ids[1]}.db")
        assert copied == _schema(tmp_path / "stock" / f"{run_ids[1]}.db")
        # Dagster's own storage reads what ours wrote, and lists only real runs.
        reader = SqliteEventLogStorage(str(tmp_path / "ours"))
        assert [e.user_message for e in reader.get_logs_for_run(run_ids[1])] == [
            f"ours {run_ids[1]}"
        ]
        assert sorted(reader.get_all_run_ids()) == sorted(run_ids)
    finally:
        ours.dispose()
        stock.dispose()


def _store_at_once(base_dir: str, run_ids: list[str], name: str, start: object) -> None:
    storage = KeptEngineSqliteEventLogStorage(base_dir)
    for run_id in run_ids:
        start.wait()  # type: ignore[attr-defined]
        for number in range(EVENTS_PER_WRITER):
            storage.store_event(_entry(run_id, f"{name} {number}"))
    storage.dispose()


EVENTS_PER_WRITER = 10


@pytest.mark.slow  # two fresh interpreters import Dagster: 15-30 s on the shared machine
def test_two_processes_starting_one_run_event_file_at_once_lose_nothing(tmp_path: Path) -> None:
    """Two real processes write the first events of the same runs at the same moment (a run
    worker and the daemon): whichever makes each run's file, both keep every event."""
    base_dir = str(tmp_path / "history")
    # The template exists already (as after the instance's first run), so both race to copy it.
    first = KeptEngineSqliteEventLogStorage(base_dir)
    first.store_event(_entry(str(uuid.uuid4()), "an earlier run"))
    first.dispose()
    context = multiprocessing.get_context("spawn")
    run_ids = [str(uuid.uuid4()) for _ in range(5)]  # five fresh runs: five races for a file
    start = context.Barrier(2)
    writers = [
        context.Process(target=_store_at_once, args=(base_dir, run_ids, name, start))
        for name in ("a", "b")
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [w.exitcode for w in writers] == [0, 0]
    reader = SqliteEventLogStorage(base_dir)
    for run_id in run_ids:
        messages = {e.user_message for e in reader.get_logs_for_run(run_id)}
        assert messages == {f"{n} {i}" for n in ("a", "b") for i in range(EVENTS_PER_WRITER)}


# -- batches: a run's planned events (and a partitioned output's materialisations) ----------------

DOCUMENTS = [f"doc-{i:03d}.md" for i in range(40)]
ASSETS = ("raw_documents", "sections", "chunks")


def _dagster_entry(run_id: str, event: DagsterEvent, at: float) -> EventLogEntry:
    return EventLogEntry(
        error_info=None,
        level=logging.DEBUG,
        user_message="",
        run_id=run_id,
        timestamp=at,
        step_key=event.step_key,
        job_name=event.job_name,
        dagster_event=event,
    )


def _planned_batch(run_id: str) -> list[EventLogEntry]:
    """What a run's launch sends as one batch: a planned event per document and asset, and one
    per check (Dagster sorts them by asset key)."""
    events = []
    at = time.time()
    for asset in ASSETS:
        for key in DOCUMENTS:
            planned = DagsterEvent(
                event_type_value=DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value,
                job_name="ingest_documents",
                event_specific_data=AssetMaterializationPlannedData(dg.AssetKey(asset), key),
                step_key=asset,
            )
            events.append(_dagster_entry(run_id, planned, at))
            at += 0.001
        check = DagsterEvent(
            event_type_value=DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED.value,
            job_name="ingest_documents",
            event_specific_data=AssetCheckEvaluationPlanned(
                asset_key=dg.AssetKey(asset), check_name=f"{asset}_ok"
            ),
            step_key=asset,
        )
        events.append(_dagster_entry(run_id, check, at))
        at += 0.001
    return events


def _materialization_batch(run_id: str) -> list[EventLogEntry]:
    """A partitioned output's materialisations (the other batch Dagster sends), with tags."""
    events = []
    at = time.time()
    for key in DOCUMENTS[:10]:
        made = DagsterEvent(
            event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value,
            job_name="ingest_documents",
            event_specific_data=StepMaterializationData(
                dg.AssetMaterialization("chunks", partition=key, tags={"agrag/chunker": "abc"})
            ),
            step_key="chunks",
        )
        events.append(_dagster_entry(run_id, made, at))
        at += 0.001
    return events


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table of a SQLite file, but the times the database stamps itself."""
    stamped = {"create_timestamp", "update_timestamp", "updated_timestamp", "migration_completed"}
    found = {}
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in sorted(tables):
            columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            kept = ", ".join(f'"{c}"' for c in columns if c not in stamped)
            found[table] = db.execute(f'SELECT {kept} FROM "{table}" ORDER BY rowid').fetchall()
    return found


def _assert_same_rows(ours_dir: Path, theirs_dir: Path, run_id: str) -> None:
    """Every row of the index shard and of the run's file equal in both storages' folders."""
    for name in ("index.db", f"{run_id}.db"):
        ours, theirs = _rows(ours_dir / name), _rows(theirs_dir / name)
        assert ours.keys() == theirs.keys()
        for table in ours:
            assert ours[table] == theirs[table], (name, table)


def test_a_batch_is_stored_with_one_transaction_per_file_as_store_event_stores_each(
    tmp_path: Path,
) -> None:
    """A run's planned events (120 here, one per document and asset, and 3 checks) and a
    batch of materialisations leave exactly the rows ``store_event`` leaves, one event at a
    time, in the run's file and the index shard: with a transaction per file (and one per
    check, as Dagster writes a check's rows), not two per event."""
    run_id = str(uuid.uuid4())
    planned, made = _planned_batch(run_id), _materialization_batch(run_id)
    one_by_one = KeptEngineSqliteEventLogStorage(str(tmp_path / "one_by_one"))
    batched = KeptEngineSqliteEventLogStorage(str(tmp_path / "batched"))
    commits: list[object] = []

    def count(conn) -> None:  # type: ignore[no-untyped-def]
        commits.append(conn)

    try:
        exists = _entry(run_id, "the run's file and the index exist")
        one_by_one.store_event(exists)
        for entry in [*planned, *made]:
            one_by_one.store_event(entry)
        batched.store_event(exists)
        event.listen(Engine, "commit", count)
        try:
            batched.store_event_batch(planned)
            batched.store_event_batch(made)
        finally:
            event.remove(Engine, "commit", count)
    finally:
        one_by_one.dispose()
        batched.dispose()
    assert len(commits) == 2 + 2, len(commits)  # one per file and batch; the old code: 269
    _assert_same_rows(tmp_path / "batched", tmp_path / "one_by_one", run_id)


def _store_batches(base_dir: str, run_ids: list[str], start: object) -> None:
    storage = KeptEngineSqliteEventLogStorage(base_dir)
    start.wait()  # type: ignore[attr-defined]
    for run_id in run_ids:
        storage.store_event_batch(_planned_batch(run_id))
        storage.store_event(_entry(run_id, "between the batches"))
        storage.store_event_batch(_materialization_batch(run_id))
        planned_checks, evaluations = _check_evaluations(run_id)
        storage.store_event_batch(planned_checks)
        storage.store_event_batch(evaluations)
    storage.dispose()


@pytest.mark.slow  # two fresh interpreters import Dagster: 15-30 s on the shared machine
def test_two_processes_storing_batches_at_once_lose_nothing(tmp_path: Path) -> None:
    """Two real processes (the daemon launching runs, run workers) store batches of their runs
    (planned events, materialisations, planned checks, check evaluations) into the same index
    shard at the same moment: every event is there once, in its run's file and (asset and check
    events) in the index, every asset's entry names a run, and every evaluation's check
    execution row holds its result."""
    base_dir = str(tmp_path / "history")
    first = KeptEngineSqliteEventLogStorage(base_dir)
    first.store_event(_entry(str(uuid.uuid4()), "an earlier run"))
    first.dispose()
    context = multiprocessing.get_context("spawn")
    runs = {name: [str(uuid.uuid4()) for _ in range(3)] for name in ("a", "b")}
    start = context.Barrier(2)
    writers = [
        context.Process(target=_store_batches, args=(base_dir, run_ids, start))
        for run_ids in runs.values()
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=180)
    assert [w.exitcode for w in writers] == [0, 0]
    planned, made = len(_planned_batch("x")), len(_materialization_batch("x"))
    checks = sum(len(batch) for batch in _check_evaluations("x"))
    all_runs = [run_id for run_ids in runs.values() for run_id in run_ids]
    reader = SqliteEventLogStorage(base_dir)
    for run_id in all_runs:
        assert len(reader.get_logs_for_run(run_id)) == planned + 1 + made + checks
    with sqlite3.connect(Path(base_dir) / "index.db") as db:
        mirrored = dict(
            db.execute("SELECT run_id, count(*) FROM event_logs GROUP BY run_id").fetchall()
        )
        assert {run_id: mirrored.get(run_id) for run_id in all_runs} == dict.fromkeys(
            all_runs, planned + made + checks
        )
        last_runs = dict(db.execute("SELECT asset_key, last_run_id FROM asset_keys").fetchall())
        statuses = db.execute(
            "SELECT execution_status, count(*) FROM asset_check_executions GROUP BY 1"
        ).fetchall()
    assert set(last_runs) == {dg.AssetKey(a).to_string() for a in ASSETS}
    assert set(last_runs.values()) <= set(all_runs)
    # Per run: 3 checks planned for the whole asset, never evaluated; 13 planned and evaluated
    # (12 of partitions, 1 of the whole asset); 1 evaluated that nothing planned.
    by_status = dict(statuses)
    assert by_status.pop("PLANNED") == len(ASSETS) * len(all_runs)
    assert sum(by_status.values()) == (12 + 1 + 1) * len(all_runs)


def test_the_ui_reads_each_documents_check_result_from_the_shipped_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run on the shipped instance (its events stored by our batching storage):
    what the UI reads shows each document's result of each check, current for its latest
    materialisation: the check's partitions tab (``get_asset_check_state``), its executions
    per partition (``get_asset_check_execution_history``), and the latest evaluation."""
    from dagster._core.storage.asset_check_execution_record import (
        AssetCheckExecutionRecordStatus,
    )
    from dagster._core.storage.event_log.base import PartitionKeyFilter
    from dagster_support import sections_of_a_good_and_a_mojibake_text, shipped_instance

    from agrag_pipeline.defs.partitions import documents_partitions

    with shipped_instance(tmp_path, monkeypatch) as instance:
        assert isinstance(instance.event_log_storage, KeptEngineSqliteEventLogStorage)
        result, keys = sections_of_a_good_and_a_mojibake_text(tmp_path, instance)
        assert result.success
        storage = instance.event_log_storage
        spans = dg.AssetCheckKey(dg.AssetKey("sections"), "section_spans_reproduce_text")
        quality = dg.AssetCheckKey(dg.AssetKey("sections"), "reading_quality")
        expected = {
            (spans, "faktura.txt"): True,
            (spans, "mojibake.txt"): True,
            (quality, "faktura.txt"): True,
            (quality, "mojibake.txt"): False,
        }
        latest = storage.get_latest_storage_id_by_partition(
            dg.AssetKey("sections"), dg.DagsterEventType.ASSET_MATERIALIZATION, set(keys)
        )
        # The check's partitions tab: every document under the status of its evaluation.
        with dg.partition_loading_context(dynamic_partitions_store=instance):
            states = storage.get_asset_check_state(
                [(spans, documents_partitions), (quality, documents_partitions)]
            )
            tabs = {
                check_key: {
                    status.value: set(subset.value.get_partition_keys())
                    for status, subset in states[check_key].subsets.items()
                    if not subset.is_empty
                }
                for check_key in (spans, quality)
            }
        assert tabs == {
            spans: {"SUCCEEDED": {"faktura.txt", "mojibake.txt"}},
            quality: {"SUCCEEDED": {"faktura.txt"}, "FAILED": {"mojibake.txt"}},
        }
        # Each document's execution: the run's, with its evaluation, targeting the latest
        # materialisation of the document.
        for (check_key, key), passed in expected.items():
            [record] = storage.get_asset_check_execution_history(
                check_key, limit=10, partition_filter=PartitionKeyFilter(key=key)
            )
            status = record.status
            assert status == (
                AssetCheckExecutionRecordStatus.SUCCEEDED
                if passed
                else AssetCheckExecutionRecordStatus.FAILED
            )
            assert record.run_id == result.run_id and record.partition == key
            evaluation = record.evaluation
            assert evaluation is not None and evaluation.passed is passed
            assert evaluation.partition == key
            target = evaluation.target_materialization_data
            assert target is not None and target.storage_id == latest[key]
        warned = storage.get_asset_check_execution_history(
            quality, limit=1, partition_filter=PartitionKeyFilter(key="mojibake.txt")
        )[0].evaluation
        assert warned is not None and warned.severity == dg.AssetCheckSeverity.WARN
        assert "wrong code page" in (warned.description or "")
        # The check's page: its latest evaluation, as the instance reads it.
        for check_key in (spans, quality):
            record = instance.get_latest_asset_check_evaluation_record(check_key)
            assert record is not None and record.run_id == result.run_id
            assert record.status != AssetCheckExecutionRecordStatus.PLANNED


# -- batches of check evaluations (our asset steps send them: defs/event_batches.py) ----------


def _check_evaluations(run_id: str) -> tuple[list[EventLogEntry], list[EventLogEntry]]:
    """A run's planned checks (per partition, as a batched run plans them, and one of the whole
    asset) and a step's evaluations of them: passed, failed, warned, with and without a target
    materialisation, with and without metadata, one of the whole asset and one of a check
    nothing planned (Dagster inserts its row)."""
    from dagster._core.definitions.asset_checks.asset_check_evaluation import (
        AssetCheckEvaluationTargetMaterializationData,
    )

    keys = DOCUMENTS[:6]
    subset = dg.StaticPartitionsDefinition(DOCUMENTS).subset_with_partition_keys(keys)
    at = time.time()
    planned = []
    for name, partitions in (("spans_ok", subset), ("quality_ok", subset), ("whole_ok", None)):
        event = DagsterEvent(
            event_type_value=DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED.value,
            job_name="ingest_documents",
            event_specific_data=AssetCheckEvaluationPlanned(
                asset_key=dg.AssetKey("sections"), check_name=name, partitions_subset=partitions
            ),
            step_key="sections",
        )
        planned.append(_dagster_entry(run_id, event, at))
        at += 0.001

    def evaluation(name: str, key: str | None, passed: bool, n: int) -> EventLogEntry:
        evaluated = dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey("sections"),
            check_name=name,
            passed=passed,
            partition=key,
            description=None if n % 3 == 0 else f"found {n}",
            metadata={"problems": dg.MetadataValue.json([n])} if n % 2 else {},
            severity=dg.AssetCheckSeverity.WARN if n % 4 == 1 else dg.AssetCheckSeverity.ERROR,
            target_materialization_data=(
                AssetCheckEvaluationTargetMaterializationData(
                    storage_id=100 + n, run_id=run_id, timestamp=at
                )
                if n % 5
                else None
            ),
        )
        event = DagsterEvent(
            event_type_value=DagsterEventType.ASSET_CHECK_EVALUATION.value,
            job_name="ingest_documents",
            event_specific_data=evaluated,
            step_key="sections",
        )
        return _dagster_entry(run_id, event, at + n * 0.001)

    evaluations = [
        evaluation(name, key, passed=(i + j) % 3 != 0, n=2 * i + j)
        for i, key in enumerate(keys)
        for j, name in enumerate(("spans_ok", "quality_ok"))
    ]
    evaluations.append(evaluation("whole_ok", None, passed=True, n=50))
    evaluations.append(evaluation("never_planned", keys[0], passed=False, n=51))
    return planned, evaluations


def test_a_batch_of_check_evaluations_leaves_the_rows_store_event_leaves(tmp_path: Path) -> None:
    """A step's evaluations stored as one batch (one transaction per file, each serialised
    once) leave exactly the rows Dagster's own ``store_event`` leaves storing them one by one:
    the run's file, the index's event rows, and each check execution row updated from planned
    to its result (or inserted, for a check nothing planned)."""
    from agrag_pipeline.defs.instance_storage import stores_check_evaluation_batches

    run_id = str(uuid.uuid4())
    planned, evaluations = _check_evaluations(run_id)
    dagsters = SqliteEventLogStorage(str(tmp_path / "dagster"))
    batched = KeptEngineSqliteEventLogStorage(str(tmp_path / "batched"))
    assert stores_check_evaluation_batches(batched)
    assert not stores_check_evaluation_batches(dagsters)
    commits: list[object] = []

    def count(conn) -> None:  # type: ignore[no-untyped-def]
        commits.append(conn)

    begins = _entry(run_id, "the run begins")
    try:
        for entry in [begins, *planned, *evaluations]:
            dagsters.store_event(entry)
        batched.store_event(begins)
        batched.store_event_batch(planned)  # as a run's launch sends them
        event.listen(Engine, "commit", count)
        try:
            batched.store_event_batch(evaluations)
        finally:
            event.remove(Engine, "commit", count)
    finally:
        dagsters.dispose()
        batched.dispose()
    assert len(commits) == 2, len(commits)  # Dagster's: three per evaluation
    _assert_same_rows(tmp_path / "batched", tmp_path / "dagster", run_id)
    with sqlite3.connect(tmp_path / "batched" / "index.db") as db:
        statuses = [r[0] for r in db.execute("SELECT execution_status FROM asset_check_executions")]
    assert len(statuses) == 12 + 1 + 1
    assert set(statuses) == {"SUCCEEDED", "FAILED"}  # none left planned


def _stored_step_events(
    instance: dg.DagsterInstance, run_id: str
) -> list[tuple[str, str | None, str | None, str]]:
    """(type, asset, partition, message) of a run's materialisations and evaluations, as stored."""
    kinds = {"ASSET_MATERIALIZATION", "ASSET_CHECK_EVALUATION"}
    found = []
    for entry in instance.all_logs(run_id):
        dagster_event = entry.dagster_event
        if dagster_event is None or dagster_event.event_type_value not in kinds:
            continue
        asset = dagster_event.asset_key.to_user_string() if dagster_event.asset_key else None
        kind = dagster_event.event_type_value
        found.append((kind, asset, dagster_event.partition, entry.message))
    return found


def _spy_on_stores(monkeypatch: pytest.MonkeyPatch) -> tuple[list[list[str]], list[str]]:
    """The event types of every batch the shipped storage is handed, and of every event it
    is handed alone, recorded as they arrive (the storage then stores them as before)."""
    batches: list[list[str]] = []
    alone: list[str] = []
    original_batch = KeptEngineSqliteEventLogStorage.store_event_batch
    original_one = KeptEngineSqliteEventLogStorage.store_event

    def store_event_batch(self, events):  # type: ignore[no-untyped-def]
        batches.append([e.dagster_event_type.value for e in events])
        return original_batch(self, events)

    def store_event(self, event):  # type: ignore[no-untyped-def]
        if event.dagster_event_type is not None:
            alone.append(event.dagster_event_type.value)
        return original_one(self, event)

    monkeypatch.setattr(KeptEngineSqliteEventLogStorage, "store_event_batch", store_event_batch)
    monkeypatch.setattr(KeptEngineSqliteEventLogStorage, "store_event", store_event)
    return batches, alone


def test_a_step_stores_its_documents_materialisations_and_evaluations_in_one_batch_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run on the shipped instance: each step's materialisations reach the storage as
    one batch, and its check evaluations as another, none of them alone; and the run's stored
    events are those a stock Dagster instance stores one by one for the same documents (same
    order, assets, partitions and messages), with the same check results."""
    from dagster_support import (
        check_evaluations,
        sections_of_a_good_and_a_mojibake_text,
        shipped_instance,
    )

    batches, alone = _spy_on_stores(monkeypatch)
    (tmp_path / "shipped").mkdir()
    with shipped_instance(tmp_path / "shipped", monkeypatch) as instance:
        result, _ = sections_of_a_good_and_a_mojibake_text(tmp_path / "shipped", instance)
        assert result.success
        ours = _stored_step_events(instance, result.run_id)
    made, evaluated = ["ASSET_MATERIALIZATION"] * 2, ["ASSET_CHECK_EVALUATION"] * 4
    assert batches.count(made) == 2  # raw_documents, sections: one batch each
    assert batches.count(evaluated) == 1  # sections' two checks of the two documents
    assert "ASSET_MATERIALIZATION" not in alone and "ASSET_CHECK_EVALUATION" not in alone

    (tmp_path / "stock").mkdir()
    with dg.instance_for_test() as stock:
        theirs_result, _ = sections_of_a_good_and_a_mojibake_text(tmp_path / "stock", stock)
        theirs = _stored_step_events(stock, theirs_result.run_id)
    assert ours == theirs
    assert check_evaluations(result) == check_evaluations(theirs_result)
    assert len(ours) == 2 * 2 + 4


def test_upstream_pointers_read_from_the_event_log_columns_equal_dagsters_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step reads its upstream's latest materialisations from the event log's columns
    and the stored JSON: the same pointers (run, storage id, exact time, data version) as
    from the records Dagster deserialises, after two runs of the same documents."""
    from dagster_support import sections_of_a_good_and_a_mojibake_text, shipped_instance

    from agrag_pipeline.defs import assets

    with shipped_instance(tmp_path, monkeypatch) as instance:
        first, keys = sections_of_a_good_and_a_mojibake_text(tmp_path, instance)
        second, _ = sections_of_a_good_and_a_mojibake_text(tmp_path, instance)
        assert first.success and second.success
        storage = instance.event_log_storage
        for asset in ("raw_documents", "sections"):
            ids = storage.get_latest_storage_id_by_partition(
                dg.AssetKey(asset), dg.DagsterEventType.ASSET_MATERIALIZATION, set(keys)
            )
            ours = assets.latest_materializations(instance, asset, keys)
            theirs = assets._pointers_from_records(instance, asset, list(ids.values()))
            assert ours == theirs
            assert set(ours) == set(keys)
            assert {p.run_id for p in ours.values()} == {second.run_id}
            assert all(p.data_version for p in ours.values())


def test_a_batch_the_index_cannot_take_leaves_nothing_half_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the index shard's write lock past the busy timeout (a real lock,
    taken by a second SQLite connection): the batch fails naming the lock and leaves none of
    its rows in the run's file either, so Dagster's fallback (each event stored alone) or a
    later try stores every event exactly once; a later try stores the rows Dagster's own
    ``store_event`` stores."""
    from agrag_pipeline.defs import instance_storage

    monkeypatch.setattr(instance_storage, "SQLITE_BUSY_TIMEOUT_SECONDS", 0.2)
    run_id = str(uuid.uuid4())
    planned, evaluations = _check_evaluations(run_id)
    begins = _entry(run_id, "the run begins")
    dagsters = SqliteEventLogStorage(str(tmp_path / "dagster"))
    ours = KeptEngineSqliteEventLogStorage(str(tmp_path / "ours"))
    try:
        for entry in [begins, *planned, *evaluations]:
            dagsters.store_event(entry)
        ours.store_event(begins)
        ours.store_event_batch(planned)
        holder = sqlite3.connect(tmp_path / "ours" / "index.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the write lock, held
        try:
            with pytest.raises(Exception, match="locked"):
                ours.store_event_batch(evaluations)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        with sqlite3.connect(tmp_path / "ours" / f"{run_id}.db") as db:
            kept = db.execute(
                "SELECT count(*) FROM event_logs WHERE dagster_event_type = ?",
                ("ASSET_CHECK_EVALUATION",),
            ).fetchone()[0]
        assert kept == 0
        ours.store_event_batch(evaluations)
    finally:
        dagsters.dispose()
        ours.dispose()
    _assert_same_rows(tmp_path / "ours", tmp_path / "dagster", run_id)


def test_a_step_logs_its_events_in_batches_of_bounded_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step never holds more than ``MAX_EVENTS_PER_BATCH`` events before logging them (a run
    of every document, as ``agrag materialize`` makes, would otherwise keep all its check
    evaluations in memory): with a bound of 3, the sections step's 4 evaluations go as a batch
    of 3 and one more, and every evaluation is stored with its result."""
    from dagster_support import (
        check_evaluations,
        sections_of_a_good_and_a_mojibake_text,
        shipped_instance,
    )

    from agrag_pipeline.defs import event_batches

    monkeypatch.setattr(event_batches, "MAX_EVENTS_PER_BATCH", 3)
    batches, alone = _spy_on_stores(monkeypatch)
    with shipped_instance(tmp_path, monkeypatch) as instance:
        result, _ = sections_of_a_good_and_a_mojibake_text(tmp_path, instance)
        assert result.success
        stored = _stored_step_events(instance, result.run_id)
    evaluated = "ASSET_CHECK_EVALUATION"
    assert [len(b) for b in batches if b[0] == evaluated] == [3]
    assert alone.count(evaluated) == 1  # the fourth, a batch of one, stored alone by Dagster
    assert sum(1 for kind, *_ in stored if kind == "ASSET_CHECK_EVALUATION") == 4
    assert len(check_evaluations(result)) == 4


def _counting_script_directories(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every alembic migration-script directory opened from now on (each parses every script)."""
    opened: list[object] = []
    from_config = ScriptDirectory.from_config.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ScriptDirectory], config: object, *args: object) -> ScriptDirectory:
        opened.append(config)
        return from_config(cls, config, *args)  # type: ignore[no-any-return]

    monkeypatch.setattr(ScriptDirectory, "from_config", classmethod(counting))
    return opened


def test_an_instance_already_set_up_opens_without_reading_the_migration_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run worker forked from a loaded code location does: the forkserver read the
    schema's head once (``warm_process``), and the instance's files were set up before."""
    base = str(tmp_path / "home")
    first = KeptEngineSqliteStorage(base)  # sets the files up, as Dagster does
    first.event_log_storage.store_event(_entry(str(uuid.uuid4()), "an earlier run"))
    first.dispose()
    warm_process()
    opened = _counting_script_directories(monkeypatch)
    storage = KeptEngineSqliteStorage(base)
    try:
        run_id = str(uuid.uuid4())
        storage.event_log_storage.store_event(_entry(run_id, "stored after reopening"))
        assert storage.run_storage.get_runs() == []
        assert list(storage.schedule_storage.all_instigator_state()) == []
    finally:
        storage.dispose()
    assert opened == []
    reader = SqliteEventLogStorage(str(Path(base) / "history" / "runs"))
    assert [e.user_message for e in reader.get_logs_for_run(run_id)] == ["stored after reopening"]


def test_database_files_not_set_up_are_set_up_as_dagster_sets_them_up(tmp_path: Path) -> None:
    """An empty file (a crash between its creation and its tables) is not taken for one set up."""
    base = tmp_path / "ours"
    for folder, name in (("history", "runs.db"), ("schedules", "schedules.db")):
        (base / folder).mkdir(parents=True)
        (base / folder / name).touch()
    KeptEngineSqliteStorage(str(base)).dispose()
    DagsterSqliteStorage.from_local(str(tmp_path / "stock")).dispose()
    for folder, name in (("history", "runs.db"), ("schedules", "schedules.db")):
        ours, stock = _schema(base / folder / name), _schema(tmp_path / "stock" / folder / name)
        assert ours == stock and ours[1], name
