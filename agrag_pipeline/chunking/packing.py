"""Greedy packing of pieces into chunk spans, and the overlap between consecutive chunks.

Token counts of packed pieces are summed, not recounted: the pieces are separated by whitespace,
and a WordPiece/BPE pre-tokenizer never joins tokens across whitespace, so the sum is the count
of the joined text. The chunker still counts every finished chunk once and repairs any chunk a
non-additive tokenizer pushes over the limit.

Overlap, precisely: chunk k+1 of a split section starts with the longest run of whole words
(maximal non-whitespace runs) that ends chunk k and holds at most ``overlap_tokens`` tokens.
It is "exactly the configured overlap, rounded down to whole words"; chunk k+1's start offset
moves back to that run's first word, so its text is still one contiguous span of the text layer.

Lead-ins travel with what they introduce: a chunk does not end on a short piece that leaves
its sentence open (``lead_in``: a definition term such as ``-s``, ``--ignore-case``,
``w filename``, an API's definition line, a line ending in ``:``) when the piece that did not
fit goes on with prose, is another of the term's names (a page break between ``‘-np’`` and
``‘--no-parent’``), or the lead-in ends in ``:``. The open pieces at the chunk's end, up
to a quarter of ``target`` tokens, start the next chunk instead where they fit there with that
piece and the chunk keeps a piece of its own; else, where the chunk and that piece fit
``limit``, the piece joins the chunk (past ``target``, never past ``limit``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from agrag_pipeline.chunking.text_split import Piece
from agrag_pipeline.chunking.tokens import TokenCounter

_WORD = re.compile(r"\S+")
#: A sentence's end: closing punctuation, then perhaps closing quotes or brackets.
_SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’)\]]*$")
_LETTER = re.compile(r"[^\W\d_]")
#: A list item's marker: ``- ``, ``* ``, ``• ``, ``3. ``, ``b) ``.
_LIST_ITEM = re.compile(r"(?:[-*+•◦‣]|\w{1,3}[.)])\s")
#: A term set in quotes as a whole (texinfo's ``@samp``: ``‘.’``, ``‘[:alpha:]’``).
_QUOTED = re.compile(r"^[‘“'\"`][^\s‘“'\"`]{1,30}[’”'\"`]$")


def lead_in(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` leaves its sentence open as a lead-in does: one line, or up
    to four lines of one or two words (a term's names: ``-m num``, ``--max-count=num``); it
    holds a letter or is quoted (a term such as ``‘^’``), and ends with no sentence end, nor
    with ``;`` (a line of code)."""
    body = text[start:end].strip()
    lines = body.split("\n")
    if len(lines) > 1 and (len(lines) > 4 or any(len(line.split()) > 2 for line in lines)):
        return False  # lines of code or of a paragraph; a term's names are a word or two each
    return (
        bool(body)
        and (_LETTER.search(body) is not None or _QUOTED.match(body) is not None)
        and not body.endswith(";")
        and (_QUOTED.match(body) is not None or not _SENTENCE_END.search(body))
    )


