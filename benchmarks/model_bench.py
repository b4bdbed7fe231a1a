"""Embedding models side by side on the labelled sets (issue 24 item 3).

    .venv/bin/python -m benchmarks.model_bench quality --set manuals --set rust \\
        --model sentence-transformers/all-MiniLM-L6-v2 \\
        --model sentence-transformers/all-mpnet-base-v2=/path/to/all-mpnet-base-v2 \\
        --model model2vec
    .venv/bin/python -m benchmarks.model_bench speed --model NAME[=DIR] --texts 64

``quality``: each set is parsed and chunked once with the structure chunker at the pipeline's
defaults (cut with the default tokenizer, so every model embeds the very same texts), then
embedded by each model through the content-addressed cache (a rerun embeds nothing) into its
own LanceDB index, and scored dense and hybrid under both hit rules; every model after the
first is compared with the first, paired by question (bootstrap interval). Sets: ``manuals``
(the PDFs of ``data/eval/pdf-manuals`` and their quoted answers) and ``rust`` (the Rust book
and ``data/eval/rust-book-questions.tsv``; ``--rust-files answers`` keeps only the chapters
that hold an answer, ``--max-files N`` the first N of them and their questions, for models
too slow for the whole book on two cores).
``speed``: one model per process, so the peak RSS is that model's: chunks/s (wall and CPU
time) embedding the first ``--texts`` chunks of the Rust book, after one warm-up batch.
A model is ``NAME`` (the packaged MiniLM), ``NAME=DIR`` (a local sentence-transformers
directory, checked against NAME's published weights hash where the project knows it) or
``model2vec`` (the static backend distilled from MiniLM).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.embedding.base import Embedder
from agrag_pipeline.embedding.cache import EmbeddingCache, embed_with_cache
from agrag_pipeline.embedding.factory import make_embedder
from agrag_pipeline.embedding.settings import EmbeddingSettings
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.retrieval.evaluate import (
    Comparison,
    Question,
    Rule,
    Scores,
    comparison_table,
    load_questions,
    paired_bootstrap,
    score_rules,
    table,
)
from agrag_pipeline.retrieval.search import Mode, retriever
from agrag_pipeline.runtime import PROJECT_ROOT, Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from benchmarks.retrieval_bench import BOOK, QUESTIONS, build_index, ours, parse_book
from benchmarks.retrieval_manuals import SET as MANUALS
from benchmarks.retrieval_manuals import spans_by_rule

MODES: tuple[Mode, ...] = ("dense", "hybrid")


def embedder_from_spec(rt: Runtime, spec: str) -> Embedder:
    base = rt.settings.embedding.model_dump(exclude={"weights_sha256", "model", "model_dir"})
    if spec == "model2vec":
        settings = EmbeddingSettings.model_validate({**base, "backend": "model2vec"})
    else:
        name, _, folder = spec.partition("=")
        settings = EmbeddingSettings.model_validate(
            {**base, "model": name, "model_dir": folder or None}
        )
    return make_embedder(settings, rt.embedding_cache_dir)


def labelled_set(
    name: str, rust_files: str, max_files: int | None = None
) -> tuple[list[ParsedDocument], list[Question], dict[Rule, dict[int, tuple[int, int]]]]:
    if name == "manuals":
        questions = load_questions(MANUALS / "questions.tsv")
        parsed = [parse_document(p.read_bytes(), p.name) for p in sorted(MANUALS.glob("*.pdf"))]
    else:
        questions = load_questions(QUESTIONS)
        parsed = parse_book(BOOK)
        if rust_files == "answers":
            keep = sorted({q.source_key for q in questions})[:max_files]
            parsed = [p for p in parsed if p.document.source_key in keep]
            questions = [q for q in questions if q.source_key in keep]
    spans = spans_by_rule(questions, parsed)
    return parsed, questions, spans


def quality(args: argparse.Namespace) -> None:
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH)
    cache = EmbeddingCache.in_dir(Path(args.cache_dir))
    settings = ChunkerSettings.model_validate(rt.settings.chunker.model_dump())
    embedders: dict[str, Embedder] = {}
    for spec in args.model:
        embedders[spec.partition("=")[0]] = embedder_from_spec(rt, spec)
    first = next(iter(embedders))
    for set_name in args.set:
        parsed, questions, spans = labelled_set(set_name, args.rust_files, args.max_files)
        items = ours(parsed, settings)
        texts = [str(it["contextual_text"]) for it in items]
        print(f"\n## {set_name}: {len(parsed)} documents, {len(items)} chunks, {len(questions)} Qs")
        scores: dict[str, dict[str, list[Scores]]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for i, (name, embedder) in enumerate(embedders.items()):
                started = time.perf_counter()
                vectors, stats = embed_with_cache(embedder, texts, cache)
                print(
                    f"{name}: embedded in {time.perf_counter() - started:.1f}s "
                    f"({stats.misses} new, {stats.hits} cached)",
                    flush=True,
                )
                index = build_index(Path(tmp) / f"m{i}", items, vectors)
                scores[name] = {
                    mode: score_rules(
                        f"{name} {mode}", questions, spans, retriever(index, mode, embedder)
                    )
                    for mode in MODES
                }
                if i == 0:
                    bm25 = retriever(index, "bm25", None)
                    scores["bm25"] = {"bm25": score_rules("bm25", questions, spans, bm25)}
        print(table([s for by_mode in scores.values() for ss in by_mode.values() for s in ss]))
        comparisons: list[Comparison] = []
        for name, by_mode in scores.items():
            if name in (first, "bm25"):
                continue
            for mode, ss in by_mode.items():
                for a, b in zip(ss, scores[first][mode], strict=True):
                    comparisons.extend(paired_bootstrap(a, b, m) for m in ("mrr@10", "recall@5"))
        if comparisons:
            print(f"\nEach model minus {first}, paired by question:\n")
            print(
                comparison_table(comparisons)
                .replace("| ours | baseline |", f"| model | {first} |")
                .replace("ours better", "model better")
                .replace("baseline better", f"{first} better")
            )


def speed(args: argparse.Namespace) -> None:
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH)
    parsed = parse_book(BOOK)
    settings = ChunkerSettings.model_validate(rt.settings.chunker.model_dump())
    texts = [str(it["contextual_text"]) for it in ours(parsed, settings)][: args.texts + 8]
    embedder = embedder_from_spec(rt, args.model[0])
    embedder.embed(texts[:8])  # warm-up
    measured = texts[8:]
    wall, cpu = _timed(lambda: embedder.embed(measured))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.model[0].partition('=')[0]}: {len(measured)} chunks, {len(measured) / wall:.2f} "
        f"chunks/s wall, {len(measured) / cpu:.2f} chunks per CPU-second, dimension "
        f"{embedder.dimension}, peak RSS {peak_mib:.0f} MiB"
    )


def _timed(run: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=("quality", "speed"))
    parser.add_argument("--model", action="append", required=True)
    parser.add_argument("--set", action="append", choices=("manuals", "rust"))
    parser.add_argument("--rust-files", choices=("all", "answers"), default="all")
    parser.add_argument(
        "--max-files", type=int, help="with --rust-files answers: the first N such chapters"
    )
    parser.add_argument("--cache-dir", default=str(PROJECT_ROOT / "data" / "cache"))
    parser.add_argument("--texts", type=int, default=64)
    args = parser.parse_args()
    if args.what == "speed":
        speed(args)
    else:
        args.set = args.set or ["manuals", "rust"]
        quality(args)


if __name__ == "__main__":
    main()
