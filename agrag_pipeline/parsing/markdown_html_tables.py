"""An HTML ``<table>`` inside Markdown read as a table, as a GFM pipe table is.

Why: Markdown written by converters and OCR models (DeepSeek-OCR, MinerU, Marker; pandoc for a
table with merged cells) and many READMEs hold their tables as raw HTML. Such a table was
embedded text with each cell on a line of its own: no table section, so a long one was cut
anywhere with no header repeated, and no line read as a row.

The text layer stays the source (Markdown's convention): the table section spans the HTML
block, each body row its ``<tr>`` element, the header the rows at the top that are all ``<th>``
cells (or those of ``<thead>``). What a chunk embeds comes from replacements of the tags
between cells (with the whitespace beside them): a row reads ``| a | b |`` as a pipe table's
row does, the header is followed by its delimiter row, and a merged cell (``rowspan``,
``colspan``) is repeated in each cell it covers, as ``table_grid`` repeats it for the HTML
reader. A table nested in another, or one that is not whole in its block, is left as it was.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from agrag_pipeline.parsing.table_grid import MAX_FILLED, span

Span = tuple[int, int]

_TABLE_TAG = re.compile(rb"<(/?)(table|thead|tbody|tfoot|tr|td|th)\b", re.IGNORECASE)
_SPAN_ATTRIBUTE = re.compile(rb"""\b(rowspan|colspan)\s*=\s*["']?\s*([0-9]+)""", re.IGNORECASE)
_ANY_TAG = re.compile(r"<[^<>]*>")
_WHITESPACE = re.compile(rb"\s*")


@dataclass
class _Cell:
    open: Span  # the ``<td ...>`` tag
    close: Span | None = None  # ``</td>``, None when left out (HTML allows it)
    text_end: int = -1  # where the cell's content ends (its close tag, or the next tag)
    across: int = 1
    down: int = 1
    head: bool = False  # a ``<th>``


@dataclass
class _Row:
    start: int
    end: int = -1
    head: bool = False  # inside ``<thead>``
    cells: list[_Cell] = field(default_factory=list)


@dataclass
class HtmlTable:
    """Byte offsets: the header's end (-1: none), the body rows, and the replacements."""

    header_end: int
    rows: list[Span]
    replaced: list[tuple[int, int, str]]
    #: The rows' tags, taken into replacements (the rest stay markup).
    taken: set[Span]


def holds_table(data: bytes, start: int, end: int) -> bool:
    lower = data[start:end].lower()
    return b"<table" in lower and b"</table" in lower


def read(data: bytes, start: int, end: int, tags: list[Span]) -> HtmlTable | None:
    """The table of the HTML block ``data[start:end]`` whose tags are ``tags``, or None
    where there is not exactly one whole table in it."""
    rows = _rows(data, tags)
    if not rows:
        return None
    cells_text = [[_visible(data, c.open[1], c.text_end) for c in row.cells] for row in rows]
    header_rows = _header_rows(rows)
    grid = _grid(rows, cells_text)
    width = max(len(row) for row in grid)
    replaced: list[tuple[int, int, str]] = []
    taken: set[Span] = set()
    virtuals = _virtual(rows, grid)
    for index, (row, texts, virtual) in enumerate(zip(rows, cells_text, virtuals, strict=True)):
        # virtual[k]: the merged cells' copies standing before real cell k (k == len: after).
        # Replacements start and end on a tag, never on whitespace a chunk's edge trims off;
        # rows written one after another with nothing between get a line break: at the end of
        # the first, or, after the header, at the start of the second (a repeated header is
        # followed by one line break of its own).
        follows = index > 0 and rows[index - 1].end == row.start
        goes_on = index + 1 < len(rows) and rows[index + 1].start == row.end
        content = [_after_space(data, c.open[1]) for c in row.cells]
        lead = "\n" if follows and index == header_rows else ""
        replaced.append((row.start, content[0], lead + "| " + _joined(virtual[0])))
        for k, cell in enumerate(row.cells):
            text_stop = _before_space(data, cell.text_end, content[k])
            copies = [texts[k]] * (cell.across - 1)
            if k + 1 < len(row.cells):
                replaced.append(
                    (text_stop, content[k + 1], " | " + _joined(copies + virtual[k + 1]))
                )
                continue
            shown = "".join(" | " + v for v in copies + virtual[k + 1]) + " |"
            if index == header_rows - 1:
                shown += "\n| " + " | ".join(["-"] * width) + " |"
            elif goes_on:
                shown += "\n"
            replaced.append((text_stop, max(row.end, text_stop), shown))
    # The tags the replacements cover are theirs; those inside a cell's text (``<b>``, a
    # link) stay markup. One pass over both, each in order.
    k = 0
    for tag in tags:
        while k < len(replaced) and replaced[k][1] <= tag[0]:
            k += 1
        if k < len(replaced) and replaced[k][0] <= tag[0] and tag[1] <= replaced[k][1]:
            taken.add(tag)
    header_end = rows[header_rows - 1].end if header_rows else -1
    body = [(row.start, row.end) for row in rows[header_rows:]]
    return HtmlTable(header_end, body, replaced, taken)


