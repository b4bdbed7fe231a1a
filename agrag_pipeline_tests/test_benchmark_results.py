"""The benchmark suite's saved figures: a run of some stages never deletes the others'."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import report


def _run(date: str, stages: dict[str, dict[str, int]], left_out: list[str]) -> dict[str, object]:
    return {
        "documents": 7,
        "date": date,
        "command": f"python -m benchmarks --documents 7 # {date}",
        "stages": stages,
        "left_out": left_out,
    }


def test_a_suite_run_of_some_stages_keeps_the_figures_of_the_others(tmp_path: Path) -> None:
    report.save(_run("day 1", {"parse": {"n": 1}, "chunk": {"n": 1}}, []), tmp_path)
    report.save(_run("day 2", {"chunk": {"n": 2}}, ["parse (not requested)"]), tmp_path)
    saved = json.loads((tmp_path / "documents-7.json").read_text())
    assert saved["stages"] == {"chunk": {"n": 2}, "parse": {"n": 1}}
    assert saved["carried_over"] == {
        "parse": {"date": "day 1", "command": "python -m benchmarks --documents 7 # day 1"}
    }
    assert saved["left_out"] == []
    # Carried again, a stage keeps the run that measured it; measured again, it is no longer
    # carried over.
    report.save(_run("day 3", {"chunk": {"n": 3}}, ["parse (not requested)"]), tmp_path)
    saved = json.loads((tmp_path / "documents-7.json").read_text())
    assert saved["carried_over"]["parse"]["date"] == "day 1"
    report.save(_run("day 4", {"parse": {"n": 4}, "chunk": {"n": 4}}, []), tmp_path)
    saved = json.loads((tmp_path / "documents-7.json").read_text())
    assert saved["stages"] == {"parse": {"n": 4}, "chunk": {"n": 4}}
    assert "carried_over" not in saved


def test_a_suite_rewrite_keeps_what_was_written_by_hand_into_its_sections() -> None:
    existing = (
        "# Benchmarks\n\n## 7 documents\n\nold figures\n\n### Chunking: ours against the peers\n\n"
        "old table\n\n### Embedding batches, measured by hand\n\nkept text\n\n"
        "## Another benchmark\n\nits text\n"
    )
    rendered = (
        "# Benchmarks\n\n## 7 documents\n\nnew figures\n\n### Chunking: ours against\n\nnew\n"
    )
    merged = report.merge(existing, rendered)
    assert "old figures" not in merged and "old table" not in merged
    assert merged.index("new figures") < merged.index("### Embedding batches, measured by hand")
    assert merged.index("kept text") < merged.index("## Another benchmark")
    assert merged.count("## 7 documents") == 1 and "its text" in merged
