"""What needs work: new, changed, deleted and stale documents.

The sensor compares the raw root with what it saw last time (its cursor): a file whose size and
modification time are unchanged costs one ``stat``; one whose stat changed is hashed, and only
a changed content hash makes it "changed" (a ``touch`` does not). The nightly refresh compares
the warehouse with the current settings fingerprints instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Document
from agrag_pipeline.sources import SourceFile, scan_raw_root
from agrag_pipeline.storage import Warehouse

CURSOR_VERSION = 1


@dataclass(frozen=True)
class SeenFile:
    size: int
    mtime_ns: int
    content_hash: str


@dataclass
class ChangePlan:
    """The result of one scan: what to register, run, and remove."""

    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)
    seen: dict[str, SeenFile] = field(default_factory=dict)

    @property
    def to_run(self) -> list[str]:
        return sorted(self.new + self.changed)

    def cursor(self) -> str:
        return encode_cursor(self.seen)


def encode_cursor(seen: dict[str, SeenFile]) -> str:
    return json.dumps(
        {
            "v": CURSOR_VERSION,
            "files": {k: [s.size, s.mtime_ns, s.content_hash] for k, s in sorted(seen.items())},
        },
        separators=(",", ":"),
    )


def decode_cursor(cursor: str | None) -> dict[str, SeenFile]:
    if not cursor:
        return {}
    data = json.loads(cursor)
    if data.get("v") != CURSOR_VERSION:
        return {}
    return {k: SeenFile(int(v[0]), int(v[1]), str(v[2])) for k, v in data["files"].items()}


def plan_changes(
    raw_root: Path,
    cursor: str | None,
    registered: Iterable[str],
    stored_hash: Callable[[str], str | None] = lambda _key: None,
) -> ChangePlan:
    """Compare the raw root with the last scan (``cursor``) and the registered partitions.

    A registered document the cursor has not seen (a fresh sensor over an existing warehouse)
    is compared with the version the warehouse already holds (``stored_hash``), so it is not
    redone when nothing changed.
    """
    previous = decode_cursor(cursor)
    registered_keys = set(registered)
    files, refused = scan_raw_root(raw_root)
    plan = ChangePlan(refused=refused)
    for f in files:
        seen = previous.get(f.source_key)
        current = _seen(f, seen)
        plan.seen[f.source_key] = current
        if f.source_key not in registered_keys:
            plan.new.append(f.source_key)
        elif current.content_hash != (seen.content_hash if seen else stored_hash(f.source_key)):
            plan.changed.append(f.source_key)
        else:
            plan.unchanged += 1
    present = {f.source_key for f in files}
    plan.deleted = sorted((registered_keys | set(previous)) - present)
    return plan


def _seen(f: SourceFile, previous: SeenFile | None) -> SeenFile:
    if previous is not None and (previous.size, previous.mtime_ns) == (f.size, f.mtime_ns):
        return previous
    return SeenFile(f.size, f.mtime_ns, content_hash(f.path.read_bytes()))


def stale_documents(
    warehouse: Warehouse,
    raw_root: Path,
    source_keys: Sequence[str],
    *,
    chunker_hash: str,
    embedding_settings: str,
) -> list[str]:
    """Keys whose outputs are missing, of another version than the raw file, or of old settings."""
    stale = []
    for key in source_keys:
        document_id = Document.node_id_for(key)
        document = warehouse.get_document(document_id)
        path = raw_root / key
        if document is None or not path.exists():
            stale.append(key)
            continue
        if content_hash(path.read_bytes()) != document.content_hash:
            stale.append(key)
            continue
        expected = {
            "chunks": {"content_hash": document.content_hash, "chunker_hash": chunker_hash},
            "embeddings": {
                "content_hash": document.content_hash,
                "chunker_hash": chunker_hash,
                "embedding_settings": embedding_settings,
            },
        }
        for table, wanted in expected.items():
            if not _table_matches(warehouse, table, document_id, wanted):
                stale.append(key)
                break
    return stale


def contiguous_runs(
    ordered_keys: Sequence[str], wanted: Iterable[str], max_size: int
) -> list[list[str]]:
    """Group ``wanted`` keys into runs of neighbours in ``ordered_keys`` (at most ``max_size``)."""
    wanted_set = set(wanted)
    runs: list[list[str]] = []
    current: list[str] = []
    for key in ordered_keys:
        if key in wanted_set and len(current) < max_size:
            current.append(key)
            continue
        if current:
            runs.append(current)
        current = [key] if key in wanted_set else []
    if current:
        runs.append(current)
    return runs


def _table_matches(
    warehouse: Warehouse, table: str, document_id: UUID, wanted: dict[str, str]
) -> bool:
    meta = warehouse.table_metadata(table, document_id)
    return meta is not None and all(meta.get(k) == v for k, v in wanted.items())
