"""``agrag eval-extraction`` scores what an endpoint extracts against labels: precision and
recall per type, aliases counting as their entity (endpoint: a scripted real HTTP server whose
answer is known, so the expected scores are too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agrag_pipeline.cli import main
from agrag_pipeline_tests.extraction.llm_support import Reply, ScriptedChatServer, chat_body

ANSWER = json.dumps(
    {
        "entities": [
            {"name": "cargo fmt", "type": "Tool", "description": "", "properties": {}},
            {"name": "Clippy", "type": "Tool", "description": "", "properties": {}},
            {"name": "Ferris", "type": "Tool", "description": "", "properties": {}},
            {"name": "lint", "type": "Concept", "description": "", "properties": {}},
        ],
        "relations": [
            {
                "source": "Clippy",
                "target": "lint",
                "type": "USES",
                "description": "",
                "strength": 5,
            },
        ],
    }
)

LABELS = """documents:
  - source_key: tools.md
    entities:
      - {type: Tool, name: cargo-fmt, aliases: [cargo fmt]}
      - {type: Tool, name: Clippy}
      - {type: Concept, name: lints, aliases: [lint]}
      - {type: Organization, name: Rust project}
    relations:
      - {type: USES, source: Clippy, target: lints}
      - {type: MAINTAINS, source: Rust project, target: Clippy}
"""


def test_eval_extraction_reports_precision_and_recall_per_type(tmp_path: Path, capsys: Any):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "tools.md").write_text(
        "# Tools\n\nClippy lints, cargo fmt formats; drawn by Ferris.\n", encoding="utf-8"
    )
    (tmp_path / "labels.yaml").write_text(LABELS, encoding="utf-8")

    def reply(request: dict[str, Any]) -> Reply:
        return 200, chat_body(ANSWER), 0

    with ScriptedChatServer(reply) as server:
        settings = tmp_path / "pipeline.yaml"
        base = (Path(__file__).resolve().parents[2] / "data" / "pipeline.yaml").read_text()
        settings.write_text(base + f"\nllm:\n  base_url: {server.base_url}\n", encoding="utf-8")
        status = main(
            [
                "eval-extraction",
                "--settings",
                str(settings),
                "--raw-root",
                str(raw),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--labels",
                str(tmp_path / "labels.yaml"),
            ]
        )
    out = capsys.readouterr().out
    assert status == 0, out
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in out.splitlines()[1:-1]}
    assert rows[("entity", "Tool")] == [
        "0.67",
        "1.00",
        "3",
        "2",
    ]  # Ferris is named but not labelled
    assert rows[("entity", "Concept")] == ["1.00", "1.00", "1", "1"]  # "lint" is an alias
    assert rows[("entity", "Organization")] == ["-", "0.00", "0", "1"]
    assert rows[("relation", "USES")] == ["1.00", "1.00", "1", "1"]
    assert rows[("relation", "MAINTAINS")] == ["-", "0.00", "0", "1"]
    assert rows[("entity", "(all)")] == ["0.75", "0.75", "4", "4"]
