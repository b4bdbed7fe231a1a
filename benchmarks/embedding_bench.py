"""Embedding benchmark: our embedder against sentence-transformers' ``encode``, in one run.

Measures, on the same texts from the Rust book:
- chunks/s of ``SentenceTransformerEmbedder`` (grouped by token length, and not) against
  calling ``model.encode`` directly on the same loaded model, and the ratio;
- the time of a cold run through the embedding cache and of the cached re-run;
- the static model2vec backend (distilled once from MiniLM): its speed and how closely it
  agrees with MiniLM (Spearman correlation of pairwise cosine similarities, and how many of
  each text's 10 nearest MiniLM neighbours it finds), next to plain TF-IDF as a yardstick.

The texts are the book's paragraphs packed to about ``target_tokens`` MiniLM tokens here (not
the project's chunker), so this benchmark stands alone.

    .venv/bin/python -m benchmarks.embedding_bench --texts 300

``--batch-tokens 2048,4096,8192`` instead compares fixed batches of ``--batch-size`` texts
against token-budget batches (``embedding.batch_tokens``) on the same texts (``--corpus``: chunks
sampled from the reference corpus, as the suite's embedding stage does), and how far the
vectors move.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.embedding.batching import fixed_batches, token_budget_batches
from agrag_pipeline.embedding.cache import EmbeddingCache, embed_with_cache
from agrag_pipeline.embedding.sentence_transformer import (
    SentenceTransformerEmbedder,
    packaged_minilm_dir,
)
from agrag_pipeline.embedding.settings import EmbeddingSettings
from agrag_pipeline.embedding.static import StaticEmbedder

REPO_ROOT = Path(__file__).resolve().parents[1]
RUST_BOOK = REPO_ROOT.parent / "shared" / "corpus" / "markdown" / "rust-book"
#: Model caches: AGRAG_CACHE_DIR when set (as for the pipeline), else the project's data/cache.
DEFAULT_CACHE = Path(os.environ.get("AGRAG_CACHE_DIR") or REPO_ROOT / "data" / "cache")


def rust_book_texts(n: int, target_tokens: int = 200, max_tokens: int = 250) -> list[str]:
    """Paragraphs of the Rust book, packed in order to about ``target_tokens`` tokens each."""
    counter = TokenCounter(packaged_minilm_dir() / "tokenizer.json")
    texts: list[str] = []
    for path in sorted(RUST_BOOK.glob("ch*.md")):
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", path.read_text("utf-8"))]
        paragraphs = [p for p in paragraphs if p]
        counts = [n + counter.special_tokens for n in counter.count_batch(paragraphs)]
        current: list[str] = []
        size = 0
        for paragraph, count in zip(paragraphs, counts, strict=True):
            if count > max_tokens:
                continue  # a long code block: a chunker would split it; skip it here
            if current and size + count > target_tokens:
                texts.append("\n\n".join(current))
                current, size = [], 0
            current.append(paragraph)
            size += count
            if len(texts) >= n:
                return texts
        if current:
            texts.append("\n\n".join(current))
    return texts[:n]


def _best_of(repeats: int, run: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def _agreement(reference: np.ndarray, other: np.ndarray, k: int = 10) -> dict[str, float]:
    from scipy.stats import spearmanr

    ref_sim, other_sim = reference @ reference.T, other @ other.T
    upper = np.triu_indices(len(reference), 1)
    rho = float(spearmanr(ref_sim[upper], other_sim[upper]).statistic)
    np.fill_diagonal(ref_sim, -np.inf)
    np.fill_diagonal(other_sim, -np.inf)
    ref_top = np.argsort(-ref_sim, axis=1)[:, :k]
    other_top = np.argsort(-other_sim, axis=1)[:, :k]
    overlap = np.mean([len(set(a) & set(b)) / k for a, b in zip(ref_top, other_top, strict=True)])
    return {"spearman_pairwise_cosine": rho, f"top{k}_neighbour_overlap": float(overlap)}


def run(
    n_texts: int = 300,
    repeats: int = 1,
    batch_size: int = 32,
    cache_dir: Path = DEFAULT_CACHE,
    slice_size: int = 96,
    texts: list[str] | None = None,
    static: bool = True,
) -> dict[str, Any]:
    """Figures on ``texts`` (default: ``n_texts`` packed Rust-book paragraphs); ``static``
    adds the model2vec backend's speed and its agreement with MiniLM."""
    texts = texts if texts is not None else rust_book_texts(n_texts)
    counter = TokenCounter(packaged_minilm_dir() / "tokenizer.json")
    tokens = [n + counter.special_tokens for n in counter.count_batch(texts)]
    settings = EmbeddingSettings(batch_size=batch_size)
    start = time.perf_counter()
    ours = SentenceTransformerEmbedder.from_settings(settings)
    load_s = time.perf_counter() - start
    model = ours.model
    ours.embed(texts[:16])  # warm up torch's kernels before timing anything

    def direct(part: list[str]) -> np.ndarray:
        return np.asarray(
            model.encode(
                part,
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        )

    def ours_grouped(part: list[str]) -> np.ndarray:
        ours.group_by_tokens = True
        return ours.embed(part)

    def ours_plain(part: list[str]) -> np.ndarray:
        ours.group_by_tokens = False
        return ours.embed(part)

    # A slice is about one document's worth of chunks, what one asset run embeds at a time.
    # The machine is shared, so load drifts: run the three ways slice by slice, in rotating
    # order, and add up wall time and process CPU time (all threads) per way.
    ways = {"direct": direct, "grouped": ours_grouped, "plain": ours_plain}
    wall = dict.fromkeys(ways, 0.0)
    cpu = dict.fromkeys(ways, 0.0)
    outputs: dict[str, list[np.ndarray]] = {name: [] for name in ways}
    slices = [texts[i : i + slice_size] for i in range(0, len(texts), slice_size)]
    for _ in range(repeats):
        for number, part in enumerate(slices):
            names = list(ways)
            names = names[number % 3 :] + names[: number % 3]
            for name in names:
                start_wall, start_cpu = time.perf_counter(), time.process_time()
                vectors = ways[name](part)
                wall[name] += time.perf_counter() - start_wall
                cpu[name] += time.process_time() - start_cpu
                outputs[name].append(vectors)
    reference = np.concatenate(outputs["direct"][: len(slices)])
    grouped = np.concatenate(outputs["grouped"][: len(slices)])
    max_diff = float(np.abs(reference - grouped).max())

    with tempfile.TemporaryDirectory() as tmp, EmbeddingCache.in_dir(Path(tmp)) as cache:
        ours.group_by_tokens = True
        cold_s, (_, cold_stats) = _best_of(1, lambda: embed_with_cache(ours, texts, cache))
        warm_s, (_, warm_stats) = _best_of(3, lambda: embed_with_cache(ours, texts, cache))

    static_figures = _static_figures(texts, reference, cache_dir) if static else {}

    n = len(texts)
    return {
        "texts": n,
        "tokens_mean": statistics.mean(tokens),
        "tokens_max": max(tokens),
        "batch_size": batch_size,
        "model_load_s": round(load_s, 2),
        "direct_encode_chunks_per_s": round(n * repeats / wall["direct"], 2),
        "ours_grouped_chunks_per_s": round(n * repeats / wall["grouped"], 2),
        "ours_plain_chunks_per_s": round(n * repeats / wall["plain"], 2),
        "ratio_grouped_vs_direct": round(wall["direct"] / wall["grouped"], 3),
        "ratio_plain_vs_direct": round(wall["direct"] / wall["plain"], 3),
        "cpu_ratio_grouped_vs_direct": round(cpu["direct"] / cpu["grouped"], 3),
        "cpu_ratio_plain_vs_direct": round(cpu["direct"] / cpu["plain"], 3),
        "max_abs_diff_vs_direct": max_diff,
        "cache_cold_s": round(cold_s, 2),
        "cache_cold_misses": cold_stats.misses,
        "cache_rerun_s": round(warm_s, 4),
        "cache_rerun_hits": warm_stats.hits,
        "cache_rerun_misses": warm_stats.misses,
        **static_figures,
    }


def batching_figures(
    texts: list[str], budgets: list[int], batch_size: int = 32, repeats: int = 2
) -> dict[str, Any]:
    """chunks/s of batches of ``batch_size`` texts (sorted by token count, the default) and of
    each token budget, and the largest vector difference from the fixed batches. The ways run
    in rotating order, ``repeats`` passes, best pass kept (the machine is shared)."""
    ours = SentenceTransformerEmbedder.from_settings(EmbeddingSettings(batch_size=batch_size))
    ours.embed(texts[:16])  # warm up torch's kernels

    def way(budget: int | None) -> Callable[[], np.ndarray]:
        def embed() -> np.ndarray:
            ours.batch_tokens = budget
            return ours.embed(texts)

        return embed

    fixed = f"fixed {batch_size} texts"
    ways = {fixed: way(None)} | {f"{b} tokens": way(b) for b in budgets}
    best = dict.fromkeys(ways, float("inf"))
    cpu = dict.fromkeys(ways, float("inf"))
    vectors: dict[str, np.ndarray] = {}
    for number in range(repeats * len(ways)):
        names = list(ways)
        name = names[(number + number // len(ways)) % len(ways)]
        start, start_cpu = time.perf_counter(), time.process_time()
        vectors[name] = ways[name]()
        best[name] = min(best[name], time.perf_counter() - start)
        cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    reference = vectors[fixed]
    counter = TokenCounter(packaged_minilm_dir() / "tokenizer.json")
    tokens = [n + counter.special_tokens for n in counter.count_batch(texts)]
    return {
        "texts": len(texts),
        "tokens_mean": round(statistics.mean(tokens), 1),
        "tokens_max": max(tokens),
        "chunks_per_s": {name: round(len(texts) / best[name], 2) for name in ways},
        "ratio_to_fixed": {name: round(best[fixed] / best[name], 3) for name in ways},
        # Process CPU time (all threads): less swayed by other load than wall time.
        "cpu_ratio_to_fixed": {name: round(cpu[fixed] / cpu[name], 3) for name in ways},
        # Tokens the model computes, padding included: the work batching decides.
        "padded_tokens": {fixed: _padded(fixed_batches(tokens, batch_size), tokens)}
        | {
            f"{b} tokens": _padded(
                token_budget_batches(tokens, b, max_sequence_tokens=ours.max_sequence_tokens),
                tokens,
            )
            for b in budgets
        },
        "max_abs_diff_vs_fixed": {
            name: float(np.abs(v - reference).max()) for name, v in vectors.items()
        },
        "min_cosine_vs_fixed": {
            name: float((v * reference).sum(axis=1).min()) for name, v in vectors.items()
        },
    }


def _padded(batches: list[np.ndarray], tokens: list[int]) -> int:
    return sum(len(batch) * max(tokens[i] for i in batch) for batch in batches)


def _static_figures(texts: list[str], reference: np.ndarray, cache_dir: Path) -> dict[str, Any]:
    start = time.perf_counter()
    static = StaticEmbedder.from_settings(EmbeddingSettings(backend="model2vec"), cache_dir)
    static_ready_s = time.perf_counter() - start
    static.embed(texts[:16])
    static_s, static_vectors = _best_of(5, lambda: static.embed(texts))
    return {
        "static_distill_or_load_s": round(static_ready_s, 2),
        "static_chunks_per_s": round(len(texts) / static_s, 1),
        "static_dimension": static.dimension,
        "static_vs_minilm": _agreement(reference, static_vectors),
        "tfidf_vs_minilm": _agreement(reference, _tfidf(texts)),
    }


def _tfidf(texts: list[str]) -> np.ndarray:
    """A lexical yardstick: how much agreement with MiniLM plain TF-IDF already gets."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer(sublinear_tf=True).fit_transform(texts).toarray()
    matrix = matrix.astype(np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--slice-size", type=int, default=96)
    parser.add_argument(
        "--batch-tokens", help="comma-separated token budgets: compare them to fixed batches"
    )
    parser.add_argument(
        "--corpus", action="store_true", help="chunks sampled from the corpus, not the Rust book"
    )
    args = parser.parse_args()
    if args.batch_tokens:
        if args.corpus:
            from benchmarks.corpus import base_documents, write_corpus
            from benchmarks.stages import corpus_chunk_sample

            with tempfile.TemporaryDirectory() as tmp:
                write_corpus(Path(tmp), len(base_documents()))
                texts = corpus_chunk_sample(Path(tmp), args.texts)
        else:
            texts = rust_book_texts(args.texts)
        budgets = [int(b) for b in args.batch_tokens.split(",")]
        figures = batching_figures(texts, budgets, args.batch_size, max(1, args.repeats))
        print(json.dumps(figures, indent=2))
        return
    figures = run(args.texts, args.repeats, args.batch_size, args.cache_dir, args.slice_size)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
