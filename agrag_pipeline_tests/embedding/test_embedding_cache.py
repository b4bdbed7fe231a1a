"""The content-addressed cache: each distinct text is embedded once per model."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
from embedding_support import CountingEmbedder, paragraphs

from agrag_pipeline.embedding.cache import EmbeddingCache, embed_with_cache, text_sha256


def test_first_run_misses_and_second_run_embeds_nothing(counting: CountingEmbedder, tmp_path):
    texts = paragraphs(5)
    with EmbeddingCache.in_dir(tmp_path) as cache:
        first, stats1 = embed_with_cache(counting, texts, cache)
        assert (stats1.hits, stats1.misses) == (0, 5)
        assert counting.embedded == texts
        second, stats2 = embed_with_cache(counting, texts, cache)
    assert (stats2.hits, stats2.misses) == (5, 0)
    assert counting.calls == 1  # nothing was embedded the second time
    np.testing.assert_array_equal(first, second)


def test_cache_survives_reopening_the_file(counting: CountingEmbedder, tmp_path):
    texts = paragraphs(3)
    with EmbeddingCache.in_dir(tmp_path) as cache:
        first, _ = embed_with_cache(counting, texts, cache)
    with EmbeddingCache.in_dir(tmp_path) as reopened:
        again, stats = embed_with_cache(counting, texts, reopened)
    assert stats.misses == 0
    np.testing.assert_array_equal(first, again)


def test_one_paragraph_edit_re_embeds_only_that_paragraph(counting: CountingEmbedder, tmp_path):
    before = list(paragraphs(6))
    after = list(before)
    after[3] = after[3] + " It also covers the drop order of fields."
    with EmbeddingCache.in_dir(tmp_path) as cache:
        embed_with_cache(counting, before, cache)
        counting.embedded.clear()
        vectors, stats = embed_with_cache(counting, after, cache)
    assert counting.embedded == [after[3]]
    assert (stats.hits, stats.misses) == (5, 1)
    np.testing.assert_allclose(vectors[3], counting.inner.embed([after[3]])[0], atol=1e-5)


def test_duplicate_texts_in_one_call_are_embedded_once(counting: CountingEmbedder, tmp_path):
    texts = ["same text", "other text", "same text", "same text"]
    with EmbeddingCache.in_dir(tmp_path) as cache:
        vectors, stats = embed_with_cache(counting, texts, cache)
    assert sorted(counting.embedded) == ["other text", "same text"]
    assert (stats.texts, stats.unique, stats.misses) == (4, 2, 2)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[0], vectors[3])


def test_another_model_fingerprint_does_not_share_vectors(counting: CountingEmbedder, tmp_path):
    texts = paragraphs(2)
    with EmbeddingCache.in_dir(tmp_path) as cache:
        embed_with_cache(counting, texts, cache)
        counting.fingerprint = "f" * 64  # as if the model or its settings changed
        _, stats = embed_with_cache(counting, texts, cache)
    assert stats.misses == 2


def test_empty_input_embeds_nothing(counting: CountingEmbedder, tmp_path):
    with EmbeddingCache.in_dir(tmp_path) as cache:
        vectors, stats = embed_with_cache(counting, [], cache)
    assert vectors.shape == (0, 384)
    assert counting.calls == 0 and stats.texts == 0


def _vector_for(key: str) -> np.ndarray:
    seed = int(key[:8], 16)
    return np.random.default_rng(seed).standard_normal(64).astype(np.float32)


def _hammer(path: str, worker: int, rounds: int, start: Any) -> None:
    """Write overlapping batches and read back what is there, many short transactions."""
    cache = EmbeddingCache(Path(path), busy_timeout_ms=60_000)
    cache.count()
    start.wait(timeout=60)  # both processes hammer the file at the same time
    for r in range(rounds):
        keys = [text_sha256(f"text {(r * 7 + i + worker * 3) % 150}") for i in range(20)]
        cache.put_many("fp", {k: _vector_for(k) for k in keys})
        for key, vector in cache.get_many("fp", keys).items():
            if not np.array_equal(vector, _vector_for(key)):
                raise AssertionError(f"worker {worker} read a wrong vector for {key}")
    cache.close()


def test_two_processes_reading_and_writing_do_not_corrupt_the_store(tmp_path):
    path = tmp_path / "embeddings.sqlite3"
    EmbeddingCache(path).count()  # create the file and switch it to WAL first
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    workers = [ctx.Process(target=_hammer, args=(str(path), w, 200, start)) for w in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=120)
    assert [p.exitcode for p in workers] == [0, 0]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache = EmbeddingCache(path)
    keys = [text_sha256(f"text {i}") for i in range(150)]
    stored = cache.get_many("fp", keys)
    assert cache.count("fp") == len(stored) > 100
    for key, vector in stored.items():
        np.testing.assert_array_equal(vector, _vector_for(key))
