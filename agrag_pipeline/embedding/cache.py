"""A content-addressed embedding cache: each distinct text is embedded once per model.

Key: (embedding fingerprint, SHA-256 of the exact text embedded). Store: one SQLite file in WAL
mode, so writes are atomic transactions and readers in other processes never see half a write
nor block writers; ``busy_timeout`` makes concurrent writers wait instead of failing.

What is read back is verified before it is used, because SQLite's own integrity check does not
look inside a BLOB: each row carries a checksum (BLAKE2b of fingerprint, key, dimension and the
vector's bytes); a row whose checksum, dimension or finiteness fails is deleted and counted as
a miss, so the text is embedded again and bit rot is never written out. A damaged file is set
aside as ``<name>.corrupt-<UTC time>`` (with its ``-wal`` and ``-shm``) and a fresh cache is
started; both are logged as warnings naming the file. Damaged means: what SQLite reports as not
a database or malformed, and, checked when a process first opens the cache, a file cut short
that SQLite would open without a word (empty, shorter than its header, or not a whole number of
its pages: SQLite only ever writes whole pages, so a cut at any other byte is a truncation,
which SQLite reads as an empty cache or as one with its last rows silently gone).

A fresh cache file is made whole (schema and WAL mode) under a temporary name and renamed into
place, and setting a file aside happens under a lock beside it (``<name>.lock``) and only if the
file is still the one found damaged, so no process ever mistakes a cache another is creating
for a damaged one, nor sets aside the fresh cache another has just started.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

from agrag_pipeline.embedding.base import Embedder, EmbeddingError, Vectors

#: The cache file's name inside the cache directory.
CACHE_FILE = "embeddings.sqlite3"

#: Keys looked up per query; far below SQLite's limit on bound parameters.
_LOOKUP_CHUNK = 500

#: SQLite primary result codes of a damaged file: SQLITE_CORRUPT, SQLITE_NOTADB.
_DAMAGED_CODES = frozenset({11, 26})

#: The first bytes of every SQLite database file, and the length of its header.
_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    fingerprint TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL,
    checksum TEXT,
    PRIMARY KEY (fingerprint, text_sha256)
) WITHOUT ROWID
"""

log = logging.getLogger(__name__)

R = TypeVar("R")


def text_sha256(text: str) -> str:
    """SHA-256 of the UTF-8 bytes of the exact text embedded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def vector_checksum(fingerprint: str, key: str, dimension: int, blob: bytes) -> str:
    """The checksum stored with a row: it binds the vector's bytes to its key and model."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (fingerprint.encode(), key.encode(), str(dimension).encode()):
        digest.update(part + b"\x00")
    digest.update(blob)
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """What one ``embed_with_cache`` call did.

    ``hits`` and ``misses`` count distinct texts; ``truncated`` counts the embedded (missed)
    texts the model had to truncate; ``corrupt`` counts cached vectors that failed their check
    (they are among the misses and were embedded again).
    """

    texts: int
    unique: int
    hits: int
    misses: int
    truncated: int
    corrupt: int = 0


class DamagedCacheError(sqlite3.DatabaseError):
    """A cache file cut short or not SQLite, found before SQLite would have opened it."""


