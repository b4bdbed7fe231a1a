"""``agrag core`` keeps nothing per document while it runs but its key: memory flat in the count.

A run over 100,000 documents must not hold 100,000 outcomes, scan entries or versions until its
report. Measured structurally, in bytes, never in time: tracemalloc counts what the run's
bookkeeping (``RUN_MODULES``: the command, the worker pool, the batch, the scan, the warehouse)
allocated itself and still holds when the last document is done (the moment the report
starts), after a run over few and over ten times as many real documents.
What grows per extra document is what the run keeps per document: its key (the string and a
pointer in the list of keys) may; an ``Outcome``, a scan entry (a ``SourceFile`` and its path)
or the warehouse's note of its version may not. The warehouse's notes of recent versions are
bounded (``RECENT_VERSIONS``); the test sets the bound below its document count, so what it
proves is that nothing grows past the bound.
"""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import pytest

from agrag_pipeline import cli
from agrag_pipeline.freshness import gone_source_keys, stored_source_keys
from agrag_pipeline.reporting import Progress
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage import Warehouse, warehouse

#: Documents of the small and the large run (the large one ten times the small one).
FEW, MANY = 10, 100
#: Bytes a run may keep per document: its key string, and a few pointers' worth (the list of
#: keys, its over-allocation, the scan's folder listing). An ``Outcome`` alone is ~100 more.
ALLOWED_BYTES_PER_DOCUMENT = sys.getsizeof("note-0000.md") + 64
#: One text for every document, so the parsers' per-word caches (bounded, shared across
#: documents) stay as they are and only what the run keeps per document can grow.
TEXT = "# Notes\n\nThe pipeline reads each document and writes its chunks to the warehouse.\n"
PACKAGE = Path(cli.__file__).resolve().parent
#: The modules that keep a run's state across its documents (a parser's or a library's own
#: caches, bounded by their size whatever the count, are not the run's).
RUN_MODULES = (
    "cli.py",
    "workers.py",
    "batch.py",
    "reporting.py",
    "sources.py",
    "source_keys.py",
    "storage/warehouse.py",
)


def _raw_root(path: Path, count: int) -> Path:
    path.mkdir()
    for i in range(count):
        (path / f"note-{i:04d}.md").write_text(TEXT, encoding="utf-8")
    return path


