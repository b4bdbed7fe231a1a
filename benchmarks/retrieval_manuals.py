"""Retrieval on real PDF manuals (issue 24): ours against a 1,000-character split, PDF against
its HTML twin, with paired bootstrap intervals.

    .venv/bin/python -m benchmarks.retrieval_manuals [--set data/eval/pdf-manuals ...]
        [--cache-dir DIR] [--modes dense,bm25,hybrid] [--bm25-context N]

Several ``--set``: each set's tables, then ours against fixed-1000 over all their questions
pooled (each question weighs the same), on both routes.

The set folder holds the documents and ``questions.tsv`` (query, source_key, quote: the
answer's own words, labelled before any run). For each route (``pdf``: the PDFs; ``html-twin``:
the same set with each PDF that has an HTML twin ``<name>.html`` beside it read from the twin
instead) the documents are parsed, chunked two ways and embedded with the pipeline's model
(all-MiniLM-L6-v2) through its content-addressed cache: "ours" is the structure chunker at the
defaults of ``data/pipeline.yaml`` (embedded text = heading path + text; hybrid search with
its BM25 context, ``index.bm25_context_chars``, or ``--bm25-context``); "fixed-1000" is
``fixed_size_spans`` (what ``agrag eval`` compares against), the same text, no headings. Each
goes into its own LanceDB index and is scored under both hit rules (``retrieval.evaluate``);
the comparisons are paired by question (10,000 bootstrap resamples, seeded).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.embedding.base import Embedder
from agrag_pipeline.embedding.cache import EmbeddingCache, embed_with_cache
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.retrieval.evaluate import (
    RULES,
    Comparison,
    Question,
    Rule,
    Scores,
    answer_spans,
    comparison_table,
    fixed_size_spans,
    load_questions,
    paired_bootstrap,
    pooled,
    score_rules,
    table,
)
from agrag_pipeline.retrieval.search import MODES, Mode, retriever
from agrag_pipeline.runtime import PROJECT_ROOT, Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from benchmarks.retrieval_bench import (
    _item,
    add_model_arguments,
    build_index,
    model_embedder,
    ours,
)

SET = PROJECT_ROOT / "data" / "eval" / "pdf-manuals"


def fixed(parsed: list[ParsedDocument]) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    for p in parsed:
        for i, (a, b) in enumerate(fixed_size_spans(p.text_layer)):
            text = p.text_layer[a:b]
            items.append(_item(p.document, i, [], a, b, text, text, f"{p.document.id}:{i}"))
    return items


def spans_by_rule(
    questions: list[Question], parsed: list[ParsedDocument]
) -> dict[Rule, dict[int, tuple[int, int]]]:
    """Each question's answer span in the parsed documents, under every hit rule."""
    by_key = {p.document.source_key: p for p in parsed}
    return {
        rule: answer_spans(
            questions, lambda key: by_key[key].sections, rule, lambda key: by_key[key].text_layer
        )
        for rule in RULES
    }


