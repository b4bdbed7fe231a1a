"""Box Notes (``.boxnote``): the notes of Box's cloud storage, one JSON file per note.

A team whose folder is synced from Box holds its meeting notes, plans and checklists as these
files; no other application reads them, so they were skipped. Box changed the format in 2022;
both are read, told apart by their keys:

- **ProseMirror** (since 2022, ``{"doc": {"type": "doc", "content": [...]}}``): headings at
  their level, paragraphs (a hard break a line break), bullet, numbered and check lists with
  their nesting, tables with merged cells repeated in every cell they cover (``table_grid``;
  header cells make the header rows), code blocks as written, block quotes and call-out boxes
  as the blocks they hold. Marks (bold, links, colours, authors, comments) are read through.
- **Etherpad** (before, ``atext``: the text and its attribute ops; ``pool``: the attributes the
  ops number): a line's first character, a marker (``lmkr``), carries the line's list type and
  depth (``bullet2``, ``number1`` with ``start``, ``checked1``); a table cell is the lines whose
  newline carries ``struct-table<t>_row<r>`` and ``_col<c>``, rows and columns in the order
  they first appear, the first row a header when there are two or more (as Word's tables);
  the format has no heading attribute, so a line set wholly in the "very large" or "large"
  size, its title and subtitle styles, is a heading of level 1 or 2. Ops count UTF-16 code
  units, as JavaScript does: an emoji is two.

Left out: images and file previews (references to other Box files; an image's alternative
text is kept), horizontal rules, authors, savepoints and colours.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.table_grid import SpanGrid, span
from agrag_pipeline.parsing.textlayer import TextLayer, cell_text

MEDIA_TYPE = "application/x-boxnote+json"

#: Nesting deeper than this (lists in lists in tables...) is no note a person wrote.
MAX_DEPTH = 100

_SPACE = re.compile(r"\s+")
#: One op of an Etherpad attribute string: ``*n`` attributes, ``|n`` newlines, ``+n`` characters
#: (numbers in base 36).
_OP = re.compile(r"((?:\*[0-9a-z]+)*)(?:\|([0-9a-z]+))?\+([0-9a-z]+)")
_LIST = re.compile(r"^(bullet|number|checked|unchecked|indent)(\d+)$")
_TABLE_PART = re.compile(r"^struct-table(\w+?)_(row|col)(\w+)$")
#: ProseMirror's list nodes: a block of item lines, nested lists indented under their item.
_LISTS = frozenset({"bullet_list", "ordered_list", "check_list"})
_HEADING_SIZES = {"font-size-verylarge": 1, "font-size-large": 2}
#: A heading is a short line; a paragraph set large is still a paragraph.
_MAX_HEADING_CHARS = 200


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a Box Note, in either of Box's formats."""
    key = document.source_key
    if not raw.strip():
        raise EmptyDocumentError(key, "the file is empty")
    try:
        note = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise CorruptDocumentError(
            key, f"not a Box Note: not UTF-8 text (byte {error.start:,})"
        ) from None
    except RecursionError:
        raise CorruptDocumentError(key, "not a Box Note: JSON nested too deeply") from None
    except ValueError as error:
        raise CorruptDocumentError(key, f"not a Box Note: invalid JSON ({error})") from None
    layer = TextLayer()
    deadline = current_deadline(key)
    if isinstance(note, dict) and isinstance(note.get("doc"), dict):
        _ProseMirror(layer, deadline, key).blocks(note["doc"].get("content"), 0)
    elif isinstance(note, dict) and isinstance(note.get("atext"), dict):
        _read_etherpad(note, layer, deadline, key)
    else:
        found = ", ".join(sorted(note)[:6]) if isinstance(note, dict) else type(note).__name__
        raise CorruptDocumentError(
            key, f"not a Box Note: neither a 'doc' nor an 'atext' at its top (found: {found})"
        )
    return layer.parsed(document, "the note holds no text")


# --- ProseMirror (2022 on) -----------------------------------------------------------------


def _nodes(value: object) -> Iterator[dict[str, Any]]:
    """The nodes of a ``content`` array (anything else in it ignored)."""
    if isinstance(value, list):
        for node in value:
            if isinstance(node, dict):
                yield node


