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

import pytest
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from sqlalchemy import event
from sqlalchemy.engine import Engine

from agrag_pipeline.defs.instance_storage import KeptEngineSqliteEventLogStorage


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