def opens_with_prose(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` reads as prose, not code or an index line: it opens with a
    letter and ends a sentence, or its first line holds three words in a row, the last two in
    lower case (``Ignore case distinctions``, ``--silent Quiet; do not write``)."""
    body = text[start:end].rstrip()
    if _LETTER.match(body) and _SENTENCE_END.search(body):
        return True  # a sentence or more ("Matches ‘b’ or ‘ab’.")
    line_end = text.find("\n", start, end)
    words = text[start : end if line_end < 0 else line_end].split()
    return any(
        a.strip(",;:()").isalpha()
        and b.isalpha()
        and b.islower()
        and c.strip(",;:.").islower()
        and c.strip(",;:.").isalpha()
        for a, b, c in zip(words, words[1:], words[2:], strict=False)
    )


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
    limit: int | None = None,
) -> list[Packed]:
    """Pack pieces in order into spans of at most ``target`` tokens (a lone piece may be more;
    a lead-in and what it introduces up to ``limit``, by default ``target``).

    With overlap, each span after the first starts with the previous span's overlap run (see
    the module docstring); pieces must then fit ``max - overlap_tokens`` so the run always fits.
    """
    limit = target if limit is None else max(limit, target)
    out: list[Packed] = []
    cur_start: int | None = None
    cur_end = 0
    cur_tokens = 0
    cur_units: list[Piece] = []
    first_new = 0  # cur_units before this index are the overlap run
    has_new = joined = False
    for piece in pieces:
        s, e, n = piece
        moved: list[Piece] = []
        flush = has_new and cur_tokens + n > target
        if flush:
            run = _lead_ins(text, cur_units, first_new, piece, target)
            if (
                run
                and len(run) < len(cur_units) - first_new
                and sum(u[2] for u in run) + n + overlap_tokens <= target
            ):
                moved = run  # the lead-ins start the next chunk
            elif run and cur_tokens + n <= limit:
                flush = False  # the piece joins the chunk its lead-in ends
        if flush:
            assert cur_start is not None
            kept = cur_units[: len(cur_units) - len(moved)]
            end = kept[-1][1]
            moved_tokens = sum(u[2] for u in moved)
            out.append(Packed(cur_start, end, cur_tokens - moved_tokens, joined, tuple(kept)))
            joined = bool(moved) and joined
            ov_start, cur_tokens, cur_units = overlap_start(
                text, cur_start, end, overlap_tokens, counter
            )
            cur_start = ov_start if ov_start < end else None
            first_new = len(cur_units)
            has_new = bool(moved)
            if moved:
                if cur_start is None:
                    cur_start = moved[0][0]
                cur_units.extend(moved)
                cur_tokens += moved_tokens
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


def _lead_ins(
    text: str, units: list[Piece], first_new: int, following: Piece, target: int
) -> list[Piece]:
    """The lead-in ending ``units`` (after the overlap run) that introduces ``following``
    (see the module docstring), with the term's other names before it, and the piece before
    them where that ends in ``:`` (what a ``:`` introduces stays with it), up to a quarter of
    ``target`` tokens; or none."""
    last = units[-1]
    if len(units) <= first_new or not lead_in(text, last[0], last[1]):
        return []
    run = [last]
    at = len(units) - 2
    names = _term_names(text, last)
    if names:
        # The term's other names before it (``‘-np’`` above ``‘--no-parent’``) go along.
        while at >= first_new and units[at][1] != run[0][0] and _term_names(text, units[at]):
            run.insert(0, units[at])
            at -= 1
    if at >= first_new:
        before = units[at]
        if text[before[0] : before[1]].rstrip().endswith(":"):
            if before[1] == run[0][0]:
                return []  # pieces of one word
            run.insert(0, before)
    if sum(u[2] for u in run) > target // 4:
        return []
    if not (
        text[last[0] : last[1]].rstrip().endswith(":")
        or opens_with_prose(text, following[0], following[1])
        or (names and _term_names(text, following))
    ):
        return []
    return run


def _term_names(text: str, piece: Piece) -> bool:
    """Whether ``piece`` is one of a term's names (``‘-np’``, ``-X list``): a paragraph of one
    line of a word or two, not a list item nor an item of a listing (``"DNT: 1",``). A term
    whose names a page break parted (``‘-np’`` ending one page, ``‘--no-parent’`` opening the
    next) keeps them together with the prose after the last."""
    start, end = piece[0], piece[1]
    body = text[start:end].strip()
    return (
        "\n" not in body
        and _blank_line_apart(text, start, end)
        and len(body.split()) <= 2
        and not _LIST_ITEM.match(body)
        and not body.endswith(",")
        and lead_in(text, piece[0], piece[1])
    )


def _blank_line_apart(text: str, start: int, end: int) -> bool:
    """Whether a blank line, or the text's start or end, stands on either side of
    ``text[start:end]``: read from the 16 characters around it, the whole text only where
    those are all white space and do not hold the line break."""
    head = text[max(0, start - 16) : start]
    gap = head[len(head.rstrip()) :]
    if gap.count("\n") < 2 and not (
        len(gap) == len(head) and (start <= 16 or not text[:start].strip())
    ):
        return False
    tail = text[end : end + 16]
    gap = tail[: len(tail) - len(tail.lstrip())]
    return gap.count("\n") >= 2 or (
        len(gap) == len(tail) and (end + 16 >= len(text) or not text[end:].strip())
    )
