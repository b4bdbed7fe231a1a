"""``embedding.batch_tokens``: batches cut by a padded-token budget keep order and vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agrag_pipeline.embedding.batching import fixed_batches, token_budget_batches
from agrag_pipeline.embedding.sentence_transformer import SentenceTransformerEmbedder
from agrag_pipeline.embedding.settings import EmbeddingSettings
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import load_settings

RUST_BOOK = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "markdown" / "rust-book"
#: Batching only changes padding, which the attention mask hides: float rounding remains.
ATOL = 1e-5


def test_budget_batches_hold_more_short_texts_than_long_ones():
    counts = [200, 10, 100, 10, 200, 50, 10, 100]
    batches = token_budget_batches(counts, 400, max_sequence_tokens=256)
    assert [[int(i) for i in b] for b in batches] == [[0, 4], [2, 7, 5, 1], [3, 6]]
    assert [b.tolist() for b in fixed_batches(counts, 3)] == [[0, 4, 2], [7, 5, 1], [3, 6]]


def test_a_text_over_the_budget_is_a_batch_of_its_own_and_truncation_caps_its_length():
    assert [b.tolist() for b in token_budget_batches([900, 5], 300, max_sequence_tokens=1000)] == [
        [0],
        [1],
    ]
    # The model truncates at 256 tokens, so a 900-token text pads a batch to 256 only.
    assert [b.tolist() for b in token_budget_batches([900, 256], 512, max_sequence_tokens=256)] == [
        [0, 1]
    ]


@given(
    counts=st.lists(st.integers(min_value=1, max_value=600), min_size=1, max_size=200),
    budget=st.integers(min_value=1, max_value=20_000),
)
def test_budget_batches_cover_every_text_once_within_the_budget(counts, budget):
    batches = token_budget_batches(counts, budget, max_sequence_tokens=512)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(counts)))
    lengths = np.minimum(counts, 512)
    assert list(lengths[flat]) == sorted(lengths, reverse=True)  # longest first
    for batch in batches:
        padded = len(batch) * int(lengths[batch].max())
        assert padded <= budget or len(batch) == 1


def test_a_budget_below_one_token_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        token_budget_batches([3], 0, max_sequence_tokens=256)


def corpus_texts() -> list[str]:
    """Every chunk of a real chapter: lengths from a few tokens to the 256 limit."""
    runtime = Runtime(settings=load_settings())
    texts: list[str] = []
    for name in ("ch09-02-recoverable-errors-with-result.md",):
        parsed = parse_document((RUST_BOOK / name).read_bytes(), name)
        chunks = runtime.chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
        texts.extend(c.contextual_text for c in chunks)
    return texts


def test_token_budget_batches_give_the_fixed_batches_vectors_in_input_order(
    minilm: SentenceTransformerEmbedder,
):
    texts = corpus_texts()
    counts = minilm.token_counts(texts)
    assert counts is not None and max(counts) > 4 * min(counts) and len(texts) > 32
    saved = minilm.batch_tokens
    try:
        minilm.batch_tokens = None
        fixed = minilm.embed(texts)
        minilm.batch_tokens = 1024  # small: many batches of uneven sizes
        budget = minilm.embed(texts)
    finally:
        minilm.batch_tokens = saved
    assert float(np.abs(budget - fixed).max()) <= ATOL
    # In order: each vector is its own text's, embedded alone.
    for i in (0, len(texts) // 2, len(texts) - 1):
        alone = minilm.embed([texts[i]])[0]
        assert float(np.abs(budget[i] - alone).max()) <= ATOL


def test_batch_tokens_changes_neither_fingerprint(minilm: SentenceTransformerEmbedder):
    # The model's fingerprint (in every embeddings file) does not name the batching; 0 (or
    # None) is batch_size texts per batch.
    fixed = SentenceTransformerEmbedder.from_settings(EmbeddingSettings(batch_tokens=0))
    assert fixed.batch_tokens is None and minilm.batch_tokens == EmbeddingSettings().batch_tokens
    assert fixed.fingerprint == minilm.fingerprint
    # Nor does the settings fingerprint that marks the embeddings asset stale.
    settings = load_settings()
    fingerprints = {
        Runtime(
            settings=settings.model_copy(update={"embedding": EmbeddingSettings(**change)})
        ).embedding_settings_fingerprint
        for change in ({"batch_tokens": None}, {"batch_tokens": 2048}, {})
    }
    assert len(fingerprints) == 1
    other = EmbeddingSettings(normalize=False)
    changed = Runtime(settings=settings.model_copy(update={"embedding": other}))
    assert changed.embedding_settings_fingerprint not in fingerprints
