"""The benchmark suite: one command that measures us and the peers side by side.

    .venv/bin/python -m benchmarks --documents 1000 [--repeats 3] [--out BENCHMARKS.md]

It writes a corpus of N documents (``benchmarks.corpus``) to a temporary raw root, runs each
stage (parse, chunk, embed, orchestrate) in a fresh subprocess (``benchmarks.stages``) so that
each peak RSS is the stage's own, saves the figures to ``benchmarks/results/documents-N.json``
and rewrites BENCHMARKS.md from every saved size.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.chunking_bench import guarded_ratios, regressions, say_loudly
from benchmarks.corpus import write_corpus
from benchmarks.stages import RESULT_PREFIX

REPO_ROOT = Path(__file__).resolve().parents[1]
STAGES = ("parse", "chunk", "embed", "orchestrate")  # orchestrate last: it edits the corpus


def run_stage(stage: str, root: Path, log: Path, options: list[str]) -> dict[str, Any]:
    """Run one stage in a fresh interpreter; its logs go to ``log``, its figures come back."""
    command = [sys.executable, "-m", "benchmarks.stages", stage, "--root", str(root), *options]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "DAGSTER_HOME": str(root.parent / "dagster_home"),
        "PYTHONPATH": str(REPO_ROOT),
    }
    with log.open("w") as stderr:
        done = subprocess.run(
            command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"stage {stage} failed (exit {done.returncode}); see {log}")
    figures: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    return figures


def chunk_regressions(documents: int, chunk: dict[str, Any]) -> list[str]:
    """Ours/peer chunking ratios against the last saved run at this size, said loudly when
    one fell past ``chunking_bench.REGRESSION_THRESHOLD``."""
    saved = report.RESULTS_DIR / f"documents-{documents}.json"
    before = json.loads(saved.read_text())["stages"].get("chunk") if saved.exists() else None
    if not before:
        return []
    lines = regressions(
        guarded_ratios(chunk["figures"], "ours_over_this"),
        guarded_ratios(before["figures"], "ours_over_this"),
    )
    say_loudly(lines)
    return lines


def run_suite(
    documents: int,
    repeats: int,
    stages: list[str],
    work: Path,
    embed_sample: int,
    max_pdfs: int,
    orchestrate_repeats: int | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    results: dict[str, Any] = {
        "documents": documents,
        "repeats": repeats,
        "orchestrate_repeats": orchestrate_repeats or repeats,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": report.machine(),
        "versions": report.versions(),
        "stages": {},
        "left_out": [],
    }
    root = work / "raw"
    shutil.rmtree(root, ignore_errors=True)  # a kept --work folder may hold another size
    corpus = write_corpus(root, documents)
    results["corpus"] = corpus.as_dict()
    print(f"corpus: {documents} documents in {time.perf_counter() - started:.1f}s under {root}")
    options = {
        "parse": ["--repeats", str(repeats), "--max-pdfs", str(max_pdfs)],
        "chunk": ["--repeats", str(repeats)],
        # MiniLM does ~20 chunks/s here: at most two runs of the embedding comparison.
        "embed": ["--repeats", str(min(repeats, 2)), "--embed-sample", str(embed_sample)],
        "orchestrate": ["--repeats", str(orchestrate_repeats or repeats)],
    }
    for stage in STAGES:
        if stage not in stages:
            results["left_out"].append(f"{stage} (not requested)")
            continue
        stage_start = time.perf_counter()
        results["stages"][stage] = run_stage(stage, root, work / f"{stage}.log", options[stage])
        print(f"{stage}: {time.perf_counter() - stage_start:.1f}s")
        if stage == "chunk":
            results["regressions"] = chunk_regressions(documents, results["stages"]["chunk"])
    if corpus.files.get("pdf", 0) > max_pdfs and "parse" in stages:
        results["left_out"].append(
            f"parsing: {max_pdfs} of the {corpus.files['pdf']} PDFs, spread over the corpus, "
            "are parsed per pass (PDF cost is per page, not per corpus size)"
        )
    results["wall_s"] = round(time.perf_counter() - started, 1)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--documents", type=int, required=True, help="corpus size N")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "BENCHMARKS.md")
    parser.add_argument(
        "--stages",
        default=",".join(STAGES),
        help=f"comma-separated subset of {','.join(STAGES)}",
    )
    parser.add_argument("--embed-sample", type=int, default=256, help="chunks to embed")
    parser.add_argument("--max-pdfs", type=int, default=100, help="PDFs parsed per pass")
    parser.add_argument(
        "--orchestrate-repeats", type=int, help="runs of the orchestration stage (default: repeats)"
    )
    parser.add_argument("--work", type=Path, help="keep the corpus and logs here (else temp)")
    args = parser.parse_args(argv)
    stages = [s for s in args.stages.split(",") if s]
    unknown = set(stages) - set(STAGES)
    if unknown:
        parser.error(f"unknown stages: {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="agrag-bench-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = run_suite(
            args.documents,
            args.repeats,
            stages,
            work,
            args.embed_sample,
            args.max_pdfs,
            args.orchestrate_repeats,
        )
    given = argv if argv is not None else sys.argv[1:]
    results["command"] = " ".join([".venv/bin/python -m benchmarks", *map(shlex.quote, given)])
    saved = report.save(results)
    existing = args.out.read_text() if args.out.exists() else ""
    args.out.write_text(report.merge(existing, report.render(report.load_all())))
    print(f"figures saved to {saved}; {args.out} rewritten")


if __name__ == "__main__":
    main()