class EmbeddingCache:
    """Vectors by (fingerprint, text SHA-256) in one SQLite file; safe across processes."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        #: The inode of the file the connection opened: a file set aside must be that one.
        self._inode: int | None = None
        # One connection per process, shared by its threads one statement batch at a time.
        self._lock = threading.RLock()
        #: Rows dropped because they failed their check, since this object was made.
        self.corrupt_rows = 0
        #: Where damaged cache files were set aside, since this object was made.
        self.set_aside: list[Path] = []

    @classmethod
    def in_dir(cls, cache_dir: Path) -> EmbeddingCache:
        return cls(Path(cache_dir) / CACHE_FILE)

    def _connection(self) -> sqlite3.Connection:
        # A connection must not cross a fork: reopen in a child process.
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock():
                if not self.path.exists():
                    self._create()
                problem = _file_problem(self.path)
                self._inode = _inode(self.path)
            if problem is not None:
                raise DamagedCacheError(problem)
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute(_SCHEMA)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(embeddings)")}
                if "checksum" not in columns:  # a cache written before checksums existed
                    conn.execute("ALTER TABLE embeddings ADD COLUMN checksum TEXT")
            except BaseException:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        """An exclusive ``flock`` beside the cache, held to create it or set it aside."""
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _create(self) -> None:
        """Make an empty cache whole under a temporary name, then rename it into place (the
        caller holds the lock): an empty or headerless cache file is then always damage."""
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex}")
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(_SCHEMA)
            finally:
                conn.close()
            os.replace(tmp, self.path)
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()

    def _guarded(self, action: Callable[[sqlite3.Connection], R]) -> R:
        """Run ``action`` on the connection; a damaged file is set aside and, on a fresh
        file, ``action`` runs once more."""
        with self._lock:
            try:
                return action(self._connection())
            except sqlite3.DatabaseError as exc:
                if not _is_damage(exc):
                    raise
                self._set_aside(exc)
            return action(self._connection())

    def _set_aside(self, exc: sqlite3.DatabaseError) -> None:
        """Set the damaged file aside, unless another process already replaced it."""
        found_damaged = self._inode
        self.close()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        moved = []
        with self._file_lock():
            if found_damaged is None or _inode(self.path) != found_damaged:
                log.warning("%s was damaged (%s); another process replaced it", self.path, exc)
                return
            for suffix in ("", "-wal", "-shm"):
                source = Path(f"{self.path}{suffix}")
                target = Path(f"{self.path}{suffix}.corrupt-{stamp}")
                try:
                    source.rename(target)
                except FileNotFoundError:
                    continue
                moved.append(target)
        if moved:
            self.set_aside.append(moved[0])
        log.warning(
            "%s is damaged (%s); set aside as %s and a fresh cache started",
            self.path,
            exc,
            moved[0] if moved else "(already moved by another process)",
        )

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, fingerprint: str, keys: Iterable[str]) -> dict[str, Vectors]:
        """The cached vectors among ``keys`` (text SHA-256s) that pass their check; absent and
        damaged ones (deleted here, so they are embedded again) are left out."""
        keys = list(dict.fromkeys(keys))

        def select(conn: sqlite3.Connection) -> list[tuple[str, int, bytes, str | None]]:
            rows: list[tuple[str, int, bytes, str | None]] = []
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                part = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(part))
                rows.extend(
                    conn.execute(
                        "SELECT text_sha256, dimension, vector, checksum FROM embeddings "
                        f"WHERE fingerprint = ? AND text_sha256 IN ({marks})",
                        [fingerprint, *part],
                    )
                )
            return rows

        found: dict[str, Vectors] = {}
        bad: list[str] = []
        for key, dimension, blob, checksum in self._guarded(select):
            problem = _row_problem(fingerprint, key, dimension, blob, checksum)
            if problem is not None:
                log.warning("%s: cached vector for %s dropped: %s", self.path, key, problem)
                bad.append(key)
                continue
            found[key] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        if bad:
            self.corrupt_rows += len(bad)
            self._delete(fingerprint, bad)
        return found

    def _delete(self, fingerprint: str, keys: list[str]) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "DELETE FROM embeddings WHERE fingerprint = ? AND text_sha256 = ?",
                    [(fingerprint, key) for key in keys],
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        self._guarded(delete)

    def put_many(self, fingerprint: str, vectors: Mapping[str, Vectors]) -> None:
        """Store vectors in one transaction; a key already present keeps its first vector."""
        if not vectors:
            return
        rows = []
        for key, v in vectors.items():
            array = np.ascontiguousarray(v, dtype="<f4")
            if array.ndim != 1 or not np.isfinite(array).all():
                raise EmbeddingError(f"refusing to cache a non-finite or non-flat vector for {key}")
            blob = array.tobytes()
            dimension = int(array.shape[0])
            checksum = vector_checksum(fingerprint, key, dimension, blob)
            rows.append((fingerprint, key, dimension, blob, checksum))

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO embeddings "
                    "(fingerprint, text_sha256, dimension, vector, checksum) "
                    "VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        self._guarded(insert)

    def count(self, fingerprint: str | None = None) -> int:
        def count(conn: sqlite3.Connection) -> int:
            if fingerprint is None:
                return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            query = "SELECT COUNT(*) FROM embeddings WHERE fingerprint = ?"
            return int(conn.execute(query, [fingerprint]).fetchone()[0])

        return self._guarded(count)


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def _file_problem(path: Path) -> str | None:
    """What is wrong with a cache file SQLite would open without a word, if anything: its
    header (magic, page size) and its length, a whole number of pages (nothing beyond the
    header is read, so it costs the same for a cache of any size)."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(_HEADER_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return None
    if len(header) < _HEADER_BYTES:
        return f"cut short: {size:,} bytes, shorter than an SQLite header"
    if not header.startswith(_MAGIC):
        return "file is not a database (no SQLite header)"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"file is not a database (page size {page_size})"
    if size % page_size:
        return f"cut short: {size:,} bytes is not a whole number of {page_size:,}-byte pages"
    return None


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    if isinstance(exc, DamagedCacheError):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _DAMAGED_CODES
    text = str(exc)
    return "not a database" in text or "malformed" in text


def _row_problem(
    fingerprint: str, key: str, dimension: object, blob: object, checksum: str | None
) -> str | None:
    if not isinstance(blob, bytes) or not isinstance(dimension, int):
        return "not a vector row"
    if len(blob) != 4 * dimension:
        return f"{len(blob)} bytes for dimension {dimension}"
    if checksum is not None and checksum != vector_checksum(fingerprint, key, dimension, blob):
        return "checksum mismatch (bit rot)"
    if not np.isfinite(np.frombuffer(blob, dtype="<f4")).all():
        return "not finite"
    return None


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
    corrupt_before = cache.corrupt_rows
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
        corrupt=cache.corrupt_rows - corrupt_before,
    )
    return out, stats
