"""Extraction against a real model: llama.cpp's OpenAI-compatible server with Gemma-3-270M on
loopback (real HTTP, a real JSON-Schema grammar, the real cache, the real graph database).

One module-wide warehouse: a document is extracted, re-run (zero calls), edited in one section
(the calls of that chunk only), then a second document sharing one section verbatim is added
(identical requests, so the same entities, merged into one node each) and deleted again (its
facts, and the entities only it mentioned, leave the tables and the graph database). The small
model proves the path, not extraction quality.
"""

from __future__ import annotations

import time

import pytest

from agrag_pipeline.extraction.step import build_extractions, llm_parts
from agrag_pipeline.freshness import remove_deleted
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import load_chunks, run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.sinks.graph.entities import build_entity_graph, check_entity_graph
from agrag_pipeline.sinks.graph.step import build_graph
from agrag_pipeline_tests.extraction.conftest import chunked_runtime, current_document, settings_for

pytestmark = pytest.mark.slow

GUIDE = """# Dagster

Dagster is a data orchestrator maintained by Dagster Labs. Dagster uses software-defined assets.

# Storage

DuckDB is an embedded SQL database. DuckDB uses columnar storage.

# Python

Python is a programming language maintained by the Python Software Foundation.
"""

NOTES = """# Dagster

Dagster is a data orchestrator maintained by Dagster Labs. Dagster uses software-defined assets.

# Graphs

Neo4j is a graph database maintained by Neo4j Inc. Neo4j uses the Cypher query language.
"""

#: From an entity to the chunks that mention it and the document versions they belong to.
README_QUERY = (
    "MATCH (e:Entity {name: $name})<-[:MENTIONS]-(c:Chunk)<-[:HAS_CHUNK]-(d:Document) "
    "RETURN d.source_key AS document, d.content_hash AS version, c.`index` AS chunk, "
    "c.id AS chunk_id ORDER BY document, chunk"
)


