"""Helpers shared by the embedding tests (a real counting embedder, similarity)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agrag_pipeline.embedding.base import Embedder, Vectors


class CountingEmbedder(Embedder):
    """A real embedder that delegates to another one and records every text it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.dimension = inner.dimension
        self.max_sequence_tokens = inner.max_sequence_tokens
        self.tokenizer_path = inner.tokenizer_path
        self.embedded: list[str] = []
        self.calls = 0

    def _encode(self, texts: list[str]) -> Vectors:
        self.calls += 1
        self.embedded.extend(texts)
        return self.inner.embed(texts)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def paragraphs(n: int, seed: int = 0) -> Sequence[str]:
    """Distinct, readable paragraphs for cache tests."""
    topics = ["ownership", "borrowing", "lifetimes", "traits", "closures", "iterators", "macros"]
    return [
        f"Paragraph {i} explains {topics[(i + seed) % len(topics)]} in Rust with example {i * 7}."
        for i in range(n)
    ]
