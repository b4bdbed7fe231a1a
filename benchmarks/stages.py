"""The measured stages, each run in a fresh subprocess so that each peak RSS is its own.

``python -m benchmarks.stages STAGE --root RAW_ROOT --repeats K [...]`` prints one JSON line
(prefixed ``RESULT ``) with the stage's figures and ``peak_rss_mb`` (``ru_maxrss`` of the
process, and of its children where it starts any). Every stage streams the corpus from disk one
file at a time; only timings and counts are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agrag_pipeline.freshness import plan_changes
from benchmarks.corpus import change_documents, corpus_files

RESULT_PREFIX = "RESULT "
MB = 1e6


def peak_rss_mb() -> dict[str, float]:
    """Peak resident set size of this process (and of its finished children), in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"self": round(own, 1), "children": round(children, 1)}


def cpu_seconds() -> float:
    """CPU time (user + system) of this process, its live children (worker pools) and its
    finished children (OCR subprocesses): on a shared machine a contender waiting for a core is
    not charged, so ratios of these spread far less than wall-clock ones."""
    import psutil

    me = psutil.Process()
    times = me.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in me.children(recursive=True):
        try:
            child_times = child.cpu_times()
        except psutil.Error:  # ended meanwhile: counted in children_* once reaped
            continue
        # A worker's own finished children (its OCR subprocesses) count as well.
        total += child_times.user + child_times.system
        total += child_times.children_user + child_times.children_system
    return total


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# -- parsing ----------------------------------------------------------------------------------


def parse_stage(root: Path, repeats: int, max_pdfs: int) -> dict[str, Any]:
    """MB/s per format and pages/s for PDF: median over ``repeats`` passes of parse time alone
    (reading the file is outside the timer). At most ``max_pdfs`` PDFs, spread over the corpus,
    are parsed per pass: PDF cost is per page, not per corpus size."""
    import pdfplumber

    from agrag_pipeline.parsing import parse_document
    from agrag_pipeline.parsing.errors import DocumentError

    figures: dict[str, Any] = {}
    for kind in ("markdown", "html", "pdf"):
        files = corpus_files(root, kind)
        scope = len(files)
        if kind == "pdf" and len(files) > max_pdfs:
            step = len(files) / max_pdfs
            files = [files[int(i * step)] for i in range(max_pdfs)]
        if not files:
            continue
        pages = 0
        if kind == "pdf":
            for path in files:
                with pdfplumber.open(path) as pdf:
                    pages += len(pdf.pages)
        size = sum(p.stat().st_size for p in files)
        passes, sections, failed = [], 0, 0
        for _ in range(repeats):
            spent, sections, failed = 0.0, 0, 0
            for path in files:
                raw = path.read_bytes()
                start = time.perf_counter()
                try:
                    sections += len(parse_document(raw, path.name).sections)
                except DocumentError:
                    failed += 1
                spent += time.perf_counter() - start
            passes.append(spent)
        seconds = _median(passes)
        entry = {
            "files": len(files),
            "files_in_corpus": scope,
            "bytes": size,
            "seconds": round(seconds, 3),
            "mb_per_s": round(size / MB / seconds, 3),
            "sections": sections,
            "failed": failed,
        }
        if kind == "pdf":
            entry["pages"] = pages
            entry["pages_per_s"] = round(pages / seconds, 2)
        figures[kind] = entry
    return figures


# -- chunking ---------------------------------------------------------------------------------


