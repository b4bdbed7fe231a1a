"""Every output of a document can be found, repaired and removed, whatever state its record,
its failure records and its sinks are in.

Each test injects the real fault: a document record really overwritten with garbage or really
deleted, a graph table really truncated or one byte of it really flipped, the graph database's
file really cut in half, its edges really rewired, a PDF's layout table really truncated or
deleted, the embedding cache really cut short, a second ``agrag core`` really replacing the
version a step is working on, two real processes really recording failures of one document at
once. Every run is the real code (``agrag core`` through ``cli.main``, the real steps, the
embedded graph database, the LanceDB index).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agrag_pipeline.batch import run_isolated
from agrag_pipeline.cli import main
from agrag_pipeline.embedding.base import Embedder
from agrag_pipeline.embedding.cache import EmbeddingCache, embed_with_cache
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import (
    build_chunks,
    current_document,
    run_document,
)
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings
from agrag_pipeline.sinks.graph.ladybug_store import LadybugGraphStore
from agrag_pipeline.sinks.graph.step import build_graph, graph_problems
from agrag_pipeline.sinks.index import update_document
from agrag_pipeline.storage.warehouse import TABLES
from agrag_pipeline_tests.reliability.stored import stored_contents

REPO_ROOT = Path(__file__).resolve().parents[2]

DOCS = {
    "keep.md": "# Keep\n\nThe kept document stays in every sink.\n\n## More\n\nA second part.\n",
    "torn.md": "# Torn\n\nThe torn document's record is garbage when its file goes.\n",
    "lost.md": "# Lost\n\nThe lost document's record is gone when its file goes.\n",
}


@pytest.fixture(scope="module")
def settings():  # type: ignore[no-untyped-def]
    return load_settings(DEFAULT_SETTINGS_PATH)


@pytest.fixture(scope="module")
def minilm(settings) -> Embedder:  # type: ignore[no-untyped-def]
    """The real default model (packaged weights, offline), loaded once for this module."""
    from agrag_pipeline.embedding import make_embedder

    return make_embedder(settings.embedding, None)


def _runtime(settings, tmp_path: Path, docs: dict[str, str]) -> Runtime:  # type: ignore[no-untyped-def]
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    for name, text in docs.items():
        (raw / name).write_text(text, encoding="utf-8")
    return Runtime(
        settings=settings,
        raw_root=raw,
        warehouse_root=str(tmp_path / "wh"),
        cache_dir=tmp_path / "cache",
    )


def _truncate(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def _flip(path: Path) -> None:
    """Flip one bit of a Parquet file's first column chunk, two bytes before its end: inside
    a data page, past its header, so the footer reads fine and only the page checksum sees it."""
    column = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    at = start + column.total_compressed_size - 2
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _ids(*keys: str) -> list:
    return [Document.node_id_for(k) for k in keys]


# -- a deleted document leaves every output, whatever state its record is in --------------------
def test_a_deleted_document_whose_record_is_garbage_or_missing_leaves_every_output(
    settings, minilm: Embedder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    runtime = _runtime(settings, tmp_path, DOCS)
    runtime._embedder = minilm
    warehouse = runtime.warehouse
    store, index = runtime.graph_store, runtime.search_index
    assert store is not None
    for key in DOCS:
        document = run_document(runtime, key).document
        build_graph(warehouse, document, store)
        assert update_document(warehouse, index, key).rows > 0
    store.close()
    keep, torn, lost = _ids("keep.md", "torn.md", "lost.md")
    kept_counts, kept_rows = store.counts(str(keep)), index.document_chunk_ids(str(keep))
    # Extraction is not configured here, so its tables exist for no document.
    kept_tables = [t for t in TABLES if warehouse.has_table(t, keep)]
    assert {"sections", "chunks", "graph_nodes", "graph_edges"} <= set(kept_tables)
    store.close()
    assert index.document_chunk_ids(str(torn)) and index.document_chunk_ids(str(lost))
    Path(warehouse.document_path(torn)).write_bytes(os.urandom(300))  # no key left in it
    Path(warehouse.document_path(lost)).unlink()
    (runtime.raw_root / "torn.md").unlink()
    (runtime.raw_root / "lost.md").unlink()

    status = main(
        [
            "core",
            "--raw-root",
            str(runtime.raw_root),
            "--warehouse",
            runtime.warehouse_root,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-embed",
            "--workers",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "REMOVED torn.md: no longer a document" in out
    assert "REMOVED lost.md: no longer a document" in out
    for gone in (torn, lost):
        assert not any(warehouse.has_table(t, gone) for t in TABLES)
        assert not Path(warehouse.document_path(gone)).exists()
        assert not Path(warehouse.failure_path(gone)).exists()
        assert index.document_chunk_ids(str(gone)) == set()
        assert all(n == 0 for n in store.counts(str(gone)).values())
    assert store.counts(str(keep)) == kept_counts  # the kept document is untouched
    assert index.document_chunk_ids(str(keep)) == kept_rows
    store.close()
    assert all(warehouse.has_table(t, keep) for t in kept_tables)


# -- a failure record never outlives the success of the version it is about -----------------
def test_a_failure_of_a_version_a_second_core_replaced_meanwhile_is_not_left_behind(
    settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    runtime = _runtime(settings, tmp_path, {"alpha.md": "# Alpha\n\nThe first version.\n"})
    warehouse, raw = runtime.warehouse, runtime.raw_root
    real_chunker = runtime.chunker

    class SecondCoreMeanwhile:
        """The real chunker; while it runs, a real ``agrag core`` stores the edited version."""

        chunker_hash = real_chunker.chunker_hash

        def chunk(self, parsed, **kwargs):  # type: ignore[no-untyped-def]
            (raw / "alpha.md").write_text("# Alpha v2\n\nThe edited version.\n", encoding="utf-8")
            argv = [sys.executable, "-m", "agrag_pipeline.cli", "core", "--no-embed"]
            argv += ["--raw-root", str(raw), "--warehouse", runtime.warehouse_root]
            argv += ["--cache-dir", str(tmp_path / "cache"), "--workers", "1"]
            done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT)
            assert done.returncode == 0, done.stdout + done.stderr
            return real_chunker.chunk(parsed, **kwargs)

    runtime.__dict__["chunker"] = SecondCoreMeanwhile()
    [outcome] = run_isolated(
        "core", ["alpha.md"], lambda k: run_document(runtime, k, embed=False), warehouse
    )
    # This run says what happened to it; the warehouse does not say the document failed.
    assert not outcome.ok and outcome.error is not None and "replaced meanwhile" in outcome.error
    document_id = Document.node_id_for("alpha.md")
    assert not Path(warehouse.failure_path(document_id)).exists()
    assert warehouse.read_failures(document_id) == {}
    meta = warehouse.table_metadata("chunks", document_id)
    assert (
        meta is not None
        and meta["content_hash"] == current_document(warehouse, "alpha.md").content_hash
    )


def test_a_failed_dagster_step_is_cleared_by_a_later_core_success_of_that_version(
    settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    runtime = _runtime(settings, tmp_path, {"alpha.md": "# Alpha\n\nSome text.\n"})
    warehouse = runtime.warehouse
    run_document(runtime, "alpha.md", embed=False)
    document = current_document(warehouse, "alpha.md")
    assert document.id is not None
    _truncate(Path(warehouse.table_path("sections", document.id)))

    def chunks_step(key: str):  # type: ignore[no-untyped-def]  # the Dagster chunks step alone
        return build_chunks(
            warehouse,
            current_document(warehouse, key),
            runtime.chunker,
            schema_fingerprint=runtime.schema_fingerprint,
            extraction_fingerprint=runtime.extraction_fingerprint,
            force=True,
        )

    [failed] = run_isolated("chunks", ["alpha.md"], chunks_step, warehouse)
    assert not failed.ok
    record = json.loads(Path(warehouse.failure_path(document.id)).read_text())
    assert record["chunks"]["content_hash"] == document.content_hash  # it names its version
    # `agrag core` rebuilds the sections and succeeds on the same version: nothing failed now.
    [done] = run_isolated(
        "core", ["alpha.md"], lambda k: run_document(runtime, k, embed=False), warehouse
    )
    assert done.ok and done.record_error is None
    assert not Path(warehouse.failure_path(document.id)).exists()


_RECORDER = """
import sys, uuid
from pathlib import Path
from agrag_pipeline.storage import Warehouse
root, tag, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
warehouse = Warehouse(root)
document_id = uuid.UUID(sys.argv[5])
print("ready", flush=True)
while not go.exists():
    pass
