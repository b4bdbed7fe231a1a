"""Extraction against a real model: llama.cpp's OpenAI-compatible server (llama-cpp-python)
serving Gemma-3-270M on loopback, with real HTTP, a real JSON-Schema grammar, the real cache and
the real embedded graph database.

One model call in all, because on this shared two-core machine a grammar-constrained answer of
the 262k-token-vocabulary model takes minutes (see BENCHMARKS.md): a one-section document is
extracted; a forced rerun costs zero calls; a second document holding the same section verbatim
sends the identical request (a cache hit) and so names the same entities, which merge into one
node each; deleting it takes its mentions out of the tables and the graph database and leaves
the shared entities to the first. The incremental cost of an edit, and the merge and delete
rules on several chunks, are proven against a scripted endpoint
(``test_extraction_entity_graph``, ``test_extraction_faults``). The small model proves the path,
not extraction quality.
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

SECTION = (
    "# Dagster\n\nDagster is a data orchestrator maintained by Dagster Labs. "
    "Dagster uses software-defined assets.\n"
)

#: From an entity to the chunks that mention it and the document versions they belong to.
README_QUERY = (
    "MATCH (e:Entity {id: $id})<-[:MENTIONS]-(c:Chunk)<-[:HAS_CHUNK]-(d:Document) "
    "RETURN d.source_key AS document, d.content_hash AS version, c.`index` AS chunk "
    "ORDER BY document, chunk"
)


def _extract(rt: Runtime, key: str, *, force: bool = False):  # type: ignore[no-untyped-def]
    client, cache = llm_parts(rt.settings, rt.embedding_cache_dir)
    assert cache is not None
    try:
        document = current_document(rt.warehouse, key)
        return build_extractions(rt.warehouse, document, rt.settings, client, cache, force=force)
    finally:
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


def test_a_real_model_extracts_caches_merges_and_forgets(
    llama_base_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = settings_for(llama_base_url, response_format="json_object", timeout_s=900)
    settings = settings.model_copy(
        update={
            "extraction": settings.extraction.model_copy(
                update={"model": "gemma-3-270m-q4_k_m", "max_gleanings": 0}
            )
        }
    )
    rt = chunked_runtime(tmp_path_factory.mktemp("llama"), settings, {"guide.md": SECTION})

    started = time.perf_counter()
    first = _extract(rt, "guide.md")
    print(
        f"\none chunk: {first.calls} call, {time.perf_counter() - started:.1f} s, "
        f"{first.prompt_tokens} prompt and {first.completion_tokens} completion tokens"
    )
    document = current_document(rt.warehouse, "guide.md")
    assert document.id is not None
    assert first.failed_chunks == {} and first.chunks == 1 and first.calls == 1
    assert first.entities >= 1, "the model named no entity of the schema"
    rows = rt.warehouse.read_table("entity_mentions", document.id).to_pylist()
    (chunk,) = load_chunks(rt.warehouse, document)
    for row in rows:
        assert row["chunk_id"] == str(chunk.id) and row["content_hash"] == document.content_hash
        assert row["extraction_fingerprint"] == settings.extraction_fingerprint
        assert row["model"] == "gemma-3-270m-q4_k_m" and len(row["cache_key"]) == 64

    started = time.perf_counter()
    rerun = _extract(rt, "guide.md", force=True)
    print(f"forced rerun from the cache: {time.perf_counter() - started:.2f} s")
    assert rerun.calls == 0 and rerun.cache_hits == 1
    assert (rerun.entities, rerun.relations) == (first.entities, first.relations)

    (rt.raw_root / "notes.md").write_text(SECTION, encoding="utf-8")
    no_llm = Runtime(
        settings=settings.model_copy(update={"llm": None}),
        raw_root=rt.raw_root,
        warehouse_root=rt.warehouse_root,
        cache_dir=rt.cache_dir,
    )
    run_document(no_llm, "notes.md", embed=False)
    notes = _extract(rt, "notes.md")
    assert notes.calls == 0 and notes.cache_hits == 1  # the identical request
    for key in ("guide.md", "notes.md"):
        _to_graph(rt, key)
    store = rt.graph_store
    assert store is not None
    ids = {r["entity_id"] for r in rows}
    assert {r["id"] for r in store.query("MATCH (e:Entity) RETURN e.id AS id")} == ids
    some = sorted(ids)[0]
    assert [r["document"] for r in store.query(README_QUERY, {"id": some})] == [
        "guide.md",
        "notes.md",
    ]

    (rt.raw_root / "notes.md").unlink()
    (removal,) = remove_deleted(rt.warehouse, ["notes.md"], rt.document_sinks())
    assert removal.error is None
    assert not rt.warehouse.has_table("entity_mentions", Document.node_id_for("notes.md"))
    assert [r["document"] for r in store.query(README_QUERY, {"id": some})] == ["guide.md"]
    assert {r["id"] for r in store.query("MATCH (e:Entity) RETURN e.id AS id")} == ids
    (removal,) = remove_deleted(rt.warehouse, ["guide.md"], rt.document_sinks())
    assert store.query("MATCH (e:Entity) RETURN count(e) AS n") == [{"n": 0}]
    store.close()
