"""What needs work: new, changed, deleted and stale documents.

The sensor compares the raw root with what it saw last time (its cursor): a file whose size and
modification time are unchanged costs one ``stat``; one whose stat changed is hashed, and only
a changed content hash makes it "changed" (a ``touch`` does not). The nightly refresh compares
the warehouse with the current settings fingerprints instead.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Document
from agrag_pipeline.sources import (
    ScanProblem,
    ScanResult,
    SourceFile,
    display_name,
    read_head,
    scan_raw_root,
)
from agrag_pipeline.storage import Warehouse

if TYPE_CHECKING:
    from agrag_pipeline.settings import DocumentsSettings

CURSOR_VERSION = 1

log = logging.getLogger(__name__)


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
    refused: list[ScanProblem] = field(default_factory=list)
    skipped: list[ScanProblem] = field(default_factory=list)
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
    documents: DocumentsSettings | None = None,
    scan: ScanResult | None = None,
) -> ChangePlan:
    """Compare the raw root with the last scan (``cursor``) and the registered partitions.

    A registered document the cursor has not seen (a fresh sensor over an existing warehouse)
    is compared with the version the warehouse already holds (``stored_hash``), so it is not
    redone when nothing changed. Never raises for one file: a file that cannot be hashed is
    refused (named, kept as it was), and only keys known to be gone count as deleted.
    """
    previous = decode_cursor(cursor)
    registered_keys = set(registered)
    if scan is None:
        known = {k: (v.size, v.mtime_ns) for k, v in previous.items()}
        scan = scan_raw_root(raw_root, documents, known=known)
    plan = ChangePlan(refused=list(scan.refused), skipped=list(scan.skipped))
    unhashable: set[str] = set()
    for f in scan.files:
        seen = previous.get(f.source_key)
        try:
            current = _seen(f, seen, raw_root)
        except OSError as exc:
            plan.refused.append(
                ScanProblem(display_name(f.source_key), f"cannot be read: {exc}", f.source_key)
            )
            unhashable.add(f.source_key)
            if seen is not None:
                plan.seen[f.source_key] = seen
            continue
        plan.seen[f.source_key] = current
        if f.source_key not in registered_keys:
            plan.new.append(f.source_key)
        elif current.content_hash != (seen.content_hash if seen else _stored(stored_hash, f)):
            plan.changed.append(f.source_key)
        else:
            plan.unchanged += 1
    for key, seen_before in previous.items():
        if scan.is_unknown(key) and key not in plan.seen:
            plan.seen[key] = seen_before  # not seen this time, not known to be gone
    plan.deleted = [k for k in scan.absent(registered_keys | set(previous)) if k not in unhashable]
    return plan


def _stored(stored_hash: Callable[[str], str | None], f: SourceFile) -> str | None:
    """The warehouse's version of ``f``; a damaged record counts as none (it is redone)."""
    try:
        return stored_hash(f.source_key)
    except Exception:
        return None


def _seen(f: SourceFile, previous: SeenFile | None, raw_root: Path) -> SeenFile:
    if previous is not None and (previous.size, previous.mtime_ns) == (f.size, f.mtime_ns):
        return previous
    from agrag_pipeline.derived import DerivedSourceFile
    from agrag_pipeline.storage.raw_remote import ObjectSourceFile

    if isinstance(f, DerivedSourceFile):  # an attachment, an archive member: its own bytes
        known = f.content_hash or _derived_hash(raw_root, f.source_key)
        return SeenFile(f.size, f.mtime_ns, known)
    if isinstance(f, ObjectSourceFile):  # a new or changed object: downloaded once, to hash
        return SeenFile(f.size, f.mtime_ns, content_hash(f.read()))
    return SeenFile(f.size, f.mtime_ns, hash_file(f.path, raw_root))


def _hash_source(raw_root: Path, key: str, path: Path) -> str:
    from agrag_pipeline.derived import is_derived
    from agrag_pipeline.storage.raw_remote import object_root_uri, object_uri, read_object

    if is_derived(key):  # extracted from its container again
        return _derived_hash(raw_root, key)
    remote = object_root_uri(raw_root)
    return (
        hash_file(path, raw_root)
        if remote is None
        else content_hash(read_object(object_uri(remote, key)))
    )


def _derived_hash(raw_root: Path, key: str) -> str:
    """The content hash of a derived document (an attachment, an archive member), extracted
    from its container now; a container that no longer holds it is an ``OSError`` here, as a
    file that cannot be read is, so callers name it and go on."""
    from agrag_pipeline.derived import read_derived
    from agrag_pipeline.parsing.errors import DocumentError

    try:
        return content_hash(read_derived(raw_root, key))
    except DocumentError as exc:
        raise OSError(str(exc)) from exc


def hash_file(path: Path, raw_root: Path) -> str:
    """The content hash of a regular file under ``raw_root``, read without blocking (streamed,
    whole file) and never from outside the root (``raw_files.open_in_root``)."""
    data, _ = read_head(path, 1 << 62, root=raw_root)
    return content_hash(data)


