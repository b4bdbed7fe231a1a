"""Where a warm Dagster run worker spends its CPU time beyond the core's work, per document.

``python -m benchmarks.dagster_cost --root RAW --documents M [--whole] [--top N]`` builds a
shipped instance (``agrag_pipeline/instance/dagster.yaml``) in a temporary ``DAGSTER_HOME``,
warms this process as a run worker (definitions built, tokenizer and model loaded, one small
run done), then executes one ranged run of ``M`` documents of the ``ingest_documents`` job
(``--whole``: every asset, sinks included; else raw_documents -> sections -> chunks) under
cProfile, in this process, and prints one ``RESULT`` JSON line: the run's process CPU seconds
and, per document, the CPU of each part (cumulative profile time of the functions named in
``PARTS``), the events it stored, and the profile's top functions by own time. The parts
overlap nowhere by construction (each is a set of functions that never call one another); the
rest is Dagster's execution machinery. A reader projects N documents as
``runs * fixed + N * per_document`` (the per-document figures come from one run of ``M``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import corpus_files
from benchmarks.stages import RESULT_PREFIX

#: Part name -> (module path suffix, function name) whose cumulative time is that part.
PARTS: dict[str, list[tuple[str, str]]] = {
    # The core's own work, as ``run_document`` and the sinks' steps do it.
    "core: snapshot, parse, chunk, embed": [
        ("agrag_pipeline/pipeline.py", "snapshot_document"),
        ("agrag_pipeline/pipeline.py", "build_sections"),
        ("agrag_pipeline/pipeline.py", "build_chunks"),
        ("agrag_pipeline/pipeline.py", "build_embeddings"),
    ],
    "sink: graph (tables + database)": [("agrag_pipeline/sinks/graph/step.py", "build_graph")],
    "sink: search index (rows + LanceDB)": [
        ("agrag_pipeline/sinks/index_step.py", "index_document"),
        ("agrag_pipeline/sinks/index_step.py", "index_documents"),
    ],
    "sink: index checked against the tables (per run)": [
        ("agrag_pipeline/sinks/index.py", "check_index"),
        ("agrag_pipeline/sinks/index.py", "ensure_fts_index"),
    ],
    "checks: evaluating (reading outputs back)": [
        ("agrag_pipeline/validation.py", "check_sections"),
        ("agrag_pipeline/validation.py", "check_chunks"),
        ("agrag_pipeline/validation.py", "check_embeddings"),
        ("agrag_pipeline/sinks/graph/step.py", "check_graph"),
        ("agrag_pipeline/sinks/index_step.py", "check_index_document"),
        ("agrag_pipeline/sinks/index_step.py", "check_index_documents"),
    ],
    "ours: failure records cleared": [("agrag_pipeline/batch.py", "_best_effort")],
    "ours: metadata built": [
        ("agrag_pipeline/defs/metadata.py", "snapshot_metadata"),
        ("agrag_pipeline/defs/metadata.py", "sections_metadata"),
        ("agrag_pipeline/defs/metadata.py", "chunks_metadata"),
        ("agrag_pipeline/defs/metadata.py", "embeddings_metadata"),
        ("agrag_pipeline/defs/graph.py", "graph_metadata"),
        ("agrag_pipeline/defs/index.py", "index_metadata"),
    ],
    "ours: instance queries (upstreams, run tags, plan)": [
        ("agrag_pipeline/defs/assets.py", "latest_materializations"),
        ("agrag_pipeline/defs/assets.py", "materialized_in_run"),
        ("agrag_pipeline/defs/assets.py", "_tag_run"),
        ("agrag_pipeline/defs/assets.py", "_place_in_run"),
    ],
    # The storage's own methods (the instance calls them from ``handle_new_event``); ours
    # stores a batch without calling ``store_event``, so nothing is counted twice.
    "dagster: storing events (run shard, index shard)": [
        ("dagster/_core/storage/event_log/sqlite/sqlite_event_log.py", "store_event"),
        ("agrag_pipeline/defs/instance_storage.py", "store_event_batch"),
    ],
}


def _cumulative(stats: pstats.Stats, wanted: list[tuple[str, str]]) -> float:
    total = 0.0
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, name), (_cc, _nc, _tt, cumulative, _callers) in table.items():
        if any(filename.endswith(suffix) and name == fn for suffix, fn in wanted):
            total += cumulative
    return total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=50, help="documents in the run")
    parser.add_argument("--whole", action="store_true", help="every asset, sinks included")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--profile-out", type=Path, default=None)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="agrag-dagcost-") as work_dir:
        work = Path(work_dir)
        home = work / "dagster_home"
        home.mkdir()
        from agrag_pipeline.runtime import PROJECT_ROOT

        shipped = PROJECT_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml"
        (home / "dagster.yaml").write_text(shipped.read_text())
        os.environ["DAGSTER_HOME"] = str(home)
        from benchmarks.stages import _WORKER, _worker_init, _worker_run

        assets = () if args.whole else ("raw_documents", "sections", "chunks")
        _worker_init(
            str(home), str(args.root), str(work / "warehouse"), str(work / "cache"), assets
        )
        instance = _WORKER["instance"]
        keys = [p.name for p in corpus_files(args.root)]
        warm, measured = keys[:2], keys[2 : 2 + args.documents]
        instance.add_dynamic_partitions("documents", keys[: 2 + args.documents])
        _worker_run(warm)  # the first run of a process: templates, imports, caches
        profile = cProfile.Profile(time.process_time)  # CPU, not waiting for a core
        cpu, wall = time.process_time(), time.perf_counter()
        profile.enable()
        ok, run_id = _worker_run(measured)
        profile.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        events = len(instance.all_logs(run_id))
        stats = pstats.Stats(profile)
        if args.profile_out:
            stats.dump_stats(str(args.profile_out))
        parts = {name: _cumulative(stats, fns) for name, fns in PARTS.items()}
        profiled_total = sum(
            tt
            for (_cc, _nc, tt, _ct, _callers) in stats.stats.values()  # type: ignore[attr-defined]
        )
        n = len(measured)
        scale = cpu / profiled_total if profiled_total else 1.0  # profiler overhead removed
        per_document = {name: round(1000 * value * scale / n, 2) for name, value in parts.items()}
        per_document["dagster: the rest (execution machinery)"] = round(
            1000 * (profiled_total - sum(parts.values())) * scale / n, 2
        )
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
        result = {
            "documents": n,
            "assets": list(assets) or "the whole ingest job",
            "run_succeeded": ok,
            "events": events,
            "events_per_document": round(events / n, 2),
            "cpu_s": round(cpu, 3),
            "wall_s": round(wall, 3),
            "cpu_ms_per_document": round(1000 * cpu / n, 2),
            "cpu_ms_per_document_by_part": per_document,
            "load_average": list(os.getloadavg()),
        }
        sys.stderr.write(out.getvalue())
        sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
