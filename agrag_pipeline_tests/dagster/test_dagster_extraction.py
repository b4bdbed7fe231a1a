"""The extractions and entity_graph assets in a real Dagster run: with no endpoint they say
"extraction not configured" per document and write nothing; with one (a scripted real HTTP
endpoint) they report calls, cache hits, tokens, drops and counts, and their checks pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster_support import check_evaluations, make_project, materialization_metadata

from agrag_pipeline.extraction.step import NOT_CONFIGURED
from agrag_pipeline_tests.extraction.llm_support import Reply, ScriptedChatServer, chat_body

pytestmark = pytest.mark.slow

ANSWER = json.dumps(
    {
        "entities": [
            {"name": "Dagster", "type": "Tool", "description": "", "properties": {}},
            {"name": "assets", "type": "Concept", "description": "", "properties": {}},
            {"name": "Mars", "type": "Planet", "description": "", "properties": {}},
        ],
        "relations": [
            {
                "source": "Dagster",
                "target": "assets",
                "type": "USES",
                "description": "",
                "strength": 9,
            },
        ],
    }
)


def _reply(request: dict[str, Any]) -> Reply:
    return 200, chat_body(ANSWER), 0


def test_extraction_assets_report_not_configured_then_their_work(tmp_path: Path) -> None:
    files: dict[str, Path | bytes] = {"doc.md": b"# Doc\n\nDagster uses assets.\n"}
    with dg.instance_for_test() as instance, ScriptedChatServer(_reply) as server:
        project = make_project(tmp_path, instance, files)
        project.register(["doc.md"])
        result = project.materialize(["doc.md"])
        meta = materialization_metadata(result, "extractions")["doc.md"]
        assert meta["agrag/status"] == "not configured" and meta["extraction"] == NOT_CONFIGURED
        assert materialization_metadata(result, "entity_graph")["doc.md"]["mentions"] == 0

        with project.settings.open("a", encoding="utf-8") as settings:
            settings.write(f"\nllm:\n  base_url: {server.base_url}\n  max_retries: 0\n")
        result = project.materialize(["doc.md"])
        meta = materialization_metadata(result, "extractions")["doc.md"]
        assert meta["agrag/status"] == "ok" and meta["calls"] >= 1
        assert meta["entities"] == 2 and meta["relations"] == 1
        assert meta["dropped_by_reason"] == {"unknown_entity_type": meta["calls"]}
        graph = materialization_metadata(result, "entity_graph")["doc.md"]
        assert graph["mentions"] == 2 and graph["graph_entities_by_type"] == {
            "Tool": 1,
            "Concept": 1,
        }
        checks = check_evaluations(result)
        assert checks[("extractions", "mentions_name_current_chunks", "doc.md")]
        assert checks[("entity_graph", "entity_graph_matches_tables", "doc.md")]
