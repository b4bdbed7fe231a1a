"""Writing a text layer with heading and table marks, for formats whose text we lay out ourselves.

Spreadsheets, CSV and JATS have no text of their own to index into: we write one and record the
marks as we go, so every span is exact by construction. Conventions shared by those formats:

- blocks (headings, paragraphs, tables) are separated by a blank line;
- a table is written as Markdown-like pipe rows, ``| a | b |``, one row per line, readable by a
  person and an embedder alike; a header row is followed by a ``| - | - |`` delimiter row, and
  the table's header span holds both lines (so a repeated header still reads as a table header);
- a cell's text is kept on its row's line: line breaks and tabs become spaces, runs of spaces
  collapse, and a literal ``|`` is written ``\\|``;
- code and other preformatted text keeps its lines and their indentation (``preformatted``), as
  Markdown's fenced code and HTML's ``<pre>`` do: indentation is what a listing means.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.errors import EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections

_SPACE = re.compile(r"\s+")


def cell_text(value: str) -> str:
    """One cell on one line: whitespace runs collapsed, ``|`` escaped."""
    stripped = value.strip()
    # Fast path for the usual cell: printable (no tab, newline or odd space), single spaces.
    if stripped.isprintable() and "  " not in stripped and "|" not in stripped:
        return stripped
    return _SPACE.sub(" ", stripped).strip().replace("|", "\\|")


def pipe_row(cells: Sequence[str]) -> str:
    """``| a | b |`` for already-cleaned cell texts (an empty cell stays an empty column)."""
    return "| " + " | ".join(cells) + " |"


class TextLayer:
    """The text being written, with the heading and table marks that index into it."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.headings: list[HeadingMark] = []
        self.tables: list[TableMark] = []

    def _emit(self, text: str) -> int:
        """Append ``text`` as a new block (after a blank line); return where it starts."""
        if self.pos:
            self.parts.append("\n\n")
            self.pos += 2
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        return start

    def heading(self, text: str, level: int) -> None:
        """A heading line (whitespace collapsed); nothing for an empty heading."""
        clean = _SPACE.sub(" ", text).strip()
        if not clean:
            return
        start = self._emit(clean)
        self.headings.append(HeadingMark(start, self.pos, level, clean))

    def paragraph(self, text: str) -> None:
        """A block of running text (whitespace runs collapsed to one space)."""
        clean = _SPACE.sub(" ", text).strip()
        if clean:
            self._emit(clean)

    def lines(self, lines: Sequence[str]) -> None:
        """A block of lines kept as lines (each one's whitespace collapsed; empty ones dropped)."""
        kept = [c for c in (_SPACE.sub(" ", line).strip() for line in lines) if c]
        if kept:
            self._emit("\n".join(kept))

    def preformatted(self, lines: Sequence[str]) -> None:
        """A listing as written: every line's indentation and inner spacing kept.

        The indentation all lines share is removed (a listing indented to sit inside its
        markup, as Org's and MediaWiki's are), tabs expanded to 8 columns first so a shared
        prefix is a prefix on screen; trailing whitespace goes, blank lines at the ends go and
        blank runs inside become one empty line.
        """
        kept: list[str] = []
        for line in lines:
            clean = line.expandtabs(8).rstrip() if "\t" in line else line.rstrip()
            if clean or (kept and kept[-1]):
                kept.append(clean)
        while kept and not kept[-1]:
            kept.pop()
        if not kept:
            return
        indent = min(len(line) - len(line.lstrip()) for line in kept if line)
        self._emit("\n".join(line[indent:] for line in kept))

    def table(self, rows: Sequence[Sequence[str]], header_rows: int = 1) -> None:
        """A table of raw cell texts; the first ``header_rows`` rows are its header.

        Every row is padded to the widest row's width, so columns line up; rows whose cells
        are all empty are dropped. A table of only header rows keeps its first row as header.
        """
        cleaned = [[cell_text(c) for c in row] for row in rows]
        kept: list[list[str]] = []
        for index, row in enumerate(cleaned):
            if any(row):
                kept.append(row)
            elif index < header_rows:
                header_rows -= 1
        if not kept:
            return
        width = max(len(row) for row in kept)
        kept = [row + [""] * (width - len(row)) for row in kept]
        header_rows = max(0, min(header_rows, len(kept)))
        lines: list[str] = []
        spans: list[tuple[int, int]] = []
        offset = self.pos + (2 if self.pos else 0)
        header: tuple[int, int] | None = None
        for index, row in enumerate(kept):
            line = pipe_row(row)
            spans.append((offset, offset + len(line)))
            lines.append(line)
            offset += len(line) + 1
            if header_rows and index == header_rows - 1:
                delimiter = pipe_row(["-"] * width)
                lines.append(delimiter)
                header = (spans[0][0], offset + len(delimiter))
                offset += len(delimiter) + 1
        start = self._emit("\n".join(lines))
        assert start == spans[0][0]
        body = tuple(spans[header_rows:])
        self.tables.append(TableMark(start, self.pos, header, body))

    def value(self) -> str:
        return "".join(self.parts)

    def parsed(self, document: Document, empty: str) -> ParsedDocument:
        """The document this layer was written for, its sections built from the marks.

        Raises:
            EmptyDocumentError: with ``empty`` as the reason, when nothing but whitespace was
                written.
        """
        text = self.value()
        if not text.strip():
            raise EmptyDocumentError(document.source_key, empty)
        sections = build_sections(text, document, self.headings, self.tables)
        return ParsedDocument(document=document, text_layer=text, sections=sections)


__all__ = ["TextLayer", "cell_text", "pipe_row"]
