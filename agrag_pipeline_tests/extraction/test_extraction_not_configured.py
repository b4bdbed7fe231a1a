"""With no ``llm:`` endpoint (the default settings), extraction says so plainly, writes no
rows, and never fails a document; the entity graph step leaves the graph database as it is."""

from __future__ import annotations

from pathlib import Path

from agrag_pipeline.defs.extraction import extraction_metadata
from agrag_pipeline.extraction.step import NOT_CONFIGURED, build_extractions, llm_parts
from agrag_pipeline.pipeline import current_document, run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.sinks.graph.entities import build_entity_graph
from agrag_pipeline.sinks.graph.ladybug_store import LadybugGraphStore
from agrag_pipeline.sinks.graph.step import build_graph


def test_without_an_endpoint_extraction_is_not_configured_and_writes_nothing(tmp_path: Path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.md").write_text("# A\n\nDagster uses assets.\n", encoding="utf-8")
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH, raw, str(tmp_path / "warehouse"))
    assert rt.settings.llm is None
    run_document(rt, "a.md", embed=False)
    document = current_document(rt.warehouse, "a.md")
    client, cache = llm_parts(rt.settings, rt.embedding_cache_dir)
    result = build_extractions(rt.warehouse, document, rt.settings, client, cache)
    assert not result.configured
    metadata = extraction_metadata(result, rt.warehouse)
    assert metadata["agrag/status"] == "not configured"
    assert metadata["extraction"] == NOT_CONFIGURED and metadata["dagster/row_count"] == 0
    assert document.id is not None
    assert not rt.warehouse.has_table("entity_mentions", document.id)
    store = LadybugGraphStore(tmp_path / "graph.lbdb")
    try:
        build_graph(rt.warehouse, document, store, with_vectors=False)
        graph = build_entity_graph(rt.warehouse, document, store, ["USES"])
        assert not graph.configured and graph.mentions == 0
        assert store.query("MATCH (e:Entity) RETURN count(e) AS n") == [{"n": 0}]
    finally:
        store.close()