def chunk_stage(root: Path, repeats: int, docling_files: int) -> dict[str, Any]:
    """Ours against the peers on the corpus's Markdown, file by file in rotating order (so a
    drift in the shared machine's load hits every contender alike); median of passes."""
    from agrag_pipeline.chunking.chunker import StructureChunker
    from agrag_pipeline.chunking.settings import ChunkerSettings
    from agrag_pipeline.chunking.tokens import TokenCounter
    from agrag_pipeline.parsing import parse_document
    from benchmarks.chunking_bench import DOCLING_NAME, docling_contender, peer_contenders

    files = corpus_files(root, "markdown")
    size = sum(p.stat().st_size for p in files)
    chunker = StructureChunker(ChunkerSettings(), TokenCounter(), max_sequence_tokens=256)

    def chunk_parsed(parsed: Any) -> int:
        return len(chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None))

    # One pass of ours alone first: it warms caches and gives ours' peak before peers load.
    for path in files:
        chunk_parsed(parse_document(path.read_bytes(), path.name))
    ours_peak = peak_rss_mb()["self"]

    peers = peer_contenders()
    names = ["ours: parse", "ours: chunk", *peers]
    totals: dict[str, list[float]] = {name: [] for name in names}
    # CPU time too: a process waiting for a core is not charged, so ratios spread far less on
    # a busy machine (the regression check compares these; chunking_bench.guarded_ratios).
    cpu_totals: dict[str, list[float]] = {name: [] for name in names}
    counts: dict[str, int] = {}
    for _ in range(repeats):
        spent = dict.fromkeys(names, 0.0)
        cpu_spent = dict.fromkeys(names, 0.0)
        produced = dict.fromkeys(names, 0)
        for number, path in enumerate(files):
            raw = path.read_bytes()
            order = list(peers)
            order = order[number % len(order) :] + order[: number % len(order)]
            cpu, start = time.process_time(), time.perf_counter()
            parsed = parse_document(raw, path.name)
            cpu_middle, middle = time.process_time(), time.perf_counter()
            produced["ours: chunk"] += chunk_parsed(parsed)
            spent["ours: parse"] += middle - start
            spent["ours: chunk"] += time.perf_counter() - middle
            cpu_spent["ours: parse"] += cpu_middle - cpu
            cpu_spent["ours: chunk"] += time.process_time() - cpu_middle
            for name in order:
                chunk_text = peers[name][0]
                cpu, start = time.process_time(), time.perf_counter()
                produced[name] += chunk_text(raw.decode("utf-8"))
                spent[name] += time.perf_counter() - start
                cpu_spent[name] += time.process_time() - cpu
        for name in names:
            totals[name].append(spent[name])
            cpu_totals[name].append(cpu_spent[name])
        counts = produced

    figures: dict[str, dict[str, Any]] = {}
    for totals_of in (totals, cpu_totals):
        pairs = zip(totals_of["ours: parse"], totals_of["ours: chunk"], strict=True)
        totals_of["ours: parse + chunk"] = [p + c for p, c in pairs]
    counts["ours: parse + chunk"] = counts["ours: chunk"]
    for name, label in [
        ("ours: parse + chunk", "ours: parse + chunk"),
        ("ours: chunk", "ours: chunk only"),
        *((name, name) for name in peers),
    ]:
        figures[label] = _chunk_entry(totals[name], size, counts[name])
        figures[label]["cpu_mb_per_s"] = round(size / MB / _median(cpu_totals[name]), 3)
        if name in peers:
            figures[label]["what"] = peers[name][1]
    left_out: list[str] = []
    try:  # docling is in the bench extra only (``bin/setup`` installs the rest)
        figures[DOCLING_NAME] = _docling_sample(files, repeats, docling_files, docling_contender())
    except ImportError as exc:
        left_out.append(f"chunking: docling (not installed: {exc.name})")
    ours = figures["ours: parse + chunk"]["mb_per_s"]
    ours_cpu = figures["ours: parse + chunk"]["cpu_mb_per_s"]
    for entry in figures.values():
        entry["ours_over_this"] = round(ours / entry["mb_per_s"], 3)
        if "cpu_mb_per_s" in entry:
            entry["cpu_ours_over_this"] = round(ours_cpu / entry["cpu_mb_per_s"], 3)
    return {
        "files": len(files),
        "bytes": size,
        "ours_peak_rss_mb_before_peers": ours_peak,
        "figures": figures,
        "left_out": left_out,
    }


def _chunk_entry(seconds: list[float], size: int, chunks: int) -> dict[str, Any]:
    median = _median(seconds)
    return {
        "seconds": round(median, 3),
        "mb_per_s": round(size / MB / median, 3),
        "chunks": chunks,
        "bytes": size,
    }


