"""``agrag``: the command line. ``agrag materialize`` runs the whole asset graph.

It uses the project-local Dagster instance (``DAGSTER_HOME``, default ``.dagster_home``), so
``dagster dev`` afterwards shows the same runs and materialisations. ``agrag core`` runs the
same steps without Dagster (for comparison and debugging).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from agrag_pipeline.runtime import DEFAULT_RAW_ROOT, DEFAULT_WAREHOUSE_ROOT, PROJECT_ROOT
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH


def _prepare_environment(args: argparse.Namespace) -> None:
    os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster_home"))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ["AGRAG_RAW_ROOT"] = str(Path(args.raw_root).resolve())
    os.environ["AGRAG_WAREHOUSE_ROOT"] = str(args.warehouse)
    os.environ["AGRAG_SETTINGS"] = str(Path(args.settings).resolve())


def materialize(args: argparse.Namespace) -> int:
    """Register every document under the raw root and materialise the graph in one run."""
    _prepare_environment(args)
    import dagster as dg

    from agrag_pipeline.definitions import build_definitions
    from agrag_pipeline.defs.partitions import documents_partitions
    from agrag_pipeline.sources import scan_raw_root

    defs = build_definitions()
    instance = dg.DagsterInstance.get()
    name = documents_partitions.name or "documents"
    files, refused = scan_raw_root(Path(os.environ["AGRAG_RAW_ROOT"]))
    for message in refused:
        print(f"skipped: {message}", file=sys.stderr)
    if not files:
        print(f"no documents under {os.environ['AGRAG_RAW_ROOT']}", file=sys.stderr)
        return 1
    registered = set(instance.get_dynamic_partitions(name))
    new = [f.source_key for f in files if f.source_key not in registered]
    if new:
        instance.add_dynamic_partitions(name, new)
    keys = [k for k in instance.get_dynamic_partitions(name) if k in {f.source_key for f in files}]
    job = defs.resolve_job_def("ingest_documents")
    started = time.perf_counter()
    log_level = "DEBUG" if args.verbose else "WARNING"
    result = job.execute_in_process(
        instance=instance,
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
        tags={
            "dagster/asset_partition_range_start": keys[0],
            "dagster/asset_partition_range_end": keys[-1],
            "agrag/trigger": "cli",
        },
        raise_on_error=False,
    )
    elapsed = time.perf_counter() - started
    _print_summary(result, keys, elapsed, instance.root_directory)
    return 0 if result.success else 1


def _print_summary(result, keys: list[str], elapsed: float, home: str) -> None:
    rows: dict[str, dict[str, str]] = {}
    failures: list[str] = []
    checks_failed = 0
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            mat = event.event_specific_data.materialization
            meta = mat.metadata
            row = rows.setdefault(mat.partition or "", {})
            status = meta.get("agrag/status")
            count = meta.get("dagster/row_count")
            row[mat.asset_key.to_user_string()] = (
                f"{count.value}" if count is not None else (status.value if status else "ok")
            )
            if status is not None and status.value == "failed":
                error = meta.get("error")
                failures.append(f"{mat.asset_key.to_user_string()}: {error.value if error else ''}")
        elif event.event_type_value == "STEP_FAILURE":
            failures.append(f"step {event.step_key}: {event.event_specific_data.error.message}")
        elif (
            event.event_type_value == "ASSET_CHECK_EVALUATION"
            and not event.event_specific_data.passed
        ):
            checks_failed += 1
    print(
        f"\nagrag: {len(keys)} documents in {elapsed:.1f}s "
        f"(run {result.run_id}, DAGSTER_HOME={home})"
    )
    print(f"{'document':48} {'sections':>8} {'chunks':>7} {'embeddings':>10}")
    for key in keys:
        row = rows.get(key, {})
        print(
            f"{key[:48]:48} {row.get('sections', '-'):>8} {row.get('chunks', '-'):>7} "
            f"{row.get('embeddings', '-'):>10}"
        )
    print(f"asset checks failed: {checks_failed}")
    for failure in failures:
        print(f"FAILED {failure.strip()}")
    print("run `dagster dev` (see README) to browse these materialisations in the UI.")


def core(args: argparse.Namespace) -> int:
    """The same steps without Dagster, for every document under the raw root."""
    from agrag_pipeline.batch import run_isolated
    from agrag_pipeline.pipeline import run_document
    from agrag_pipeline.runtime import Runtime
    from agrag_pipeline.sources import scan_raw_root

    rt = Runtime.from_files(args.settings, args.raw_root, str(args.warehouse))
    files, _ = scan_raw_root(rt.raw_root)

    def one(key: str) -> int:
        return len(run_document(rt, key, embed=not args.no_embed, force=args.force).chunks)

    started = time.perf_counter()
    outcomes = run_isolated("core", [f.source_key for f in files], one, rt.warehouse)
    elapsed = time.perf_counter() - started
    chunks = sum(o.result or 0 for o in outcomes)
    failed = [o for o in outcomes if not o.ok]
    print(
        f"agrag core: {len(outcomes)} documents, {chunks} chunks, "
        f"{len(failed)} failed, {elapsed:.2f}s"
    )
    for o in failed:
        print(f"FAILED {o.error}")
    return 0 if not failed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agrag", description=__doc__)
    parser.add_argument("--raw-root", default=str(DEFAULT_RAW_ROOT), help="folder of raw documents")
    parser.add_argument(
        "--warehouse", default=str(DEFAULT_WAREHOUSE_ROOT), help="output root (path or URI)"
    )
    parser.add_argument(
        "--settings", default=str(DEFAULT_SETTINGS_PATH), help="pipeline settings YAML"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    mat_parser = sub.add_parser(
        "materialize", help="materialise the whole asset graph into the Dagster instance"
    )
    mat_parser.add_argument("--verbose", action="store_true", help="print Dagster's event log")
    core_parser = sub.add_parser("core", help="run the steps without Dagster")
    core_parser.add_argument("--force", action="store_true", help="recompute current outputs")
    core_parser.add_argument("--no-embed", action="store_true", help="stop after chunking")
    args = parser.parse_args(argv)
    return materialize(args) if args.command == "materialize" else core(args)


if __name__ == "__main__":
    raise SystemExit(main())
