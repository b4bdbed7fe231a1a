"""What a fresh run worker costs before its run starts: the part ``benchmarks.stages`` leaves out.

``benchmarks.stages orchestrate`` executes every run in a warm worker process (definitions
built, tokenizer loaded, outside the timers). Runs Dagster's default launcher starts do not
start warm: the code server spawns a new interpreter for each run (Dagster 1.13's gRPC
``StartRun``, a ``spawn`` process), which imports the code location, opens the instance and
builds the job before the run's first step. (The shipped launcher forks runs from a forkserver
that has loaded the code location, ``defs/run_forkserver.py``; ``fork_runs: false`` gives
Dagster's default back. ``benchmarks.daemon_backfill`` measures either end to end.)
This measures that in real fresh processes: each child imports
the definitions, opens a shipped instance and executes a one-document run (chunks only), and
reports its CPU before the run and for the run; the parent adds the interpreter's own start and
exit (the child's whole CPU from ``getrusage``).

    .venv/bin/python -m benchmarks.run_worker_start --root RAW [--repeats 3]

``orchestrate_stage`` calls ``measure`` and projects its runs with a fresh worker each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import corpus_files

CHILD_PREFIX = "CHILD "
CHUNK_ASSETS = ("raw_documents", "sections", "chunks")


def _child(home: str, raw_root: str, key: str, warehouse: str) -> None:
    """In the fresh process: what a run worker does, timed (CPU since the interpreter began)."""
    os.environ["DAGSTER_HOME"] = home
    import dagster as dg

    from agrag_pipeline.definitions import build_definitions
    from agrag_pipeline.defs.resources import PipelineResource
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

    resource_ = PipelineResource(
        raw_root=raw_root,
        warehouse_root=warehouse,
        settings_path=str(DEFAULT_SETTINGS_PATH),
        cache_dir=os.path.join(os.path.dirname(warehouse), "cache"),
    )
    instance = dg.DagsterInstance.from_config(home)
    job = build_definitions(resource_).resolve_job_def("ingest_documents")
    ready = time.process_time()
    result = job.execute_in_process(
        instance=instance,
        asset_selection=[dg.AssetKey(a) for a in CHUNK_ASSETS],
        run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}},
        tags={
            "dagster/asset_partition_range_start": key,
            "dagster/asset_partition_range_end": key,
        },
        raise_on_error=False,
    )
    done = time.process_time()
    figures = {"before_run_cpu_s": ready, "run_cpu_s": done - ready, "ok": result.success}
    sys.stdout.write(CHILD_PREFIX + json.dumps(figures) + "\n")


def measure(root: Path, repeats: int = 3) -> dict[str, Any]:
    """Median CPU of a fresh run worker (``repeats`` processes, one document each): before its
    run (interpreter, imports, definitions, instance, job) and its run (cold caches)."""
    from agrag_pipeline.runtime import PROJECT_ROOT

    markdown = [p for p in corpus_files(root) if p.suffix == ".md"][:repeats]
    if not markdown:
        raise SystemExit(f"no Markdown document under {root} to run")
    with tempfile.TemporaryDirectory(prefix="agrag-run-worker-") as work_dir:
        work = Path(work_dir)
        home, raw, warehouse = work / "home", work / "raw", work / "warehouse"
        for folder in (home, raw, warehouse):
            folder.mkdir()
        shutil.copyfile(
            PROJECT_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml", home / "dagster.yaml"
        )
        for path in markdown:
            shutil.copyfile(path, raw / path.name)
        keys = [p.name for p in markdown]
        subprocess.run(
            [sys.executable, "-c", _REGISTER, str(home), *keys],
            check=True,
            env={**os.environ, "DAGSTER_HOME": str(home)},
        )
        before, runs, whole = [], [], []
        for key in keys:
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            child = ["--child", str(home), str(raw), key, str(warehouse)]
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.run_worker_start", *child],
                capture_output=True,
                text=True,
                env={**os.environ, "DAGSTER_HOME": str(home)},
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            line = [x for x in done.stdout.splitlines() if x.startswith(CHILD_PREFIX)]
            if done.returncode or not line:
                raise SystemExit(f"the run worker for {key} failed:\n{done.stderr[-2000:]}")
            figures = json.loads(line[0][len(CHILD_PREFIX) :])
            if not figures["ok"]:
                raise SystemExit(f"the run of {key} failed:\n{done.stderr[-2000:]}")
            total = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
            whole.append(total)
            runs.append(figures["run_cpu_s"])
            before.append(total - figures["run_cpu_s"])
    return {
        "processes": len(whole),
        "start_cpu_s": round(statistics.median(before), 3),
        "cold_one_document_run_cpu_s": round(statistics.median(runs), 3),
        "process_cpu_s": round(statistics.median(whole), 3),
    }


_REGISTER = (
    "import sys, dagster as dg; "
    "dg.DagsterInstance.from_config(sys.argv[1]).add_dynamic_partitions('documents', sys.argv[2:])"
)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--child":
        _child(*args[1:5])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="a corpus's raw root")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(args)
    sys.stdout.write("RESULT " + json.dumps(measure(options.root, options.repeats)) + "\n")


if __name__ == "__main__":
    main()
