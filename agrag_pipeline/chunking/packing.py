"""Greedy packing of pieces into chunk spans, and the overlap between consecutive chunks.

Token counts of packed pieces are summed, not recounted: the pieces are separated by whitespace,
and a WordPiece/BPE pre-tokenizer never joins tokens across whitespace, so the sum is the count
of the joined text. The chunker still counts every finished chunk once and repairs any chunk a
non-additive tokenizer pushes over the limit.

Overlap, precisely: chunk k+1 of a split section starts with the longest run of whole words
(maximal non-whitespace runs) that ends chunk k and holds at most ``overlap_tokens`` tokens.
It is "exactly the configured overlap, rounded down to whole words"; chunk k+1's start offset
moves back to that run's first word, so its text is still one contiguous span of the text layer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from agrag_pipeline.chunking.text_split import Piece
from agrag_pipeline.chunking.tokens import TokenCounter

_WORD = re.compile(r"\S+")


class Packed(NamedTuple):
    """A chunk span (overlap run included) and its content tokens.

    ``joined`` is True when two of its pieces touch with no whitespace between (pieces of one
    over-long word): there the summed count may differ from the joined text's count.
    ``units`` are the counted pieces (and overlap words) it is made of, in order.
    """

    start: int
    end: int
    tokens: int
    joined: bool = False
    units: tuple[Piece, ...] = ()


def overlap_start(
    text: str, start: int, end: int, overlap_tokens: int, counter: TokenCounter
) -> tuple[int, int, list[Piece]]:
    """Start, tokens and words of the longest whole-word suffix of ``text[start:end]`` within
    budget (each word with its count, in order).

    Returns ``(end, 0, [])`` when no word fits.
    """
    if overlap_tokens <= 0:
        return end, 0, []
    words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
    taken: list[Piece] = []
    best_start, total = end, 0
    i = len(words)
    while i > 0:
        # Each non-empty word is at least one token, so overlap_tokens + 1 words always suffice
        # to exceed the budget unless some words count zero (e.g. control characters only).
        batch = words[max(0, i - overlap_tokens - 1) : i]
        counts = counter.count_batch([text[s:e] for s, e in batch])
        for (s, e), n in zip(reversed(batch), reversed(counts), strict=True):
            if total + n > overlap_tokens:
                return best_start, total, taken[::-1]
            total += n
            best_start = s
            taken.append((s, e, n))
        i -= len(batch)
    return best_start, total, taken[::-1]


def pack(
    text: str,
    pieces: Sequence[Piece],
    target: int,
    overlap_tokens: int,
    counter: TokenCounter,
) -> list[Packed]:
    """Pack pieces in order into spans of at most ``target`` tokens (a lone piece may be more).

    With overlap, each span after the first starts with the previous span's overlap run (see
    the module docstring); pieces must then fit ``max - overlap_tokens`` so the run always fits.
    """
    out: list[Packed] = []
    cur_start: int | None = None
    cur_end = 0
    cur_tokens = 0
    cur_units: list[Piece] = []
    has_new = joined = False
    for piece in pieces:
        s, e, n = piece
        if has_new and cur_tokens + n > target:
            assert cur_start is not None
            out.append(Packed(cur_start, cur_end, cur_tokens, joined, tuple(cur_units)))
            joined = False
            ov_start, cur_tokens, cur_units = overlap_start(
                text, cur_start, cur_end, overlap_tokens, counter
            )
            cur_start = ov_start if ov_start < cur_end else None
            has_new = False
        if cur_start is None:
            cur_start = s
        elif s == cur_end:
            joined = True
        cur_end = e
        cur_tokens += n
        cur_units.append(piece)
        has_new = True
    if has_new:
        assert cur_start is not None
        out.append(Packed(cur_start, cur_end, cur_tokens, joined, tuple(cur_units)))
    return out
