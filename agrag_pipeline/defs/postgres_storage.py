"""Dagster's PostgreSQL instance storage with pooled connections: the shared profile's storage.

Why: dagster-postgres 1.13 builds its engines with ``NullPool``, so every storage call opens a
new database connection and closes it after (TCP, authentication, a backend process forked by
PostgreSQL). Measured here on loopback, a query that way costs 5.8 ms against 0.26 ms on a kept
connection, and a run stores several queries per event: the shared profile ran 10.8x slower
than the local SQLite default at 1,000 documents (``benchmarks.scale_bench``, BENCHMARKS.md
"Scale"). These classes change only that: a small pool per process (``pool_size``, overflow
``max_overflow``), connections checked before use (``pool_pre_ping``: a restarted server or a
dropped connection costs a reconnect, not a failed step) and recycled hourly, and a forked
child never reuses its parent's sockets. Tables, migrations, locking and the webserver's own
``optimize_for_webserver`` are dagster-postgres's, so the database is an ordinary Dagster
PostgreSQL instance either way.

As ``instance_storage.KeptEngineSqliteStorage`` does, one "materialisation planned" event per
partition (Dagster's default, which "Failed" partitions are computed from;
``planned_event_per_partition: false`` emits one per asset per run, and no partition is ever
shown failed).

A pool holds up to ``pool_size + max_overflow`` connections per process (run workers, code
server, daemon, webserver): size PostgreSQL's ``max_connections`` for that.

Configured in ``dagster.yaml`` (``deploy/dagster.yaml``)::

    storage:
      custom:
        module: agrag_pipeline.defs.postgres_storage
        class: PooledPostgresStorage
        config:
          postgres_url: {env: AGRAG_POSTGRES_URL}
"""

from __future__ import annotations

import os
import weakref
from typing import Any, cast

import sqlalchemy
from dagster import Bool, Field, IntSource
from dagster_postgres import (
    DagsterPostgresStorage,
    PostgresEventLogStorage,
    PostgresRunStorage,
    PostgresScheduleStorage,
)
from dagster_postgres.utils import (
    create_pg_engine,
    get_token_provider_from_config,
    pg_url_from_config,
)

from agrag_pipeline.defs.dagster_internals import ConfigurableClassData, pg_config
from agrag_pipeline.defs.instance_storage import PlannedEventPerRun

DEFAULT_POOL_SIZE = 2
DEFAULT_MAX_OVERFLOW = 4
#: Seconds after which a pooled connection is replaced (server-side idle limits, failovers).
POOL_RECYCLE_S = 3600

_ALL_ENGINES: weakref.WeakSet[sqlalchemy.engine.Engine] = weakref.WeakSet()


def _forget_parent_connections() -> None:
    # SQLAlchemy's advice for a forked child: drop the inherited pool without closing the
    # parent's sockets.
    for engine in list(_ALL_ENGINES):
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent_connections)


class _Pooled:
    """Replaces the storage's ``NullPool`` engine with a pooled one after Dagster built it."""

    _engine: sqlalchemy.engine.Engine
    postgres_url: str
    _token_provider: Any

    def _pool(self, pool_size: int, max_overflow: int) -> None:
        stock = self._engine
        kwargs: dict[str, Any] = {
            "isolation_level": "AUTOCOMMIT",
            "pool_size": pool_size,
            "max_overflow": max_overflow,
            "pool_pre_ping": True,
            "pool_recycle": POOL_RECYCLE_S,
        }
        options = stock.url.query.get("options")
        if options:
            kwargs["connect_args"] = {"options": options}
        self._engine = create_pg_engine(self.postgres_url, self._token_provider, **kwargs)
        _ALL_ENGINES.add(self._engine)
        stock.dispose()

    def dispose(self) -> None:
        super().dispose()  # type: ignore[misc]
        self._engine.dispose()


class PooledPostgresRunStorage(_Pooled, PostgresRunStorage):
    pass


class PooledPostgresScheduleStorage(_Pooled, PostgresScheduleStorage):
    pass


class PooledPostgresEventLogStorage(PlannedEventPerRun, _Pooled, PostgresEventLogStorage):
    pass


class PooledPostgresStorage(DagsterPostgresStorage):
    """``storage: postgres`` with pooled connections (see the module docstring)."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: Any = None,
        pool_size: int = DEFAULT_POOL_SIZE,
        max_overflow: int = DEFAULT_MAX_OVERFLOW,
        planned_event_per_partition: bool = True,
    ) -> None:
        # Deliberately not DagsterPostgresStorage.__init__: the same tables, other classes.
        self.postgres_url = postgres_url
        self.should_autocreate_tables = should_autocreate_tables
        self._inst_data = inst_data
        self._run_storage = PooledPostgresRunStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._event_log_storage = PooledPostgresEventLogStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._event_log_storage._planned_event_per_partition = planned_event_per_partition
        self._schedule_storage = PooledPostgresScheduleStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        for storage in (self._run_storage, self._event_log_storage, self._schedule_storage):
            storage._pool(pool_size, max_overflow)
        super(DagsterPostgresStorage, self).__init__()

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            **cast("dict[str, Any]", pg_config()),
            "pool_size": Field(IntSource, is_required=False, default_value=DEFAULT_POOL_SIZE),
            "max_overflow": Field(IntSource, is_required=False, default_value=DEFAULT_MAX_OVERFLOW),
            "planned_event_per_partition": Field(Bool, is_required=False, default_value=True),
        }

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: dict[str, Any]
    ) -> PooledPostgresStorage:
        return cls(
            pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            inst_data=inst_data,
            token_provider=get_token_provider_from_config(config_value),
            pool_size=config_value.get("pool_size", DEFAULT_POOL_SIZE),
            max_overflow=config_value.get("max_overflow", DEFAULT_MAX_OVERFLOW),
            planned_event_per_partition=config_value.get("planned_event_per_partition", True),
        )
