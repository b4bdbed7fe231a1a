"""A content-addressed embedding cache: each distinct text is embedded once per model.

Key: (embedding fingerprint, SHA-256 of the exact text embedded). Store: one SQLite file in WAL
mode, so writes are atomic transactions and readers in other processes never see half a write
nor block writers; ``busy_timeout`` makes concurrent writers wait instead of failing.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agrag_pipeline.embedding.base import Embedder, EmbeddingError, Vectors

#: The cache file's name inside the cache directory.
CACHE_FILE = "embeddings.sqlite3"

#: Keys looked up per query; far below SQLite's limit on bound parameters.
_LOOKUP_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    fingerprint TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (fingerprint, text_sha256)
) WITHOUT ROWID
"""


def text_sha256(text: str) -> str:
    """SHA-256 of the UTF-8 bytes of the exact text embedded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """What one ``embed_with_cache`` call did.

    ``hits`` and ``misses`` count distinct texts; ``truncated`` counts the embedded (missed)
    texts the model had to truncate.
    """

    texts: int
    unique: int
    hits: int
    misses: int
    truncated: int


class EmbeddingCache:
    """Vectors by (fingerprint, text SHA-256) in one SQLite file; safe across processes."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        # One connection per process, shared by its threads one statement batch at a time.
        self._lock = threading.RLock()

    @classmethod
    def in_dir(cls, cache_dir: Path) -> EmbeddingCache:
        return cls(Path(cache_dir) / CACHE_FILE)

    def _connection(self) -> sqlite3.Connection:
        # A connection must not cross a fork: reopen in a child process.
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, fingerprint: str, keys: Iterable[str]) -> dict[str, Vectors]:
        """The cached vectors among ``keys`` (text SHA-256s); absent keys are left out."""
        keys = list(dict.fromkeys(keys))
        rows: list[tuple[str, int, bytes]] = []
        with self._lock:
            conn = self._connection()
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                part = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(part))
                rows.extend(
                    conn.execute(
                        "SELECT text_sha256, dimension, vector FROM embeddings "
                        f"WHERE fingerprint = ? AND text_sha256 IN ({marks})",
                        [fingerprint, *part],
                    )
                )
        found: dict[str, Vectors] = {}
        for key, dimension, blob in rows:
            vector = np.frombuffer(blob, dtype="<f4")
            if vector.shape != (dimension,):
                raise EmbeddingError(f"{self.path}: corrupt vector for {key}")
            found[key] = vector.astype(np.float32)
        return found

    def put_many(self, fingerprint: str, vectors: Mapping[str, Vectors]) -> None:
        """Store vectors in one transaction; a key already present keeps its first vector."""
        if not vectors:
            return
        rows = [
            (fingerprint, key, int(v.shape[0]), np.ascontiguousarray(v, dtype="<f4").tobytes())
            for key, v in vectors.items()
        ]
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def count(self, fingerprint: str | None = None) -> int:
        with self._lock:
            conn = self._connection()
            if fingerprint is None:
                return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            query = "SELECT COUNT(*) FROM embeddings WHERE fingerprint = ?"
            return int(conn.execute(query, [fingerprint]).fetchone()[0])


def embed_with_cache(
    embedder: Embedder, texts: Sequence[str], cache: EmbeddingCache
) -> tuple[Vectors, CacheStats]:
    """Vectors for ``texts`` in order; only distinct texts missing from the cache are embedded.

    The new vectors are written to the cache before returning, so a re-run on unchanged text
    embeds nothing and an edit re-embeds only the texts it changed.
    """
    texts = list(texts)
    keys = [text_sha256(t) for t in texts]
    unique: dict[str, str] = dict(zip(keys, texts, strict=True))
    found = cache.get_many(embedder.fingerprint, unique)
    missing = [key for key in unique if key not in found]
    truncated = 0
    if missing:
        embedded = embedder.embed_counted([unique[key] for key in missing])
        truncated = embedded.truncated_count
        new = dict(zip(missing, embedded.vectors, strict=True))
        cache.put_many(embedder.fingerprint, new)
        found.update(new)
    out = np.empty((len(texts), embedder.dimension), dtype=np.float32)
    for row, key in enumerate(keys):
        vector = found[key]
        if vector.shape != (embedder.dimension,):
            raise EmbeddingError(
                f"cached vector has dimension {vector.shape[0]}, expected {embedder.dimension}"
            )
        out[row] = vector
    stats = CacheStats(
        texts=len(texts),
        unique=len(unique),
        hits=len(unique) - len(missing),
        misses=len(missing),
        truncated=truncated,
    )
    return out, stats
