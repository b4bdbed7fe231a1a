"""Dagster's SQLite instance storage, keeping one SQLAlchemy engine per database file.

Why: Dagster 1.13's SQLite storages build a new engine (``create_engine(..., NullPool)``) for
every storage call, and dispose of it after; measured here, that is most of the 8-12 ms each
event costs (it is CPU, not fsync). These subclasses change only that: one engine per file,
kept for the life of the process, with SQLAlchemy's default pool for file databases. Tables,
migrations, sharding (one file per run plus the index) and locking are Dagster's own, so an
instance written by this class is an ordinary SQLite instance and the other way round.

Run shards: SQLite keeps each run's events in a file of its own (``<run_id>.db``), and Dagster
creates every new one as it creates a database: all of the event log's tables and indexes, one
DDL statement (and one fsync) at a time, then an alembic check and stamp. That was most of a
small run's fixed cost (about 0.35-0.6 s of a one-document run on the shared machine). Here the
first run shard of a process is made that way into a template file beside them
(``.run-shard-template-<alembic head>.sqlite``, not a ``*.db``, so Dagster never takes it for a
run), and every new run shard is a copy of it: the same bytes Dagster would write, made atomic
(written, fsynced, then linked under its name, so a reader sees no file or the whole one). A
shard stamped at the current alembic head is not checked again; any other goes through
Dagster's own ``_initdb``. ``run_shard_template: false`` makes every run shard Dagster's way.

Planned events: one "materialisation planned" event per partition, Dagster's default, because
a partition's "Failed" status is computed from it (a failed run that planned the partition and
did not materialise it: ``defs/assets.py``, "How failures are told"). ``planned_event_per_partition:
false`` emits one per asset per run instead (Dagster's
``supports_partition_subset_in_asset_materialization_planned_events``, also reachable as
``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS``): fewer events at launch, but then no
partition is ever shown failed.

Batches: Dagster stores a run's planned events (one per document and asset) as one batch when
``DAGSTER_EVENT_BATCH_SIZE`` is above 0, but its SQLite storage then still writes them one by
one, two transactions each. ``store_event_batch`` here writes a batch with one transaction per
file, the same rows; the storage sets ``DAGSTER_EVENT_BATCH_SIZE`` in its process unless the
environment sets it. Our asset steps send their documents' materialisations as one batch, and
their check evaluations as another (``stores_check_evaluation_batches``: Dagster's own
storages take no batch of evaluations), so a run of 50 documents stores a step's 100-150
events in two transactions instead of 300-450, each event serialised once (Dagster serialised
an evaluation twice: its event row, then its check execution row).

Configured in ``dagster.yaml``::

    storage:
      custom:
        module: agrag_pipeline.defs.instance_storage
        class: KeptEngineSqliteStorage
        config:
          base_dir: {env: DAGSTER_HOME}   # history/ and schedules/ under it, as by default
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from alembic.script import ScriptDirectory
from dagster import (
    Bool,
    DagsterEventType,
    DagsterInvariantViolationError,
    EventLogEntry,
    Field,
    StringSource,
)
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from agrag_pipeline.defs.dagster_internals import (
    ASSET_CHECK_EVENTS,
    ASSET_EVENTS,
    BATCH_WRITABLE_EVENTS,
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    AssetCheckExecutionRecordStatus,
    AssetCheckExecutionsTable,
    ConfigurableClassData,
    DagsterSqliteStorage,
    SqlEventLogStorageTable,
    SqliteEventLogStorage,
    SqliteRunStorage,
    SqliteScheduleStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
    create_db_conn_string,
    event_log_alembic_config,
)

#: Dagster's switch for storing batches of events at once, and the batch size set here: a run's
#: planned events are one per document and asset (300 for a whole-graph run of 50 documents).
EVENT_BATCH_SIZE_VARIABLE = "DAGSTER_EVENT_BATCH_SIZE"
EVENT_BATCH_SIZE = 1000

#: Engines kept per storage: the index and the most recent run shards (the webserver reads many).
MAX_ENGINES = 16


def _wal_without_fsync_per_commit(dbapi_connection: Any, _record: Any) -> None:
    # Dagster's files are in WAL mode; NORMAL syncs at checkpoints, not on every commit. A crash
    # of a process loses nothing; a power cut may lose the last events, never corrupts the file.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class _Engines:
    """A small LRU of engines by connection string, safe to share between threads."""

    def __init__(self, limit: int = MAX_ENGINES) -> None:
        self._limit = limit
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def get(self, conn_string: str) -> Engine:
        with self._lock:
            if self._pid != os.getpid():  # a forked child must not share its parent's sockets
                self._engines.clear()
                self._pid = os.getpid()
            engine = self._engines.pop(conn_string, None)
            if engine is None:
                engine = create_engine(
                    conn_string, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
                )
                event.listen(engine, "connect", _wal_without_fsync_per_commit)
            self._engines[conn_string] = engine
            while len(self._engines) > self._limit:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
            return engine

    def dispose(self) -> None:
        with self._lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


class PlannedEventPerRun:
    """One "materialisation planned" event per partition, or per asset per run when
    ``_planned_event_per_partition`` is false (see the module docstring); shared with
    PostgreSQL."""

    _planned_event_per_partition = True

    @property
    def supports_partition_subset_in_asset_materialization_planned_events(self) -> bool:
        return not self._planned_event_per_partition


class KeptEngineSqliteEventLogStorage(PlannedEventPerRun, SqliteEventLogStorage):
    def __init__(
        self,
        base_dir: str,
        inst_data: ConfigurableClassData | None = None,
        planned_event_per_partition: bool = True,
        run_shard_template: bool = True,
    ) -> None:
        # Dagster sends a run's planned events (and a partitioned output's materialisations)
        # as one batch only when this is above 0 in the process that stores them (the daemon,
        # a run worker); its default is 0, so the batch store below would never be used. A
        # value set in the environment is kept.
        os.environ.setdefault(EVENT_BATCH_SIZE_VARIABLE, str(EVENT_BATCH_SIZE))
        self._engines = _Engines()
        self._run_shard_template = run_shard_template
        self._tables: set[str] = set()
        self._asset_key_index_cols = False
        self._planned_event_per_partition = planned_event_per_partition
        super().__init__(base_dir, inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engines.get(self.conn_string_for_shard(shard))
            if shard not in self._initialized_dbs:
                if shard == INDEX_SHARD_NAME:
                    if _stamped_revision(self.path_for_shard(shard)) is None:
                        self._initdb(engine)
                elif not self._run_shard_template or not self._run_shard_ready(shard):
                    self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _run_shard_ready(self, shard: str) -> bool:
        """Whether the run shard is there at the current schema, copied from the template if
        it was missing; False sends it through Dagster's ``_initdb``."""
        path = self.path_for_shard(shard)
        if not os.path.exists(path):
            try:
                _link_copy(self._shard_template(), path)
            except (OSError, sqlite3.Error, SQLAlchemyError):
                return False  # another process made it meanwhile, or no template: Dagster's way
        return _stamped_revision(path) == _alembic_head()

    def _shard_template(self) -> str:
        """The template run shard for this schema, made once (by Dagster's own ``_initdb``)."""
        template = os.path.join(self._base_dir, f".run-shard-template-{_alembic_head()}.sqlite")
        if not os.path.exists(template):
            temporary = f"{template}.{os.getpid()}.{threading.get_ident()}.tmp"
            engine = create_engine(
                f"sqlite:///{temporary}", connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
            )
            try:
                self._initdb(engine)
                with engine.connect() as conn:  # every page in the main file, none in the WAL
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                engine.dispose()
                _fsync(temporary)
                os.replace(temporary, template)
            finally:
                engine.dispose()
                for leftover in (temporary, f"{temporary}-wal", f"{temporary}-shm"):
                    if os.path.exists(leftover):
                        os.unlink(leftover)
        return template

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Store a batch as ``store_event`` stores each of its events, with one transaction per
        file instead of two or three per event: the run's file gets every row in one insert,
        the index shard every asset and check event's row (with its tags), each asset's entry
        from the last event of each type (the row ``store_event`` would leave), and each
        check's execution rows (planned, then updated to its result).

        What comes in batches (``DAGSTER_EVENT_BATCH_SIZE`` > 0, set below): a run's planned
        events at its launch (one per document and asset, one per check), the materialisations
        of a partitioned output, and our steps' materialisations and check evaluations
        (``event_batches.py``); on SQLite each used to cost two transactions and two
        statements compiled one at a time. A batch of anything else, or of more than one run,
        goes event by event, as Dagster's base class does.
        """
        if not _batchable(events):
            for event in events:
                self.store_event(event)
            return
        rows = [self._event_to_row(event) for event in events]
        table = SqlEventLogStorageTable
        with self.run_connection(events[0].run_id) as conn:
            stored = conn.execute(
                table.insert().returning(table.c.id, sort_by_parameter_order=True), rows
            )
            run_file_ids = [int(row[0]) for row in stored]
        try:
            self._mirror_batch(events, rows)
        except Exception:
            # Nothing of a batch stays half-stored: its rows leave the run's file again, so
            # Dagster's fallback (each event through ``store_event``) stores each event once.
            with self.run_connection(events[0].run_id) as conn:
                conn.execute(table.delete().where(table.c.id.in_(run_file_ids)))
            raise

    def _mirror_batch(self, events: Sequence[EventLogEntry], rows: list[dict[str, Any]]) -> None:
        """The index shard's part of ``store_event_batch``, in one transaction."""
        table = SqlEventLogStorageTable
        mirrored = [
            i
            for i, event in enumerate(events)
            if (event.dagster_event_type in ASSET_EVENTS and event.get_dagster_event().asset_key)
            or event.dagster_event_type in ASSET_CHECK_EVENTS
        ]
        if not mirrored:
            return
        with self.index_transaction() as conn:
            inserted = conn.execute(
                table.insert().returning(table.c.id, sort_by_parameter_order=True),
                [rows[i] for i in mirrored],
            )
            ids = dict(zip(mirrored, (int(row[0]) for row in inserted), strict=True))
            for i in mirrored:  # a check's execution rows, in the same transaction
                kind = events[i].dagster_event_type
                record = _CHECK_ROWS.get(kind) if kind is not None else None
                if record is not None:
                    record(conn, events[i], ids[i], rows[i])
            assets = [i for i in mirrored if events[i].dagster_event_type in ASSET_EVENTS]
            self._store_asset_event_tags(
                conn, [events[i] for i in assets], [ids[i] for i in assets]
            )
            # Each column of an asset's entry ends as the last event that sets it left it: the
            # last event of each type, applied in order, leaves the same row as every event.
            last = {
                (events[i].get_dagster_event().asset_key, events[i].dagster_event_type): i
                for i in assets
            }
            for i in sorted(last.values()):
                self._store_asset_event(conn, events[i], ids[i])

    def _has_asset_key_index_cols_on_connection(self, conn: Connection) -> bool:
        # Asked (a PRAGMA table_info) for every asset event; a column, once there, stays.
        if not self._asset_key_index_cols:
            self._asset_key_index_cols = super()._has_asset_key_index_cols_on_connection(conn)
        return self._asset_key_index_cols

    def has_table(self, table_name: str) -> bool:
        # Asked before most queries (about 2 per event); a table, once there, stays.
        if table_name in self._tables:
            return True
        engine = self._engines.get(self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as conn:
            found = bool(engine.dialect.has_table(conn, table_name))
        if found:
            self._tables.add(table_name)
        return found

    def dispose(self) -> None:
        super().dispose()
        self._engines.dispose()


def stores_check_evaluation_batches(storage: object) -> bool:
    """Whether ``storage``'s ``store_event_batch`` takes a batch of check evaluations: ours
    does; Dagster's own take only ``BATCH_WRITABLE_EVENTS`` (PostgreSQL's refuses any other
    batch, and Dagster then stores it event by event after printing the error)."""
    return isinstance(storage, KeptEngineSqliteEventLogStorage)


#: What ``store_event_batch`` writes at once: the types Dagster sends in batches, and the check
#: evaluations our asset steps send (``stores_check_evaluation_batches``).
_BATCHED_TYPES = frozenset(BATCH_WRITABLE_EVENTS) | {DagsterEventType.ASSET_CHECK_EVALUATION}


def _batchable(events: Sequence[EventLogEntry]) -> bool:
    """Events of one run (a run id: an evaluation reported outside a run is stored as Dagster
    stores it), each of a type written at once (none of them a run's status event, which
    ``store_event`` also mirrors and which no batch carries)."""
    return bool(events) and all(
        event.is_dagster_event
        and event.dagster_event_type in _BATCHED_TYPES
        and event.run_id
        and event.run_id == events[0].run_id
        for event in events
    )


def _record_planned_check(
    conn: Connection, event: EventLogEntry, event_id: int, row: dict[str, Any]
) -> None:
    """A planned check's execution rows, one per partition it plans, as Dagster's
    ``_store_asset_check_evaluation_planned`` writes them, in the caller's transaction; the
    event serialised once for all of them (Dagster serialised it again for each partition's
    row: 50 times per check in a run of 50 documents)."""
    planned = event.get_dagster_event().asset_check_planned_data
    subset = planned.partitions_subset
    partitions: list[str | None] = list(subset.get_partition_keys()) if subset else [None]
    conn.execute(
        AssetCheckExecutionsTable.insert().values(
            [
                {
                    "asset_key": planned.asset_key.to_string(),
                    "check_name": planned.check_name,
                    "partition": partition,
                    "run_id": event.run_id,
                    "execution_status": AssetCheckExecutionRecordStatus.PLANNED.value,
                    "evaluation_event": row["event"],
                    "evaluation_event_timestamp": row["timestamp"],
                    "evaluation_event_storage_id": event_id,
                }
                for partition in partitions
            ]
        )
    )


def _record_check_evaluation(
    conn: Connection, event: EventLogEntry, event_id: int, row: dict[str, Any]
) -> None:
    """The check execution row of an evaluation in a run, as Dagster's
    ``_update_asset_check_evaluation`` writes it (the row its planned event made, else a new
    one), in the caller's transaction, with the event as serialised for its event row."""
    evaluation = event.get_dagster_event().asset_check_evaluation_data
    executions = AssetCheckExecutionsTable
    target = evaluation.target_materialization_data
    values = {
        "execution_status": (
            AssetCheckExecutionRecordStatus.SUCCEEDED.value
            if evaluation.passed
            else AssetCheckExecutionRecordStatus.FAILED.value
        ),
        "evaluation_event": row["event"],
        "evaluation_event_storage_id": event_id,
        "materialization_event_storage_id": target.storage_id if target else None,
        "partition": evaluation.partition,
        "evaluation_event_timestamp": row["timestamp"],
    }
    partition = executions.c.partition
    of_partition = (
        partition.is_(None) if evaluation.partition is None else partition == evaluation.partition
    )
    updated = conn.execute(
        executions.update()
        .where(
            executions.c.asset_key == evaluation.asset_key.to_string(),
            executions.c.check_name == evaluation.check_name,
            executions.c.run_id == event.run_id,
            of_partition,
        )
        .values(**values)
    ).rowcount
    if updated == 0:  # no planned row: Dagster inserts one
        conn.execute(
            executions.insert().values(
                asset_key=evaluation.asset_key.to_string(),
                check_name=evaluation.check_name,
                run_id=event.run_id,
                **values,
            )
        )
    elif updated > 1:
        raise DagsterInvariantViolationError(
            f"Updated {updated} rows for asset check evaluation {evaluation.asset_check_key} "
            "as a result of duplicate AssetCheckPlanned events."
        )


#: A check event's execution rows, written in the batch's index transaction.
_CHECK_ROWS = {
    DagsterEventType.ASSET_CHECK_EVALUATION: _record_check_evaluation,
    DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED: _record_planned_check,
}


def warm_process() -> None:
    """Read once what every opening of the shipped storage in this process needs: the event
    log schema's alembic head (30 ms: alembic parses every migration script). The run
    forkserver calls it, so that its workers inherit it."""
    _alembic_head()


@functools.cache
def _alembic_head() -> str:
    """The event log schema's alembic head revision (read once: alembic parses every script)."""
    config = event_log_alembic_config()
    return str(ScriptDirectory.from_config(config).as_revision_number("head"))


def _stamped_revision(path: str, *tables: str) -> str | None:
    """The alembic revision the SQLite file at ``path`` is stamped with, if it holds ``tables``
    too (None: no file, no revision, a table missing, or not readable).

    A file with a revision and its tables is set up: Dagster's set-up of such a file does
    nothing (it asks only whether some revision is stamped), but first parses every migration
    script to find the head, ~30 ms of each run worker's start for each of the three files it
    opens; the storages below skip it.
    """
    if not os.path.exists(path):
        return None
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS)) as db:
            row = db.execute("SELECT version_num FROM alembic_version").fetchone()
            found = {
                name
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
    except sqlite3.Error:
        return None
    return str(row[0]) if row and row[0] and found.issuperset(tables) else None


def _fsync(path: str) -> None:
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def _link_copy(source: str, target: str) -> None:
    """Copy ``source`` to ``target`` whole or not at all; FileExistsError if ``target`` is."""
    temporary = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        shutil.copyfile(source, temporary)
        _fsync(temporary)
        os.link(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


class _KeptEngine:
    """One engine kept for the storage's single SQLite file (run and schedule storage)."""

    _conn_string: str

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines = _Engines(limit=1)
        super().__init__(conn_string, inst_data)  # type: ignore[call-arg]

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engines.get(self._conn_string).connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()  # type: ignore[misc]
        self._engines.dispose()


class KeptEngineSqliteRunStorage(_KeptEngine, SqliteRunStorage):
    @classmethod
    def from_local(
        cls, base_dir: str, inst_data: ConfigurableClassData | None = None
    ) -> KeptEngineSqliteRunStorage:
        """Dagster's ``from_local``, less its set-up of a file set up (``_stamped_revision``)."""
        if _stamped_revision(os.path.join(base_dir, "runs.db"), "runs", "instance_info"):
            return cls(create_db_conn_string(base_dir, "runs"), inst_data)
        return super().from_local(base_dir, inst_data)


class KeptEngineSqliteScheduleStorage(_KeptEngine, SqliteScheduleStorage):
    @classmethod
    def from_local(
        cls, base_dir: str, inst_data: ConfigurableClassData | None = None
    ) -> SqliteScheduleStorage:
        """Dagster's ``from_local``, less its set-up of a file set up (``_stamped_revision``)."""
        if _stamped_revision(os.path.join(base_dir, "schedules.db"), "jobs"):
            return cls(create_db_conn_string(base_dir, "schedules"), inst_data)
        return super().from_local(base_dir, inst_data)


class KeptEngineSqliteStorage(DagsterSqliteStorage):
    """``storage: sqlite`` with kept engines: the same files under ``base_dir`` (DAGSTER_HOME)."""

    def __init__(
        self,
        base_dir: str,
        inst_data: ConfigurableClassData | None = None,
        planned_event_per_partition: bool = True,
        run_shard_template: bool = True,
    ) -> None:
        # Deliberately not DagsterSqliteStorage.__init__: the same folders, other classes.
        self.base_dir = base_dir
        os.makedirs(base_dir, exist_ok=True)
        # Processes opening a fresh instance at once (two run workers, the CLI beside the
        # daemon) would race to create the same tables ("table ... already exists"): one at a
        # time creates them; the others find them there.
        with open(os.path.join(base_dir, ".storage-init.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._run_storage = KeptEngineSqliteRunStorage.from_local(_runs_directory(base_dir))
            self._event_log_storage = KeptEngineSqliteEventLogStorage(
                _event_logs_directory(base_dir),
                planned_event_per_partition=planned_event_per_partition,
                run_shard_template=run_shard_template,
            )
            self._schedule_storage = KeptEngineSqliteScheduleStorage.from_local(
                _schedule_directory(base_dir)
            )
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            "base_dir": StringSource,
            "planned_event_per_partition": Field(Bool, is_required=False, default_value=True),
            "run_shard_template": Field(Bool, is_required=False, default_value=True),
        }

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: dict[str, Any]
    ) -> KeptEngineSqliteStorage:
        return cls(
            config_value["base_dir"],
            inst_data=inst_data,
            planned_event_per_partition=config_value.get("planned_event_per_partition", True),
            run_shard_template=config_value.get("run_shard_template", True),
        )
