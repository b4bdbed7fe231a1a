"""A content-addressed cache of chat answers: a request that decided an answer once is never
sent again.

Key: SHA-256 of the canonical JSON of the whole request body that decides the answer (model,
messages, response schema, temperature, seed, token limit) and ``CACHE_VERSION``; never the
endpoint URL or the key, so the same model served elsewhere reuses the answers, and another
model, prompt or schema misses. Only answers that parsed and validated are stored.

Store: one SQLite file in WAL mode (atomic transactions, readers never see half a write). Reads
are verified like the embedding cache's: each row carries a BLAKE2b checksum binding the answer
to its key; a row that fails it is deleted and counted as a miss (the request is sent again).
A file SQLite reports as damaged is set aside as ``<name>.corrupt-<UTC time>``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agrag_pipeline.fingerprints import canonical_json, sha256_hex

#: Bumped when what a cached answer means changes for the same request.
CACHE_VERSION = "1"

#: The cache file's name inside the cache directory.
CACHE_FILE = "llm_responses.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    checksum TEXT NOT NULL
) WITHOUT ROWID
"""

log = logging.getLogger(__name__)


def request_key(body: dict[str, Any]) -> str:
    """The cache key of a request body (which must not name the endpoint or the key)."""
    return sha256_hex(canonical_json({"cache_version": CACHE_VERSION, "request": body}))


def _checksum(key: str, content: str, prompt_tokens: int, completion_tokens: int) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for part in (key, content, str(prompt_tokens), str(completion_tokens)):
        digest.update(part.encode("utf-8") + b"\x00")
    return digest.hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    content: str
    prompt_tokens: int
    completion_tokens: int


class ResponseCache:
    """Answers by request key in one SQLite file; safe across processes and threads."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._lock = threading.RLock()
        #: Rows dropped because they failed their check, since this object was made.
        self.corrupt_rows = 0

    @classmethod
    def in_dir(cls, cache_dir: Path) -> ResponseCache:
        return cls(Path(cache_dir) / CACHE_FILE)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # never across a fork
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _execute(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            try:
                return list(self._connection().execute(sql, params))
            except sqlite3.DatabaseError as exc:
                if "not a database" not in str(exc) and "malformed" not in str(exc):
                    raise
                self._set_aside(exc)
            return list(self._connection().execute(sql, params))

    def _set_aside(self, exc: sqlite3.DatabaseError) -> None:
        self.close()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        for suffix in ("", "-wal", "-shm"):
            try:
                Path(f"{self.path}{suffix}").rename(f"{self.path}{suffix}.corrupt-{stamp}")
            except FileNotFoundError:
                continue
        log.warning("%s is damaged (%s); set aside and a fresh cache started", self.path, exc)

    def get(self, key: str) -> CachedAnswer | None:
        """The verified answer stored for ``key``, or None (a damaged row is deleted)."""
        rows = self._execute(
            "SELECT content, prompt_tokens, completion_tokens, checksum FROM responses "
            "WHERE key = ?",
            (key,),
        )
        if not rows:
            return None
        content, prompt_tokens, completion_tokens, checksum = rows[0]
        if not isinstance(content, str) or checksum != _checksum(
            key, content, int(prompt_tokens), int(completion_tokens)
        ):
            log.warning("%s: cached answer %s dropped: checksum mismatch", self.path, key)
            self.corrupt_rows += 1
            self._execute("DELETE FROM responses WHERE key = ?", (key,))
            return None
        return CachedAnswer(content, int(prompt_tokens), int(completion_tokens))

    def put(self, key: str, answer: CachedAnswer) -> None:
        checksum = _checksum(key, answer.content, answer.prompt_tokens, answer.completion_tokens)
        self._execute(
            "INSERT OR IGNORE INTO responses "
            "(key, content, prompt_tokens, completion_tokens, checksum) VALUES (?, ?, ?, ?, ?)",
            (key, answer.content, answer.prompt_tokens, answer.completion_tokens, checksum),
        )

    def count(self) -> int:
        return int(self._execute("SELECT COUNT(*) FROM responses", ())[0][0])

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None
