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
    return value if isinstance(value, str) else next(iter(value))


class _ByteToChar:
    """Converts UTF-8 byte offsets of ``text`` to string indices (identity for ASCII text)."""

    def __init__(self, text: str) -> None:
        self.ascii = text.isascii()
        self.data = b"" if self.ascii else text.encode("utf-8")
        self.offsets: set[int] = set()

    def want(self, offset: int) -> int:
        if not self.ascii:
            self.offsets.add(offset)
        return offset

    def table(self) -> dict[int, int]:
        """Maps every wanted byte offset to its string index, in one pass over the bytes."""
        mapping: dict[int, int] = {}
        previous_byte = previous_char = 0
        for offset in sorted(self.offsets):
            previous_char += len(self.data[previous_byte:offset].decode("utf-8"))
            previous_byte = offset
            mapping[offset] = previous_char
        return mapping


def parse(text: str, document: Document) -> list[Section]:
    """Sections of decoded Markdown ``text``."""
    conv = _ByteToChar(text)
    raw_headings: list[tuple[int, int, int, str]] = []  # byte start, byte end, level, text
    raw_tables: list[tuple[int, int, int, list[tuple[int, int]]]] = []
    depth = 0
    heading: tuple[int, int, int, list[str]] | None = None
    table: tuple[int, int, int, list[tuple[int, int]]] | None = None  # start, end, head end, rows

    for event, rng in pyromark.events_with_range(text, options=_OPTIONS):
        if isinstance(event, str):  # SoftBreak, HardBreak, Rule, …
            if heading is not None and event in ("SoftBreak", "HardBreak"):
                heading[3].append(" ")
            continue
        if heading is None and "Text" in event:  # most events: skip them cheaply
            continue
        kind, value = next(iter(event.items()))
        if kind == "Start":
            tag = _tag(value)
            if tag in _CONTAINERS:
                depth += 1
            elif tag == "Heading" and depth == 0:
                level = _LEVELS[value["Heading"]["level"]]  # type: ignore[index]
                heading = (conv.want(rng["start"]), conv.want(rng["end"]), level, [])
            elif tag == "Table" and table is None:
                table = (conv.want(rng["start"]), conv.want(rng["end"]), -1, [])
            elif tag == "TableRow" and table is not None:
                table[3].append((conv.want(rng["start"]), conv.want(rng["end"])))
        elif kind == "End":
            tag = _tag(value)
            if tag in _CONTAINERS:
                depth -= 1
            elif tag == "Heading" and heading is not None:
                start, end, level, parts = heading
                raw_headings.append((start, end, level, " ".join("".join(parts).split())))
                heading = None
            elif tag == "TableHead" and table is not None:
                table = (table[0], table[1], conv.want(rng["end"]), table[3])
            elif tag == "Table" and table is not None:
                raw_tables.append(table)
                table = None
        elif heading is not None and kind in _TEXT_EVENTS:
            heading[3].append(str(value))

    to_char = conv.table()

    def char(offset: int) -> int:
        return offset if conv.ascii else to_char[offset]

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