def _inline(node: Mapping[str, Any], depth: int = 0) -> str:
    """The text of a node's inline content; a hard break is a line break. A node holding
    content is a block (a list in a table cell, a quote's paragraphs): a space parts it from
    the text beside it, so "Ana" and "Bo" of a list in a cell do not read "AnaBo"."""
    parts: list[str] = []
    for child in _nodes(node.get("content")):
        kind = child.get("type")
        if isinstance(child.get("text"), str):
            parts.append(child["text"])
        elif kind == "hard_break":
            parts.append("\n")
        elif kind == "image" and _alt_text(child):
            parts.append(f" {_alt_text(child)} ")
        elif "content" in child and depth < MAX_DEPTH:
            parts.append(f" {_inline(child, depth + 1)} ")
    return "".join(parts)


def _attrs(node: Mapping[str, Any]) -> dict[str, Any]:
    attrs = node.get("attrs")
    return attrs if isinstance(attrs, dict) else {}


def _alt_text(image: Mapping[str, Any]) -> str:
    """An image's alternative text ('' when it has none: its file name says nothing)."""
    alt = _attrs(image).get("alt")
    return alt.strip() if isinstance(alt, str) else ""


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@dataclass
class _ProseMirror:
    layer: TextLayer
    deadline: Deadline
    key: str
    count: int = 0

    def _tick(self, depth: int) -> None:
        self.count += 1
        self.deadline.tick(f"node {self.count:,}")
        if depth > MAX_DEPTH:
            raise CorruptDocumentError(self.key, f"blocks nested over {MAX_DEPTH} levels deep")

    def blocks(self, content: object, depth: int) -> None:
        for node in _nodes(content):
            self.block(node, depth)

    def block(self, node: dict[str, Any], depth: int) -> None:
        self._tick(depth)
        kind = node.get("type")
        attrs = _attrs(node)
        if kind == "heading":
            level = attrs.get("level")
            level = level if isinstance(level, int) else 1
            self.layer.heading(_inline(node), max(1, min(level, 6)))
        elif kind == "paragraph":
            self.paragraph(_inline(node))
        elif kind in _LISTS:
            lines: list[str] = []
            self.items(node, 0, lines, depth)
            self.layer.preformatted(lines)
        elif kind == "table":
            self.table(node, depth)
        elif kind == "code_block":
            self.layer.preformatted(_inline(node).split("\n"))
        elif kind == "image":
            self.layer.paragraph(_alt_text(node))
        elif kind in ("horizontal_rule", "box_preview"):
            return
        else:  # blockquote, call_out_box, and whatever holds blocks
            self.blocks(node.get("content"), depth + 1)

    def paragraph(self, text: str) -> None:
        if "\n" in text:
            self.layer.lines(text.split("\n"))
        else:
            self.layer.paragraph(text)

    def items(self, listing: dict[str, Any], indent: int, lines: list[str], depth: int) -> None:
        """A list's items as lines, ``indent`` two spaces a level; nested lists below theirs."""
        kind = listing.get("type")
        attrs = _attrs(listing)
        order = attrs.get("order")
        number = order if isinstance(order, int) else 1
        for item in _nodes(listing.get("content")):
            self._tick(depth + 1)
            item_attrs = _attrs(item)
            if kind == "ordered_list":
                marker = f"{number}."
                number += 1
            elif kind == "check_list" or item.get("type") == "check_list_item":
                marker = "[x]" if item_attrs.get("checked") else "[ ]"
            else:
                marker = "-"
            words: list[str] = []
            nested: list[dict[str, Any]] = []
            for child in _nodes(item.get("content")):
                if child.get("type") in _LISTS:
                    nested.append(child)
                else:
                    words.append(_inline(child))
            text = _one_line(" ".join(words))
            lines.append(" " * indent + (f"{marker} {text}" if text else marker))
            for child in nested:
                if depth + 2 > MAX_DEPTH:
                    raise CorruptDocumentError(
                        self.key, f"lists nested over {MAX_DEPTH} levels deep"
                    )
                self.items(child, indent + 2, lines, depth + 2)

    def table(self, node: dict[str, Any], depth: int) -> None:
        grid = SpanGrid()
        rows: list[list[str]] = []
        header_rows = 0
        in_header = True
        for row in _nodes(node.get("content")):
            self._tick(depth + 1)
            cells: list[tuple[str, int, int]] = []
            heads: list[bool] = []
            for cell in _nodes(row.get("content")):
                attrs = _attrs(cell)
                text = " ".join(_inline(child) for child in _nodes(cell.get("content")))
                cells.append((text, span(attrs.get("colspan")), span(attrs.get("rowspan"))))
                heads.append(cell.get("type") == "table_header")
            if not cells:
                continue
            rows.append(grid.row(cells))
            if in_header and all(heads):
                header_rows += 1
            else:
                in_header = False
        if header_rows == len(rows):
            header_rows = min(header_rows, 1)  # a table of header cells only: its first row
        self.layer.table(rows, header_rows=header_rows)


