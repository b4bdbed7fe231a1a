"""How texts are cut into model batches: by a fixed count, or by a token budget.

A transformer pads every text of a batch to the batch's longest, so the work of a batch is
(texts x longest), on CPU and GPU alike. Both ways sort the texts longest first (their token
counts from the model's tokenizer), so neighbours in a batch have similar lengths; the token
budget then lets a batch of short texts hold more of them, and a batch of long ones fewer, so
each batch costs about the same and padding waste stays small. The caller restores the order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Batch = npt.NDArray[np.intp]


def _longest_first(token_counts: Sequence[int]) -> Batch:
    return np.argsort(-np.asarray(token_counts, dtype=np.int64), kind="stable")


def fixed_batches(token_counts: Sequence[int], batch_size: int) -> list[Batch]:
    """Indices, longest first, ``batch_size`` at a time."""
    order = _longest_first(token_counts)
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def token_budget_batches(
    token_counts: Sequence[int], batch_tokens: int, *, max_sequence_tokens: int
) -> list[Batch]:
    """Indices, longest first, cut so that each batch's padded size (its number of texts times
    its longest text, counted up to ``max_sequence_tokens``, where the model truncates) stays
    within ``batch_tokens``; a text longer than the budget is a batch of its own."""
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be at least 1, not {batch_tokens}")
    order = _longest_first(token_counts)
    lengths = np.minimum(np.asarray(token_counts, dtype=np.int64), max_sequence_tokens)
    batches: list[Batch] = []
    start = 0
    while start < len(order):
        longest = max(1, int(lengths[order[start]]))  # sorted: the first is the longest
        size = max(1, batch_tokens // longest)
        batches.append(order[start : start + size])
        start += size
    return batches
