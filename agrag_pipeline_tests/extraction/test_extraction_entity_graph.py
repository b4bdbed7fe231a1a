"""The merged entity graph in the real embedded graph database, fed by a scripted endpoint whose
answers depend on the passage (so every expected node is known): one node per entity across
documents, MENTIONS from the chunks, relations carrying their chunk ids; an edit replaces a
document's facts, a delete removes them and the entities nothing mentions any more."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agrag_pipeline.extraction.cache import ResponseCache
from agrag_pipeline.extraction.client import ChatClient
from agrag_pipeline.extraction.step import ExtractionResult, build_extractions
from agrag_pipeline.freshness import remove_deleted
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import load_chunks, run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.sinks.graph.entities import build_entity_graph, check_entity_graph
from agrag_pipeline.sinks.graph.step import build_graph
from agrag_pipeline_tests.extraction.conftest import chunked_runtime, current_document, settings_for
from agrag_pipeline_tests.extraction.llm_support import Reply, ScriptedChatServer, chat_body

#: Tools a passage names (by the word in it) -> the answer the scripted model gives.
TOOLS = ("Dagster", "DuckDB", "Neo4j")


def _answer(request: dict[str, Any]) -> Reply:
    passage = str(request["messages"][0]["content"])
    named = [t for t in TOOLS if t in passage]
    entities = [
        {"name": t, "type": "Tool", "description": f"{t}.", "properties": {"version": None}}
        for t in named
    ] + [{"name": "SQL", "type": "Concept", "description": "", "properties": {"summary": None}}]
    relations = [
        {"source": t, "target": "sql", "type": "USES", "description": "", "strength": 5}
        for t in named
    ]
    return 200, chat_body(json.dumps({"entities": entities, "relations": relations})), 0


#: The README's query: from an entity to the chunks that mention it and their document versions.
README_QUERY = (
    "MATCH (e:Entity {name: $name})<-[:MENTIONS]-(c:Chunk)<-[:HAS_CHUNK]-(d:Document) "
    "RETURN d.source_key AS document, d.content_hash AS version, c.`index` AS chunk "
    "ORDER BY document, chunk"
)


def _sync(rt: Runtime, client: ChatClient, cache: ResponseCache, key: str) -> ExtractionResult:
    run_document(_no_llm(rt), key, embed=False)
    document = current_document(rt.warehouse, key)
    result = build_extractions(rt.warehouse, document, rt.settings, client, cache)
    store = rt.graph_store
    assert store is not None
    build_graph(rt.warehouse, document, store, with_vectors=False)
    build_entity_graph(rt.warehouse, document, store, ["USES", "PART_OF", "MAINTAINS"])
    (outcome,) = check_entity_graph(rt.warehouse, key, store)
    assert outcome.passed, outcome.description
    return result


def _no_llm(rt: Runtime) -> Runtime:
    return Runtime(
        settings=rt.settings.model_copy(update={"llm": None}),
        raw_root=rt.raw_root,
        warehouse_root=rt.warehouse_root,
        cache_dir=rt.cache_dir,
    )


def _naming(rt: Runtime, word: str, *keys: str) -> set[str]:
    """Ids of the current chunks of ``keys`` whose text names ``word``."""
    return {
        str(c.id)
        for key in keys
        for c in load_chunks(rt.warehouse, current_document(rt.warehouse, key))
        if word in c.text
    }


def test_entities_merge_across_documents_and_follow_edits_and_deletes(tmp_path: Path):
    documents = {
        "a.md": "# One\n\nDagster runs SQL.\n\n# Two\n\nDuckDB answers SQL.\n",
        "b.md": "# Three\n\nDagster again, with SQL.\n",
    }
    with ScriptedChatServer(_answer) as server:
        settings = settings_for(server.base_url, max_retries=0)
        rt = chunked_runtime(tmp_path, settings, documents)
        client, cache = ChatClient(settings.llm), ResponseCache.in_dir(tmp_path / "cache")  # type: ignore[arg-type]
        for key in documents:
            _sync(rt, client, cache, key)
        store = rt.graph_store
        assert store is not None

        def entities() -> set[str]:
            return {r["n"] for r in store.query("MATCH (e:Entity) RETURN e.name AS n")}

        def uses(tool: str) -> set[str]:
            rows = store.query(
                "MATCH (a:Entity {name: $name})-[r:USES]->(:Entity) RETURN r.chunk_ids AS c",
                {"name": tool},
            )
            return {c for row in rows for c in row["c"]}

        assert entities() == {"Dagster", "DuckDB", "SQL"}
        rows = store.query(README_QUERY, {"name": "Dagster"})
        assert [r["document"] for r in rows] == ["a.md", "b.md"]  # one node, two documents
        assert uses("Dagster") == _naming(rt, "Dagster", "a.md", "b.md")
        assert uses("DuckDB") == _naming(rt, "DuckDB", "a.md") and len(uses("DuckDB")) == 1

        # An edit: DuckDB leaves a.md and Neo4j comes in; DuckDB is mentioned nowhere now.
        (rt.raw_root / "a.md").write_text(
            documents["a.md"].replace("DuckDB", "Neo4j"), encoding="utf-8"
        )
        edited = _sync(rt, client, cache, "a.md")
        # Only the changed chunk is asked (its first pass and one gleaning, which finds
        # nothing new); the unchanged chunk's two requests are cache hits, though its chunk id
        # changed with the document's version.
        assert (edited.chunks, edited.calls, edited.cache_hits) == (2, 2, 2)
        assert entities() == {"Dagster", "Neo4j", "SQL"}
        assert uses("Dagster") == _naming(rt, "Dagster", "a.md", "b.md")
        assert uses("DuckDB") == set() and uses("Neo4j") == _naming(rt, "Neo4j", "a.md")

        # A delete: b.md's facts go; Dagster stays (a.md still names it).
        (rt.raw_root / "b.md").unlink()
        (removal,) = remove_deleted(rt.warehouse, ["b.md"], rt.document_sinks())
        assert removal.error is None
        assert entities() == {"Dagster", "Neo4j", "SQL"}
        assert uses("Dagster") == _naming(rt, "Dagster", "a.md") and len(uses("Dagster")) == 1
        assert [r["document"] for r in store.query(README_QUERY, {"name": "Dagster"})] == ["a.md"]
        assert not rt.warehouse.has_table("entity_mentions", Document.node_id_for("b.md"))

        # The last document goes: nothing is left.
        (removal,) = remove_deleted(rt.warehouse, ["a.md"], rt.document_sinks())
        assert removal.error is None and entities() == set()
        assert store.query("MATCH (:Entity)-[r]->(:Entity) RETURN count(r) AS n") == [{"n": 0}]
        store.close()
