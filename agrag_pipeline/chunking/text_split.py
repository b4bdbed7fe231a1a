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

#: A blank line and the newline before it, when another line follows (a blank last or first
#: line parts nothing but whitespace): where paragraphs part in a span without fences.
_PARAGRAPH_GAP = re.compile(r"(\n[ \t\r]*)(?=\n)")
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
    """Paragraphs (separated by blank lines) and fenced code blocks of ``text[start:end]``."""
    return blocks_and_texts(text, start, end, keep_code_whole)[0]


def blocks_and_texts(
    text: str, start: int, end: int, keep_code_whole: bool
) -> tuple[list[Block], list[str]]:
    """``blocks`` of ``text[start:end]``, and each block's text.

    A fence is a block of its own even where it interrupts a paragraph, and blank lines inside
    it do not end it; an unclosed fence runs to the end of the span (as in CommonMark). Only
    fence lines are visited in Python; the text between fences is split at blank lines by one
    ``re.split``.
    """
    fences = _fence_lines(text, start, end) if keep_code_whole else []
    if not fences:
        return _paragraphs(text, start, end)
    out: list[Block] = []
    texts: list[str] = []
    para_start = start
    opened: tuple[str, int, int] | None = None  # fence character, length, line start
    for line_start, line_end, marker, marker_end in fences:
        if opened is None:
            prose, prose_texts = _paragraphs(text, para_start, line_start)
            out.extend(prose)
            texts.extend(prose_texts)
            opened = (marker[0], len(marker), line_start)
        elif (
            marker[0] == opened[0]
            and len(marker) >= opened[1]
            and not text[marker_end:line_end].strip()
        ):
            _add_code(text, opened[2], line_end, out, texts)
            opened = None
            para_start = line_end
    if opened is not None:
        _add_code(text, opened[2], end, out, texts)
    else:
        prose, prose_texts = _paragraphs(text, para_start, end)
        out.extend(prose)
        texts.extend(prose_texts)
    return out, texts


def _fence_lines(text: str, start: int, end: int) -> list[tuple[int, int, str, int]]:
    """``(line start, line end, marker, marker end)`` of every fence line of the span.

    A fence line is indentation or block-quote markers (``[ \\t>]*``), then 3 or more backticks
    or tildes (the marker), then anything. Runs are found with ``str.find`` (a regex for them
    scans ~20x slower); a run counts only where its line holds nothing but ``[ \\t>]`` before
    it (a line that starts before the span does not count).
    """
    fences: list[tuple[int, int, str, int]] = []
    next_tick = text.find("```", start, end)
    next_tilde = text.find("~~~", start, end)
    while next_tick >= 0 or next_tilde >= 0:
        run_start = next_tick if next_tilde < 0 or 0 <= next_tick < next_tilde else next_tilde
        run_end = run_start + 3
        while run_end < end and text[run_end] == text[run_start]:
            run_end += 1
        newline = text.rfind("\n", start, run_start)
        if newline >= 0:
            line_start = newline + 1
        elif start == 0 or text[start - 1] == "\n":
            line_start = start
        else:
            line_start = -1
        line_end = text.find("\n", run_end, end)
        if line_end < 0:
            line_end = end
        if line_start >= 0 and not text[line_start:run_start].strip(" \t>"):
            fences.append((line_start, line_end, text[run_start:run_end], run_end))
        # No later run on this line can be a marker: the line now holds more than [ \t>].
        if 0 <= next_tick < line_end:
            next_tick = text.find("```", line_end, end)
        if 0 <= next_tilde < line_end:
            next_tilde = text.find("~~~", line_end, end)
    return fences


def _add_code(text: str, start: int, end: int, out: list[Block], texts: list[str]) -> None:
    s, e = strip_span(text, start, end)
    if s < e:
        out.append((s, e, "code"))
        texts.append(text[s:e])


def _paragraphs(text: str, start: int, end: int) -> tuple[list[Block], list[str]]:
    """``blocks_and_texts`` of a span without fences: the stripped runs between blank lines."""
    out: list[Block] = []
    texts: list[str] = []
    at = start
    # Paragraphs and the gaps between them (whitespace only, so skipped like empty paragraphs).
    for part in _PARAGRAPH_GAP.split(text[start:end]):
        body = part.lstrip()
        if body:
            s = at + len(part) - len(body)
            body = body.rstrip()
            out.append((s, s + len(body), "prose"))
            texts.append(body)
        at += len(part)
    return out, texts


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


#: Over-long words up to this many characters are cut by the plain binary search over their
#: whole rest (every word on the reference corpus is far shorter: the longest is 147). Longer
#: ones count no prefix longer than one already found over the budget (``_over_budget_length``).
EXACT_SEARCH_CHARS = 1024


def split_by_characters(
    text: str, start: int, end: int, budget: int, counter: TokenCounter
) -> list[Piece]:
    """Cut one over-long word into the longest prefixes that fit (binary search on length).

    The search runs over the whole rest of the word, but in a word over ``EXACT_SEARCH_CHARS``
    it does not count a prefix longer than one found over the budget: it is over too (a longer
    text has no fewer tokens, up to the last word piece). So each piece costs counting about
    ``EXACT_SEARCH_CHARS`` plus its own length in characters, not the rest of the word: a
    megabyte without a space (deeply nested JSON, ``[[[[...``) is cut in linear time where the
    plain search was quadratic, and a word up to ``EXACT_SEARCH_CHARS`` is cut as it always was.
    """
    pieces: list[Piece] = []
    while start < end:
        over = _over_budget_length(text, start, end, budget, counter)
        lo, hi = 1, end - start
        best = 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if mid < over and counter.count(text[start : start + mid]) <= budget:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        pieces.append((start, start + best, counter.count(text[start : start + best])))
        start += best
    return pieces


def _over_budget_length(text: str, start: int, end: int, budget: int, counter: TokenCounter) -> int:
    """A prefix length of ``text[start:end]``, at least ``EXACT_SEARCH_CHARS``, whose prefix is
    over ``budget`` tokens (probing that many characters, twice that, ...), or one past the
    rest when none is (then every prefix is counted)."""
    rest = end - start
    length = EXACT_SEARCH_CHARS
    while length < rest:
        if counter.count(text[start : start + length]) > budget:
            return length
        length *= 2
    return rest + 1


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
