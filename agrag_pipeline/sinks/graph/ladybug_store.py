"""The embedded default: LadybugDB, the maintained fork of Kuzu (MIT), spoken to in Cypher.

Chosen over the alternatives because it is embedded (no server), speaks Cypher (so the Neo4j
backend's statements run against it unchanged), is maintained after Kuzu's archiving in 2025 and
ships wheels for this platform; see README "Graph" for the load-time measurement.

A LadybugDB database allows one read-write process at a time (it locks its file). Dagster runs
documents in up to two runs at once, so every open goes through an inter-process ``flock`` on a
lock file beside the database, held while the store is open: a second writer waits (up to
``lock_timeout_s``) instead of failing. Open the store once per batch (``session()``), not once
per document: an open costs about 30 ms.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agrag_pipeline.sinks.graph.model import EDGE_TYPES, NODE_PROPERTIES, PropertyType
from agrag_pipeline.sinks.graph.store import GraphStore, Statement


class GraphStoreBusyError(RuntimeError):
    """Another process held the embedded database for longer than the lock timeout."""


def cast_value(name: str, kind: PropertyType) -> str:
    """The row's value cast to the column type (see ``store.ValueExpression``)."""
    return f"CAST(r.`{name}` AS {kind})" if kind.endswith("[]") else f"r.`{name}`"


class LadybugGraphStore(GraphStore):
    value_expression = staticmethod(cast_value)

    def __init__(self, path: str | Path, *, lock_timeout_s: float = 300.0) -> None:
        self.path = Path(path)
        self.name = f"ladybug:{self.path}"
        self.lock_timeout_s = lock_timeout_s
        self._lock_fd: int | None = None
        self._db: Any = None
        self._conn: Any = None

    # -- connection ---------------------------------------------------------------------
    def _connection(self) -> Any:
        if self._conn is None:
            import ladybug

            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._acquire_lock()
            try:
                self._db = ladybug.Database(str(self.path))
                self._conn = ladybug.Connection(self._db)
                self._create_schema(self._conn)
            except BaseException:
                self.close()
                raise
        return self._conn

    def _acquire_lock(self) -> None:
        fd = os.open(f"{self.path}.lock", os.O_CREAT | os.O_RDWR, 0o644)
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_fd = fd
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise GraphStoreBusyError(
                        f"the graph database {self.path} was held by another process for "
                        f"more than {self.lock_timeout_s:.0f} s"
                    ) from None
                time.sleep(0.05)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._db is not None:
            self._db.close()
        self._conn = self._db = None
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- GraphStore -----------------------------------------------------------------------
    def ensure_schema(self) -> None:
        self._connection()

    @staticmethod
    def _create_schema(conn: Any) -> None:
        for label, properties in NODE_PROPERTIES.items():
            columns = ", ".join(f"`{name}` {kind}" for name, kind in properties.items())
            conn.execute(
                f"CREATE NODE TABLE IF NOT EXISTS {label}(id STRING PRIMARY KEY, {columns})"
            )
        for edge_type, (source, target) in EDGE_TYPES.items():
            conn.execute(f"CREATE REL TABLE IF NOT EXISTS {edge_type}(FROM {source} TO {target})")

    def _run(self, statements: Sequence[Statement]) -> None:
        conn = self._connection()
        conn.execute("BEGIN TRANSACTION")
        try:
            for cypher, params in statements:
                conn.execute(cypher, params)
        except BaseException:
            # A failed statement may already have ended the transaction.
            with contextlib.suppress(RuntimeError):
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        result = self._connection().execute(cypher, dict(params or {}))
        names = result.get_column_names()
        rows = []
        while result.has_next():
            rows.append(dict(zip(names, result.get_next(), strict=True)))
        return rows