# --- Etherpad (before 2022) ----------------------------------------------------------------


@dataclass
class _Line:
    """One line of an Etherpad note: its runs of text and the attributes of each."""

    runs: list[tuple[str, frozenset[tuple[str, str]]]] = field(default_factory=list)
    #: The attributes of the line's marker (list type and depth, start number); empty if none.
    marker: Mapping[str, str] = field(default_factory=dict)
    #: (table, row, column) from the attributes of the newline ending the line; None if none.
    cell: tuple[str, str, str] | None = None

    def text(self) -> str:
        return "".join(text for text, _ in self.runs)


def _ops(attribs: str, key: str) -> Iterator[tuple[list[int], int]]:
    """(attribute numbers, length in UTF-16 code units) of each op of an attribute string."""
    position = 0
    for match in _OP.finditer(attribs):
        if match.start() != position:
            raise CorruptDocumentError(
                key, f"not a Box Note: unreadable attribute op at {position:,} of 'atext.attribs'"
            )
        position = match.end()
        numbers = [int(n, 36) for n in match.group(1).split("*")[1:]]
        yield numbers, int(match.group(3), 36)
    if position != len(attribs):
        raise CorruptDocumentError(
            key, f"not a Box Note: unreadable attribute op at {position:,} of 'atext.attribs'"
        )


def _pool(note: Mapping[str, Any]) -> dict[int, tuple[str, str]]:
    pool = note.get("pool")
    table = pool.get("numToAttrib") if isinstance(pool, dict) else None
    attributes: dict[int, tuple[str, str]] = {}
    if isinstance(table, dict):
        for number, pair in table.items():
            if isinstance(pair, list) and len(pair) == 2 and str(number).isdigit():
                attributes[int(number)] = (str(pair[0]), str(pair[1]))
    return attributes


def _etherpad_lines(note: Mapping[str, Any], deadline: Deadline, key: str) -> list[_Line]:
    """The note's lines, each with its runs, marker and table cell."""
    atext = note["atext"]
    text, attribs = atext.get("text"), atext.get("attribs")
    if not isinstance(text, str) or not isinstance(attribs, str):
        raise CorruptDocumentError(key, "not a Box Note: 'atext' holds no 'text' and 'attribs'")
    pool = _pool(note)
    units = text.encode("utf-16-le", "surrogatepass")
    lines: list[_Line] = []
    line = _Line()
    offset = 0
    for count, (numbers, length) in enumerate(_ops(attribs, key)):
        deadline.tick(f"op {count:,}")
        if offset + length > len(units) // 2:
            raise CorruptDocumentError(
                key, "not a Box Note: its attribute ops run past the end of its text"
            )
        piece = units[2 * offset : 2 * (offset + length)].decode("utf-16-le", "surrogatepass")
        offset += length
        attributes = frozenset(pool[n] for n in numbers if n in pool and pool[n][1])
        names = dict(attributes)
        if names.get("lmkr") and piece == "*" and not line.runs:
            line.marker = names  # the line's marker: its attributes are the line's
            continue
        if piece == "*" and any(name.startswith("image-") for name in names):
            continue  # an image's placeholder
        pieces = piece.split("\n")
        for index, part in enumerate(pieces):
            if part:
                line.runs.append((part, attributes))
            if index < len(pieces) - 1:  # a newline ends the line; its attributes place a cell
                line.cell = _cell(attributes)
                lines.append(line)
                line = _Line()
    if line.runs:
        lines.append(line)
    return lines


