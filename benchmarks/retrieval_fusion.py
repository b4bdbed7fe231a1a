"""How hybrid search fuses its dense and BM25 rankings (issue 24): RRF as `agrag search` does
it against score-based fusions, on both labelled sets, ours against fixed-1000.

    .venv/bin/python -m benchmarks.retrieval_fusion [--cache-dir DIR] [--hold-out grep,sed]
        [--tokenisers] [--bm25-context 0,200,400] [--query-cost]

Each question's dense and BM25 rankings (``HYBRID_DEPTH`` deep, from the same LanceDB indexes
as ``agrag search``) are taken once; every fusion is then applied to those very rankings, so the
variants differ in nothing else. BM25 is also run over the plain chunk text (no heading path) to
measure what the heading path adds; ``--tokenisers`` instead rebuilds the BM25 index with other
options of LanceDB's native FTS (no stemming, stop words kept, whitespace tokens). Sets: the PDF
manuals (``retrieval_manuals``, both hit rules) and the whole Rust book (``retrieval_bench``).
Intervals: paired bootstrap over the questions.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.embedding.base import Embedder
from agrag_pipeline.embedding.cache import EmbeddingCache, embed_with_cache
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.retrieval.evaluate import (
    RULES,
    Question,
    Rule,
    Scores,
    _scores,
    is_hit,
    load_questions,
    paired_bootstrap,
)
from agrag_pipeline.retrieval.search import HYBRID_DEPTH, RRF_K, search
from agrag_pipeline.retrieval.search import rrf as rrf_hits
from agrag_pipeline.runtime import PROJECT_ROOT, Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.sinks.bm25_context import IndexSettings
from agrag_pipeline.sinks.index import FTS_COLUMN, RawHit
from benchmarks.retrieval_bench import BOOK, QUESTIONS, build_index, ours, parse_book
from benchmarks.retrieval_manuals import SET, fixed, spans_by_rule

#: One ranked hit: chunk id, the ranking's own score, and whether it is a hit under each rule.
Ranked = tuple[str, float, dict[Rule, bool]]
Fused = tuple[list[str], dict[str, dict[Rule, bool]]]


@dataclass
class Rankings:
    questions: list[Question]
    dense: list[list[Ranked]] = field(default_factory=list)
    bm25: list[list[Ranked]] = field(default_factory=list)
    bm25_plain: list[list[Ranked]] = field(default_factory=list)
    #: BM25 with N characters of each same-section neighbour (``--bm25-context``): N -> rankings.
    bm25_context: dict[int, list[list[Ranked]]] = field(default_factory=dict)


class _Located:
    def __init__(self, row: dict[str, object]) -> None:
        self.source_key = str(row["source_key"])
        self.char_start = int(str(row["char_start"]))
        self.char_end = int(str(row["char_end"]))


def collect(
    parsed: list[ParsedDocument],
    questions: list[Question],
    settings: ChunkerSettings,
    embedder: Embedder,
    cache: EmbeddingCache,
    contexts: Sequence[int] = (),
) -> dict[str, Rankings]:
    spans = spans_by_rule(questions, parsed)
    query_vectors = embedder.embed([q.query for q in questions])
    out: dict[str, Rankings] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run, items in (("ours", ours(parsed, settings)), ("fixed-1000", fixed(parsed))):
            vectors, _ = embed_with_cache(
                embedder, [str(it["contextual_text"]) for it in items], cache
            )
            # Ours at the index's default BM25 context; fixed-1000 as a plain splitter, none.
            default = IndexSettings().bm25_context_chars if run == "ours" else 0
            index = build_index(Path(tmp) / run, items, vectors, default)
            plain = build_index(
                Path(tmp) / f"{run}-plain",
                [dict(it, contextual_text=it["text"]) for it in items],
                vectors,
            )
            with_context = {
                chars: build_index(Path(tmp) / f"{run}-context{chars}", items, vectors, chars)
                for chars in (contexts if run == "ours" else ())
            }
            rec = Rankings(questions)
            for i, q in enumerate(questions):

                def ranked(hits: Sequence[RawHit], q: Question = q, i: int = i) -> list[Ranked]:
                    return [
                        (
                            str(h.row["chunk_id"]),
                            float(h.score),
                            {rule: is_hit(_Located(h.row), q, spans[rule][i]) for rule in RULES},
                        )
                        for h in hits
                    ]

                rec.dense.append(ranked(index.dense(query_vectors[i], HYBRID_DEPTH)))
                rec.bm25.append(ranked(index.bm25(q.query, HYBRID_DEPTH)))
                rec.bm25_plain.append(ranked(plain.bm25(q.query, HYBRID_DEPTH)))
                for chars, one in with_context.items():
                    rec.bm25_context.setdefault(chars, []).append(
                        ranked(one.bm25(q.query, HYBRID_DEPTH, context=True))
                    )
            out[run] = rec
    return out


#: LanceDB native FTS options tried against the index's own (simple tokens, English stem, no
#: stop words: ``SearchIndex.ensure_fts_index``).
TOKENISERS: dict[str, dict[str, object]] = {
    "current": {},
    "no stemming": {"stem": False},
    "stop words kept": {"remove_stop_words": False},
    "whitespace tokens": {"base_tokenizer": "whitespace"},
}


def tokeniser_report(
    name: str,
    parsed: list[ParsedDocument],
    questions: list[Question],
    settings: ChunkerSettings,
    embedder: Embedder,
    cache: EmbeddingCache,
    rules: Sequence[Rule],
) -> None:
    """BM25 and RRF hybrid MRR@10 with each BM25 tokeniser, against the current one."""
    spans = spans_by_rule(questions, parsed)
    query_vectors = embedder.embed([q.query for q in questions])
    print(f"\n{name}: BM25 tokenisers ({len(questions)} questions)\n")
    print("| run | tokeniser | mode | rule | MRR@10 | new - current |")
    print("|---|---|---|---|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for run, items in (("ours", ours(parsed, settings)), ("fixed-1000", fixed(parsed))):
            vectors, _ = embed_with_cache(
                embedder, [str(it["contextual_text"]) for it in items], cache
            )
            index = build_index(Path(tmp) / run, items, vectors)
            dense = [index.dense(query_vectors[i], HYBRID_DEPTH) for i in range(len(questions))]
            current: dict[tuple[str, Rule], Scores] = {}
            for tokeniser, options in TOKENISERS.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    index._open().create_fts_index(  # the benchmark swaps the index's FTS options
                        FTS_COLUMN,
                        use_tantivy=False,
                        replace=True,
                        **{"stem": True, "remove_stop_words": True, **options},
                    )
                for mode in ("bm25", "hybrid"):
                    found = []
                    for i, q in enumerate(questions):
                        bm25 = index.bm25(q.query, HYBRID_DEPTH)
                        found.append((bm25 if mode == "bm25" else rrf_hits([dense[i], bm25]))[:10])
                    for rule in rules:
                        ranks = [
                            next(
                                (
                                    r
                                    for r, h in enumerate(hits, 1)
                                    if is_hit(_Located(h.row), q, spans[rule][i])
                                ),
                                None,
                            )
                            for i, (q, hits) in enumerate(zip(questions, found, strict=True))
                        ]
                        s = _scores(tokeniser, rule, ranks)
                        base = current.setdefault((mode, rule), s)
                        c = paired_bootstrap(s, base, "mrr@10")
                        print(
                            f"| {run} | {tokeniser} | {mode} | {rule} | {s.mrr10:.3f} |"
                            f" {c.difference:+.3f} [{c.low:+.3f}, {c.high:+.3f}] |"
                        )


def _order(scores: dict[str, float], hits: dict[str, dict[Rule, bool]]) -> Fused:
    return sorted(scores, key=lambda c: (-scores[c], c)), hits


def rrf(lists: Sequence[list[Ranked]], k: int = RRF_K, weights: Sequence[float] = (1, 1)) -> Fused:
    scores: dict[str, float] = {}
    hits: dict[str, dict[Rule, bool]] = {}
    for w, ranking in zip(weights, lists, strict=True):
        for rank, (cid, _, hit) in enumerate(ranking, start=1):
            scores[cid] = scores.get(cid, 0.0) + w / (k + rank)
            hits[cid] = hit
    return _order(scores, hits)


def normalised(
    lists: Sequence[list[Ranked]], weights: Sequence[float] = (0.5, 0.5), how: str = "minmax"
) -> Fused:
    """Weighted sum of each ranking's scores scaled to [0, 1]: min-max (Weaviate's
    relativeScoreFusion, OpenSearch's min_max normalizer) or mean +/- 3 sd (Qdrant's DBSF)."""
    scores: dict[str, float] = {}
    hits: dict[str, dict[Rule, bool]] = {}
    for w, ranking in zip(weights, lists, strict=True):
        if not ranking:
            continue
        values = np.array([s for _, s, _ in ranking])
        if how == "minmax":
            low, high = float(values.min()), float(values.max())
        else:
            mean, sd = float(values.mean()), float(values.std()) or 1.0
            low, high = mean - 3 * sd, mean + 3 * sd
        for cid, s, hit in ranking:
            scores[cid] = scores.get(cid, 0.0) + w * ((s - low) / (high - low) if high > low else 1)
            hits[cid] = hit
    return _order(scores, hits)


def _alone(lists: list[list[Ranked]], i: int) -> Fused:
    """Question ``i``'s ranking of ``lists`` alone (a budget's context BM25)."""
    return single(lists[i])


def _with_dense(dense: list[list[Ranked]], lists: list[list[Ranked]], i: int) -> Fused:
    """Question ``i``: RRF of its dense ranking and its ranking of ``lists``."""
    return rrf([dense[i], lists[i]])


def single(ranking: list[Ranked]) -> Fused:
    return [c for c, _, _ in ranking], {c: h for c, _, h in ranking}


VARIANTS: dict[str, Callable[[Rankings, int], Fused]] = {
    "dense": lambda r, i: single(r.dense[i]),
    "bm25": lambda r, i: single(r.bm25[i]),
    "bm25 (plain text)": lambda r, i: single(r.bm25_plain[i]),
    "rrf k=60 (current)": lambda r, i: rrf([r.dense[i], r.bm25[i]]),
    "rrf k=60, plain-text bm25": lambda r, i: rrf([r.dense[i], r.bm25_plain[i]]),
    "rrf k=10": lambda r, i: rrf([r.dense[i], r.bm25[i]], k=10),
    "rrf k=60, bm25 x2": lambda r, i: rrf([r.dense[i], r.bm25[i]], weights=(1, 2)),
    "min-max 0.5/0.5": lambda r, i: normalised([r.dense[i], r.bm25[i]]),
    "min-max dense 0.3": lambda r, i: normalised([r.dense[i], r.bm25[i]], (0.3, 0.7)),
    "min-max dense 0.7": lambda r, i: normalised([r.dense[i], r.bm25[i]], (0.7, 0.3)),
    "dbsf": lambda r, i: normalised([r.dense[i], r.bm25[i]], how="dbsf"),
}
CURRENT = "rrf k=60 (current)"


def scores(rec: Rankings, variant: str, rule: Rule, keep: Sequence[int]) -> Scores:
    fuse = VARIANTS[variant]
    ranks: list[int | None] = []
    for i in keep:
        order, hits = fuse(rec, i)
        ranks.append(next((r for r, c in enumerate(order[:10], 1) if hits[c][rule]), None))
    return _scores(variant, rule, ranks)


def report(
    name: str, runs: dict[str, Rankings], keep: Sequence[int], rules: Sequence[Rule]
) -> None:
    print(f"\n{name} ({len(keep)} questions)\n")
    print(
        "| fusion | rule | ours MRR@10 | fixed-1000 MRR@10 | ours - fixed-1000 |"
        " ours: new - current | fixed-1000: new - current |"
    )
    print("|---|---|---:|---:|---|---|---|")

    def cell(a: Scores, b: Scores) -> str:
        c = paired_bootstrap(a, b, "mrr@10")
        return f"{c.difference:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"

    for rule in rules:
        for variant in VARIANTS:
            o, f = (scores(runs[r], variant, rule, keep) for r in ("ours", "fixed-1000"))
            o0, f0 = (scores(runs[r], CURRENT, rule, keep) for r in ("ours", "fixed-1000"))
            print(
                f"| {variant} | {rule} | {o.mrr10:.3f} | {f.mrr10:.3f} | {cell(o, f)} |"
                f" {cell(o, o0)} | {cell(f, f0)} |"
            )


def context_report(
    name: str,
    runs: dict[str, Rankings],
    keep: Sequence[int],
    rules: Sequence[Rule],
    contexts: Sequence[int],
) -> None:
    """Ours with each BM25 context budget: the context BM25 alone, as the only BM25 of RRF
    (2-way), and as a third ranking beside BM25 over the chunk alone (3-way, what ``agrag
    search`` does when the budget is above 0); against ours without context ("current": RRF of
    dense and own-text BM25), against 3-way at 0 (own-text BM25 counted twice: how much is
    the weight and how much the context), and against fixed-1000's RRF hybrid."""
    print(f"\n{name}: BM25 context of same-section neighbours ({len(keep)} questions)\n")
    print(
        "| context chars | rule | context bm25 alone: MRR@10, minus own-text bm25 |"
        " 2-way (context bm25 only) MRR@10, minus current | 3-way MRR@10 |"
        " 3-way minus current | 3-way minus 3-way at 0 | fixed-1000 hybrid MRR@10 |"
        " 3-way minus fixed-1000 | R@5: 3-way minus fixed-1000 |"
    )
    print("|---:|---|---|---|---:|---|---|---:|---|---|")
    ours, base = runs["ours"], runs["fixed-1000"]

    def ranked(fuse: Callable[[int], Fused], rule: Rule, label: str) -> Scores:
        ranks: list[int | None] = []
        for i in keep:
            order, hits = fuse(i)
            ranks.append(next((r for r, c in enumerate(order[:10], 1) if hits[c][rule]), None))
        return _scores(label, rule, ranks)

    def cell(a: Scores, b: Scores, metric: str = "mrr@10") -> str:
        c = paired_bootstrap(a, b, metric)
        return f"{c.difference:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"

    def three_way(lists: list[list[Ranked]], rule: Rule) -> Scores:
        # RRF of dense, BM25 over the chunk alone and BM25 with its context (agrag search).
        own = ours.bm25_context[0]
        return ranked(
            lambda i: rrf([ours.dense[i], own[i], lists[i]], weights=(1, 1, 1)), rule, "3"
        )

    for rule in rules:
        base_hybrid = ranked(lambda i: rrf([base.dense[i], base.bm25[i]]), rule, "fixed hybrid")
        plain = ranked(lambda i: rrf([ours.dense[i], ours.bm25_context[0][i]]), rule, "ours 0")
        own_bm25 = ranked(lambda i: single(ours.bm25_context[0][i]), rule, "own bm25")
        doubled = three_way(ours.bm25_context[0], rule)
        for chars in contexts:
            lists = ours.bm25_context[chars]
            bm25 = ranked(functools.partial(_alone, lists), rule, "ours bm25")
            hybrid = ranked(functools.partial(_with_dense, ours.dense, lists), rule, "ours hybrid")
            three = three_way(lists, rule)
            print(
                f"| {chars} | {rule} | {bm25.mrr10:.3f}, {cell(bm25, own_bm25)} |"
                f" {hybrid.mrr10:.3f}, {cell(hybrid, plain)} | {three.mrr10:.3f} |"
                f" {cell(three, plain)} | {cell(three, doubled)} | {base_hybrid.mrr10:.3f} |"
                f" {cell(three, base_hybrid)} | {cell(three, base_hybrid, 'recall@5')} |"
            )


