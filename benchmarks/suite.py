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
from benchmarks.chunking_bench import (
    REGRESSION_THRESHOLD,
    code_regressions,
    commit_available,
    confirmed_ratio,
    guarded_ratios,
    head_commit_if_clean,
    machine_notes,
    ours_over_code,
    peer_drift,
    regressions,
    say_loudly,
)
from benchmarks.corpus import corpus_files, write_corpus
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


def chunk_regressions(
    documents: int, chunk: dict[str, Any], root: Path, passes: int, processes: int
) -> dict[str, Any]:
    """The chunk stage's verdict against the last saved run at this size.

    Where that run names its code (``code``, a commit this checkout holds), that code is timed
    beside ours on this corpus's Markdown (``chunking_bench.ours_over_code``; a first result
    past the threshold measured again), and a slowdown past ``REGRESSION_THRESHOLD`` is a
    regression; the ours/peer ratios under their saved values become notes. Ratios recorded on
    another day move with the machine and the peers: on 2026-12-07 a new machine put every one
    24% under its bar with our code unchanged. Else the peers' rule of ``chunking_bench``.
    """
    saved = report.RESULTS_DIR / f"documents-{documents}.json"
    previous = json.loads(saved.read_text()) if saved.exists() else {}
    before = previous.get("stages", {}).get("chunk")
    if not before:
        return {"regressions": [], "notes": [], "judged_by": "nothing saved at this size"}
    now = guarded_ratios(chunk["figures"], "ours_over_this")
    was = guarded_ratios(before["figures"], "ours_over_this")
    commit = (previous.get("code") or {}).get("commit")
    why_not = "the saved run names no commit"
    if commit and not commit_available(commit):
        why_not = f"its commit {commit} is not in this checkout"
    elif commit:
        files = corpus_files(root, "markdown")

        def measure() -> float:
            return ours_over_code(files, commit, passes, processes)

        try:
            ratio, measured = confirmed_ratio(measure(), measure)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            why_not = f"its code could not be run here: {exc}"
        else:
            lines = code_regressions(ratio, commit)
            say_loudly(lines)
            # The saved code against each peer in this run: ours/peer over ours/that code.
            code_over_peer = {name: ours_peer / ratio for name, ours_peer in now.items()}
            return {
                "regressions": lines,
                "notes": [] if lines else machine_notes(now, was, code_over_peer),
                "judged_by": f"the saved run's code ({commit}), {processes} processes each",
                "ours_over_saved_code": [round(r, 3) for r in measured],
            }
    lines = regressions(now, was)
    say_loudly(lines)
    return {
        "regressions": lines,
        "notes": peer_drift(now, was),
        "judged_by": f"the peers' ratios (the saved run's code not timed: {why_not})",
    }


def _measured_code() -> dict[str, str] | None:
    head, _ = head_commit_if_clean()
    return None if head is None else {"commit": head}


def run_suite(
    documents: int,
    repeats: int,
    stages: list[str],
    work: Path,
    embed_sample: int,
    max_pdfs: int,
    orchestrate_repeats: int | None = None,
    guard_processes: int = 3,
) -> dict[str, Any]:
    started = time.perf_counter()
    results: dict[str, Any] = {
        "documents": documents,
        "repeats": repeats,
        "orchestrate_repeats": orchestrate_repeats or repeats,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": report.machine(),
        "versions": report.versions(),
        # The code measured, when it has a commit: the next run at this size times it beside
        # its own (``chunk_regressions``).
        "code": _measured_code(),
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
        results["left_out"] += results["stages"][stage].get("left_out", [])
        if stage == "chunk":
            guard = chunk_regressions(
                documents, results["stages"]["chunk"], root, repeats, guard_processes
            )
            results["regressions"], results["chunk_guard"] = guard["regressions"], guard
            for line in guard["notes"]:
                print(line)
            print(
                f"chunk stage judged by {guard['judged_by']} (threshold {REGRESSION_THRESHOLD:.0%})"
            )
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
    parser.add_argument(
        "--guard-processes",
        type=int,
        default=3,
        help="worker processes each for ours and the saved run's code in the chunk guard",
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
            args.guard_processes,
        )
    given = argv if argv is not None else sys.argv[1:]
    results["command"] = " ".join([".venv/bin/python -m benchmarks", *map(shlex.quote, given)])
    saved = report.save(results)
    existing = args.out.read_text() if args.out.exists() else ""
    args.out.write_text(report.merge(existing, report.render(report.load_all())))
    print(f"figures saved to {saved}; {args.out} rewritten")


if __name__ == "__main__":
    main()