for i in range(count):
    record = {"source_key": "shared.md", "error": f"{tag}{i} failed", "step": f"{tag}{i}"}
    warehouse.record_failure(document_id, f"{tag}{i}", record)
    if tag == "cleared":
        warehouse.clear_failure(document_id, f"{tag}{i}")
"""


def test_two_processes_recording_and_clearing_failures_of_one_document_lose_nothing(
    tmp_path: Path,
) -> None:
    """One process records a failure per step and clears it at once; the other records one per
    step and keeps it: at the end, exactly the second's are there (an unlocked read-modify-write
    loses records of the one or brings back cleared records of the other)."""
    root, go, count = tmp_path / "wh", tmp_path / "go", 150
    document_id = Document.node_id_for("shared.md")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _RECORDER,
                str(root),
                tag,
                str(count),
                str(go),
                str(document_id),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        for tag in ("cleared", "kept")
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()  # both start at once
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    path = root / "failures" / f"{document_id}.json"
    stored = json.loads(path.read_text())
    assert sorted(stored) == sorted(f"kept{i}" for i in range(count))


# -- damaged sinks are named, set aside and rebuilt ---------------------------------------------
@pytest.fixture
def graphed(settings, minilm: Embedder, tmp_path: Path) -> Runtime:  # type: ignore[no-untyped-def]
    """Two documents through every step, their graph tables and the embedded graph database."""
    runtime = _runtime(settings, tmp_path, {k: DOCS[k] for k in ("keep.md", "torn.md")})
    runtime._embedder = minilm
    store = runtime.graph_store
    assert store is not None
    for key in ("keep.md", "torn.md"):
        build_graph(runtime.warehouse, run_document(runtime, key).document, store)
    store.close()
    return runtime


def _graph_tables(root: Path) -> dict[str, object]:
    return stored_contents(
        root, lambda rel: rel.parts[0].startswith("graph_") and ".corrupt-" not in rel.name
    )


def test_a_truncated_or_bit_flipped_graph_table_is_named_set_aside_and_rebuilt(
    graphed: Runtime,
) -> None:
    warehouse, root = graphed.warehouse, Path(graphed.warehouse_root)
    sound = _graph_tables(root)
    keep, torn = _ids("keep.md", "torn.md")
    nodes = Path(warehouse.table_path("graph_nodes", keep))
    edges = Path(warehouse.table_path("graph_edges", torn))
    _truncate(nodes)
    _flip(edges)  # a data page: its checksum fails, its footer is fine
    store = LadybugGraphStore(Path(graphed.warehouse_root) / "_graph" / "graph.lbdb")
    try:
        for key in ("keep.md", "torn.md"):  # the next run of the graph step
            result = build_graph(warehouse, current_document(warehouse, key), store)
            assert not result.reused
        for document_id in (keep, torn):
            assert graph_problems(warehouse, warehouse.get_document(document_id), store) == []  # type: ignore[arg-type]
    finally:
        store.close()
    repairs = "\n".join(warehouse.repairs)
    for damaged in (nodes, edges):
        assert str(damaged) in repairs  # named
        assert len(list(damaged.parent.glob(f"{damaged.name}.corrupt-*"))) == 1  # set aside
    assert _graph_tables(root) == sound  # rebuilt, the same content


def test_a_truncated_graph_database_is_set_aside_and_reloaded_from_the_graph_tables(
    graphed: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    warehouse = graphed.warehouse
    path = Path(graphed.warehouse_root) / "_graph" / "graph.lbdb"
    _truncate(path)
    store = LadybugGraphStore(path)
    try:
        with caplog.at_level(logging.WARNING):
            # The next run builds the graph of one document; the store is whole again.
            result = build_graph(warehouse, current_document(warehouse, "keep.md"), store)
        assert result.counts["Chunk"] > 0
        for key in ("keep.md", "torn.md"):
            document = current_document(warehouse, key)
            assert graph_problems(warehouse, document, store) == []
            assert store.counts(str(document.id)) == build_graph(warehouse, document, store).counts
    finally:
        store.close()
    (aside,) = store.set_aside
    assert aside.name.startswith("graph.lbdb.corrupt-") and aside.exists()
    assert any(str(path) in r.getMessage() and "damaged" in r.getMessage() for r in caplog.records)


def test_a_graph_database_that_differs_from_the_tables_is_repaired_on_the_next_run(
    graphed: Runtime,
) -> None:
    warehouse = graphed.warehouse
    path = Path(graphed.warehouse_root) / "_graph" / "graph.lbdb"
    keep, torn = (current_document(warehouse, k) for k in ("keep.md", "torn.md"))
    store = LadybugGraphStore(path)
    try:
        # Rewire one document's edges keeping every count (a HAS_SECTION edge moved to another
        # section of the same document) and drop the other document altogether.
        store._run(
            [
                (
                    "MATCH (d:Document {id: $d})-[e:HAS_SECTION]->(s:Section) "
                    "WITH d, e, s ORDER BY s.ordinal DESC LIMIT 1 DELETE e",
                    {"d": str(keep.id)},
                ),
                (
                    "MATCH (d:Document {id: $d})-[:HAS_SECTION]->(s:Section) "
                    "WITH d, s ORDER BY s.ordinal LIMIT 1 CREATE (d)-[:HAS_SECTION]->(s)",
                    {"d": str(keep.id)},
                ),
            ]
        )
        store.delete_document(str(torn.id))
        assert graph_problems(warehouse, keep, store) and graph_problems(warehouse, torn, store)
    finally:
        store.close()
    store = LadybugGraphStore(path)  # the next run, which graphs one document
    try:
        assert not build_graph(warehouse, keep, store).reused
        assert graph_problems(warehouse, keep, store) == []
        assert graph_problems(warehouse, torn, store) == []  # written back from its tables
    finally:
        store.close()
    assert any("lacked 1 documents" in r for r in warehouse.repairs)


def test_a_damaged_or_missing_pdf_layout_is_rebuilt_so_no_step_fails_or_loses_pages(
    settings, tmp_path: Path, corpus_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    runtime = _runtime(settings, tmp_path, {})
    (runtime.raw_root / "paper.pdf").write_bytes(
        (corpus_dir / "pdf" / "multi_page.pdf").read_bytes()
    )
    run_document(runtime, "paper.pdf", embed=False)
    warehouse = runtime.warehouse
    document = current_document(warehouse, "paper.pdf")
    assert document.id is not None
    layout = Path(warehouse.layout_path(document.id, document.content_hash))
    sound = stored_contents(tmp_path / "wh", lambda rel: rel.name == layout.name)
    chunks = stored_contents(tmp_path / "wh", lambda rel: rel.parts[0] == "chunks")

    def chunks_step() -> None:
        """The chunks step alone, rebuilding (as a Dagster run does when the chunker changes)."""
        build_chunks(
            warehouse,
            current_document(warehouse, "paper.pdf"),
            runtime.chunker,
            schema_fingerprint=runtime.schema_fingerprint,
            extraction_fingerprint=runtime.extraction_fingerprint,
            force=True,
        )

    for damage in (_truncate, _flip, Path.unlink):
        damage(layout)
        chunks_step()
        assert str(layout) in warehouse.repairs[-1]  # named
        assert stored_contents(tmp_path / "wh", lambda rel: rel.name == layout.name) == sound
        # the same chunks, each still with its pages (none silently a text provenance)
        assert stored_contents(tmp_path / "wh", lambda rel: rel.parts[0] == "chunks") == chunks
    assert len(list(layout.parent.glob(f"{layout.name}.corrupt-*"))) == 2  # both damaged kept


@pytest.mark.parametrize("cut", ["empty", "mid-page"])
def test_an_embedding_cache_cut_short_is_named_set_aside_and_rebuilt(
    minilm: Embedder, tmp_path: Path, caplog: pytest.LogCaptureFixture, cut: str
) -> None:
    texts = [f"Sentence number {i} about ownership." for i in range(40)]
    with EmbeddingCache.in_dir(tmp_path) as cache:
        expected, _ = embed_with_cache(minilm, texts, cache)
    path = tmp_path / "embeddings.sqlite3"
    size = path.stat().st_size
    with open(path, "r+b") as handle:  # SQLite opens both without a word
        handle.truncate(0 if cut == "empty" else size - 1000)
    with caplog.at_level(logging.WARNING), EmbeddingCache.in_dir(tmp_path) as cache:
        vectors, stats = embed_with_cache(minilm, texts, cache)
        assert (stats.hits, stats.misses) == (0, 40)  # nothing read from the cut file
        (aside,) = cache.set_aside
    assert aside.name.startswith("embeddings.sqlite3.corrupt-") and aside.exists()
    assert any(
        str(path) in r.getMessage() and "cut short" in r.getMessage() for r in caplog.records
    )
    with EmbeddingCache.in_dir(tmp_path) as cache:  # rebuilt: whole, every vector again
        assert cache.count(minilm.fingerprint) == 40 and not cache.set_aside
    assert vectors.shape == expected.shape
    assert abs(vectors - expected).max() < 1e-5