def query_cost(
    parsed: list[ParsedDocument],
    questions: list[Question],
    settings: ChunkerSettings,
    embedder: Embedder,
    cache: EmbeddingCache,
    rounds: int = 5,
) -> None:
    """CPU and wall time of one ``agrag search`` hybrid query (query embedding included) with
    and without the context ranking, on the same index, interleaved question by question."""
    items = ours(parsed, settings)
    vectors, _ = embed_with_cache(embedder, [str(it["contextual_text"]) for it in items], cache)
    chars = IndexSettings().bm25_context_chars
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp) / "ours", items, vectors, chars)
        spent: dict[str, list[float]] = {"2 rankings": [], "3 rankings": []}
        walls: dict[str, list[float]] = {"2 rankings": [], "3 rankings": []}
        for _ in range(rounds):
            for q in questions:
                for label, context in (("2 rankings", 0), ("3 rankings", chars)):
                    index._context_chars = context  # the benchmark picks the ranking count
                    cpu, wall = time.process_time(), time.perf_counter()
                    search(index, q.query, k=10, mode="hybrid", embedder=embedder)
                    spent[label].append(time.process_time() - cpu)
                    walls[label].append(time.perf_counter() - wall)
    print(f"\nhybrid query cost, {len(questions)} questions x {rounds} rounds, interleaved\n")
    print("| hybrid | CPU ms per query (median) | wall ms per query (median) |")
    print("|---|---:|---:|")
    for label in spent:
        cpu_ms = 1000 * float(np.median(spent[label]))
        wall_ms = 1000 * float(np.median(walls[label]))
        print(f"| {label} | {cpu_ms:.1f} | {wall_ms:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache-dir", default=str(PROJECT_ROOT / "data" / "cache"))
    parser.add_argument("--hold-out", default="grep.pdf,sed.pdf")
    parser.add_argument("--tokenisers", action="store_true", help="BM25 tokenisers instead")
    parser.add_argument(
        "--bm25-context",
        help="instead: BM25 with these characters of each same-section neighbour, e.g. 0,200,400"
        " (index.bm25_context_chars; 0 is always measured too)",
    )
    parser.add_argument("--query-cost", action="store_true", help="instead: hybrid query time")
    args = parser.parse_args()
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH)
    cache = EmbeddingCache.in_dir(Path(args.cache_dir))
    settings = ChunkerSettings.model_validate(rt.settings.chunker.model_dump())
    held = set(args.hold_out.split(","))

    questions = load_questions(SET / "questions.tsv")
    pdfs = sorted(SET.glob("*.pdf"))
    if args.tokenisers:
        manual_docs = [parse_document(f.read_bytes(), f.name) for f in pdfs]
        tokeniser_report("PDF manuals", manual_docs, questions, settings, rt.embedder, cache, RULES)
        rust_docs = parse_book(BOOK)
        rust_qs = load_questions(QUESTIONS)
        tokeniser_report(
            "Rust book", rust_docs, rust_qs, settings, rt.embedder, cache, ("section",)
        )
        return
    if args.query_cost:
        docs = [parse_document(f.read_bytes(), f.name) for f in pdfs]
        query_cost(docs, questions, settings, rt.embedder, cache)
        return
    if args.bm25_context is not None:
        contexts = sorted({0, *(int(c) for c in args.bm25_context.split(","))})
        manual_runs = collect(
            [parse_document(f.read_bytes(), f.name) for f in pdfs],
            questions,
            settings,
            rt.embedder,
            cache,
            contexts,
        )
        every = list(range(len(questions)))
        dev = [i for i in every if questions[i].source_key not in held]
        for label, keep in (
            ("PDF manuals, all", every),
            ("PDF manuals, without the held-out manuals", dev),
            (
                f"PDF manuals, held out ({', '.join(sorted(held))})",
                [i for i in every if i not in dev],
            ),
        ):
            context_report(label, manual_runs, keep, RULES, contexts)
        rust_qs = load_questions(QUESTIONS)
        rust_runs = collect(parse_book(BOOK), rust_qs, settings, rt.embedder, cache, contexts)
        context_report("Rust book", rust_runs, list(range(len(rust_qs))), ("section",), contexts)
        return
    manuals = collect(
        [parse_document(f.read_bytes(), f.name) for f in pdfs],
        questions,
        settings,
        rt.embedder,
        cache,
    )
    every = list(range(len(questions)))
    report("PDF manuals, all", manuals, every, RULES)
    dev = [i for i, q in enumerate(questions) if q.source_key not in held]
    report("PDF manuals, without the held-out manuals", manuals, dev, RULES)
    report(
        f"PDF manuals, held out ({', '.join(sorted(held))})",
        manuals,
        [i for i in every if i not in dev],
        RULES,
    )

    rust_questions = load_questions(QUESTIONS)
    rust = collect(parse_book(BOOK), rust_questions, settings, rt.embedder, cache)
    report("Rust book", rust, list(range(len(rust_questions))), ("section",))


if __name__ == "__main__":
    main()
