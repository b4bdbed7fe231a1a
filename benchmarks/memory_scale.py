"""Peak memory of parse and chunk against the number of documents (issue 25 item 6).

    .venv/bin/python -m benchmarks.memory_scale [--sizes 100,1000,10000,100000] [--workers 1,2]
        [--realistic 0] [--scan-only 100000] [--gone 10000] [--code PATH ...]

- core: ``agrag core --no-embed --workers W`` over N small documents (``corpus.small_document``:
  1-3 KB excerpts of the reference corpus's Markdown and HTML, real text, 100 folders of 1,000
  at 100,000), each run in a fresh process with a fresh warehouse. Peak RSS from the kernel
  (``getrusage``): the command's own process (with one worker it does every document itself;
  with more it is the supervisor) and its largest worker. ``--realistic N`` adds N documents of
  the reference mix (``corpus.write_corpus``, PDFs included).
- scan: the raw-root scan alone (``sources.scan_raw_root``) and its list of keys, in a fresh
  process, for sizes too large to parse on the machine at hand (``--scan-only``); peak RSS, and
  bytes per document under tracemalloc (held by its answer; at its peak).
- gone: finding which of N stored documents are gone (the start of every re-run), after one
  ``agrag core`` run over N small documents (``--gone N``): peak RSS it adds, bytes per document.
- ``--code PATH``: also run each measurement with another checkout's code (``PYTHONPATH``), side
  by side in the same run (e.g. the commit before a fix, from ``git worktree add``).

Prints a table (documents, peak RSS, growth against the smallest size) and a JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import write_corpus, write_small_corpus

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULT_PREFIX = "MEMORY_SCALE "

#: Run in the measured process: the command, then its own and its children's peak RSS.
_CORE_RUNNER = """
import json, resource, sys
from agrag_pipeline.cli import main
status = main(sys.argv[1:])
self_ = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print("MEMORY_SCALE " + json.dumps({
    "status": status,
    "own_peak_kb": self_.ru_maxrss,
    "worker_peak_kb": children.ru_maxrss,
    "cpu_s": self_.ru_utime + self_.ru_stime + children.ru_utime + children.ru_stime,
}))
"""
_SCAN_RUNNER = """
import gc, json, resource, sys, time, tracemalloc
from pathlib import Path
from agrag_pipeline.sources import scan_raw_root
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.process_time()
scan = scan_raw_root(Path(sys.argv[1]))
keys = scan.keys
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cpu_s = time.process_time() - started
documents = len(keys)
del scan, keys
gc.collect()
# Once more under tracemalloc (after the RSS figure): what the scan's answer holds, and its peak.
tracemalloc.start()
scan = scan_raw_root(Path(sys.argv[1]))
held, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
print("MEMORY_SCALE " + json.dumps({
    "status": 0,
    "documents": documents,
    "before_kb": before,
    "own_peak_kb": peak_kb,
    "cpu_s": cpu_s,
    "held_bytes_per_document": round(held / documents),
    "peak_bytes_per_document": round(peak / documents),
}))
"""

#: Finding the stored documents that are gone (the start of a re-run over a filled warehouse):
#: peak RSS it adds to the scan's, then its bytes under tracemalloc. Code without
#: ``gone_source_keys`` runs what ``agrag core`` did before it.
_GONE_RUNNER = """
import gc, json, resource, sys, time, tracemalloc
from pathlib import Path
from agrag_pipeline import freshness
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage import Warehouse
scan = scan_raw_root(Path(sys.argv[1]))
stored = Warehouse(sys.argv[2])
def gone():
    if hasattr(freshness, "gone_source_keys"):
        return freshness.gone_source_keys(scan, stored)
    return scan.absent(set(freshness.stored_source_keys(stored)))
