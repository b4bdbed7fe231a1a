"""``Embedder``: the one interface every embedding backend implements.

Backends differ in how vectors are made (a local transformer, an HTTP endpoint, a static table);
everything around them (the cache, the Parquet table, truncation reporting) only needs this
interface, so a backend can be swapped by a setting.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.fingerprints import fingerprint as _fingerprint

logger = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

#: The text the pipeline embeds for a chunk (``Chunk.contextual_text``). Part of the fingerprint,
#: so changing what is embedded changes the fingerprint of every output, as the design asks.
TEXT_TEMPLATE = "Chunk.contextual_text/v1: heading path joined by ' > ', a blank line, the text"


class EmbeddingError(RuntimeError):
    """An embedder could not be built or returned something unusable."""


@dataclass(frozen=True)
class Embedded:
    """Vectors for a batch of texts, and how many of those texts the model had to truncate."""

    vectors: Vectors
    truncated_count: int


def embedding_fingerprint(
    *,
    backend: str,
    model: str,
    weights: str,
    dimension: int,
    normalize: bool,
    pooling: str,
    max_sequence_tokens: int,
    text_template: str = TEXT_TEMPLATE,
) -> str:
    """Full SHA-256 over everything that changes a vector; ``weights`` is a SHA-256 or revision."""
    return _fingerprint(
        {
            "text_template": text_template,
            "backend": backend,
            "model": model,
            "weights": weights,
            "dimension": dimension,
            "normalize": normalize,
            "pooling": pooling,
            "max_sequence_tokens": max_sequence_tokens,
        }
    )


class Embedder(ABC):
    """Turns texts into float32 vectors of a fixed dimension.

    Subclasses implement ``_encode`` and set the descriptive attributes. ``embed_counted`` counts
    the texts longer than ``max_sequence_tokens`` (they are truncated by the model, never
    silently: the count is returned, logged, and accumulated in ``truncated_total``).
    """

    #: Full SHA-256 of backend, model, weights hash or revision, dimension, normalisation,
    #: pooling and maximum sequence length. Part of every cache key and output row.
    fingerprint: str
    dimension: int
    #: Longest input, in the model's tokens with special tokens, embedded without truncation.
    max_sequence_tokens: int
    #: The model's ``tokenizer.json``, so the chunker counts tokens the way the model does.
    tokenizer_path: Path | None

    truncated_total: int = 0

    @abstractmethod
    def _encode(self, texts: list[str]) -> Vectors:
        """Vectors for ``texts`` (non-empty), shape (len(texts), dimension), float32."""

    @cached_property
    def _token_counter(self) -> TokenCounter | None:
        # The chunker's counter: the same counts the chunker sized the texts with.
        return TokenCounter(self.tokenizer_path) if self.tokenizer_path is not None else None

    def token_counts(self, texts: Sequence[str]) -> list[int] | None:
        """Token counts with the model's tokenizer, or None where the backend has none."""
        counter = self._token_counter
        if counter is None:
            return None
        return [n + counter.special_tokens for n in counter.count_batch(texts)]

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors for ``texts``, in order: shape (len(texts), dimension), float32."""
        return self.embed_counted(texts).vectors

    def embed_counted(self, texts: Sequence[str]) -> Embedded:
        """Like ``embed``, and also says how many texts were longer than the model takes."""
        texts = list(texts)
        if not texts:
            return Embedded(np.zeros((0, self.dimension), dtype=np.float32), 0)
        counts = self.token_counts(texts)
        truncated = 0
        if counts is not None:
            truncated = sum(1 for c in counts if c > self.max_sequence_tokens)
        if truncated:
            self.truncated_total += truncated
            logger.warning(
                "%d of %d texts exceed %d tokens and were truncated by the embedding model",
                truncated,
                len(texts),
                self.max_sequence_tokens,
            )
        vectors = self._encode_with_lengths(texts, counts)
        self._check_shape(vectors, len(texts))
        return Embedded(vectors, truncated)

    def _encode_with_lengths(self, texts: list[str], token_counts: list[int] | None) -> Vectors:
        """Hook for backends that use token counts (e.g. to group batches by length)."""
        return self._encode(texts)

    def _check_shape(self, vectors: Any, n: int) -> None:
        if not isinstance(vectors, np.ndarray) or vectors.shape != (n, self.dimension):
            shape = getattr(vectors, "shape", None)
            raise EmbeddingError(
                f"{type(self).__name__} returned shape {shape}, expected ({n}, {self.dimension})"
            )
        if vectors.dtype != np.float32:
            raise EmbeddingError(f"{type(self).__name__} returned {vectors.dtype}, not float32")
        if not np.isfinite(vectors).all():
            raise EmbeddingError(f"{type(self).__name__} returned non-finite values")

    def describe(self) -> dict[str, Any]:
        """A plain summary for run metadata."""
        return {
            "backend": type(self).__name__,
            "fingerprint": self.fingerprint,
            "dimension": self.dimension,
            "max_sequence_tokens": self.max_sequence_tokens,
            "tokenizer_path": str(self.tokenizer_path) if self.tokenizer_path else None,
        }


def l2_normalize(vectors: Vectors) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)
