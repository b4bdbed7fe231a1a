"""The graph sink against the real embedded database (LadybugDB): round trip through
``Chunk.from_node``, idempotent re-runs, superseded versions replaced, deletes, isolation
between documents, the check that the graph holds what the tables say, and the README's Cypher.

Neo4j: no Neo4j server can be installed on this machine (no Debian or PyPI package carries
one), so its backend is covered by running the same write statements (``store.write_statements``)
through the embedded database; only its constraint DDL and transport are untested here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import load_chunks, run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.sinks.graph.ladybug_store import LadybugGraphStore
from agrag_pipeline.sinks.graph.model import EDGE_TYPES, NODE_PROPERTIES
from agrag_pipeline.sinks.graph.step import build_graph, graph_problems

DOCS = ("docling/mixed.md", "rust-book/ch03-05-control-flow.md")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path) -> Runtime:
    root = tmp_path_factory.mktemp("graph")
    raw = root / "raw"
    raw.mkdir()
    for name in DOCS:
        (raw / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus_dir / "markdown" / name, raw / name)
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH, raw, str(root / "warehouse"))
    for name in DOCS:
        run_document(rt, name, embed=True)
    return rt


@pytest.fixture
def store(tmp_path: Path):
    graph_store = LadybugGraphStore(tmp_path / "graph.lbdb")
    yield graph_store
    graph_store.close()


def _document(runtime: Runtime, key: str) -> Document:
    document = runtime.warehouse.get_document(Document.node_id_for(key))
    assert document is not None
    return document


def _chunks_with_vectors(runtime: Runtime, document: Document) -> list[dict]:
    assert document.id is not None
    table = runtime.warehouse.read_table("embeddings", document.id)
    vectors = dict(
        zip(table.column("chunk_id").to_pylist(), table.column("vector").to_pylist(), strict=True)
    )
    return [
        c.model_copy(update={"embedding": [float(x) for x in vectors[str(c.id)]]}).model_dump()
        for c in load_chunks(runtime.warehouse, document)
    ]


def test_chunks_read_back_from_the_graph_equal_the_parquet_chunks(runtime, store):
    document = _document(runtime, "docling/mixed.md")
    result = build_graph(runtime.warehouse, document, store)
    read_back = store.chunks(str(document.id))
    assert [c.model_dump() for c in read_back] == _chunks_with_vectors(runtime, document)
    assert result.counts["Chunk"] == len(read_back) > 1
    assert result.counts["Document"] == 1
    assert result.counts["NEXT_CHUNK"] == len(read_back) - 1
    assert result.counts["HAS_CHUNK"] == len(read_back)


def test_every_edge_type_and_section_parent_is_written(runtime, store):
    document = _document(runtime, "rust-book/ch03-05-control-flow.md")
    result = build_graph(runtime.warehouse, document, store)
    sections = runtime.warehouse.read_table("sections", document.id).to_pylist()
    with_parent = [s for s in sections if s["parent_id"]]
    assert result.counts["Section"] == len(sections)
    assert result.counts["HAS_SECTION"] == len(sections)
    assert result.counts["SUBSECTION_OF"] == len(with_parent) > 0
    # The store holds every document with graph tables (build_graph reconciles it with them).
    rows = store.query(
        "MATCH (:Document {id: $d})-[:HAS_SECTION]->(s:Section)-[:SUBSECTION_OF]->(p:Section) "
        "RETURN s.id AS s, p.id AS p",
        {"d": str(document.id)},
    )
    assert {(r["s"], r["p"]) for r in rows} == {(s["id"], s["parent_id"]) for s in with_parent}
    from_section = store.query(
        "MATCH (:Document {id: $d})-[:HAS_CHUNK]->(c:Chunk)-[:FROM_SECTION]->(s:Section) "
        "RETURN c.id AS c, s.id AS s",
        {"d": str(document.id)},
    )
    expected = {
        (str(c.id), str(s)) for c in load_chunks(runtime.warehouse, document) for s in c.section_ids
    }
    assert {(r["c"], r["s"]) for r in from_section} == expected


def test_rerunning_the_graph_step_changes_nothing(runtime, store):
    document = _document(runtime, "docling/mixed.md")
    first = build_graph(runtime.warehouse, document, store)
    ids, edges = store.node_ids(str(document.id)), store.edges(str(document.id))
    again = build_graph(runtime.warehouse, document, store)
    forced = build_graph(runtime.warehouse, document, store, force=True)
    assert again.reused and not forced.reused
    assert first.counts == again.counts == forced.counts == store.counts(str(document.id))
    assert store.node_ids(str(document.id)) == ids
    assert store.edges(str(document.id)) == edges
    assert forced.superseded == 0


def test_an_edit_replaces_the_superseded_nodes_and_leaves_the_other_document(
    runtime, store, tmp_path
):
    edited = runtime.raw_root / "docling/mixed.md"
    original = edited.read_bytes()
    other = _document(runtime, "rust-book/ch03-05-control-flow.md")
    build_graph(runtime.warehouse, other, store)
    other_ids, other_edges = store.node_ids(str(other.id)), store.edges(str(other.id))
    old = _document(runtime, "docling/mixed.md")
    build_graph(runtime.warehouse, old, store)
    old_ids = store.node_ids(str(old.id))
    try:
        edited.write_bytes(original + b"\n\n# A new closing heading\n\nWith a new paragraph.\n")
        run_document(runtime, "docling/mixed.md", embed=True)
        new = _document(runtime, "docling/mixed.md")
        assert new.content_hash != old.content_hash
        result = build_graph(runtime.warehouse, new, store)
        new_ids = store.node_ids(str(new.id))
        assert result.superseded == len(old_ids["Chunk"] | old_ids["Section"])
        assert not (new_ids["Chunk"] & old_ids["Chunk"])
        assert not (new_ids["Section"] & old_ids["Section"])
        assert store.query(
            "MATCH (d:Document {id: $id}) RETURN d.content_hash AS h", {"id": str(new.id)}
        ) == [{"h": new.content_hash}]
        assert any(
            "With a new paragraph." in c.text and c.heading_path[-1:] == ["A new closing heading"]
            for c in store.chunks(str(new.id))
        )
        assert graph_problems(runtime.warehouse, new, store) == []
        assert store.node_ids(str(other.id)) == other_ids
        assert store.edges(str(other.id)) == other_edges
    finally:
        edited.write_bytes(original)
        run_document(runtime, "docling/mixed.md", embed=True)


def test_a_deleted_document_leaves_the_graph_and_the_other_stays(runtime, store):
    gone, kept = (
        _document(runtime, "docling/mixed.md"),
        _document(runtime, "rust-book/ch03-05-control-flow.md"),
    )
    build_graph(runtime.warehouse, gone, store)
    build_graph(runtime.warehouse, kept, store)
    kept_counts = store.counts(str(kept.id))
    gone_counts = store.counts(str(gone.id))
    removed = store.delete_document(str(gone.id))
    assert removed == sum(gone_counts[label] for label in NODE_PROPERTIES) > 1
    assert all(n == 0 for n in store.counts(str(gone.id)).values())
    assert (
        store.query("MATCH (c:Chunk) WHERE c.document_id = $d RETURN c.id", {"d": str(gone.id)})
        == []
    )
    assert store.counts(str(kept.id)) == kept_counts


def test_the_check_names_what_the_graph_lacks(runtime, store):
    document = _document(runtime, "rust-book/ch03-05-control-flow.md")
    build_graph(runtime.warehouse, document, store)
    assert graph_problems(runtime.warehouse, document, store) == []
    store._run(
        [
            (
                "MATCH (c:Chunk) WHERE c.document_id = $d AND c.`index` = 0 DETACH DELETE c",
                {"d": str(document.id)},
            )
        ]
    )
    problems = graph_problems(runtime.warehouse, document, store)
    assert any(p.startswith("Chunk: 1 missing") for p in problems)
    assert any(p.startswith("edges:") for p in problems)
    # Not reused while the store disagrees with the tables: the step repairs it.
    assert not build_graph(runtime.warehouse, document, store).reused
    assert graph_problems(runtime.warehouse, document, store) == []


def test_a_second_process_waits_for_the_embedded_database_instead_of_failing(runtime, tmp_path):
    path = tmp_path / "shared.lbdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from agrag_pipeline.sinks.graph.ladybug_store import LadybugGraphStore\n"
            f"s = LadybugGraphStore({str(path)!r}); s.ensure_schema()\n"
            "print('held', flush=True); time.sleep(2); s.close()\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        store = LadybugGraphStore(path)
        document = _document(runtime, "rust-book/ch03-05-control-flow.md")
        result = build_graph(runtime.warehouse, document, store, force=True)
        waited = time.monotonic() - started
        store.close()
        assert result.counts["Document"] == 1
        assert waited > 0.5  # it waited for the holder's lock rather than failing at once
    finally:
        holder.wait(timeout=30)


def test_the_readme_cypher_walks_chunk_to_section_path_and_document_to_chunks(
    runtime, store, repo_root
):
    readme = (repo_root / "README.md").read_text()
    blocks = re.findall(r"```cypher\n(.*?)```", readme, flags=re.S)
    assert len(blocks) >= 2, "the README shows the graph queries in ```cypher blocks"
    document = _document(runtime, "rust-book/ch03-05-control-flow.md")
    build_graph(runtime.warehouse, document, store)
    chunks = load_chunks(runtime.warehouse, document)
    deepest = max(chunks, key=lambda c: len(c.heading_path))
    assert len(deepest.heading_path) >= 3
    walked = store.query(blocks[0], {"chunk_id": str(deepest.id)})
    assert {(r["source_key"], r["version"]) for r in walked} == {
        ("rust-book/ch03-05-control-flow.md", document.content_hash)
    }
    assert [r["heading"] for r in walked] == deepest.heading_path
    ordered = store.query(blocks[1], {"source_key": "rust-book/ch03-05-control-flow.md"})
    assert [r["position"] for r in ordered] == [c.index for c in chunks]
    assert [r["text"] for r in ordered] == [c.text for c in chunks]


def test_schema_names_every_label_and_edge_type():
    assert set(NODE_PROPERTIES) == {"Document", "Section", "Chunk"}
    assert set(EDGE_TYPES) == {
        "HAS_SECTION",
        "SUBSECTION_OF",
        "HAS_CHUNK",
        "FROM_SECTION",
        "NEXT_CHUNK",
    }


def test_a_document_removed_from_the_raw_root_leaves_the_graph_sink(runtime, store, tmp_path):
    from agrag_pipeline.freshness import remove_deleted

    key = "docling/mixed.md"
    document = _document(runtime, key)
    build_graph(runtime.warehouse, document, store)
    kept = _document(runtime, "rust-book/ch03-05-control-flow.md")
    build_graph(runtime.warehouse, kept, store)
    kept_counts = store.counts(str(kept.id))
    try:
        [removal] = remove_deleted(runtime.warehouse, [key], [store])
        assert removal.error is None
        assert any(entry.startswith(store.name) for entry in removal.removed)
        assert all(n == 0 for n in store.counts(str(document.id)).values())
        assert not runtime.warehouse.has_table("graph_nodes", document.id)
        assert store.counts(str(kept.id)) == kept_counts
    finally:
        run_document(runtime, key, embed=True)
