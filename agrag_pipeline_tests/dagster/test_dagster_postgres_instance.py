"""A shared deployment's instance storage: the graph materialised against a real PostgreSQL.

The test starts its own PostgreSQL server (initdb into a temporary folder, loopback only, a
free port) and stops it afterwards; Dagster's runs, events and dynamic partitions go there
through dagster-postgres, exactly as a deployment's dagster.yaml would point them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster_support import make_project

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres_user() -> list[str]:
    # PostgreSQL refuses to run as root; CI and these machines run tests as root.
    if os.geteuid() != 0:
        return []
    pwd.getpwnam("postgres")
    return ["runuser", "-u", "postgres", "--"]


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    initdb = PG_BIN / "initdb" if (PG_BIN / "initdb").exists() else shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL is not installed: bin/setup installs it (apt postgresql)")
    # Directly under /tmp: pytest's own temporary root is private to root, and the server runs
    # as the postgres user.
    base = Path(tempfile.mkdtemp(prefix="agrag-pg-"))
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    prefix = _as_postgres_user()
    if prefix:
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()
    subprocess.run(
        [*prefix, str(initdb), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    pg_ctl = str(Path(initdb).with_name("pg_ctl"))
    options = f"-h 127.0.0.1 -p {port} -k {sockets} -c fsync=off"
    subprocess.run(
        [
            *prefix,
            pg_ctl,
            "-D",
            str(data),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "-l",
            str(base / "log"),
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        subprocess.run(
            [
                str(Path(initdb).with_name("createdb")),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                "agrag",
            ],
            check=True,
            capture_output=True,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/agrag"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], check=False)
        shutil.rmtree(base, ignore_errors=True)


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