gc.collect()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.process_time()
found = gone()
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cpu_s = time.process_time() - started
del found
gc.collect()
tracemalloc.start()
found = gone()
held, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
print("MEMORY_SCALE " + json.dumps({
    "status": 0,
    "documents": len(scan.files),
    "gone": len(found),
    "before_kb": before,
    "own_peak_kb": peak_kb,
    "added_kb": peak_kb - before,
    "cpu_s": cpu_s,
    "peak_bytes_per_document": round(peak / len(scan.files)),
}))
"""


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _run(runner: str, args: list[str], code: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }
    env.pop("AGRAG_SETTINGS", None)
    before = load()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", runner, *args],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{args[:2]} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    figures["cpu_s"] = round(figures["cpu_s"], 1)
    figures["load_average"] = before
    summary = [line for line in done.stdout.splitlines() if line.startswith("agrag core: ")]
    figures["summary"] = summary[-1] if summary else ""
    return figures


def core_run(raw: Path, work: Path, workers: int, code: Path) -> dict[str, Any]:
    warehouse = Path(tempfile.mkdtemp(prefix="warehouse-", dir=work))
    args = ["core", "--no-embed", "--workers", str(workers)]
    args += ["--raw-root", str(raw), "--warehouse", str(warehouse)]
    args += ["--cache-dir", str(work / "cache")]
    try:
        return _run(_CORE_RUNNER, args, code)
    finally:
        subprocess.run(["rm", "-rf", str(warehouse)], check=False)


def _mib(kb: int) -> float:
    return round(kb / 1024, 1)


def table(rows: list[dict[str, Any]]) -> str:
    """One line per measurement; growth against the same code, part and workers at the
    smallest size."""
    smallest: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        group = (row["code"], row["part"], row["workers"])
        if group not in smallest or row["documents"] < smallest[group]["documents"]:
            smallest[group] = row
    lines = [
        "| part | code | documents | corpus MB | workers | own peak RSS | growth vs smallest "
        "| largest worker's peak RSS | growth vs smallest | CPU s | wall s | load at start |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        base = smallest[(row["code"], row["part"], row["workers"])]
        own = row["own_peak_kb"]
        worker = row.get("worker_peak_kb") or 0
        base_worker = base.get("worker_peak_kb") or 0
        lines.append(
            "| {} | {} | {:,} | {} | {} | {} MiB | {:+.1f} MiB | {} | {} | {} | {} | {} |".format(
                row["part"],
                row["code"],
                row["documents"],
                row["corpus_mb"],
                row["workers"] or "-",
                _mib(own),
                (own - base["own_peak_kb"]) / 1024,
                f"{_mib(worker)} MiB" if worker > 100_000 else "-",
                f"{(worker - base_worker) / 1024:+.1f} MiB" if worker > 100_000 else "-",
                row["cpu_s"],
                row["wall_s"],
                row["load_average"],
            )
        )
    scans = [row for row in rows if "held_bytes_per_document" in row]
    if scans:
        lines += [
            "",
            "| scan of | code | documents | held by its answer, bytes/document "
            "| its peak (tracemalloc), bytes/document |",
            "|---|---|---:|---:|---:|",
        ]
        lines += [
            f"| {row['part']} | {row['code']} | {row['documents']:,} "
            f"| {row['held_bytes_per_document']:,} | {row['peak_bytes_per_document']:,} |"
            for row in scans
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--realistic", type=int, default=0, help="documents of the reference mix")
    parser.add_argument("--scan-only", default="", help="sizes measured by the scan alone")
    parser.add_argument(
        "--gone",
        type=int,
        default=0,
        help="documents stored (by one core run) before finding the gone ones, per code",
    )
    parser.add_argument("--code", action="append", default=[], help="another checkout to compare")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    scan_sizes = [int(s) for s in args.scan_only.split(",") if s]
    workers = [int(w) for w in args.workers.split(",") if w]
    codes = {"this": REPO_ROOT, **{Path(c).name: Path(c).resolve() for c in args.code}}
    results: dict[str, Any] = {
        "command": " ".join(["python -m benchmarks.memory_scale", *(argv or sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_at_start": load(),
        "rows": [],
    }
    rows: list[dict[str, Any]] = results["rows"]
    gone_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agrag-memory-") as tmp:
        work = Path(tmp)
        corpora: list[tuple[str, int, Path, float]] = []
        for n in sorted(set(sizes) | set(scan_sizes)):
            raw = work / f"small-{n}"
            summary = write_small_corpus(raw, n)
            corpora.append(("small", n, raw, round(sum(summary.bytes.values()) / 1e6, 2)))
        if args.realistic:
            raw = work / f"realistic-{args.realistic}"
            summary = write_corpus(raw, args.realistic)
            corpora.append(
                ("realistic", args.realistic, raw, round(sum(summary.bytes.values()) / 1e6, 2))
            )
        for kind, n, raw, mb in corpora:
            for name, code in codes.items():
                if n in scan_sizes:
                    row = _run(_SCAN_RUNNER, [str(raw)], code)
                    row.update(part=f"scan ({kind})", code=name, documents=n, workers=0)
                    row["corpus_mb"] = mb
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                if kind == "small" and n not in sizes:
                    continue
                for w in workers:
                    row = core_run(raw, work, w, code)
                    row.update(part=f"core ({kind})", code=name, documents=n, workers=w)
                    row["corpus_mb"] = mb
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        if args.gone:
            raw = work / f"gone-{args.gone}"
            write_small_corpus(raw, args.gone)
            warehouse = work / "gone-warehouse"
            args_ = ["core", "--no-embed", "--workers", "2", "--raw-root", str(raw)]
            args_ += ["--warehouse", str(warehouse), "--cache-dir", str(work / "cache")]
            _run(_CORE_RUNNER, args_, REPO_ROOT)
            for name, code in codes.items():
                row = _run(_GONE_RUNNER, [str(raw), str(warehouse)], code)
                row.update(code=name)
                gone_rows.append(row)
                print(json.dumps(row), flush=True)
    results["load_average_at_end"] = load()
    results["gone_rows"] = gone_rows
    print(table(rows))
    if gone_rows:
        print(
            "\n| finding the gone among stored documents | code | peak RSS added "
            "| peak (tracemalloc), bytes/document | CPU s |\n|---|---|---:|---:|---:|"
        )
        for row in gone_rows:
            print(
                f"| {row['documents']:,} | {row['code']} | {row['added_kb'] / 1024:.1f} MiB "
                f"| {row['peak_bytes_per_document']:,} | {row['cpu_s']} |"
            )
    sys.stdout.write(RESULT_PREFIX + json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