def _docling_sample(
    files: list[Path], repeats: int, sample: int, chunk_file: Callable[[Path], int]
) -> dict[str, Any]:
    """docling is ~100x slower than the rest: it runs on ``sample`` files spread evenly over the
    corpus (so their size mix is the corpus's) and its MB/s comes from them."""
    step = max(1, len(files) // max(sample, 1))
    subset = files[step // 2 :: step][:sample]
    size = sum(p.stat().st_size for p in subset)
    chunk_file(subset[0])  # the first conversion builds docling's pipeline
    passes, chunks = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        chunks = sum(chunk_file(p) for p in subset)
        passes.append(time.perf_counter() - start)
    entry = _chunk_entry(passes, size, chunks)
    entry["scope"] = f"{len(subset)} files spread over the corpus ({size} bytes)"
    return entry


# -- embedding --------------------------------------------------------------------------------


def embed_stage(root: Path, repeats: int, sample: int) -> dict[str, Any]:
    """Ours against sentence-transformers' ``encode`` on ``sample`` of the corpus's chunks
    (their ``contextual_text``, what the pipeline embeds), and the cached re-run; the median
    of ``repeats`` runs of ``embedding_bench.run`` on those texts."""
    from benchmarks.embedding_bench import run as embedding_run

    texts = corpus_chunk_sample(root, sample)
    runs = [embedding_run(texts=texts, repeats=1, static=False) for _ in range(repeats)]
    figures: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            figures[key] = round(_median([float(r[key]) for r in runs]), 4)
    figures["cache_rerun_chunks_per_s"] = round(len(texts) / figures["cache_rerun_s"], 1)
    figures["runs"] = repeats
    return figures


def corpus_chunk_sample(root: Path, sample: int, per_document: int = 8) -> list[str]:
    """Up to ``per_document`` chunks from documents spread over the corpus, ``sample`` in all."""
    from agrag_pipeline.chunking.chunker import StructureChunker
    from agrag_pipeline.chunking.settings import ChunkerSettings
    from agrag_pipeline.chunking.tokens import TokenCounter
    from agrag_pipeline.parsing import parse_document
    from agrag_pipeline.parsing.errors import DocumentError

    chunker = StructureChunker(ChunkerSettings(), TokenCounter(), max_sequence_tokens=256)
    files = corpus_files(root)
    step = max(1, len(files) // max(1, sample // per_document))
    texts: list[str] = []
    for offset in range(step):  # wrap around until the sample is full
        for path in files[offset::step]:
            try:
                parsed = parse_document(path.read_bytes(), path.name)
            except DocumentError:
                continue
            chunks = chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
            texts.extend(c.contextual_text for c in chunks[:per_document])
            if len(texts) >= sample:
                return texts[:sample]
    return texts


# -- orchestration ----------------------------------------------------------------------------

CHUNK_ASSETS = ("raw_documents", "sections", "chunks")


#: Instance configurations the orchestration stage can measure (``--configs``).
#: stock: Dagster's own SQLite storage; shipped: agrag_pipeline/instance/dagster.yaml.
CONFIGS = {
    "stock, 1 run at a time": ("stock", 1),
    "shipped, 1 run at a time": ("shipped", 1),
    "shipped, 2 runs at once": ("shipped", 2),
    # The shipped file with every run's event file built by Dagster's own _initdb (as before
    # the run-shard template): the template's share, side by side.
    "shipped without run-shard template, 2 runs at once": ("shipped-no-template", 2),
}
DEFAULT_CONFIG = "shipped, 2 runs at once"


def orchestrate_stage(
    root: Path,
    repeats: int,
    change_fraction: float,
    per_run: int,
    work: Path,
    configs: list[str] | None = None,
    core_workers: int = 2,
    run_worker_start: bool = True,
) -> dict[str, Any]:
    """Backfill through a real Dagster instance against the core alone, chunks only (no
    embeddings), then the same after ``change_fraction`` of the documents changed; for each
    instance configuration in ``configs`` (the shipped default is reported as "dagster").
    The core runs twice: in one process ("core") and as ``agrag core --workers N`` runs it
    (``core_workers`` worker processes, "core --workers N"), so Dagster's two runs at once are
    compared with the core on the same cores.

    Also counts the events each configuration stores per document, and the cost of one event:
    (Dagster's time - the core's time) / events. The runs execute in warm workers; with
    ``run_worker_start`` a fresh worker's start-up is measured too (``run_worker_start.py``)
    and the CPU projected with one per run, as Dagster's default launch starts them (a lower
    bound: a fresh worker's caches are cold in its run as well). The shipped launcher forks its
    runs from a loaded forkserver instead; ``daemon_backfill.py`` measures that end to end.
    """
    keys = [p.name for p in corpus_files(root)]
    names = configs or [DEFAULT_CONFIG]
    rows: dict[str, list[float]] = {}
    facts: dict[str, Any] = {}
    events: dict[str, int] = {}
    generation = 0
    for attempt in range(repeats):
        core_run = _CoreRun(root, work / f"core-{attempt}")
        runners: list[_CoreRun | _CoreWorkersRun | _DagsterBackfill] = [core_run]
        if core_workers > 1:
            runners.append(_CoreWorkersRun(root, work / f"core-workers-{attempt}", core_workers))
        for index, name in enumerate(names):
            instance, parallel = CONFIGS[name]
            backfill = _DagsterBackfill(
                root, work / f"dagster-{attempt}-{index}", per_run, instance, parallel
            )
            backfill.name = "dagster" if name == DEFAULT_CONFIG else f"dagster ({name})"
            runners.append(backfill)
        # Alternate the order, so no contender always meets a warmer page cache.
        if attempt % 2:
            runners.reverse()
        for runner in runners:
            cpu = cpu_seconds()
            rows.setdefault(f"{runner.name} full", []).append(runner.full(keys))
            rows.setdefault(f"{runner.name} full (cpu)", []).append(cpu_seconds() - cpu)
        generation += 1
        changed = change_documents(root, change_fraction, generation=generation)
        for runner in runners:
            cpu = cpu_seconds()
            rows.setdefault(f"{runner.name} incremental", []).append(runner.incremental())
            rows.setdefault(f"{runner.name} incremental (cpu)", []).append(cpu_seconds() - cpu)
        # ``agrag core`` itself has no cursor: it snapshots every document and reuses outputs.
        generation += 1
        change_documents(root, change_fraction, generation=generation)
        rows.setdefault("core incremental (all documents, reuse)", []).append(core_run.rerun_all())
        facts = {
            "documents": len(keys),
            "changed": len(changed),
            "core_failed_documents": core_run.failed,
        }
        for contender in runners:
            if isinstance(contender, _CoreWorkersRun):
                facts[f"{contender.name}: failed documents"] = contender.failed
                contender.close()
            if isinstance(contender, _DagsterBackfill):
                facts[f"{contender.name}: runs full/incremental, failed runs"] = [
                    contender.runs_full,
                    contender.runs_incremental,
                    contender.failed_runs,
                ]
                events[contender.name] = contender.events_full
                if contender.name == "dagster":  # the keys report.py reads
                    facts["dagster_runs_full"] = contender.runs_full
                    facts["dagster_runs_incremental"] = contender.runs_incremental
                    facts["dagster_failed_runs"] = contender.failed_runs
                contender.close()
        for path in work.glob(f"*-{attempt}*"):
            shutil.rmtree(path, ignore_errors=True)
    seconds = {name: round(_median(values), 3) for name, values in rows.items()}
    per_event = {}
    for name, count in events.items():
        extra = seconds[f"{name} full"] - seconds["core full"]
        per_event[name] = {
            "events": count,
            "events_per_document": round(count / len(keys), 2),
            "ms_per_event": round(1000 * extra / count, 2) if count else None,
            "ratio_over_core_full": round(seconds[f"{name} full"] / seconds["core full"], 3),
            "ratio_incremental_over_full": round(
                seconds[f"{name} incremental"] / seconds[f"{name} full"], 4
            ),
        }
    result: dict[str, Any] = {
        **facts,
        "repeats": repeats,
        "seconds": seconds,
        "all_seconds": {name: [round(v, 3) for v in values] for name, values in rows.items()},
        "configurations": per_event,
        "ratio_incremental_over_full_core": round(
            seconds["core incremental"] / seconds["core full"], 4
        ),
    }
    workers_name = f"core --workers {core_workers}"
    for kind in ("full", "incremental"):
        if f"dagster {kind} (cpu)" in seconds and f"{workers_name} {kind} (cpu)" in seconds:
            result[f"cpu_ratio_dagster_over_core_workers_{kind}"] = round(
                seconds[f"dagster {kind} (cpu)"] / seconds[f"{workers_name} {kind} (cpu)"], 3
            )
    if "dagster full (cpu)" in seconds:
        result["cpu_ratio_incremental_over_full_dagster"] = round(
            seconds["dagster incremental (cpu)"] / seconds["dagster full (cpu)"], 4
        )
    if "dagster full" in seconds and f"{workers_name} full" in seconds:
        result["ratio_dagster_over_core_workers_full"] = round(
            seconds["dagster full"] / seconds[f"{workers_name} full"], 3
        )
        result["ratio_dagster_over_core_workers_incremental"] = round(
            seconds["dagster incremental"] / seconds[f"{workers_name} incremental"], 3
        )
    if "dagster full" in seconds:
        result["ratio_dagster_over_core_full"] = round(
            seconds["dagster full"] / seconds["core full"], 3
        )
        result["ratio_dagster_over_core_incremental"] = round(
            seconds["dagster incremental"] / seconds["core incremental"], 3
        )
        result["ratio_incremental_over_full_dagster"] = round(
            seconds["dagster incremental"] / seconds["dagster full"], 4
        )
    if run_worker_start and "dagster full (cpu)" in seconds:
        from benchmarks.run_worker_start import measure

        start = measure(root)
        full = seconds["dagster full (cpu)"] + facts["dagster_runs_full"] * start["start_cpu_s"]
        incremental = (
            seconds["dagster incremental (cpu)"]
            + facts["dagster_runs_incremental"] * start["start_cpu_s"]
        )
        result["run_worker_start"] = start
        result["fresh_worker_per_run_cpu_s"] = {
            "dagster full": round(full, 2),
            "dagster incremental": round(incremental, 2),
        }
        result["cpu_ratio_incremental_over_full_dagster_fresh_workers"] = round(
            incremental / full, 4
        )
        if f"{workers_name} full (cpu)" in seconds:
            result["cpu_ratio_dagster_fresh_workers_over_core_workers_full"] = round(
                full / seconds[f"{workers_name} full (cpu)"], 3
            )
    return result


PIPELINE_ASSETS = ("raw_documents", "sections", "chunks", "embeddings")


def whole_stage(
    root: Path,
    per_run: int,
    work: Path,
    parallel: int = 2,
    assets: tuple[str, ...] = (),
    distinct_only: bool = False,
) -> dict[str, Any]:
    """The real workload, with embeddings, against its limit: the whole Dagster graph (every
    asset of the ingest job: sections, chunks, embeddings, graph, search index) as a backfill of
    ranged runs, ``parallel`` at once, on a cold embedding cache, against the model's own
    ``encode`` of exactly the texts the pipeline embeds (each distinct ``contextual_text`` once,
    as the pipeline's cache does; also every chunk's, repeats included, unless
    ``distinct_only``) in one process, and against ``agrag core``'s steps (embeddings included)
    in one process. ``assets`` narrows the Dagster runs (``PIPELINE_ASSETS``: the core's four
    steps, no sinks).
    """
    from agrag_pipeline.embedding.sentence_transformer import SentenceTransformerEmbedder
    from agrag_pipeline.pipeline import run_document
    from agrag_pipeline.runtime import Runtime, resolve_roots

    load_at_start = list(os.getloadavg())
    keys = [p.name for p in corpus_files(root)]
    settings_path = resolve_roots().settings_path
    # The texts to embed: the chunks the pipeline makes (not timed).
    texts_rt = Runtime.from_files(settings_path, root, str(work / "texts" / "warehouse"))
    texts: list[str] = []
    for key in keys:
        for chunk in run_document(texts_rt, key, embed=False).chunks:
            texts.append(chunk.contextual_text)
    # The pipeline embeds a text once however many chunks hold it (its content-addressed
    # cache), so the least model work is encoding each distinct text once: the limit.
    distinct = list(dict.fromkeys(texts))
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    # The limit: the model's own encode, loaded and warmed outside the timer.
    embedder = SentenceTransformerEmbedder.from_settings(texts_rt.settings.embedding)
    embedder.model.encode(texts[:16], show_progress_bar=False)
    encodes = {"encode": distinct} if distinct_only else {"encode": distinct, "encode all": texts}
    for name, batch in encodes.items():
        cpu_start = cpu_seconds()
        start = time.perf_counter()
        embedder.model.encode(
            batch,
            batch_size=texts_rt.settings.embedding.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        seconds[name] = time.perf_counter() - start
        cpu[name] = cpu_seconds() - cpu_start
    del embedder
    # The core alone, embeddings included, one process, cold cache (model loaded outside).
    core_rt = Runtime.from_files(
        settings_path, root, str(work / "core" / "warehouse"), work / "core" / "cache"
    )
    _ = core_rt.embedder, core_rt.chunker
    cpu_start = cpu_seconds()
    start = time.perf_counter()
    core_chunks = sum(len(run_document(core_rt, key).chunks) for key in keys)
    seconds["core with embeddings"] = time.perf_counter() - start
    cpu["core with embeddings"] = cpu_seconds() - cpu_start
    # The whole Dagster graph: workers started and warmed (model loaded) outside the timer.
    backfill = _DagsterBackfill(root, work / "dagster", per_run, "shipped", parallel, assets)
    try:
        cpu_start = cpu_seconds()
        seconds["dagster whole graph"] = backfill.full(keys)
        cpu["dagster whole graph"] = cpu_seconds() - cpu_start
        failed_runs = backfill.failed_runs
        runs = backfill.runs_full
    finally:
        backfill.close()
    stored = _stored_embeddings(work / "dagster" / "warehouse", keys)
    return {
        "documents": len(keys),
        "chunks": len(texts),
        "distinct_texts": len(distinct),
        "core_chunks": core_chunks,
        "dagster_chunks_embedded": stored,
        "dagster_runs": runs,
        "dagster_failed_runs": failed_runs,
        "parallel_runs": parallel,
        "dagster_assets": list(assets) or "the whole ingest job",
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "cpu_seconds": {k: round(v, 2) for k, v in cpu.items()},
        "cpu_ratio_dagster_whole_over_encode": round(cpu["dagster whole graph"] / cpu["encode"], 3),
        "cpu_ratio_core_over_encode": round(cpu["core with embeddings"] / cpu["encode"], 3),
        "load_average_at_start_and_end": [load_at_start, list(os.getloadavg())],
        "ratio_dagster_whole_over_encode": round(
            seconds["dagster whole graph"] / seconds["encode"], 3
        ),
        "ratio_core_over_encode": round(seconds["core with embeddings"] / seconds["encode"], 3),
        "encode_texts_per_s": round(len(distinct) / seconds["encode"], 1),
    }


def _stored_embeddings(warehouse_root: Path, keys: list[str]) -> int:
    """How many embeddings the Dagster run stored (so a failed step cannot look fast)."""
    from agrag_pipeline.models import Document
    from agrag_pipeline.storage import Warehouse

    warehouse = Warehouse(str(warehouse_root))
    total = 0
    for key in keys:
        document_id = Document.node_id_for(key)
        if warehouse.has_table("embeddings", document_id):
            total += warehouse.read_table("embeddings", document_id).num_rows
    return total


class _KeysRun:
    """A contender that runs documents by key: a full run, then the sensor's way without
    Dagster (scan against the cursor, run the changed ones)."""

    raw_root: Path
    keys: list[str]
    failed: int
    cursor: str | None

    def run_keys(self, keys: list[str]) -> int:
        raise NotImplementedError

    def warm(self) -> None:
        """Whatever a real run has loaded before it starts (kept outside the timer)."""

    def full(self, keys: list[str]) -> float:
        self.keys = keys
        self.warm()
        start = time.perf_counter()
        self.cursor = plan_changes(self.raw_root, None, keys).cursor()
        self.failed = self.run_keys(keys)
        return time.perf_counter() - start

    def incremental(self) -> float:
        start = time.perf_counter()
        plan = plan_changes(self.raw_root, self.cursor, self.keys)
        self.cursor = plan.cursor()
        self.failed += self.run_keys(plan.to_run)
        return time.perf_counter() - start


class _CoreRun(_KeysRun):
    """The same steps as ``agrag core --no-embed``, in this process, without Dagster."""

    name = "core"

    def __init__(self, raw_root: Path, work: Path) -> None:
        from agrag_pipeline.runtime import Runtime, resolve_roots

        self.raw_root = raw_root
        # The corpus and warehouse are the benchmark's own; the settings follow AGRAG_SETTINGS.
        settings = resolve_roots().settings_path
        self.runtime = Runtime.from_files(settings, raw_root, str(work / "warehouse"))
        self.keys: list[str] = []
        self.failed = 0
        self.cursor: str | None = None

    def run_keys(self, keys: list[str]) -> int:
        from agrag_pipeline.batch import run_isolated
        from agrag_pipeline.pipeline import run_document

        rt = self.runtime
        outcomes = run_isolated(
            "core", keys, lambda key: len(run_document(rt, key, embed=False).chunks), rt.warehouse
        )
        return sum(1 for o in outcomes if not o.ok)

    def warm(self) -> None:
        _ = self.runtime.chunker  # load the tokenizer outside the timer, as Dagster's runs do

    def rerun_all(self) -> float:
        start = time.perf_counter()
        self.failed += self.run_keys(self.keys)
        return time.perf_counter() - start


class _CoreWorkersRun(_KeysRun):
    """``agrag core --workers N``'s way: every document whole in one of ``workers`` worker
    processes, each running exactly what the CLI's workers run (``workers.init_worker`` and
    ``workers.run_one``); the workers are started and warmed outside the timer, as Dagster's
    run workers are here, so both sides are measured on the same cores without start-up."""

    def __init__(self, raw_root: Path, work: Path, workers: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from agrag_pipeline.runtime import Roots, resolve_roots
        from agrag_pipeline.workers import init_worker

        self.name = f"core --workers {workers}"
        self.raw_root = raw_root
        roots = Roots(
            raw_root=str(raw_root),
            warehouse_root=str(work / "warehouse"),
            settings_path=resolve_roots().settings_path,
            cache_dir=None,
        )
        threads = max(1, (os.cpu_count() or 1) // workers)  # as workers.run_documents gives
        self.pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=init_worker,
            initargs=(roots, False, False, threads),
        )
        for warm in [self.pool.submit(_core_worker_ready) for _ in range(workers)]:
            warm.result()
        self.keys: list[str] = []
        self.failed = 0
        self.cursor: str | None = None

    def run_keys(self, keys: list[str]) -> int:
        from agrag_pipeline.workers import run_one

        return sum(1 for outcome in self.pool.map(run_one, keys) if not outcome.ok)

    def close(self) -> None:
        self.pool.shutdown()


def _core_worker_ready() -> bool:
    """Load the worker's tokenizer (outside the timer) and hold the worker a moment, so that
    every worker of the pool gets one of these."""
    from agrag_pipeline import workers

    _ = workers._WORKER["runtime"].chunker
    time.sleep(0.5)
    return True


class _DagsterBackfill:
    """A persistent temporary DAGSTER_HOME (SQLite) and ranged runs of ``per_run`` documents,
    as ``BackfillPolicy.multi_run`` cuts a backfill, each executed in process; ``parallel``
    worker processes execute the runs (two runs at once, as ``max_concurrent_runs: 2`` lets
    the daemon do), started and warmed (definitions built, tokenizer loaded) outside the timer.

    Full: the sensor's scan (registers the new partitions), then the ranged runs.
    Incremental: the sensor's scan against its cursor (stat, then hash where the stat changed)
    and ranged runs over the changed documents only.
    """

    name = "dagster"

    def __init__(
        self,
        raw_root: Path | str,
        work: Path,
        per_run: int,
        instance: str | Path = "shipped",
        parallel: int = 1,
        assets: tuple[str, ...] = CHUNK_ASSETS,
        warehouse: str | None = None,
    ) -> None:
        """``instance``: "shipped", "stock" or a ``dagster.yaml`` to use; ``raw_root`` and
        ``warehouse`` (default: under ``work``) may be ``s3://`` URIs."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        import dagster as dg

        from agrag_pipeline.runtime import PROJECT_ROOT

        home = work / "dagster_home"
        home.mkdir(parents=True)
        if isinstance(instance, Path):
            shutil.copyfile(instance, home / "dagster.yaml")
        elif instance in ("shipped", "shipped-no-template"):
            shipped = PROJECT_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml"
            text = shipped.read_text()
            if instance == "shipped-no-template":
                marker = "        env: DAGSTER_HOME\n"
                assert marker in text, "the shipped storage block changed: update the benchmark"
                text = text.replace(marker, marker + "      run_shard_template: false\n", 1)
            (home / "dagster.yaml").write_text(text)
        else:
            (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        self.home = home
        # The instance and its workers must agree on DAGSTER_HOME (the shipped storage reads it).
        os.environ["DAGSTER_HOME"] = str(home)
        self.instance = dg.DagsterInstance.from_config(str(home))
        self.instance.get_dynamic_partitions("documents")  # storage opened now, under this home
        self.raw_root = Path(raw_root)  # an s3:// URI survives as s3:/…, which the scan reads
        self.per_run = per_run
        self.worker_args = (
            str(home),
            str(raw_root),
            warehouse or str(work / "warehouse"),
            str(work / "cache"),
            assets,
        )
        self.pool = ProcessPoolExecutor(
            max_workers=parallel,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=self.worker_args,
        )
        for warm in [self.pool.submit(_worker_ready) for _ in range(parallel)]:
            warm.result()
        self.parallel = parallel
        self.cursor: str | None = None
        self.runs_full = self.runs_incremental = self.failed_runs = 0
        self._run_ids_full: list[str] = []

    def _scan_and_run(self, only_changed: bool) -> tuple[int, list[str]]:
        from agrag_pipeline.freshness import contiguous_runs

        registered = self.instance.get_dynamic_partitions("documents")
        plan = plan_changes(self.raw_root, self.cursor, registered)
        if plan.new:
            self.instance.add_dynamic_partitions("documents", plan.new)
        self.cursor = plan.cursor()
        ordered = self.instance.get_dynamic_partitions("documents")
        wanted = plan.changed if only_changed else plan.to_run
        runs = contiguous_runs(ordered, wanted, self.per_run)
        outcomes = list(self.pool.map(_worker_run, runs))
        self.failed_runs += sum(1 for ok, _ in outcomes if not ok)
        return len(runs), [run_id for _, run_id in outcomes]

    def full(self, keys: list[str]) -> float:
        start = time.perf_counter()
        self.runs_full, run_ids = self._scan_and_run(only_changed=False)
        seconds = time.perf_counter() - start
        # The events are counted when ``events_full`` is read, after every timer: reading a
        # run's events back is the benchmark's work, not the run's (it was inside the timers
        # and the CPU figures before, about 2-5% of a run worker's CPU).
        self._run_ids_full = run_ids
        return seconds

    @property
    def events_full(self) -> int:
        """Every event the full backfill's runs stored (read back after the timers)."""
        return sum(len(self.instance.all_logs(run_id)) for run_id in self._run_ids_full)

    def incremental(self) -> float:
        start = time.perf_counter()
        self.runs_incremental, _ = self._scan_and_run(only_changed=True)
        return time.perf_counter() - start

    def close(self) -> None:
        self.pool.shutdown()
        self.instance.dispose()


_WORKER: dict[str, Any] = {}


def _worker_init(
    home: str, raw_root: str, warehouse: str, cache: str, assets: tuple[str, ...] = CHUNK_ASSETS
) -> None:
    """In each worker process: the instance, the job and the loaded tokenizer, once."""

    import dagster as dg

    from agrag_pipeline.definitions import build_definitions
    from agrag_pipeline.defs.resources import PipelineResource
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

    os.environ["DAGSTER_HOME"] = home
    resource_ = PipelineResource(
        raw_root=raw_root,
        warehouse_root=warehouse,
        settings_path=str(DEFAULT_SETTINGS_PATH),
        cache_dir=cache,
    )
    runtime = resource_.runtime()
    _ = runtime.chunker
    if not assets or "embeddings" in assets:
        _ = runtime.embedder  # the model loaded outside the timer, as for the core and encode
    _WORKER["instance"] = dg.DagsterInstance.from_config(home)
    _WORKER["job"] = build_definitions(resource_).resolve_job_def("ingest_documents")
    _WORKER["selection"] = [dg.AssetKey(name) for name in assets] if assets else None


def _worker_ready() -> bool:
    time.sleep(0.5)  # long enough that every worker gets one of these
    return "job" in _WORKER


def _worker_run(keys: list[str]) -> tuple[bool, str]:
    """One ranged run, as the daemon would launch it; (succeeded, its run id)."""
    instance = _WORKER["instance"]
    result = _WORKER["job"].execute_in_process(
        instance=instance,
        asset_selection=_WORKER["selection"],
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        tags={
            "dagster/asset_partition_range_start": keys[0],
            "dagster/asset_partition_range_end": keys[-1],
            "agrag/trigger": "benchmark",
            # What the daemon's backfill runs carry (runs at once share the cores: threads).
            "dagster/backfill": "benchmark",
        },
        raise_on_error=False,
    )
    return result.success, result.run_id


# -- entry point ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=["parse", "chunk", "embed", "orchestrate", "whole"])
    parser.add_argument("--root", type=Path, required=True, help="the corpus's raw root")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-pdfs", type=int, default=100)
    parser.add_argument("--docling-files", type=int, default=6)
    parser.add_argument("--embed-sample", type=int, default=256)
    parser.add_argument("--change-fraction", type=float, default=0.01)
    parser.add_argument("--per-run", type=int, default=50)
    parser.add_argument("--parallel", type=int, default=2, help="whole: runs at once")
    parser.add_argument(
        "--core-workers",
        type=int,
        default=2,
        help="orchestration: also the core with this many worker processes (1: not)",
    )
    parser.add_argument(
        "--core-assets", action="store_true", help="whole: the four pipeline assets, no sinks"
    )
    parser.add_argument(
        "--no-run-worker-start",
        action="store_true",
        help="orchestration: do not measure a fresh run worker's start-up (about 12 s)",
    )
    parser.add_argument(
        "--distinct-only",
        action="store_true",
        help="whole: time encode on the distinct texts only (not also on every chunk's)",
    )
    parser.add_argument(
        "--configs",
        nargs="*",
        choices=sorted(CONFIGS),
        help=f"orchestration: instance configurations to measure (default: {DEFAULT_CONFIG!r})",
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.stage == "parse":
        figures = parse_stage(args.root, args.repeats, args.max_pdfs)
    elif args.stage == "chunk":
        figures = chunk_stage(args.root, args.repeats, args.docling_files)
    elif args.stage == "embed":
        figures = embed_stage(args.root, args.repeats, args.embed_sample)
    elif args.stage == "whole":
        with tempfile.TemporaryDirectory(prefix="agrag-whole-") as work:
            assets = PIPELINE_ASSETS if args.core_assets else ()
            figures = whole_stage(
                args.root, args.per_run, Path(work), args.parallel, assets, args.distinct_only
            )
    else:
        with tempfile.TemporaryDirectory(prefix="agrag-orchestrate-") as work:
            figures = orchestrate_stage(
                args.root,
                args.repeats,
                args.change_fraction,
                args.per_run,
                Path(work),
                args.configs,
                args.core_workers,
                not args.no_run_worker_start,
            )
    figures["stage_wall_s"] = round(time.perf_counter() - start, 1)
    figures["peak_rss_mb"] = peak_rss_mb()
    sys.stdout.write(RESULT_PREFIX + json.dumps(figures) + "\n")


if __name__ == "__main__":
    main()
