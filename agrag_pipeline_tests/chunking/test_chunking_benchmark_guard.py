"""The chunking benchmark says so loudly when ours got slower against the peers than recorded.

Issue 25: chunker v2 made parse + chunk 1.6x slower and no benchmark said so. The benchmark
now compares ours/peer ratios (CPU time, side by side in one process) with the recorded run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import chunking_bench
from benchmarks.chunking_bench import CHONKIE_NAME, LANGCHAIN_NAME, REGRESSION_THRESHOLD


def test_a_ratio_further_below_its_record_than_the_threshold_is_a_regression() -> None:
    recorded = {CHONKIE_NAME: 0.50, LANGCHAIN_NAME: 0.80}
    within_noise = {CHONKIE_NAME: 0.50 * (1 - REGRESSION_THRESHOLD) + 0.01, LANGCHAIN_NAME: 0.9}
    assert chunking_bench.regressions(within_noise, recorded) == []
    slower = {CHONKIE_NAME: 0.31, LANGCHAIN_NAME: 0.9}
    (line,) = chunking_bench.regressions(slower, recorded)
    assert line.startswith("REGRESSION") and CHONKIE_NAME in line and "38% below" in line


def test_chunking_benchmark_prints_regression_against_a_faster_record(
    tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("chonkie")
    pytest.importorskip("langchain_text_splitters")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("ch01-01-installation.md", "ch03-02-data-types.md"):
        shutil.copy(corpus_dir / "markdown" / "rust-book" / name, corpus / name)
    record = tmp_path / "chunking.json"
    args = ["--corpus", str(corpus), "--passes", "1", "--docling-files", "0"]
    chunking_bench.main([*args, "--recorded", str(record), "--record"])
    assert "REGRESSION" not in capsys.readouterr().out  # nothing recorded to compare with yet

    # A record where ours was 10x faster against every peer than it is now.
    recorded = json.loads(record.read_text())
    for entry in recorded["figures"].values():
        entry["cpu_ours_parse_chunk_over_this"] *= 10
    record.write_text(json.dumps(recorded))
    with pytest.raises(SystemExit) as exit_info:
        chunking_bench.main([*args, "--recorded", str(record), "--strict"])
    assert exit_info.value.code == 1
    out, err = capsys.readouterr()
    for stream in (out, err):
        assert f"REGRESSION: ours (parse + chunk) / {CHONKIE_NAME}" in stream
        assert f"REGRESSION: ours (parse + chunk) / {LANGCHAIN_NAME}" in stream
