"""The embedded default: LadybugDB, the maintained fork of Kuzu (MIT), spoken to in Cypher.

Chosen over the alternatives because it is embedded (no server), speaks Cypher (so the Neo4j
backend's statements run against it unchanged), is maintained after Kuzu's archiving in 2025 and
ships wheels for this platform; see README "Graph" for the load-time measurement.

A LadybugDB database allows one read-write process at a time (it locks its file). Dagster runs
documents in up to two runs at once, so every open goes through an inter-process ``flock`` on a
lock file beside the database, held while the store is open: a second writer waits (up to
``lock_timeout_s``) instead of failing. Open the store once per batch (``session()``), not once
per document: an open costs about 30 ms.

A database file that cannot be opened as one (truncated, bit-flipped: LadybugDB keeps no
checksums, so only damage to its structure shows) would fail every graph step after it. It is
named in a warning, set aside as ``<name>.corrupt-<UTC time>`` (with its WAL) and a fresh
database started; the graph step then writes every document back from its graph tables
(``step.reconcile_store``). Damage is looked for when the store opens: each node table is
counted once, under the lock, so no other writer can be mid-checkpoint.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agrag_pipeline.sinks.graph.model import EDGE_TYPES, NODE_PROPERTIES, PropertyType
from agrag_pipeline.sinks.graph.store import GraphStore, Statement

log = logging.getLogger(__name__)

#: The files of a database besides its own: the write-ahead log, a checkpoint's shadow pages.
_COMPANIONS = (".wal", ".shadow")


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
        #: Where damaged database files were set aside, since this object was made.
        self.set_aside: list[Path] = []

    # -- connection ---------------------------------------------------------------------
    def _connection(self) -> Any:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._acquire_lock()
            try:
                try:
                    self._open()
                except (RuntimeError, MemoryError) as exc:
                    if not _is_damage(exc):
                        raise
                    self._close_database()
                    self._set_aside(exc)
                    self._open()
            except BaseException:
                self.close()
                raise
        return self._conn

    def _open(self) -> None:
        """Open the database and its schema, and count each node table once, so that a
        damaged file shows now rather than in the middle of a write."""
        import ladybug

        self._db = ladybug.Database(str(self.path))
        self._conn = ladybug.Connection(self._db)
        self._create_schema(self._conn)
        for label in NODE_PROPERTIES:
            self._conn.execute(f"MATCH (n:{label}) RETURN count(n)")

    def _set_aside(self, exc: BaseException) -> None:
        """Rename the damaged database (and its WAL) to ``<name>.corrupt-<UTC time>``; the
        caller holds the lock, so no other of our processes has it open."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        moved = []
        for suffix in ("", *_COMPANIONS):
            source = Path(f"{self.path}{suffix}")
            with contextlib.suppress(FileNotFoundError):
                target = Path(f"{source}.corrupt-{stamp}")
                source.rename(target)
                moved.append(target)
        if moved:
            self.set_aside.append(moved[0])
        self.reconciled_with = None
        log.warning(
            "the graph database %s is damaged (%s); set aside as %s and a fresh one started: "
            "the graph step writes every document back from its graph tables",
            self.path,
            _first_line(exc),
            moved[0] if moved else "(nothing to move)",
        )

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
        self._close_database()
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None
        super().close()

    def _close_database(self) -> None:
        conn, db = self._conn, self._db
        self._conn = self._db = None
        if conn is not None:
            with contextlib.suppress(RuntimeError):  # a half-opened database may refuse
                conn.close()
        if db is not None:
            with contextlib.suppress(RuntimeError):
                db.close()

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


def _is_damage(exc: BaseException) -> bool:
    """Whether opening failed on the file's contents (LadybugDB's runtime errors: not a
    database, a version number that is garbage, pages outside the file, an invalid index, a
    size so large it cannot be allocated), not on its access (``IO exception``: a lock another
    program holds, permissions, a full disk), which must never cost the database."""
    if isinstance(exc, MemoryError):
        return True
    return str(exc).startswith("Runtime exception")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
