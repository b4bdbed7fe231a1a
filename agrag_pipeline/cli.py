"""``agrag``: the command line. ``agrag materialize`` runs the whole asset graph.

It uses the project-local Dagster instance (``DAGSTER_HOME``, default ``.dagster_home``), so
``dagster dev`` afterwards shows the same runs and materialisations. ``agrag core`` runs the
same steps without Dagster (for comparison and debugging), documents in parallel processes.
``agrag serve-embeddings`` serves the local embedding model over an OpenAI-compatible API.

Roots: each of ``--raw-root``, ``--warehouse``, ``--settings`` and ``--cache-dir`` comes from
its flag, else from ``AGRAG_RAW_ROOT``, ``AGRAG_WAREHOUSE_ROOT``, ``AGRAG_SETTINGS`` and
``AGRAG_CACHE_DIR``, else from the project default; the command prints which it uses.

Both commands show progress (one updating line on a terminal, a plain line per document
otherwise), end with a summary naming every failed, refused, skipped and removed file with its
reason, and exit 0 only when every document succeeded or was deliberately skipped.

A root or settings file that cannot be used is refused before any work, in one line on stderr
naming the path and the problem, with its own exit status (listed below).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from agrag_pipeline.batch import Outcome
    from agrag_pipeline.freshness import Removal
    from agrag_pipeline.reporting import Progress, RunSummary
    from agrag_pipeline.runtime import Roots, Runtime
    from agrag_pipeline.sources import ScanResult


# -- roots ---------------------------------------------------------------------------------------


#: Exit statuses of ``agrag`` (also in every ``--help``): one per kind of mistake, so a script
#: can tell them apart. 1 stays "a document failed" and Python's own status of an unexpected
#: error (which still prints its traceback); 2 is argparse's for a wrong command line.
EXIT_STATUS: dict[str, int] = {
    "raw_root_missing": 3,
    "raw_root_not_a_folder": 4,
    "raw_root_unreadable": 5,
    "output_not_a_folder": 6,
    "output_unusable": 7,
    "input_unreadable": 8,
    "settings_invalid": 9,
}
EXIT_STATUS_HELP = """\
exit status:
  0  done: every document succeeded or was deliberately skipped
  1  a document or step failed (the summary names it), the index is empty (search, eval),
     or an unexpected error (with its traceback)
  2  the command line is wrong (an unknown option, a bad value)
  3  the raw root does not exist
  4  the raw root is not a folder (a file, a pipe)
  5  the raw root cannot be listed (permission denied)
  6  the warehouse, embedding cache or DAGSTER_HOME is a file, or a file is in its path
  7  the warehouse, embedding cache or DAGSTER_HOME cannot be created, listed or written
  8  the settings file (or eval's questions file) cannot be read (missing, a folder, denied)
  9  the settings file is invalid (not YAML, a wrong key, type or value)
each of 3-9 is one line on stderr naming the path and the problem, before any work starts.
"""


class InputFileError(Exception):
    """A file named on the command line (eval's questions) that cannot be read."""


def resolve_cli_roots(
    args: argparse.Namespace,
    *,
    raw_root: bool = True,
    warehouse: Literal["read", "write"] | None = "write",
    cache: bool = True,
) -> Roots:
    """Flag, else environment, else default (``runtime.resolve_roots``), each checked before
    any work: the roots the command uses (``runtime.check_roots``: ``RootError``) and the
    settings file (``SettingsError``). ``main`` turns either into one line and its status."""
    from agrag_pipeline.runtime import check_roots, resolve_roots
    from agrag_pipeline.settings import load_settings

    roots = resolve_roots(
        getattr(args, "raw_root", None),
        getattr(args, "warehouse", None),
        getattr(args, "settings", None),
        getattr(args, "cache_dir", None),
    )
    load_settings(roots.settings_path)
    # Last: it creates a missing output folder, which the run would do next anyway.
    check_roots(roots, raw_root=raw_root, warehouse=warehouse, cache=cache)
    return roots


def _refusal(exc: BaseException) -> tuple[int, str] | None:
    """The exit status and line of a user's mistake (``EXIT_STATUS``), or None for a bug."""
    from agrag_pipeline.runtime import RootError
    from agrag_pipeline.settings import SettingsError, SettingsFileError

    if isinstance(exc, RootError):
        return EXIT_STATUS[exc.problem], str(exc)
    if isinstance(exc, SettingsFileError):
        return EXIT_STATUS["input_unreadable"], f"settings {exc}"
    if isinstance(exc, SettingsError):  # InvalidSettingsError and any other
        return EXIT_STATUS["settings_invalid"], f"settings {exc}"
    if isinstance(exc, InputFileError):
        return EXIT_STATUS["input_unreadable"], str(exc)
    return None


def _announce(command: str, roots: Roots, extra: list[str] | None = None) -> None:
    for line in [*roots.describe(), *(extra or [])]:
        print(f"agrag {command}: {line}", flush=True)


def _export_roots(roots: Roots) -> None:
    """Hand the resolved roots to the Dagster definitions (which read the environment)."""
    os.environ["AGRAG_RAW_ROOT"] = roots.raw_root
    os.environ["AGRAG_WAREHOUSE_ROOT"] = roots.warehouse_root
    os.environ["AGRAG_SETTINGS"] = roots.settings_path
    if roots.cache_dir is not None:
        os.environ["AGRAG_CACHE_DIR"] = roots.cache_dir


def _prepare_environment() -> Path:
    from agrag_pipeline.runtime import PROJECT_ROOT, check_output_folder

    origin = "given by DAGSTER_HOME" if os.environ.get("DAGSTER_HOME") else "the default"
    os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster_home"))
    home = Path(os.environ["DAGSTER_HOME"])
    check_output_folder("Dagster instance", home, origin)
    home.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    return home


def _scan(roots: Roots, runtime: Runtime) -> ScanResult:
    from agrag_pipeline.sources import scan_raw_root

    # Temporary files of writers killed mid-write (a live writer's are kept).
    try:
        runtime.warehouse.remove_stale_temporaries()
    except OSError as exc:
        print(f"agrag: could not clean temporary files: {exc}", file=sys.stderr)
    return scan_raw_root(Path(roots.raw_root), runtime.settings.documents)


def _scan_into(summary: RunSummary, scan: ScanResult) -> None:
    summary.refused.extend((p.name, p.reason) for p in scan.refused)
    summary.skipped.extend((p.name, p.reason) for p in scan.skipped)


def _removals_into(summary: RunSummary, removals: list[Removal]) -> None:
    for r in removals:
        if r.error is None:
            summary.removed.append(
                (r.source_key, f"no longer a document; removed {len(r.removed)} stored outputs")
            )
        else:
            summary.failed.append((r.source_key, f"its outputs could not be removed: {r.error}"))


def _print_summary_lines(summary: RunSummary) -> None:
    for line in summary.lines():
        print(line)
    sys.stdout.flush()


# -- agrag materialize -----------------------------------------------------------------------


@contextlib.contextmanager
def instance_lock(home: Path) -> Iterator[None]:
    """An inter-process lock on ``DAGSTER_HOME`` around instance set-up and partition changes.

    Two ``agrag materialize`` starting at once would otherwise both create the SQLite schema
    (``table ... already exists``) or both add the same partition (``UNIQUE constraint``).
    """
    with open(home / ".agrag-instance.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _initialise_storage(instance: Any) -> None:
    """Touch every storage, so its schema is created (once) while the lock is held."""
    instance.get_runs(limit=1)
    instance.get_dynamic_partitions("documents")
    instance.all_instigator_state()


def materialize(args: argparse.Namespace) -> int:
    """Register every document under the raw root and materialise the graph in one run."""
    from agrag_pipeline.freshness import gone_source_keys, remove_deleted
    from agrag_pipeline.reporting import RunSummary
    from agrag_pipeline.runtime import Runtime

    roots = resolve_cli_roots(args)
    home = _prepare_environment()
    _export_roots(roots)
    _announce("materialize", roots, [f"Dagster instance: {home} (DAGSTER_HOME)"])
    import dagster as dg

    from agrag_pipeline.defs.launch import execute_job_run
    from agrag_pipeline.defs.partitions import documents_partitions

    summary = RunSummary("agrag materialize")
    started = time.perf_counter()
    runtime = Runtime.from_files(
        roots.settings_path, roots.raw_root, roots.warehouse_root, roots.cache_dir
    )
    scan = _scan(roots, runtime)
    _scan_into(summary, scan)
    name = documents_partitions.name or "documents"
    present = set(scan.keys)
    with instance_lock(home):
        instance = dg.DagsterInstance.get()
        _initialise_storage(instance)
        registered = instance.get_dynamic_partitions(name)
        gone = gone_source_keys(scan, runtime.warehouse, also=registered)
        removals = remove_deleted(runtime.warehouse, gone, runtime.document_sinks())
        registered_set = set(registered)
        for removal in removals:
            if removal.error is None and removal.source_key in registered_set:
                instance.delete_dynamic_partition(name, removal.source_key)
        registered_set = set(instance.get_dynamic_partitions(name))
        new = [k for k in scan.keys if k not in registered_set]
        if new:
            instance.add_dynamic_partitions(name, new)
        ordered = instance.get_dynamic_partitions(name)
    _removals_into(summary, removals)
    keys = [k for k in ordered if k in present]
    # The run needs the keys only, not each file's scan entry (its path and stat).
    del scan, present, ordered
    summary.documents = len(keys)
    if not keys:
        print(f"agrag materialize: no documents under {roots.raw_root}", file=sys.stderr)
        summary.elapsed_s = time.perf_counter() - started
        _print_summary_lines(summary)
        return summary.exit_status
    log_level = "DEBUG" if args.verbose else "WARNING"
    run_id = str(uuid.uuid4())
    watcher = _RunWatcher(instance, run_id, keys)
    watcher.start()
    try:
        # A real run of the job (its code location's origin), not a jobless in-process one.
        result = execute_job_run(
            instance,
            "ingest_documents",
            run_id=run_id,
            run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
            tags={
                "dagster/asset_partition_range_start": keys[0],
                "dagster/asset_partition_range_end": keys[-1],
                "agrag/trigger": "cli",
            },
        )
    finally:
        watcher.stop()
    summary.elapsed_s = time.perf_counter() - started
    _summarise_run(summary, result, keys, home)
    _print_summary_lines(summary)
    return summary.exit_status or (0 if result.success else 1)


class _RunWatcher:
    """Progress of a run in this process, read from its event log as the run writes it.

    A document counts as done when its last asset is materialised, failed when any step
    reports it failed (assets report their documents when the step ends).
    """

    def __init__(self, instance: Any, run_id: str, keys: list[str]) -> None:
        from agrag_pipeline.reporting import Progress

        self.instance = instance
        self.run_id = run_id
        self.keys = set(keys)
        self.progress: Progress = Progress(len(keys), label="agrag materialize")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._seen = 0
        self._finished: set[str] = set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        with contextlib.suppress(Exception):
            self._poll()
        self.progress.finish()

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            with contextlib.suppress(Exception):  # the run may not be stored yet
                self._poll()

    def _poll(self) -> None:
        from dagster import DagsterEventType

        records = self.instance.all_logs(
            self.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
        )
        for record in records[self._seen :]:
            event = record.dagster_event
            if event is None:
                continue
            mat = event.event_specific_data.materialization
            key = mat.partition or ""
            if key in self._finished or key not in self.keys:
                continue
            status = mat.metadata.get("agrag/status")
            asset = mat.asset_key.to_user_string()
            if status is not None and status.value == "failed":
                self._finished.add(key)
                error = mat.metadata.get("error")
                self.progress.update(key, False, error=f"{asset}: {_plain(error)}")
            elif asset == "embeddings":
                self._finished.add(key)
                count = mat.metadata.get("dagster/row_count")
                self.progress.update(key, True, int(count.value) if count is not None else 0)
        self._seen = len(records)


def _plain(value: Any) -> str:
    text = str(getattr(value, "value", value) or "")
    return text.replace("```", "").strip()


def _summarise_run(summary: RunSummary, result: Any, keys: list[str], home: Path) -> None:
    rows: dict[str, dict[str, str]] = {}
    failed: dict[str, str] = {}
    checks_failed = 0
    step_failures = []
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            mat = event.event_specific_data.materialization
            meta = mat.metadata
            key = mat.partition or ""
            row = rows.setdefault(key, {})
            status = meta.get("agrag/status")
            count = meta.get("dagster/row_count")
            asset = mat.asset_key.to_user_string()
            row[asset] = (
                f"{count.value}" if count is not None else (status.value if status else "ok")
            )
            if status is not None and status.value == "failed" and key not in failed:
                failed[key] = f"{asset}: {_plain(meta.get('error'))}"
        elif event.event_type_value == "STEP_FAILURE":
            # A step that ends the run names the documents it could not make and why.
            user_failure = event.event_specific_data.user_failure_data
            named = user_failure.metadata.get("failed") if user_failure else None
            if named is not None and isinstance(named.value, dict):
                for key, why in named.value.items():
                    failed.setdefault(key, str(why))
                continue
            step_failures.append(
                f"step {event.step_key}: {event.event_specific_data.error.message}"
            )
        elif (
            event.event_type_value == "ASSET_CHECK_EVALUATION"
            and not event.event_specific_data.passed
        ):
            checks_failed += 1
    summary.extra.append(f"run {result.run_id}, DAGSTER_HOME={home}")
    summary.extra.append(f"{'document':48} {'sections':>8} {'chunks':>7} {'embeddings':>10}")
    for key in keys:
        row = rows.get(key, {})
        summary.extra.append(
            f"{key[:48]:48} {row.get('sections', '-'):>8} {row.get('chunks', '-'):>7} "
            f"{row.get('embeddings', '-'):>10}"
        )
        if key in failed:
            summary.failed.append((key, failed[key]))
        elif row.get("embeddings", "-") in ("-", "failed") and step_failures:
            summary.failed.append((key, "not materialised: " + "; ".join(step_failures)[:500]))
        else:
            summary.succeeded += 1
            with contextlib.suppress(ValueError):
                summary.chunks += int(row.get("chunks", "0"))
    summary.extra.append(f"asset checks failed: {checks_failed}")
    summary.extra.extend(f"FAILED {f.strip()}" for f in step_failures)
    summary.extra.append("run `dagster dev` (see README) to browse these materialisations.")


# -- agrag core --------------------------------------------------------------------------------


def run_documents(
    roots: Roots,
    keys: list[str],
    *,
    workers: int,
    embed: bool,
    force: bool,
    on_outcome: Callable[[Outcome[int]], None],
) -> None:
    """Every document through every step in supervised worker processes (``workers``), each
    document's outcome handed to ``on_outcome`` as it comes (none is kept)."""
    from agrag_pipeline import workers as pool

    pool.run_documents(
        roots, keys, workers=workers, embed=embed, force=force, on_outcome=on_outcome
    )


def core(args: argparse.Namespace) -> int:
    """The same steps without Dagster, for every document under the raw root."""
    from agrag_pipeline.freshness import gone_source_keys, remove_deleted
    from agrag_pipeline.reporting import Progress, RunSummary
    from agrag_pipeline.runtime import Runtime

    roots = resolve_cli_roots(args)
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    _announce("core", roots, [f"workers: {workers}"])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    started = time.perf_counter()
    summary = RunSummary("agrag core")
    runtime = Runtime.from_files(
        roots.settings_path, roots.raw_root, roots.warehouse_root, roots.cache_dir
    )
    scan = _scan(roots, runtime)
    _scan_into(summary, scan)
    removals = remove_deleted(
        runtime.warehouse,
        gone_source_keys(scan, runtime.warehouse),
        runtime.document_sinks(),
    )
    _removals_into(summary, removals)
    keys = scan.keys
    # The run needs the keys only, not each file's scan entry (its path and stat).
    del scan, removals
    summary.documents = len(keys)
    progress: Progress = Progress(len(keys), label="agrag core")
    # Counts and the failures only: memory stays flat in the number of documents.
    failed: list[tuple[str, str]] = []

    def report(outcome: Outcome[int]) -> None:
        progress.update(outcome.source_key, outcome.ok, outcome.result or 0, outcome.error)
        if outcome.ok:
            summary.succeeded += 1
            summary.chunks += outcome.result or 0
        else:
            failed.append((outcome.source_key, _without_key(outcome)))

    run_documents(
        roots, keys, workers=workers, embed=not args.no_embed, force=args.force, on_outcome=report
    )
    progress.finish()
    summary.failed.extend(sorted(failed))
    summary.elapsed_s = time.perf_counter() - started
    _print_summary_lines(summary)
    return summary.exit_status


def _without_key(outcome: Outcome[Any]) -> str:
    error = outcome.error or ""
    prefix = f"{outcome.source_key}: "
    return error[len(prefix) :] if error.startswith(prefix) else error


# -- the parser --------------------------------------------------------------------------------


def _add_root_options(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(
        "--raw-root", default=default, help="folder of raw documents [AGRAG_RAW_ROOT]"
    )
    parser.add_argument(
        "--warehouse", default=default, help="output root, path or URI [AGRAG_WAREHOUSE_ROOT]"
    )
    parser.add_argument(
        "--settings", default=default, help="pipeline settings YAML [AGRAG_SETTINGS]"
    )
    parser.add_argument(
        "--cache-dir", default=default, help="embedding cache folder [AGRAG_CACHE_DIR]"
    )


def _positive(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """``agrag`` and its subcommands; each subcommand sets ``func`` (add new ones the same way).

    The root options are accepted before or after the subcommand (after wins)."""
    parser = argparse.ArgumentParser(
        prog="agrag",
        description=__doc__,
        epilog=EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_root_options(parser, None)
    roots = argparse.ArgumentParser(add_help=False)
    _add_root_options(roots, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    # Every subcommand's --help ends with the exit statuses too.
    sub_options: dict[str, Any] = {
        "epilog": EXIT_STATUS_HELP,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    mat_parser = sub.add_parser(
        "materialize",
        parents=[roots],
        help="materialise the whole asset graph into the Dagster instance",
        **sub_options,
    )
    mat_parser.add_argument("--verbose", action="store_true", help="print Dagster's event log")
    mat_parser.set_defaults(func=materialize)
    core_parser = sub.add_parser(
        "core", parents=[roots], help="run the steps without Dagster", **sub_options
    )
    core_parser.add_argument("--force", action="store_true", help="recompute current outputs")
    core_parser.add_argument("--no-embed", action="store_true", help="stop after chunking")
    core_parser.add_argument(
        "--workers",
        type=_positive,
        default=None,
        help="documents processed at once, in worker processes (default: the CPU count)",
    )
    core_parser.set_defaults(func=core)
    index_parser = sub.add_parser(
        "index",
        parents=[roots],
        help="update the search index from the stored embeddings",
        **sub_options,
    )
    index_parser.set_defaults(func=retrieval)
    search_parser = sub.add_parser(
        "search", parents=[roots], help="ask the search index", **sub_options
    )
    search_parser.add_argument("question", help="what to search for")
    search_parser.add_argument("-k", type=_positive, default=5, help="results (default 5)")
    search_parser.add_argument(
        "--mode", choices=["dense", "bm25", "hybrid"], default="hybrid", help="default hybrid"
    )
    search_parser.add_argument(
        "--copies",
        action="store_true",
        help="list chunks with the same text as results of their own (default: folded into "
        "the best-ranked one, which names where else its text is)",
    )
    search_parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object a line per result: the chunk's text, where it is, its copies and "
        "its provenance (document version, parser, chunker and schema fingerprints)",
    )
    search_parser.set_defaults(func=retrieval)
    eval_parser = sub.add_parser(
        "eval",
        parents=[roots],
        help="recall@1/5/10 and MRR@10 on labelled questions, against a fixed-size baseline",
        **sub_options,
    )
    eval_parser.add_argument(
        "questions", help="TSV: query, source_key, heading of the answer (or span start:end)"
    )
    eval_parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the comparison with 1,000-character chunks of the same text (which embeds "
        "every stored document a second time, through the embedding cache)",
    )
    eval_parser.set_defaults(func=retrieval)
    extraction_eval_parser = sub.add_parser(
        "eval-extraction",
        parents=[roots],
        help="precision and recall per type of entity and relation extraction on a labelled "
        "set of documents under --raw-root (needs llm.base_url in the settings)",
        **sub_options,
    )
    extraction_eval_parser.add_argument(
        "--labels", default=None, help="labelled set (default data/extraction_eval.yaml)"
    )
    extraction_eval_parser.set_defaults(func=eval_extraction)
    serve_parser = sub.add_parser(
        "serve-embeddings",
        parents=[roots],
        help="serve the local embedding model over an OpenAI-compatible HTTP API",
        **sub_options,
    )
    serve_parser.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    serve_parser.add_argument("--port", type=_positive, default=8000, help="default 8000")
    serve_parser.add_argument(
        "--max-concurrency", type=_positive, default=1, help="model calls at once (default 1)"
    )
    serve_parser.add_argument(
        "--max-waiting", type=_positive, default=64, help="requests queued beyond (default 64)"
    )
    serve_parser.add_argument(
        "--max-request-mb", type=_positive, default=8, help="largest request body (default 8)"
    )
    serve_parser.add_argument(
        "--max-inputs", type=_positive, default=2048, help="texts per request (default 2048)"
    )
    serve_parser.set_defaults(func=serve_embeddings)
    return parser


def serve_embeddings(args: argparse.Namespace) -> int:
    """``agrag serve-embeddings``: the settings' model behind ``/v1/embeddings`` (server.py)."""
    roots = resolve_cli_roots(args, raw_root=False, warehouse=None)
    from agrag_pipeline.embedding.server import ServerLimits, serve
    from agrag_pipeline.runtime import Runtime

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    _announce("serve-embeddings", roots)
    runtime = Runtime.from_files(
        roots.settings_path, roots.raw_root, roots.warehouse_root, roots.cache_dir
    )
    limits = ServerLimits(
        max_request_bytes=args.max_request_mb << 20,
        max_inputs=args.max_inputs,
        max_concurrency=args.max_concurrency,
        max_waiting=args.max_waiting,
    )
    serve(
        runtime.settings.embedding,
        runtime.embedding_cache_dir,
        host=args.host,
        port=args.port,
        limits=limits,
    )
    return 0


def retrieval(args: argparse.Namespace) -> int:
    """``agrag index`` / ``search`` / ``eval`` (the logic is in ``retrieval.commands``)."""
    writes = args.command == "index"
    roots = resolve_cli_roots(args, raw_root=False, warehouse="write" if writes else "read")
    if args.command == "eval":
        _check_readable_file("questions", args.questions)
    from agrag_pipeline.retrieval import commands
    from agrag_pipeline.runtime import Runtime

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    runtime = Runtime.from_files(
        roots.settings_path, roots.raw_root, roots.warehouse_root, roots.cache_dir
    )
    if args.command == "index":
        return commands.index_command(runtime)
    if args.command == "search":
        return commands.search_command(
            runtime, args.question, args.k, args.mode, args.copies, args.json
        )
    return commands.eval_command(runtime, args.questions, baseline=not args.no_baseline)


def eval_extraction(args: argparse.Namespace) -> int:
    """``agrag eval-extraction`` (the logic is in ``extraction.evaluate``)."""
    from agrag_pipeline.extraction.evaluate import DEFAULT_LABELS, evaluate_extraction
    from agrag_pipeline.runtime import Runtime

    roots = resolve_cli_roots(args, warehouse=None)
    labels = Path(args.labels) if args.labels else DEFAULT_LABELS
    _check_readable_file("labels", str(labels))
    runtime = Runtime.from_files(roots.settings_path, roots.raw_root, cache_dir=roots.cache_dir)
    if runtime.settings.llm is None:
        print(
            f"{roots.settings_path}: no llm.base_url: extraction is not configured", file=sys.stderr
        )
        return 2
    report = evaluate_extraction(
        runtime.settings, Path(roots.raw_root), labels, runtime.embedding_cache_dir
    )
    print("\n".join(report.lines()))
    return 0


def _check_readable_file(label: str, path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise InputFileError(f"{label} {path}: cannot be read: {exc.strerror or exc}") from None


def main(argv: list[str] | None = None) -> int:
    """Run one command. A user's mistake (a root, settings or input file that cannot be used)
    ends in one line on stderr and its ``EXIT_STATUS``; anything else keeps its traceback."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except Exception as exc:
        refusal = _refusal(exc)
        if refusal is None:
            raise
        code, line = refusal
        print(f"agrag {args.command}: {line}", file=sys.stderr, flush=True)
        return code
    return status


def entry() -> None:
    """The ``agrag`` command: ``main``, then an exit that skips native libraries' teardown.

    Why: after the last line of a run was printed, the interpreter's finalization and the C++
    static destructors that follow it tear down Arrow's thread pools while their workers may
    still be waking; on a busy machine a finished run aborted so ("terminate called without
    an active exception", exit -6 instead of its status; apache/arrow#34314, #39862). So the
    process ends as Python's finalization begins, with its first steps kept: threads that are
    not daemons joined, exit handlers run (logging, finalizers, the libraries' own), streams
    flushed; what is skipped frees memory the kernel frees anyway. An exception, ``--help`` or
    a wrong command line exits the ordinary way.
    """
    status = main()
    getattr(threading, "_shutdown")()  # noqa: B009 - private, what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe must not change the status
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    entry()
