"""A real PostgreSQL for the tests (deploy and instance storage): initdb into a folder under /tmp,
loopback only, a free port, stopped with ``pg_ctl stop``."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres_user() -> list[str]:
    if os.geteuid() != 0:  # PostgreSQL refuses to run as root
        return []
    pwd.getpwnam("postgres")
    return ["runuser", "-u", "postgres", "--"]


@contextmanager
def running_postgres(database: str = "agrag") -> Iterator[str]:
    """Yields ``postgresql://postgres@127.0.0.1:<port>/<database>`` (trust auth, loopback)."""
    initdb = PG_BIN / "initdb" if (PG_BIN / "initdb").exists() else shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL is not installed: bin/setup installs it (apt postgresql)")
    base = Path(tempfile.mkdtemp(prefix="agrag-deploy-pg-"))
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    prefix = _as_postgres_user()
    if prefix:
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()
    pg = Path(initdb).parent
    subprocess.run(
        [*prefix, str(initdb), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    options = f"-h 127.0.0.1 -p {port} -k {sockets} -c fsync=off"
    start = [*prefix, str(pg / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-t", "60"]
    subprocess.run([*start, "-l", str(base / "log"), "start"], check=True, capture_output=True)
    try:
        createdb = [str(pg / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        subprocess.run([*createdb, database], check=True, capture_output=True)
        yield f"postgresql://postgres@127.0.0.1:{port}/{database}"
    finally:
        stop = [*prefix, str(pg / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
        subprocess.run(stop, check=False, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
