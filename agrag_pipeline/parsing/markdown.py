"""Markdown (CommonMark + GFM tables) with pyromark, the Python binding of pulldown-cmark.

Why pyromark: a real CommonMark parser (so ``#`` lines in code fences, indented code or HTML
comments are never headings), with source ranges, at ~80 MB/s (DESIGN.md). Its ranges are UTF-8
*byte* offsets; they are converted to Python string indices before anything is stored.

Conventions:
- The text layer is the decoded source itself (BOM stripped, line endings kept as they are).
- Headings: ATX and Setext, at the top level of the document only. A heading quoted in a block
  quote or inside a list item is content of the section it sits in, not document structure.
- Heading text is the plain text of the heading: links, emphasis and code spans keep their
  text, inline HTML tags are dropped (their inner text is kept), line breaks become spaces.
- Tables: GFM tables (at any depth). ``table_header`` spans the header line *and* the delimiter
  row, so a repeated header still renders as a table; ``table_rows`` are the body rows.
- YAML front matter (``---`` … ``---`` at the very top) is content of the level-0 section, never
  mistaken for a Setext heading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyromark

from agrag_pipeline.models import Document, Section
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections, trim

MEDIA_TYPE = "text/markdown"

_OPTIONS = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
    | pyromark.Options.ENABLE_YAML_STYLE_METADATA_BLOCKS
)
#: Block containers: a heading inside one of these is not a document heading.
_CONTAINERS = frozenset(
    {
        "BlockQuote",
        "List",
        "Item",
        "FootnoteDefinition",
        "DefinitionList",
        "DefinitionListDefinition",
    }
)
#: Inline events whose payload is heading text.
_TEXT_EVENTS = ("Text", "Code", "InlineMath", "DisplayMath", "FootnoteReference")
_LEVELS = {"H1": 1, "H2": 2, "H3": 3, "H4": 4, "H5": 5, "H6": 6}


def _tag(value: Any) -> str:
    return value if value.__class__ is str else next(iter(value))


#: One parser with our options, built once.
_MARKDOWN = pyromark.Markdown(options=_OPTIONS)
_BREAKS = frozenset({"SoftBreak", "HardBreak"})


def _byte_to_char(text: str, offsets: set[int]) -> dict[int, int]:
    """String index of each UTF-8 byte offset of ``text``, in one pass over the wanted offsets.

    Decoding runs of mostly-ASCII bytes is fast in C; only the bytes up to the last wanted
    offset are decoded, each once.
    """
    data = text.encode("utf-8")
    mapping: dict[int, int] = {}
    previous_byte = previous_char = 0
    for offset in sorted(offsets):
        previous_char += len(data[previous_byte:offset].decode("utf-8"))
        previous_byte = offset
        mapping[offset] = previous_char
    return mapping


def parse(text: str, document: Document) -> list[Section]:
    """Sections of decoded Markdown ``text``."""
    raw_headings: list[tuple[int, int, int, str]] = []  # byte start, byte end, level, text
    raw_tables: list[tuple[int, int, int, list[tuple[int, int]]]] = []
    depth = 0
    heading: tuple[int, int, int, list[str]] | None = None
    table: list[Any] | None = None  # byte start, byte end, head end, rows

    # ~50 events per KB of source: the common ones (text, code, breaks) are dismissed with as
    # few operations as possible; only headings, tables and block containers are looked at.
    # Typed loosely: the class checks below are what narrow an event (isinstance is slower).
    events: Iterator[tuple[Any, Any]] = _MARKDOWN.events_with_range(text)
    for event, rng in events:
        if heading is not None:
            if event.__class__ is str:
                if event in _BREAKS:
                    heading[3].append(" ")
                continue
            kind, value = next(iter(event.items()))
            if kind in _TEXT_EVENTS:
                heading[3].append(str(value))
            elif kind == "End" and _tag(value) == "Heading":
                start, end, level, parts = heading
                raw_headings.append((start, end, level, " ".join("".join(parts).split())))
                heading = None
            continue
        if event.__class__ is str or "Text" in event:
            continue
        value = event.get("Start")
        if value is not None:
            tag = _tag(value)
            if tag in _CONTAINERS:
                depth += 1
            elif tag == "Heading":
                if depth == 0:
                    level = _LEVELS[value["Heading"]["level"]]
                    heading = (rng["start"], rng["end"], level, [])
            elif tag == "TableRow":
                if table is not None:
                    table[3].append((rng["start"], rng["end"]))
            elif tag == "Table" and table is None:
                table = [rng["start"], rng["end"], -1, []]
            continue
        value = event.get("End")
        if value is not None:
            tag = _tag(value)
            if tag in _CONTAINERS:
                depth -= 1
            elif table is not None:
                if tag == "TableHead":
                    table[2] = rng["end"]
                elif tag == "Table":
                    raw_tables.append((table[0], table[1], table[2], table[3]))
                    table = None

    if text.isascii():
        char: Callable[[int], int] = int
    else:
        wanted = {offset for mark in raw_headings for offset in mark[:2]}
        for start, end, head_end, rows in raw_tables:
            wanted.update((start, end, head_end), *rows)
        wanted.discard(-1)  # a table without a head row: as before, char(-1) fails loudly
        char = _byte_to_char(text, wanted).__getitem__
    headings = []
    for start, end, level, heading_text in raw_headings:
        s, e = trim(text, char(start), char(end))
        headings.append(HeadingMark(s, e, level, heading_text))
    tables = [
        _table_mark(text, char(s), char(e), char(h), [(char(a), char(b)) for a, b in r])
        for s, e, h, r in raw_tables
    ]
    return build_sections(text, document, headings, tables)


def _table_mark(
    text: str, start: int, end: int, head_end: int, rows: list[tuple[int, int]]
) -> TableMark:
    """Header = header line plus delimiter row (the line after the header line)."""
    start, end = trim(text, start, end)
    header_line_end = text.find("\n", max(head_end - 1, start))
    delimiter_end = -1 if header_line_end < 0 else text.find("\n", header_line_end + 1)
    header = trim(text, start, min(end, delimiter_end) if delimiter_end >= 0 else end)
    body = tuple(trim(text, a, b) for a, b in rows)
    return TableMark(start, end, header, tuple(r for r in body if r[1] > r[0]))