def _rows(data: bytes, tags: list[Span]) -> list[_Row]:
    """The table's rows and cells from its tags; empty where the block holds no single
    whole table (nested, unclosed, a cell outside a row)."""
    rows: list[_Row] = []
    row: _Row | None = None
    cell: _Cell | None = None
    head = False
    opened = closed = 0
    last_end = 0

    def close_cell(at: int) -> None:
        nonlocal cell
        if cell is not None:
            cell.text_end = at
            cell = None

    def close_row(at: int) -> None:
        nonlocal row
        if row is not None:
            close_cell(at)
            row.end = _before_space(data, at, row.start)
            if row.cells:
                rows.append(row)
            row = None

    for a, b in tags:
        m = _TABLE_TAG.match(data, a, b)
        if m is None:
            last_end = b
            continue
        closing, name = m.group(1) == b"/", m.group(2).lower()
        if name == b"table":
            if closing:
                close_row(a if cell is not None else last_end)
                closed += 1
            else:
                opened += 1
            if opened > 1 or closed > opened:
                return []
        elif name == b"thead":
            head = not closing
        elif name in (b"tbody", b"tfoot"):
            close_row(a if cell is not None else last_end)
        elif name == b"tr":
            if closing:
                if row is not None:
                    close_cell(a)
                    row.end = b
                    if row.cells:
                        rows.append(row)
                    row = None
            else:
                close_row(a if cell is not None else last_end)
                row = _Row(a, head=head)
        elif closing:  # </td>, </th>
            if cell is not None:
                cell.close = (a, b)
                close_cell(a)
        else:  # <td>, <th>
            if row is None or not opened:
                return []
            close_cell(a)
            attributes = dict((k.lower(), v) for k, v in _SPAN_ATTRIBUTE.findall(data, m.end(), b))
            cell = _Cell(
                (a, b),
                across=span(attributes.get(b"colspan", b"1").decode()),
                head=name == b"th",
            )
            cell.down = span(attributes.get(b"rowspan", b"1").decode())
            row.cells.append(cell)
        last_end = b
    if opened != 1 or closed != 1:
        return []
    return rows


def _visible(data: bytes, start: int, end: int) -> str:
    """What a browser shows of a cell's content: no tags, references as their characters."""
    text = data[start:end].decode("utf-8", "replace")
    return " ".join(html.unescape(_ANY_TAG.sub(" ", text)).split())


def _header_rows(rows: list[_Row]) -> int:
    """The rows of ``<thead>``, else the leading rows of only ``<th>`` cells; never all the
    rows (a table of only header cells keeps its first row as header, as ``TextLayer``)."""
    count = 0
    for row in rows:
        if row.head or all(c.head for c in row.cells):
            count += 1
        else:
            break
    return min(count, len(rows) - 1) if len(rows) > 1 else min(count, 1)


def _grid(rows: list[_Row], texts: list[list[str]]) -> list[list[str | None]]:
    """Each row's columns: None where a real cell stands, a merged cell's text where it
    spans into (from above or from the left)."""
    covered: dict[tuple[int, int], str] = {}
    left = MAX_FILLED
    grid: list[list[str | None]] = []
    for r, (row, row_texts) in enumerate(zip(rows, texts, strict=True)):
        out: list[str | None] = []
        for cell, text in zip(row.cells, row_texts, strict=True):
            while (r, len(out)) in covered:
                out.append(covered.pop((r, len(out))))
            across, down = cell.across, cell.down
            if (across - 1) + (down - 1) * across > left:
                across, down = 1, 1
            left -= (across - 1) + (down - 1) * across
            cell.across = across
            for column in range(len(out), len(out) + across):
                for below in range(1, down):
                    covered[(r + below, column)] = text
            out.append(None)
            out.extend([text] * (across - 1))
        while (r, len(out)) in covered:
            out.append(covered.pop((r, len(out))))
        grid.append(out)
    return grid


def _virtual(rows: list[_Row], grid: list[list[str | None]]) -> list[list[list[str]]]:
    """Per row, the copies of cells merged from above standing before each real cell (and
    after the last): the texts a replacement writes where the source has no cell."""
    out: list[list[list[str]]] = []
    for row, columns in zip(rows, grid, strict=True):
        groups: list[list[str]] = [[] for _ in range(len(row.cells) + 1)]
        k = 0
        skip = 0  # copies of the real cell just passed (its colspan), written by its close
        for value in columns:
            if value is None:
                k += 1
                skip = row.cells[k - 1].across - 1
            elif skip:
                skip -= 1
            else:
                groups[k].append(value)
        out.append(groups)
    return out


def _joined(values: list[str]) -> str:
    return "".join(v + " | " for v in values)


def _after_space(data: bytes, at: int) -> int:
    m = _WHITESPACE.match(data, at)
    return m.end() if m else at


def _before_space(data: bytes, at: int, floor: int) -> int:
    """``at`` moved back over whitespace, not before ``floor``."""
    while at > floor and data[at - 1 : at].isspace():
        at -= 1
    return at