@pytest.fixture(scope="module")
def runtime(llama_base_url: str, tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    settings = settings_for(
        llama_base_url, response_format="json_object", timeout_s=300, max_retries=1
    )
    settings = settings.model_copy(
        update={
            "extraction": settings.extraction.model_copy(
                update={"model": "gemma-3-270m-q4_k_m", "max_completion_tokens": 512}
            )
        }
    )
    return chunked_runtime(tmp_path_factory.mktemp("llama-run"), settings, {"guide.md": GUIDE})


def _extract(rt: Runtime, key: str, *, force: bool = False):
    client, cache = llm_parts(rt.settings, rt.embedding_cache_dir)
    try:
        return build_extractions(
            rt.warehouse,
            current_document(rt.warehouse, key),
            rt.settings,
            client,
            cache,
            force=force,
        )
    finally:
        assert cache is not None
        cache.close()


def _to_graph(rt: Runtime, key: str) -> None:
    document = current_document(rt.warehouse, key)
    store = rt.graph_store
    assert store is not None
    build_graph(rt.warehouse, document, store, with_vectors=False)
    relation_types = [r.name for r in rt.settings.graph_schema.relation_types]
    build_entity_graph(rt.warehouse, document, store, relation_types)
    (outcome,) = check_entity_graph(rt.warehouse, key, store)
    assert outcome.passed, outcome.description


def test_a_document_is_extracted_and_a_rerun_costs_no_call(runtime: Runtime):
    started = time.perf_counter()
    first = _extract(runtime, "guide.md")
    seconds = time.perf_counter() - started
    document = current_document(runtime.warehouse, "guide.md")
    chunks = load_chunks(runtime.warehouse, document)
    assert first.failed_chunks == {}
    assert first.chunks == len(chunks) >= 3
    assert first.calls >= len(chunks) and first.cache_hits == 0
    assert first.entities >= 1, "the model named no entity in the guide"
    entities = runtime.warehouse.read_table("entity_mentions", document.id).to_pylist()
    assert {r["chunk_id"] for r in entities} <= {str(c.id) for c in chunks}
    for row in entities:
        assert row["content_hash"] == document.content_hash
        assert row["extraction_fingerprint"] == runtime.settings.extraction_fingerprint
        assert row["model"] == "gemma-3-270m-q4_k_m" and len(row["cache_key"]) == 64
    print(f"\nfirst run: {first.calls} calls for {first.chunks} chunks in {seconds:.1f} s")

    reused = _extract(runtime, "guide.md")
    assert reused.reused and reused.calls == 0
    started = time.perf_counter()
    rerun = _extract(runtime, "guide.md", force=True)
    print(f"forced rerun from the cache: {time.perf_counter() - started:.2f} s")
    assert rerun.calls == 0 and rerun.cache_hits == first.calls
    assert (rerun.entities, rerun.relations) == (first.entities, first.relations)


def test_an_edit_re_extracts_only_the_changed_chunk(runtime: Runtime):
    before = _extract(runtime, "guide.md")
    path = runtime.raw_root / "guide.md"
    path.write_text(GUIDE.replace("columnar storage", "vectorised execution"), encoding="utf-8")
    run_document(_without_llm(runtime), "guide.md", embed=False)
    started = time.perf_counter()
    after = _extract(runtime, "guide.md")
    print(
        f"\nedit of 1 of {after.chunks} chunks: {after.calls} calls, "
        f"{time.perf_counter() - started:.1f} s"
    )
    assert after.failed_chunks == {}
    assert 1 <= after.calls <= 1 + runtime.settings.extraction.max_gleanings
    assert after.cache_hits >= after.chunks - 1
    assert after.chunks == before.chunks


def _without_llm(rt: Runtime) -> Runtime:
    return Runtime(
        settings=rt.settings.model_copy(update={"llm": None}),
        raw_root=rt.raw_root,
        warehouse_root=rt.warehouse_root,
        cache_dir=rt.cache_dir,
    )


def test_two_documents_share_an_entity_node_and_a_delete_takes_its_facts(runtime: Runtime):
    (runtime.raw_root / "notes.md").write_text(NOTES, encoding="utf-8")
    run_document(_without_llm(runtime), "notes.md", embed=False)
    for key in ("guide.md", "notes.md"):
        result = _extract(runtime, key)
        assert result.failed_chunks == {}
        _to_graph(runtime, key)
    store = runtime.graph_store
    assert store is not None
    tables = {
        key: runtime.warehouse.read_table(
            "entity_mentions", current_document(runtime.warehouse, key).id
        ).to_pylist()
        for key in ("guide.md", "notes.md")
    }
    shared = {r["entity_id"] for r in tables["guide.md"]} & {
        r["entity_id"] for r in tables["notes.md"]
    }
    assert shared, "the section both documents hold gave no common entity"
    name = next(r["name"] for r in tables["notes.md"] if r["entity_id"] in shared)
    rows = store.query(README_QUERY, {"name": name})
    assert {r["document"] for r in rows} == {"guide.md", "notes.md"}
    assert len(store.query("MATCH (e:Entity {name: $name}) RETURN e.id AS id", {"name": name})) == 1
    all_ids = {r["entity_id"] for rows_ in tables.values() for r in rows_}
    stored = {r["id"] for r in store.query("MATCH (e:Entity) RETURN e.id AS id")}
    assert stored == all_ids

    (runtime.raw_root / "notes.md").unlink()
    (removal,) = remove_deleted(runtime.warehouse, ["notes.md"], runtime.document_sinks())
    assert removal.error is None
    guide_ids = {r["entity_id"] for r in tables["guide.md"]}
    stored = {r["id"] for r in store.query("MATCH (e:Entity) RETURN e.id AS id")}
    assert stored == guide_ids  # what only notes.md mentioned is gone, the shared ones stay
    assert {r["document"] for r in store.query(README_QUERY, {"name": name})} == {"guide.md"}
    guide_chunks = {
        str(c.id)
        for c in load_chunks(runtime.warehouse, current_document(runtime.warehouse, "guide.md"))
    }
    for row in store.query("MATCH (:Entity)-[r]->(:Entity) RETURN r.chunk_ids AS chunk_ids"):
        assert set(row["chunk_ids"]) <= guide_chunks
    notes_id = Document.node_id_for("notes.md")
    for table in ("entity_mentions", "relation_mentions", "entity_graph"):
        assert not runtime.warehouse.has_table(table, notes_id)
    store.close()
