"""Bad answers and faults from a real HTTP endpoint (a tiny scripted server on loopback): a
model that hangs past the timeout, answers 500, an empty or truncated body, or JSON that breaks
the schema. The chunk's request is retried, then the chunk is recorded as failed with the
reason; the other chunks and documents go on; the next run asks again for the failed chunks
only. Also: the response cache's key is the request, never the endpoint."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from agrag_pipeline.extraction.cache import ResponseCache
from agrag_pipeline.extraction.client import ChatClient
from agrag_pipeline.extraction.step import build_extractions
from agrag_pipeline_tests.extraction.conftest import chunked_runtime, current_document, settings_for
from agrag_pipeline_tests.extraction.llm_support import Reply, ScriptedChatServer, chat_body

GOOD = json.dumps(
    {
        "entities": [
            {
                "name": "Dagster",
                "type": "Tool",
                "description": "An orchestrator.",
                "properties": {"version": None},
            },
            {
                "name": "asset",
                "type": "Concept",
                "description": "A stored object.",
                "properties": {"summary": None},
            },
        ],
        "relations": [
            {
                "source": "Dagster",
                "target": "asset",
                "type": "USES",
                "description": "d",
                "strength": 8,
            },
        ],
    }
)

FAULTS = {
    "HANG": "timed out",
    "FIVEHUNDRED": "HTTP 500",
    "EMPTY": "empty response body",
    "TRUNCATED": "not JSON",
    "BADSCHEMA": "breaks the schema",
}


def _passage(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def _script(flaky_seen: list[int]) -> Any:
    def reply(request: dict[str, Any]) -> Reply:
        text = _passage(request)
        if "HANG" in text:
            return 200, chat_body(GOOD), 1.5
        if "FIVEHUNDRED" in text:
            return 500, b'{"error": "boom"}', 0
        if "EMPTY" in text:
            return 200, b"", 0
        if "TRUNCATED" in text:
            return 200, chat_body(GOOD)[:60], 0
        if "BADSCHEMA" in text:
            return 200, chat_body('{"entities": "none", "relations": []}'), 0
        if "FLAKY" in text and not flaky_seen:
            flaky_seen.append(1)
            return 503, b"busy", 0
        return 200, chat_body(GOOD), 0

    return reply


def test_a_failing_chunk_is_retried_then_recorded_failed_and_the_others_go_on(tmp_path: Path):
    documents = {
        "mixed.md": "# Good\n\nDagster uses assets.\n\n# Bad\n\nFIVEHUNDRED here.\n",
        "flaky.md": "# Flaky\n\nFLAKY Dagster uses assets.\n",
        **{f"{marker.lower()}.md": f"# {marker}\n\n{marker} text.\n" for marker in FAULTS},
    }
    flaky_seen: list[int] = []
    with ScriptedChatServer(_script(flaky_seen)) as server:
        settings = settings_for(
            server.base_url, timeout_s=0.5, max_retries=2, backoff_s=0.0, max_backoff_s=0.0
        )
        settings = settings.model_copy(
            update={"extraction": settings.extraction.model_copy(update={"max_gleanings": 0})}
        )
        rt = chunked_runtime(tmp_path, settings, documents)
        client = ChatClient(settings.llm)  # type: ignore[arg-type]
        cache = ResponseCache.in_dir(tmp_path / "cache")
        results = {
            key: build_extractions(
                rt.warehouse, current_document(rt.warehouse, key), settings, client, cache
            )
            for key in documents
        }
        for marker, reason in FAULTS.items():
            result = results[f"{marker.lower()}.md"]
            assert len(result.failed_chunks) == 1, marker
            (failure,) = result.failed_chunks.values()
            assert reason in failure and "after 3 attempts" in failure, (marker, failure)
            assert result.entities == 0
            sent = [r for r in server.requests if f"{marker} text" in _passage(r)]
            assert len(sent) == 3, marker  # the first try and two retries
        mixed = results["mixed.md"]
        assert len(mixed.failed_chunks) == 1 and mixed.entities == 2 and mixed.relations == 1
        assert "HTTP 500" in next(iter(mixed.failed_chunks.values()))
        flaky = results["flaky.md"]
        assert flaky.failed_chunks == {} and flaky.entities == 2 and flaky.calls == 2

        # The next run asks again for the failed chunks only: the good chunk is a cache hit.
        before = len(server.requests)
        again = build_extractions(
            rt.warehouse, current_document(rt.warehouse, "mixed.md"), settings, client, cache
        )
        assert again.cache_hits == 1 and len(again.failed_chunks) == 1
        assert len(server.requests) - before == 3


def test_the_cache_key_is_the_request_not_the_endpoint(tmp_path: Path):
    documents = {"a.md": "# A\n\nDagster uses assets.\n"}
    with ScriptedChatServer(_script([])) as first, ScriptedChatServer(_script([])) as second:
        settings = settings_for(first.base_url, max_retries=0)
        rt = chunked_runtime(tmp_path, settings, documents)
        cache = ResponseCache.in_dir(tmp_path / "cache")
        document = current_document(rt.warehouse, "a.md")
        done = build_extractions(rt.warehouse, document, settings, ChatClient(settings.llm), cache)  # type: ignore[arg-type]
        assert done.calls >= 1 and done.entities == 2
        # Another endpoint serving the same model: every answer comes from the cache.
        moved = settings_for(second.base_url, max_retries=0)
        again = build_extractions(
            rt.warehouse,
            document,
            moved,
            ChatClient(moved.llm),
            cache,
            force=True,  # type: ignore[arg-type]
        )
        assert second.requests == [] and again.calls == 0 and again.entities == 2
        # Another model: the request differs, so it is asked again.
        other = moved.model_copy(
            update={"extraction": moved.extraction.model_copy(update={"model": "other-model"})}
        )
        third = build_extractions(
            rt.warehouse,
            document,
            other,
            ChatClient(other.llm),
            cache,
            force=True,  # type: ignore[arg-type]
        )
        assert third.calls >= 1 and len(second.requests) == third.calls


def test_a_cached_answer_that_fails_its_checksum_is_asked_again(tmp_path: Path):
    documents = {"a.md": "# A\n\nDagster uses assets.\n"}
    with ScriptedChatServer(_script([])) as server:
        settings = settings_for(server.base_url, max_retries=0)
        settings = settings.model_copy(
            update={"extraction": settings.extraction.model_copy(update={"max_gleanings": 0})}
        )
        rt = chunked_runtime(tmp_path, settings, documents)
        cache = ResponseCache.in_dir(tmp_path / "cache")
        client = ChatClient(settings.llm)  # type: ignore[arg-type]
        document = current_document(rt.warehouse, "a.md")
        assert build_extractions(rt.warehouse, document, settings, client, cache).calls == 1
        cache.close()
        # Bit rot inside the stored answer: same length, one entity renamed.
        with sqlite3.connect(cache.path) as conn:
            conn.execute("UPDATE responses SET content = replace(content, 'Dagster', 'Dagstar')")
        again = build_extractions(rt.warehouse, document, settings, client, cache, force=True)
        assert again.calls == 1 and again.cache_hits == 0 and cache.corrupt_rows == 1
        names = rt.warehouse.read_table("entity_mentions", document.id).column("name")
        assert "Dagster" in names.to_pylist() and "Dagstar" not in names.to_pylist()


def test_the_answer_schema_lists_no_more_items_than_the_token_budget_holds(tmp_path: Path):
    """A looping model fills a list up to its ``maxItems``: the lists a request allows must fit
    its ``max_tokens``, or such an answer is cut at the limit on every retry (seen with
    Gemma-3-270M listing "John" again and again)."""
    documents = {"a.md": "# A\n\nDagster uses assets.\n"}
    with ScriptedChatServer(_script([])) as server:
        settings = settings_for(server.base_url, max_retries=0)
        rt = chunked_runtime(tmp_path, settings, documents)
        document = current_document(rt.warehouse, "a.md")
        sent: dict[int, list[int]] = {}
        for budget in (1024, 300, 16, 8000):
            extraction = settings.extraction.model_copy(
                update={"max_completion_tokens": budget, "max_gleanings": 0}
            )
            at_budget = settings.model_copy(update={"extraction": extraction})
            cache = ResponseCache.in_dir(tmp_path / f"cache-{budget}")
            assert at_budget.llm is not None
            client = ChatClient(at_budget.llm)
            done = build_extractions(rt.warehouse, document, at_budget, client, cache)
            assert done.failed_chunks == {} and done.entities == 2
            request = server.requests[-1]
            assert request["max_tokens"] == budget
            schema = request["response_format"]["json_schema"]["schema"]
            sent[budget] = [schema["properties"][k]["maxItems"] for k in ("entities", "relations")]
    # 128 tokens per entity-and-relation pair; never none, never more than 25.
    assert sent == {1024: [8, 8], 300: [2, 2], 16: [1, 1], 8000: [25, 25]}


def test_an_entity_the_passage_never_names_is_dropped_and_counted(tmp_path: Path):
    """A small model invents names ("Dagger" for a passage on Dagster, "John" in a loop): such
    an entity cannot be traced to its chunk, so it is dropped, counted by reason, and so is a
    relation to it; a name the passage gives in another form ("assets" for "asset", "Dagster
    Labs" beside "Dagster") stays."""
    answer = {
        "entities": [
            {"name": "Dagster", "type": "Tool", "description": "", "properties": {"version": None}},
            {"name": "Dagger", "type": "Tool", "description": "", "properties": {"version": None}},
            {"name": "John", "type": "Concept", "description": "", "properties": {"summary": None}},
            {
                "name": "asset",
                "type": "Concept",
                "description": "",
                "properties": {"summary": None},
            },
            {"name": "Dagster Labs", "type": "Organization", "description": "", "properties": {}},
        ],
        "relations": [
            {
                "source": "Dagster",
                "target": "asset",
                "type": "USES",
                "description": "",
                "strength": 8,
            },
            {
                "source": "Dagger",
                "target": "John",
                "type": "USES",
                "description": "",
                "strength": 8,
            },
        ],
    }

    def reply(request: dict[str, Any]) -> Reply:
        return 200, chat_body(json.dumps(answer)), 0

    documents = {"a.md": "# Orchestration\n\nDagster materialises assets.\n"}
    with ScriptedChatServer(reply) as server:
        settings = settings_for(server.base_url, max_retries=0)
        settings = settings.model_copy(
            update={"extraction": settings.extraction.model_copy(update={"max_gleanings": 0})}
        )
        rt = chunked_runtime(tmp_path, settings, documents)
        document = current_document(rt.warehouse, "a.md")
        assert settings.llm is not None and document.id is not None
        cache = ResponseCache.in_dir(tmp_path / "cache")
        done = build_extractions(rt.warehouse, document, settings, ChatClient(settings.llm), cache)
        names = {
            r["name"] for r in rt.warehouse.read_table("entity_mentions", document.id).to_pylist()
        }
    assert names == {"Dagster", "asset", "Dagster Labs"}
    assert done.dropped == {"name_not_in_passage": 2, "relation_endpoint_not_extracted": 1}
    assert done.relations == 1