def _cell(attributes: frozenset[tuple[str, str]]) -> tuple[str, str, str] | None:
    table = row = column = None
    for name, _ in attributes:
        match = _TABLE_PART.match(name)
        if match:
            table = match.group(1)
            if match.group(2) == "row":
                row = match.group(3)
            else:
                column = match.group(3)
    if table is None or row is None or column is None:
        return None
    return table, row, column


def _list_line(line: _Line) -> str | None:
    """A list line's text with its marker and indent (None when the line is not in a list)."""
    match = _LIST.match(line.marker.get("list", ""))
    if match is None:
        return None
    kind, level = match.group(1), int(match.group(2))
    text = _one_line(line.text())
    marker = {
        "bullet": "-",
        "checked": "[x]",
        "unchecked": "[ ]",
        "indent": "",
        "number": f"{line.marker.get('start', '1')}.",
    }[kind]
    return " " * (2 * (min(level, 20) - 1)) + (f"{marker} {text}" if marker else text)


def _heading_level(line: _Line) -> int | None:
    """1 or 2 when every character of the line is set in the title or subtitle size."""
    text = line.text()
    if line.marker.get("list") or not text.strip() or len(text) > _MAX_HEADING_CHARS:
        return None
    levels = set()
    for run, attributes in line.runs:
        if not run.strip():
            continue
        sizes = [_HEADING_SIZES[name] for name, _ in attributes if name in _HEADING_SIZES]
        if not sizes:
            return None
        levels.add(min(sizes))
    return max(levels) if levels else None


def _read_etherpad(note: Mapping[str, Any], layer: TextLayer, deadline: Deadline, key: str) -> None:
    lines = _etherpad_lines(note, deadline, key)
    block: list[str] = []
    listing: list[str] = []

    def flush() -> None:
        layer.lines(block)
        layer.preformatted(listing)
        block.clear()
        listing.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        if line.cell is not None:
            flush()
            index = _etherpad_table(lines, index, layer)
            continue
        index += 1
        listed = _list_line(line)
        level = _heading_level(line) if listed is None else None
        if listed is not None:
            if block:
                flush()
            listing.append(listed)
        elif level is not None:
            flush()
            layer.heading(line.text(), level)
        elif line.text().strip():
            if listing:
                flush()
            block.append(line.text())
        else:
            flush()
    flush()


def _etherpad_table(lines: Sequence[_Line], start: int, layer: TextLayer) -> int:
    """Write the table whose first cell line is ``lines[start]``; return the line after it."""
    first_cell = lines[start].cell
    assert first_cell is not None
    table = first_cell[0]
    rows: dict[str, dict[str, list[_Line]]] = {}
    columns: dict[str, None] = {}
    index = start
    while index < len(lines):
        cell = lines[index].cell
        if cell is None or cell[0] != table:
            break
        rows.setdefault(cell[1], {}).setdefault(cell[2], []).append(lines[index])
        columns.setdefault(cell[2], None)
        index += 1
    grid = [
        [" ".join(_cell_line(line) for line in row.get(column, [])) for column in columns]
        for row in rows.values()
    ]
    # The format marks no header; a first row set in bold, over others, is one.
    first = [line for cell_lines in next(iter(rows.values())).values() for line in cell_lines]
    bold = all(
        ("bold", "true") in attributes
        for line in first
        for text, attributes in line.runs
        if text.strip()
    ) and any(line.text().strip() for line in first)
    layer.table(grid, header_rows=1 if bold and len(grid) > 1 else 0)
    return index


def _cell_line(line: _Line) -> str:
    listed = _list_line(line)
    return cell_text(listed if listed is not None else line.text())


__all__ = ["MEDIA_TYPE", "parse"]
