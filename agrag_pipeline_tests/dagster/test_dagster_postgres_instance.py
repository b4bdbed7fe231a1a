"""A shared deployment's instance storage: the graph materialised against a real PostgreSQL.

The test starts its own PostgreSQL server (initdb into a temporary folder, loopback only, a
free port) and stops it afterwards; Dagster's runs, events and dynamic partitions go there
through dagster-postgres, exactly as a deployment's dagster.yaml would point them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster_support import make_project

from agrag_pipeline.defs.partitions import gather_at_end
from agrag_pipeline_tests.deploy.postgres import running_postgres


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL on loopback (initdb, free port), stopped when the module is done."""
    with running_postgres() as url:
        yield url


def test_materialisations_and_partitions_are_stored_in_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg2

    # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; dagster-postgres ships psycopg2.
    dagster_url = postgres_url.replace("postgresql://", "postgresql+psycopg2://", 1)
    overrides = {"storage": {"postgres": {"postgres_url": dagster_url}}}
    with dg.instance_for_test(overrides=overrides) as instance:
        project = make_project(
            tmp_path, instance, {"guide.md": b"# Guide\n\n## Install\n\nRun the installer.\n"}
        )
        project.register(["guide.md"])
        assert project.materialize(["guide.md"]).success
        record = instance.get_latest_materialization_event(dg.AssetKey("chunks"))
        assert record is not None and record.asset_materialization is not None
        assert record.asset_materialization.partition == "guide.md"

    with psycopg2.connect(postgres_url) as conn, conn.cursor() as cur:
        cur.execute(
            "select partition from dynamic_partitions where partitions_def_name = 'documents'"
        )
        assert [row[0] for row in cur.fetchall()] == ["guide.md"]
        cur.execute(
            "select asset_key, count(*) from event_logs"
            " where dagster_event_type = 'ASSET_MATERIALIZATION' group by asset_key"
        )
        materialisations = dict(cur.fetchall())
        for asset in ("raw_documents", "sections", "chunks", "embeddings"):
            assert materialisations[f'["{asset}"]'] == 1, materialisations
        cur.execute("select count(*) from runs where status = 'SUCCESS'")
        assert cur.fetchone() == (1,)


def _sessions(postgres_url: str) -> int:
    """Connections PostgreSQL has accepted into the database so far (PostgreSQL 14+)."""
    import psycopg2

    with psycopg2.connect(postgres_url) as conn, conn.cursor() as cur:
        cur.execute("select sessions from pg_stat_database where datname = current_database()")
        row = cur.fetchone()
        assert row is not None
        return int(row[0])


def _materialise_counting_sessions(
    tmp_path: Path, postgres_url: str, storage: dict[str, object]
) -> int:
    with dg.instance_for_test(overrides={"storage": storage}) as instance:
        project = make_project(
            tmp_path, instance, {"notes.md": b"# Notes\n\n## Pool\n\nConnections are kept.\n"}
        )
        project.register(["notes.md"])
        before = _sessions(postgres_url)
        assert project.materialize(["notes.md"]).success
        opened = _sessions(postgres_url) - before - 1  # the second count's own connection
        record = instance.get_latest_materialization_event(dg.AssetKey("embeddings"))
        assert record is not None and record.asset_materialization is not None
        assert record.asset_materialization.partition == "notes.md"
    return opened


def test_the_pooled_storage_keeps_its_connections_where_dagster_postgres_opens_one_per_call(
    tmp_path: Path, postgres_url: str
) -> None:
    """deploy/dagster.yaml's PooledPostgresStorage: the same run stored in the same tables,
    through a few kept connections; the stock storage opens a connection for every call."""
    dagster_url = postgres_url.replace("postgresql://", "postgresql+psycopg2://", 1)
    pooled = {
        "custom": {
            "module": "agrag_pipeline.defs.postgres_storage",
            "class": "PooledPostgresStorage",
            "config": {"postgres_url": dagster_url, "pool_size": 2, "max_overflow": 2},
        }
    }
    stock = {"postgres": {"postgres_url": dagster_url}}
    pooled_sessions = _materialise_counting_sessions(tmp_path / "pooled", postgres_url, pooled)
    stock_sessions = _materialise_counting_sessions(tmp_path / "stock", postgres_url, stock)
    # Three storages (runs, events, schedules), each at most pool_size + max_overflow.
    assert pooled_sessions <= 3 * 4, pooled_sessions
    print(f"sessions opened for one run: pooled {pooled_sessions}, stock {stock_sessions}")
    assert stock_sessions > 10 * pooled_sessions, (stock_sessions, pooled_sessions)


def test_changed_documents_are_moved_to_the_end_of_the_partitions_in_postgres(
    postgres_url: str,
) -> None:
    dagster_url = postgres_url.replace("postgresql://", "postgresql+psycopg2://", 1)
    overrides = {"storage": {"postgres": {"postgres_url": dagster_url}}}
    keys = [f"doc{i}.md" for i in range(8)]
    with dg.instance_for_test(overrides=overrides) as instance:
        instance.add_dynamic_partitions("documents", keys)

        def registered() -> list[str]:  # the module's other tests share the database
            return [k for k in instance.get_dynamic_partitions("documents") if k in keys]

        moved = gather_at_end(instance, [keys[6], keys[1], keys[3]], keys)
        assert moved == [keys[1], keys[3], keys[6]]
        order = [k for k in keys if k not in moved] + moved
        assert registered() == order
        # Already neighbours at the end: one run takes them as they are, nothing moves.
        assert gather_at_end(instance, [keys[3], keys[6]], order) == []
        assert registered() == order
