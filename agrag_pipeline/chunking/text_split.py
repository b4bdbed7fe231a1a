"""Cutting a span of the text layer into pieces that each fit a token budget.

Pieces are spans ``(start, end, tokens)`` of the text layer, stripped of surrounding whitespace,
in reading order, covering every non-whitespace character of the span. A span is cut at the
coarsest boundary that makes its pieces fit, and only where a piece is too big:

    prose:  paragraph (blank line) -> sentence or line -> word -> character
    code:   fenced block (atomic)  -> line             -> word -> character

A cut therefore never falls inside a word, unless that one word alone exceeds the budget (a
pathological run such as a long base64 blob); only then is it cut between characters. A fenced
code block is one piece as long as it fits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from agrag_pipeline.chunking.tokens import TokenCounter

Piece = tuple[int, int, int]
Level = Literal["prose", "code", "sentence", "line", "word"]
#: A span and the level it is cut at when too big.
Block = tuple[int, int, Level]

#: A fence line (any indentation or block-quote markers, then ``` or ~~~, 3 or more) or a
#: blank line: the only lines where a block can start or end.
_MARK = re.compile(r"^[ \t>]*(`{3,}|~{3,})[^\n]*$|^[ \t\r]*$", re.MULTILINE)
#: Sentence gaps: whitespace after a sentence end (optionally closed by a quote or bracket),
#: or any line break (lists and soft-wrapped lines).
_SENTENCE_GAP = re.compile(r"(?<=[.!?…。！？])\s+|(?<=[.!?][\"'”’)\]])\s+|[ \t]*\n\s*")
_LINE_GAP = re.compile(r"[ \t\r\f\v]*\n\s*")
_WORD = re.compile(r"\S+")

_FINER: dict[Level, Level | None] = {
    "prose": "sentence",
    "code": "line",
    "sentence": "word",
    "line": "word",
    "word": None,
}


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved inwards past whitespace; ``start == end`` when nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def blocks(text: str, start: int, end: int, keep_code_whole: bool) -> list[Block]:
    """Paragraphs (separated by blank lines) and fenced code blocks of ``text[start:end]``.

    A fence is a block of its own even where it interrupts a paragraph, and blank lines inside
    it do not end it; an unclosed fence runs to the end of the span (as in CommonMark). Only
    blank and fence lines are visited (one regex scan), not every line.
    """
    out: list[tuple[int, int, Level]] = []
    para_start = start
    fence: tuple[str, int] | None = None
    fence_start = start
    for m in _MARK.finditer(text, start, end):
        marker = m.group(1)
        if fence is not None:
            if (
                marker
                and marker[0] == fence[0]
                and len(marker) >= fence[1]
                and not text[m.end(1) : m.end()].strip()
            ):
                out.append((fence_start, m.end(), "code"))
                fence = None
                para_start = m.end()
        elif marker is None:
            out.append((para_start, m.start(), "prose"))
            para_start = m.end()
        elif keep_code_whole:
            out.append((para_start, m.start(), "prose"))
            fence = (marker[0], len(marker))
            fence_start = m.start()
    if fence is not None:
        out.append((fence_start, end, "code"))
    else:
        out.append((para_start, end, "prose"))
    stripped: list[tuple[int, int, Level]] = []
    for s, e, level in out:
        s, e = strip_span(text, s, e)
        if s < e:
            stripped.append((s, e, level))
    return stripped


def _cut(text: str, start: int, end: int, level: Level) -> list[tuple[int, int]]:
    """The pieces of ``text[start:end]`` between the gaps of the finer ``level``."""
    if level == "word":
        return [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
    gap = _SENTENCE_GAP if level == "sentence" else _LINE_GAP
    pieces: list[tuple[int, int]] = []
    piece_start = start
    for m in gap.finditer(text, start, end):
        if m.start() > piece_start:
            pieces.append((piece_start, m.start()))
        piece_start = m.end()
    if piece_start < end:
        pieces.append((piece_start, end))
    return [(s, e) for s, e in (strip_span(text, s, e) for s, e in pieces) if s < e]


def split_by_characters(
    text: str, start: int, end: int, budget: int, counter: TokenCounter
) -> list[Piece]:
    """Cut one over-long word into the longest prefixes that fit (binary search on length)."""
    pieces: list[Piece] = []
    while start < end:
        lo, hi = 1, end - start
        best = 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if counter.count(text[start : start + mid]) <= budget:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        pieces.append((start, start + best, counter.count(text[start : start + best])))
        start += best
    return pieces


def fit_pieces(
    text: str,
    spans: Sequence[Block],
    budget: int,
    counter: TokenCounter,
    counts: Sequence[int] | None = None,
) -> list[Piece]:
    """Pieces of every span that fit ``budget`` tokens, cutting only what is too big.

    Each level's pieces are counted in one batch call; a piece is never recounted.
    """
    if counts is None:
        counts = counter.count_batch([text[s:e] for s, e, _ in spans])
    out: list[Piece] = []
    for (s, e, level), n in zip(spans, counts, strict=True):
        if n <= budget:
            out.append((s, e, n))
            continue
        finer: Level | None = _FINER[level]
        parts: list[tuple[int, int]] = [(s, e)]
        while finer is not None:
            parts = _cut(text, s, e, finer)
            if len(parts) > 1:
                break
            finer = _FINER[finer]
        if finer is None or len(parts) <= 1:
            out.extend(split_by_characters(text, s, e, budget, counter))
        else:
            out.extend(fit_pieces(text, [(a, b, finer) for a, b in parts], budget, counter))
    return out