def _held_at_report(tmp_path: Path, name: str, count: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Bytes our modules allocated and still hold when ``agrag core`` over ``count`` documents
    has done the last one (the report is next)."""
    raw = _raw_root(tmp_path / f"raw-{name}", count)
    held: list[int] = []
    finish = Progress.finish

    def measure_then_finish(progress: Progress) -> None:
        if tracemalloc.is_tracing():
            snapshot = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(True, str(PACKAGE / module)) for module in RUN_MODULES]
            )
            held.append(sum(stat.size for stat in snapshot.statistics("filename")))
        else:
            held.append(0)
        finish(progress)

    monkeypatch.setattr(Progress, "finish", measure_then_finish)
    status = cli.main(
        [
            "core",
            "--no-embed",
            "--workers",
            "1",
            "--raw-root",
            str(raw),
            "--warehouse",
            str(tmp_path / f"warehouse-{name}"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    assert status == 0
    assert len(held) == 1
    return held[0]


def test_agrag_core_keeps_no_per_document_object_until_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # (capfd, not capsys: the progress lines go to a file, as on a terminal, not into memory)
    monkeypatch.setattr(warehouse, "RECENT_VERSIONS", FEW // 2, raising=False)
    # Everything a first run loads (modules, models, settings) loaded before counting.
    _held_at_report(tmp_path, "warm", FEW, monkeypatch)
    tracemalloc.start(1)
    try:
        few = _held_at_report(tmp_path, "few", FEW, monkeypatch)
        many = _held_at_report(tmp_path, "many", MANY, monkeypatch)
    finally:
        tracemalloc.stop()
    per_document = (many - few) / (MANY - FEW)
    assert per_document <= ALLOWED_BYTES_PER_DOCUMENT, (
        f"agrag core held {many} bytes of ours after {MANY} documents and {few} after {FEW}: "
        f"{per_document:.0f} bytes more per document, kept until the report"
    )
    assert f"{MANY} documents, {MANY} succeeded" in capfd.readouterr().out


#: Bytes ``stored_source_keys`` may hold per document beyond its answer, at its peak: the
#: document's id as a string (85 bytes) in a set and a pointer in its sorted list, and its name
#: in the listing of the folder being read (one at a time). A path is ~130 bytes more each.
ALLOWED_SCAN_BYTES_PER_DOCUMENT = 320


def test_finding_the_stored_documents_holds_an_id_per_document_not_its_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Every run starts by finding the documents the warehouse holds (to remove the deleted
    ones): at 100,000 documents a path per stored output (three or more per document) would
    be ~650 bytes a document at the peak; an id string is enough to find them."""
    _held_at_report(tmp_path, "stored", MANY, monkeypatch)
    stored = Warehouse(str(tmp_path / "warehouse-stored"))
    stored_source_keys(stored)  # what a first call loads, loaded before counting
    tracemalloc.start(1)
    try:
        keys = stored_source_keys(stored)
        answer, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(keys) == MANY
    beyond = (peak - answer) / MANY
    assert beyond <= ALLOWED_SCAN_BYTES_PER_DOCUMENT, (
        f"finding {MANY} stored documents held {beyond:.0f} bytes per document beyond its answer"
    )


#: Bytes the scan's answer may hold per document: its key (the string), its record (a
#: ``SourceFile``: a slotted object of six pointers, ~80 bytes), its size and modification time
#: (two ints) and a pointer in the list, with some room. A ``pathlib.Path`` per document is
#: ~400 bytes more; a record with a ``__dict__`` ~100 more.
ALLOWED_SCAN_RESULT_BYTES_PER_DOCUMENT = sys.getsizeof("note-0000.md") + 200
#: Bytes the scan may hold per document at its peak, in one flat folder: its answer, and the
#: folder's listing while it is read (a name and a ``_Stat`` per entry, ~200 bytes). An
#: ``os.DirEntry`` with its cached ``os.stat_result`` per entry is ~650 bytes more.
ALLOWED_SCAN_PEAK_BYTES_PER_DOCUMENT = ALLOWED_SCAN_RESULT_BYTES_PER_DOCUMENT + 200


def _scan_bytes(raw: Path) -> tuple[int, int, int]:
    """(documents found, bytes the scan's answer holds, bytes at the scan's peak)."""
    tracemalloc.start(1)
    try:
        scan = scan_raw_root(raw)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return len(scan.files), held, peak


def test_scanning_the_raw_root_holds_a_key_and_a_small_record_per_document(
    tmp_path: Path,
) -> None:
    """A large raw root (100,000 documents) is scanned on every run and sensor tick: what the
    scan keeps per document must be its key and the few facts that tell a change, not a path
    object of its own (~660 bytes a document with a record that has a ``__dict__``), and a
    folder's listing must not keep a stat object per entry while the folder is read."""
    few = _raw_root(tmp_path / "few", 200)
    many = _raw_root(tmp_path / "many", 2000)  # one flat folder: its listing at its largest
    scan_raw_root(few)  # what a first scan loads (detectors, settings), loaded before counting
    few_found, few_held, few_peak = _scan_bytes(few)
    many_found, many_held, many_peak = _scan_bytes(many)
    assert (few_found, many_found) == (200, 2000)
    held = (many_held - few_held) / (many_found - few_found)
    peak = (many_peak - few_peak) / (many_found - few_found)
    assert held <= ALLOWED_SCAN_RESULT_BYTES_PER_DOCUMENT, (
        f"the scan's answer held {held:.0f} bytes per document"
    )
    assert peak <= ALLOWED_SCAN_PEAK_BYTES_PER_DOCUMENT, (
        f"the scan held {peak:.0f} bytes per document at its peak"
    )


def test_finding_the_deleted_documents_keeps_no_stored_key_per_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A re-run over a filled warehouse first asks which stored documents are gone: the
    warehouse's keys are compared with the scan as they are found, never gathered into a map
    of key to id (~250 bytes a document) or a set (nor the scan's keys into one)."""
    _held_at_report(tmp_path, "rerun", MANY, monkeypatch)
    stored = Warehouse(str(tmp_path / "warehouse-rerun"))
    raw = tmp_path / "raw-rerun"
    (raw / "note-0007.md").unlink()  # one document deleted since the run
    scan = scan_raw_root(raw)
    assert gone_source_keys(scan, stored) == ["note-0007.md"]  # what a first call loads
    tracemalloc.start(1)
    try:
        gone = gone_source_keys(scan, stored, also=["note-0003.md", "gone-too.md"])
        answer, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert gone == ["gone-too.md", "note-0007.md"]
    beyond = (peak - answer) / MANY
    assert beyond <= ALLOWED_SCAN_BYTES_PER_DOCUMENT, (
        f"finding the deleted among {MANY} stored documents held {beyond:.0f} bytes per document"
    )