def route(
    name: str,
    files: list[Path],
    questions: list[Question],
    rt: Runtime,
    cache: EmbeddingCache,
    modes: tuple[Mode, ...],
    embedder: Embedder,
    context_chars: int,
) -> dict[str, list[Scores]]:
    """Scores of ours and fixed-1000 over ``files`` (``run mode`` -> one Scores per rule)."""
    started = time.perf_counter()
    parsed = [parse_document(f.read_bytes(), f.name) for f in files]
    print(f"{name}: parsed {len(files)} files in {time.perf_counter() - started:.1f}s")
    spans = spans_by_rule(questions, parsed)
    out: dict[str, list[Scores]] = {}
    settings = ChunkerSettings.model_validate(rt.settings.chunker.model_dump())
    with tempfile.TemporaryDirectory() as tmp:
        for run, items in (("ours", ours(parsed, settings)), ("fixed-1000", fixed(parsed))):
            started = time.perf_counter()
            vectors, stats = embed_with_cache(
                embedder, [str(it["contextual_text"]) for it in items], cache
            )
            print(
                f"{name} {run}: {len(items)} chunks, embedded in "
                f"{time.perf_counter() - started:.1f}s ({stats.misses} new)"
            )
            index = build_index(
                Path(tmp) / run, items, vectors, context_chars if run == "ours" else 0
            )
            for mode in modes:
                out[f"{run} {mode}"] = score_rules(
                    f"{name} {run} {mode}", questions, spans, retriever(index, mode, embedder)
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--set",
        action="append",
        help="a labelled set's folder (default: data/eval/pdf-manuals); give several to also"
        " score them pooled, every question weighing the same",
    )
    parser.add_argument("--cache-dir", default=str(PROJECT_ROOT / "data" / "cache"))
    parser.add_argument(
        "--twin-suffix",
        default=".html",
        help="the twin route reads <name><suffix> beside each PDF (default .html; .texi reads "
        "a manual's Texinfo source)",
    )
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--bm25-context",
        type=int,
        help="ours: BM25 context characters (default: index.bm25_context_chars of the settings)",
    )
    add_model_arguments(parser)
    args = parser.parse_args()
    modes: tuple[Mode, ...] = tuple(m for m in MODES if m in args.modes.split(","))
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH)
    cache = EmbeddingCache.in_dir(Path(args.cache_dir))
    embedder = model_embedder(rt, args)
    context = (
        rt.settings.index.bm25_context_chars if args.bm25_context is None else args.bm25_context
    )
    print(f"model: {args.model or rt.settings.embedding.model}; ours' BM25 context: {context}")
    folders = [Path(s) for s in args.set or [str(SET)]]
    by_set = [
        score_set(folder, rt, cache, modes, embedder, context, args.twin_suffix)
        for folder in folders
    ]
    if len(by_set) > 1:
        print(f"\nPooled over {len(folders)} sets ({sum(n for _, _, n in by_set)} questions):\n")
        comparisons: list[Comparison] = []
        routes = ([pdf for pdf, _, _ in by_set], [twin for _, twin, _ in by_set])
        for per_set in routes:  # the PDF route, then the HTML twins
            for mode in modes:
                ours_rules = zip(*(s[f"ours {mode}"] for s in per_set), strict=True)
                fixed_rules = zip(*(s[f"fixed-1000 {mode}"] for s in per_set), strict=True)
                for a, b in zip(ours_rules, fixed_rules, strict=True):
                    comparisons.extend(
                        paired_bootstrap(pooled(a), pooled(b), m) for m in ("mrr@10", "recall@5")
                    )
        print(comparison_table(comparisons))


def score_set(
    folder: Path,
    rt: Runtime,
    cache: EmbeddingCache,
    modes: tuple[Mode, ...],
    embedder: Embedder,
    context: int,
    twin_suffix: str = ".html",
) -> tuple[dict[str, list[Scores]], dict[str, list[Scores]], int]:
    """One set's tables (ours and fixed-1000 on both routes, PDF against HTML twin) printed;
    its scores per route returned, with its number of questions."""
    questions = load_questions(folder / "questions.tsv")
    pdfs = sorted(folder.glob("*.pdf"))
    twins = {p.name: t for p in pdfs if (t := p.with_suffix(twin_suffix)).exists()}
    pdf_scores = route("pdf", pdfs, questions, rt, cache, modes, embedder, context)
    twin_questions = [
        q.__class__(q.query, twins[q.source_key].name, q.heading, q.span, q.line, q.quote)
        if q.source_key in twins
        else q
        for q in questions
    ]
    twin_files = [twins.get(p.name, p) for p in pdfs]
    twin_scores = route(
        "html-twin", twin_files, twin_questions, rt, cache, modes, embedder, context
    )

    print(f"\n{len(questions)} questions over {', '.join(p.name for p in pdfs)}\n")
    print(table([s for scores in (pdf_scores, twin_scores) for v in scores.values() for s in v]))
    comparisons: list[Comparison] = []
    for scores in (pdf_scores, twin_scores):
        for mode in modes:
            for a, b in zip(scores[f"ours {mode}"], scores[f"fixed-1000 {mode}"], strict=True):
                comparisons.extend(paired_bootstrap(a, b, m) for m in ("mrr@10", "recall@5"))
    print("\nOurs against fixed-1000 (ours minus baseline, paired by question):\n")
    print(comparison_table(comparisons))
    keep = [i for i, q in enumerate(questions) if q.source_key in twins]
    print(f"\nPDF against its HTML twin, on the {len(keep)} questions of twinned documents:\n")
    twin_cmp = [
        paired_bootstrap(p.subset(keep, f"pdf {run}"), h.subset(keep, f"html {run}"), "mrr@10")
        for run in (f"{r} {m}" for r in ("ours", "fixed-1000") for m in modes)
        for p, h in zip(pdf_scores[run], twin_scores[run], strict=True)
    ]
    print(
        comparison_table(twin_cmp)
        .replace("| ours | baseline |", "| pdf | html twin |")
        .replace("ours better", "pdf better")
        .replace("baseline better", "html twin better")
    )
    return pdf_scores, twin_scores, len(questions)


if __name__ == "__main__":
    main()