def iter_stored_source_keys(warehouse: Warehouse) -> Iterator[tuple[str, UUID]]:
    """(source key, document id) of every document the warehouse holds output of, one at a
    time: a run that only asks which are gone keeps none of them (~250 bytes a document).

    Every place holding a document id counts (its record, its failure record, any of its
    tables), not only sound records: a document whose record is damaged or missing still has
    sections, chunks, embeddings, graph and index entries, which must go when its file goes.
    Its source key is read from its record if sound, else from whatever still names it (the
    damaged record's bytes, its failure records, its tables' footers, its chunks' rows, a record
    set aside), and believed only if it gives back the id (``Document.node_id_for``). A document
    no readable place names is logged, naming its files, and left alone.
    """
    for document_id in warehouse.held_ids():
        key = source_key_of(warehouse, document_id)
        if key is None:
            log.warning(
                "outputs of document %s are stored (%s) but no readable file names its source "
                "key, so whether its file still exists cannot be told; they are kept",
                document_id,
                ", ".join(warehouse.uri(p) for p in warehouse.held_paths(document_id)),
            )
            continue
        yield key, document_id


def stored_source_keys(warehouse: Warehouse) -> dict[str, UUID]:
    """source key -> document id, for every document the warehouse holds output of
    (``iter_stored_source_keys``)."""
    return dict(iter_stored_source_keys(warehouse))


def gone_source_keys(scan: ScanResult, warehouse: Warehouse, also: Iterable[str] = ()) -> list[str]:
    """The documents the warehouse holds (and ``also``: e.g. the registered partitions) that
    the scan no longer finds, streamed: the warehouse's keys are compared as they are found,
    so a re-run over 100,000 stored documents builds no set or map of them."""
    stored = (key for key, _document_id in iter_stored_source_keys(warehouse))
    return scan.absent(itertools.chain(also, stored))


def source_key_of(warehouse: Warehouse, document_id: UUID) -> str | None:
    """The source key of ``document_id`` from the first stored place that names one whose id
    is ``document_id`` (a record that is damaged, a key that is not the document's, ignored)."""
    for key, _where in warehouse.named_source_keys(document_id):
        try:
            if Document.node_id_for(key) == document_id:
                return key
        except Exception:  # a garbled key names nothing: try the next place
            continue
    return None


@dataclass(frozen=True)
class Removal:
    source_key: str
    removed: list[str] = field(default_factory=list)
    error: str | None = None


class DocumentSink(Protocol):
    """A sink holding per-document output (the graph database, the search index)."""

    name: str

    def delete_document(self, document_id: str) -> int: ...


def remove_deleted(
    warehouse: Warehouse, source_keys: Iterable[str], sinks: Sequence[DocumentSink] = ()
) -> list[Removal]:
    """Remove the derived outputs, sink entries and current-version record of documents that
    are gone.

    Raw snapshots and text layers stay (content-addressed history). One failure does not stop
    the others; it is returned, so the caller can retry the key next time. Sinks go first: a
    document whose sink removal failed keeps its record, so the next scan sees it again.
    """
    removals = []
    for key in source_keys:
        document_id = Document.node_id_for(key)
        try:
            removed = [
                f"{sink.name} ({count} entries)"
                for sink in sinks
                if (count := sink.delete_document(str(document_id)))
            ]
            removed += warehouse.remove_outputs(document_id)
            if warehouse.fs.exists(warehouse.document_path(document_id)):
                warehouse.remove_document(document_id)
                removed.append(warehouse.document_path(document_id))
            removals.append(Removal(key, removed))
        except Exception as exc:  # one document's removal must not stop the others
            removals.append(Removal(key, error=f"{type(exc).__name__}: {exc}"))
    for sink in sinks:
        # A sink holding a lock while open (the embedded graph database) must let go, or the
        # run that follows in this process (or a worker) waits for it.
        close = getattr(sink, "close", None)
        if callable(close):
            close()
    return removals


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
        try:
            document = warehouse.get_document(document_id)
        except Exception:  # a damaged record is stale: the run rebuilds it
            document = None
        path = raw_root / key
        if document is None:
            stale.append(key)
            continue
        try:
            current_hash = _hash_source(raw_root, key, path)
        except OSError:
            stale.append(key)  # the run names the problem
            continue
        if current_hash != document.content_hash:
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


def failed_as_before(
    warehouse: Warehouse,
    raw_root: Path,
    source_keys: Sequence[str],
    code_versions: Mapping[str, str],
) -> dict[str, str]:
    """Keys that failed on the raw file's current version with the current code and settings
    of the step that failed (its code version, in the failure record): running them again
    would fail again. key -> the step and its error."""
    found: dict[str, str] = {}
    for key in source_keys:
        try:
            failures = warehouse.read_failures(Document.node_id_for(key))
        except Exception:  # an unreadable record: run the document, which rewrites it
            continue
        same_code = [
            (step, record)
            for step, record in failures.items()
            if record.get("content_hash") and record.get("code_version") == code_versions.get(step)
        ]
        if not same_code:
            continue
        try:
            current = _hash_source(raw_root, key, raw_root / key)
        except OSError:
            continue
        for step, record in same_code:
            if record["content_hash"] == current:
                found[key] = f"{step}: {record.get('error')}"
                break
    return found


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
