"""Cutting a table section into row groups that fit, with its header repeated above each group.

A table is split only between rows. The first group's span starts at the table itself (so it
holds the header in place); every later group names the header's span in ``repeated_header``,
so ``provenance.extract(text_layer)`` gives ``header + "\\n" + rows`` with exact offsets. A row
that alone exceeds the budget is cut at word boundaries like running text (pathological).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from agrag_pipeline.chunking.text_split import Piece, fit_pieces, strip_span
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.models import Section


@dataclass(frozen=True, slots=True)
class TableGroup:
    start: int
    end: int
    tokens: int
    #: The stripped header span repeated above this group, or None.
    header: tuple[int, int] | None
    #: Two pieces of one over-long row touch without whitespace (see ``packing.Packed``).
    joined: bool = False


def table_row_spans(text: str, section: Section, start: int, end: int) -> list[tuple[int, int]]:
    """The stripped section span cut at the start of every row after the first.

    The first span holds whatever precedes the first row (caption, header, delimiter row) and
    the first row; every non-whitespace character of the section lands in exactly one span.
    """
    cuts = sorted({r.start for r in section.table_rows[1:] if start < r.start < end})
    bounds = [start, *cuts, end]
    spans = [strip_span(text, a, b) for a, b in itertools.pairwise(bounds)]
    return [(a, b) for a, b in spans if a < b]


def split_table(
    text: str,
    section: Section,
    start: int,
    end: int,
    *,
    budget: int,
    target: int,
    rows_per_chunk: int | None,
    repeat_header: bool,
    min_text_tokens: int,
    counter: TokenCounter,
    shown: Callable[[int, int], str] | None = None,
) -> list[TableGroup]:
    """Row groups of the table ``text[start:end]``, each within ``budget`` content tokens.

    A group's ``tokens`` include its repeated header's.

    ``budget`` and ``target`` are what the text may take (heading label and special tokens
    already subtracted). Later groups reserve the header's tokens; a header so long that it
    would leave fewer than ``min_text_tokens`` for rows is not repeated. ``shown`` gives what a
    span embeds where that is not its text (tags between an HTML table's cells, a link's
    destination): rows and header are counted as embedded.
    """
    embedded = shown if shown is not None else lambda a, b: text[a:b]
    header: tuple[int, int] | None = None
    header_tokens = 0
    if repeat_header and section.table_header is not None:
        hs, he = strip_span(text, section.table_header.start, section.table_header.end)
        if hs < he:
            header_tokens = counter.count(embedded(hs, he))
            if budget - header_tokens >= min_text_tokens:
                header = (hs, he)
            else:
                header_tokens = 0
    rows = table_row_spans(text, section, start, end)
    row_budget = budget - header_tokens
    # Remember which row each piece came from, so rows_per_chunk counts rows, not pieces.
    row_of: list[int] = []
    pieces: list[Piece] = []
    for i, ((a, b), n) in enumerate(
        zip(rows, counter.count_batch([embedded(a, b) for a, b in rows]), strict=True)
    ):
        cut = (
            [(a, b, n)]
            if n <= row_budget
            else fit_pieces(text, [(a, b, "prose")], row_budget, counter, [n])
        )
        pieces.extend(cut)
        row_of.extend([i] * len(cut))
    groups: list[TableGroup] = []
    g_start = g_end = g_tokens = 0
    g_joined = False
    g_rows: set[int] = set()

    def emit() -> None:
        repeated = header if groups else None
        extra = header_tokens if repeated is not None else 0
        groups.append(TableGroup(g_start, g_end, g_tokens + extra, repeated, g_joined))

    for (s, e, n), row in zip(pieces, row_of, strict=True):
        reserve = header_tokens if groups and header is not None else 0
        new_row = row not in g_rows
        too_many = rows_per_chunk is not None and new_row and len(g_rows) >= rows_per_chunk
        if g_rows and (too_many or reserve + g_tokens + n > target):
            emit()
            g_rows, g_tokens, g_joined = set(), 0, False
        if not g_rows:
            g_start = s
        elif s == g_end:
            g_joined = True
        g_end = e
        g_tokens += n
        g_rows.add(row)
    if g_rows:
        emit()
    return groups
