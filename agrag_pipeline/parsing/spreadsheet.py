"""XLSX and XLSM workbooks: the package opened by ``archive.open_zip``, sheets streamed with lxml.

Why not openpyxl's reader: in read-only mode it parses through the standard library's
pure-Python XML builder (defusedxml) and pads every row to the declared dimension (profiled here
on 20,000 rows x 9 columns: 32 s through openpyxl, 14 s streamed with lxml, same text), and it
gives no merged ranges, comments or charts. So the parts are read directly: a part whose
prolog declares a DTD is refused, and sheets and shared strings are streamed with
``lxml.etree.iterparse`` (no entities, no network, no DTD, no huge-tree mode), freeing each row
once read, with the deadline checked between rows.
openpyxl (MIT, the maintained library of the format) still supplies what is easy to get wrong:
the built-in number formats, which formats are dates or durations, and Excel's date serials.

The text layer, per sheet in workbook order (empty sheets are left out):
- the sheet name as a level-1 heading;
- each *table*: a 4-connected island of filled cells (islands whose boxes overlap are one
  table), its empty rows and columns dropped, written as pipe rows (``textlayer``) in reading
  order (top, then left). The used range is never trusted: only cells that hold a value count, so
  an "inflated" sheet whose dimension says a million rows costs what its filled cells cost;
- a table that blank spacer rows or columns cut apart is joined back (``join_spacer_split``):
  an island of bare figures joins the island at its left whose rows it lies in (its row
  labels), and a table whose first row holds figures takes the islands of labels just above it
  as header rows, so no number loses its row and column labels;
- a merged range repeats its value in every cell it covers (inside the filled area), so each row
  reads on its own; a table's top rows that hold a single value (a label over the table) are a
  text line before it, and an island of one cell is a text line, not a table;
- header: the table's first row, unless it looks like data (numbers over numbers);
- formulas give their cached value (what Excel last computed; none if never computed);
  cells are read from ``<c>`` elements only, so the ``<dimension>`` is never trusted;
- values: dates as ISO dates (with the time where the number format shows one), numbers as
  Excel shows them by default (15 significant digits; ``%`` formats as percentages), booleans as
  TRUE/FALSE;
- text boxes and shapes with text drawn on a sheet follow its cells, one block each (its
  paragraphs as lines), top to bottom by the cell each is anchored at;
- each chart (on a worksheet or a chart sheet) is a level-2 heading (its title, else "Chart N"),
  a line naming its kind ("Bar chart") and its data as a table (series by category), from the
  chart's cached values or, without a cache, from the cells its series refer to;
- comments (legacy notes and threaded comments with their replies) are kept, under a level-2
  heading "Comments", one line each, ``A1 [author: …, time: …]: text``: they are part of
  what people wrote.

Budgets: the worksheets' declared XML size (``MAX_SHEET_XML_BYTES``), filled cells
(``MAX_CELLS``), and the parse's ``Deadline``; past one, a ``DocumentTooLargeError`` or
``ParseTimeoutError`` naming the file.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.archive import HARDENED_XML_OPTIONS, open_zip, parse_xml, refuse_dtd
from agrag_pipeline.parsing.budget import Deadline, check_size, current_deadline
from agrag_pipeline.parsing.delimited import has_header
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLSM_MEDIA_TYPE = "application/vnd.ms-excel.sheet.macroEnabled.12"

#: The worksheets' and shared strings' declared (uncompressed) XML may not exceed this.
MAX_SHEET_XML_BYTES = 128 * 1024 * 1024
#: Filled cells (merged copies included) a workbook may hold.
MAX_CELLS = 3_000_000
#: Island boxes are merged only below this many islands (pairwise; beyond, kept apart).
_MAX_ISLANDS_TO_MERGE = 500
#: Blank spacer columns / rows a table's pieces may lie apart and still be one table.
_MAX_SPACER_COLUMNS = 2
_MAX_SPACER_ROWS = 2
#: Labels over a table's figures are at most this many rows tall (more: a table of its own).
_MAX_HEADER_ROWS = 3
#: A number (with thousands separators, sign, brackets, percent) or a dash standing for none.
_FIGURE = re.compile(r"[-+\u2212(]?(\d[\d,. ']*|\.\d+)([eE][-+]?\d+)?\)?%?|[-\u2013\u2014]+")

_ROOT_START = re.compile(rb"<\x00?[A-Za-z_]")
_CELL_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?(\d+)")

Grid = dict[tuple[int, int], str]


@dataclass
class _Sheet:
    name: str
    path: str  # part name inside the package
    kind: str  # "worksheet" or "chartsheet" (others: no cells we read)
    grid: Grid = field(default_factory=dict)


# --- the package: parts and relationships --------------------------------------------------


def _rels(archive: zipfile.ZipFile, part: str, key: str) -> list[tuple[str, str]]:
    """(type suffix, target part) of the relationships of ``part`` (none when it has none)."""
    folder, name = posixpath.split(part)
    rels_path = posixpath.join(folder, "_rels", name + ".rels")
    try:
        data = archive.read(rels_path)
    except KeyError:
        return []
    root = parse_xml(data, key, rels_path)
    out: list[tuple[str, str]] = []
    for rel in root.iterfind("{*}Relationship"):
        if rel.get("TargetMode") == "External":
            continue
        target = rel.get("Target") or ""
        if target.startswith("/"):
            resolved = target.lstrip("/")
        else:
            resolved = posixpath.normpath(posixpath.join(folder, target))
        out.append(((rel.get("Type") or "").rsplit("/", 1)[-1], resolved))
    return out


def _read_part(archive: zipfile.ZipFile, part: str, key: str) -> etree._Element | None:
    try:
        data = archive.read(part)
    except KeyError:
        return None
    return parse_xml(data, key, part)


def _sheets(archive: zipfile.ZipFile, key: str) -> tuple[str, list[_Sheet]]:
    """The workbook part and its sheets in workbook order."""
    workbook = next(
        (target for kind, target in _rels(archive, "", key) if kind == "officeDocument"),
        "xl/workbook.xml",
    )
    root = _read_part(archive, workbook, key)
    if root is None:
        raise CorruptDocumentError(key, f"the package has no workbook part {workbook!r}")
    rels = {}
    folder, name = posixpath.split(workbook)
    rels_path = posixpath.join(folder, "_rels", name + ".rels")
    try:
        rels_root = parse_xml(archive.read(rels_path), key, rels_path)
    except KeyError:
        rels_root = None
    if rels_root is not None:
        for rel in rels_root.iterfind("{*}Relationship"):
            target = rel.get("Target") or ""
            resolved = (
                target.lstrip("/")
                if target.startswith("/")
                else posixpath.normpath(posixpath.join(folder, target))
            )
            rels[rel.get("Id")] = ((rel.get("Type") or "").rsplit("/", 1)[-1], resolved)
    sheets: list[_Sheet] = []
    for element in root.iterfind("{*}sheets/{*}sheet"):
        rid = next((v for k, v in element.attrib.items() if k.endswith("}id")), None)
        kind, target = rels.get(rid, ("", ""))
        sheets.append(_Sheet(element.get("name") or f"Sheet{len(sheets) + 1}", target, kind))
    return workbook, sheets


def _check_package(archive: zipfile.ZipFile, key: str) -> None:
    """No part declares a DTD; the sheets' XML is within ``MAX_SHEET_XML_BYTES``."""
    total = 0
    for info in archive.infolist():
        name = info.filename
        if name.endswith((".xml", ".rels", ".vml")):
            with archive.open(info) as stream:
                # The prolog (where a DTD can be) ends where the root element starts.
                head = stream.read(4096)
                while not _ROOT_START.search(head) and len(head) < 1024 * 1024:
                    more = stream.read(65536)
                    if not more:
                        break
                    head += more
                refuse_dtd(head, key, name)
        if name.startswith("xl/worksheets/") or name.endswith("sharedStrings.xml"):
            total += info.file_size
    check_size(key, "bytes of sheet XML", total, MAX_SHEET_XML_BYTES)


# --- cells -----------------------------------------------------------------------------------


def format_value(value: Any, number_format: str = "General") -> str | None:
    """A cell value as Excel would show it by default (None for no value)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):  # an integer in a percent format: 1 shows as 100%
        return f"{value * 100}%" if "%" in number_format else str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        if "%" in number_format:
            return f"{value * 100:.15g}%"
        return f"{value:.15g}"
    if isinstance(value, dt.datetime):
        fmt = number_format.lower()
        shows_time = "h" in fmt or "s" in fmt.replace("\\s", "")
        if value.time() == dt.time(0) and not shows_time:
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    text = str(value)
    return text if text.strip() else None


def _iterparse(archive: zipfile.ZipFile, part: str, tags: tuple[str, ...]) -> Any:
    """lxml's streaming parser over a package part, hardened like ``archive.parse_xml``
    (every part's prolog was already checked for a DTD by ``_check_package``)."""
    return etree.iterparse(archive.open(part), events=("end",), tag=tags, **HARDENED_XML_OPTIONS)


def _release(element: etree._Element) -> None:
    """Free a parsed element and its finished predecessors (constant memory while streaming)."""
    element.clear()
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def _string_text(element: etree._Element) -> str:
    """The text of a shared or inline string (rich-text runs joined, phonetic guides left out)."""
    direct = element.find("{*}t")
    if direct is not None and len(element) == 1:
        return direct.text or ""
    return "".join(
        t.text or "" for t in element.iter("{*}t") if etree.QName(t.getparent()).localname != "rPh"
    )


@dataclass
class _Styles:
    """What reading cell values needs from the workbook: strings, number formats, epoch."""

    shared: list[str]
    formats: list[str]  # number format code by cell style (xf) index
    dates: set[int]  # xf indices whose format is a date or time
    durations: set[int]  # xf indices whose format is a duration ([h]:mm)
    epoch: dt.datetime


def _styles(archive: zipfile.ZipFile, workbook_part: str, key: str, deadline: Deadline) -> _Styles:
    from openpyxl.styles.numbers import BUILTIN_FORMATS, is_date_format, is_timedelta_format
    from openpyxl.utils.datetime import CALENDAR_MAC_1904, CALENDAR_WINDOWS_1900

    shared: list[str] = []
    formats: list[str] = []
    for kind, part in _rels(archive, workbook_part, key):
        if kind == "sharedStrings" and part in archive.namelist():
            for _, si in _iterparse(archive, part, ("{*}si",)):
                shared.append(_string_text(si))
                deadline.tick(f"shared string {len(shared):,}")
                _release(si)
            check_size(key, "shared strings", len(shared), MAX_CELLS)
        elif kind == "styles":
            root = _read_part(archive, part, key)
            if root is None:
                continue
            custom = {
                int(n.get("numFmtId", "0")): n.get("formatCode") or "General"
                for n in root.iterfind("{*}numFmts/{*}numFmt")
                if (n.get("numFmtId") or "").isdigit()
            }
            for xf in root.iterfind("{*}cellXfs/{*}xf"):
                raw_id = xf.get("numFmtId") or "0"
                fmt_id = int(raw_id) if raw_id.isdigit() else 0
                formats.append(custom.get(fmt_id) or BUILTIN_FORMATS.get(fmt_id, "General"))
    dates = {i for i, code in enumerate(formats) if is_date_format(code)}
    durations = {i for i in dates if is_timedelta_format(formats[i])}
    root = _read_part(archive, workbook_part, key)
    properties = root.find("{*}workbookPr") if root is not None else None
    date1904 = properties is not None and properties.get("date1904") in ("1", "true")
    epoch = CALENDAR_MAC_1904 if date1904 else CALENDAR_WINDOWS_1900
    return _Styles(shared, formats, dates, durations, epoch)


_COLUMNS: dict[str, int] = {}


def _column(letters: str) -> int:
    index = _COLUMNS.get(letters)
    if index is None:
        index = 0
        for ch in letters:
            index = index * 26 + (ord(ch) - 64)
        _COLUMNS[letters] = index
    return index


_REF = re.compile(r"([A-Z]{1,3})(\d+)")


#: Distinct (type, value, style) cells whose shown text a sheet keeps: a sheet's values recur
#: (names, codes, small numbers, dates), and formatting one is most of reading its cell.
_SHOWN_KEPT = 32_768


def _cell_value(
    cell: etree._Element,
    styles: _Styles,
    ns: str,
    shown: dict[tuple[str, str, str | None], str | None],
) -> str | None:
    """A cell's shown text: its cached value as ``format_value`` writes it (None: no value).

    ``ns`` is the ``{namespace}`` of the sheet's elements (Transitional or Strict); ``shown``
    keeps the text of the cells of the same type, value and style read before."""
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        inline = cell.find(ns + "is")
        return format_value(_string_text(inline)) if inline is not None else None
    # The value is the cell's first child but where a formula precedes it: looked at first
    # (``find`` costs four times as much, and a sheet has a cell for every value).
    v = cell[0] if len(cell) else None
    if v is not None and v.tag != ns + "v":
        v = cell.find(ns + "v")
    if v is None or v.text is None:
        return None
    key = (kind, v.text, cell.get("s"))
    if key in shown:
        return shown[key]
    value = _shown_value(kind, v.text, key[2], styles)
    if len(shown) < _SHOWN_KEPT:
        shown[key] = value
    return value


def _shown_value(kind: str, text: str, style_index: str | None, styles: _Styles) -> str | None:
    """The shown text of a cell of type ``kind`` holding ``text`` in style ``style_index``."""
    if kind == "s":
        try:
            return format_value(styles.shared[int(text)])
        except (ValueError, IndexError):
            return None
    if kind == "b":
        return "TRUE" if text.strip() in ("1", "true") else "FALSE"
    if kind in ("str", "e"):
        return format_value(text)
    if kind == "d":
        from openpyxl.utils.datetime import from_ISO8601

        try:
            return format_value(from_ISO8601(text))
        except ValueError:
            return format_value(text)
    try:
        number: float | int = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        return format_value(text)
    style = int(style_index or 0)
    code = styles.formats[style] if 0 <= style < len(styles.formats) else "General"
    if style in styles.dates:
        from openpyxl.utils.datetime import from_excel

        try:
            moment = from_excel(number, styles.epoch, timedelta=style in styles.durations)
        except (OverflowError, ValueError):
            return "#VALUE!"
        return format_value(moment, code)
    return format_value(number, code)


def _read_sheet(
    sheet: _Sheet,
    archive: zipfile.ZipFile,
    styles: _Styles,
    deadline: Deadline,
    key: str,
    budget: list[int],
) -> list[tuple[int, int, int, int]]:
    """Fill ``sheet.grid`` with the filled cells (streamed; the declared dimension is ignored)
    and return the merged ranges (top, left, bottom, right)."""
    from openpyxl.utils.cell import range_boundaries

    grid = sheet.grid
    merges: list[tuple[int, int, int, int]] = []
    row_index = last_row = column = 0
    row_element: etree._Element | None = None  # the <row> whose cells are being read
    shown: dict[tuple[str, str, str | None], str | None] = {}
    #: Each tag met: its local name and its ``{namespace}`` (Transitional or Strict).
    names: dict[str, tuple[str, str]] = {}
    tags = ("{*}c", "{*}row", "{*}mergeCell")
    try:
        for _, element in _iterparse(archive, sheet.path, tags):
            tag = element.tag
            if tag not in names:
                found_ns, _, found_name = tag.rpartition("}")
                names[tag] = (found_name, found_ns + "}" if found_ns else "")
            name, ns = names[tag]
            if name == "c":
                parent = element.getparent()
                if parent is not row_element:  # the first cell of a row: where it is
                    row_element = parent
                    number = parent.get("r", "") if parent is not None else ""
                    row_index = int(number) if number.isdigit() else last_row + 1
                    column = 0
                ref = element.get("r")
                match = _REF.match(ref) if ref else None
                if match:  # cells without a reference follow the one before
                    letters, digits = match.groups()
                    column = _column(letters)
                    row_index = int(digits)
                else:
                    column += 1
                value = _cell_value(element, styles, ns, shown)
                if value is not None:
                    grid[(row_index, column)] = value
                    budget[0] += 1
                element.clear()
            elif name == "row":
                number = element.get("r", "")
                if number.isdigit():
                    last_row = int(number)
                else:
                    last_row = row_index if row_element is element else last_row + 1
                row_element = None
                deadline.tick(f"sheet {sheet.name!r} row {last_row:,}")
                check_size(key, "filled cells", budget[0], MAX_CELLS)
                _release(element)
            else:
                try:
                    c0, r0, c1, r1 = range_boundaries(element.get("ref") or "")
                except (ValueError, TypeError):
                    continue
                if None not in (c0, r0, c1, r1):
                    merges.append((int(r0), int(c0), int(r1), int(c1)))
    except etree.XMLSyntaxError as exc:
        raise CorruptDocumentError(
            key, f"sheet {sheet.name!r} is not well-formed XML: {exc}"
        ) from exc
    check_size(key, "filled cells", budget[0], MAX_CELLS)
    return merges


def _apply_merges(
    sheet: _Sheet,
    merges: list[tuple[int, int, int, int]],
    key: str,
    budget: list[int],
    deadline: Deadline,
) -> None:
    """Repeat each merged range's value over the cells it covers (inside the filled area)."""
    if not sheet.grid or not merges:
        return
    max_row = max(r for r, _ in sheet.grid)
    max_col = max(c for _, c in sheet.grid)
    for r0, c0, r1, c1 in merges:
        value = sheet.grid.get((r0, c0))
        if value is None:
            continue
        for r in range(r0, min(r1, max_row) + 1):
            deadline.tick(f"sheet {sheet.name!r} merged range at row {r0:,}")
            for c in range(c0, min(c1, max_col) + 1):
                if (r, c) not in sheet.grid:
                    sheet.grid[(r, c)] = value
                    budget[0] += 1
        check_size(key, "filled cells", budget[0], MAX_CELLS)


Box = tuple[int, int, int, int]  # top, left, bottom, right
Run = tuple[int, int, int]  # row, first column, last column: filled cells side by side


def islands(grid: Grid) -> list[tuple[Box, list[Run]]]:
    """The 4-connected islands of ``grid`` in reading order (top, then left), each as its box
    and its runs of filled cells; islands whose boxes overlap are one.

    Cells are grouped into horizontal runs per row, and runs of neighbouring rows that share a
    column are joined (union-find), so a dense table costs one run per row."""
    by_row: dict[int, list[int]] = {}
    for r, c in grid:
        by_row.setdefault(r, []).append(c)
    runs: list[Run] = []
    row_runs: dict[int, tuple[int, int]] = {}  # row -> its runs' index range in ``runs``
    for r in sorted(by_row):
        cols = sorted(by_row[r])
        first = len(runs)
        start = previous = cols[0]
        for c in cols[1:]:
            if c != previous + 1:
                runs.append((r, start, previous))
                start = c
            previous = c
        runs.append((r, start, previous))
        row_runs[r] = (first, len(runs))
    parent = list(range(len(runs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for r, (a_first, a_end) in row_runs.items():
        below = row_runs.get(r + 1)
        if below is None:
            continue
        i, j = a_first, below[0]
        while i < a_end and j < below[1]:
            _, a0, a1 = runs[i]
            _, b0, b1 = runs[j]
            if a0 <= b1 and b0 <= a1:
                parent[find(i)] = find(j)
            if a1 < b1:
                i += 1
            else:
                j += 1
    groups: dict[int, list[Run]] = {}
    for index, run in enumerate(runs):
        groups.setdefault(find(index), []).append(run)
    found: list[tuple[list[int], list[Run]]] = []
    for members in groups.values():
        box = [
            min(m[0] for m in members),
            min(m[1] for m in members),
            max(m[0] for m in members),
            max(m[2] for m in members),
        ]
        found.append((box, members))
    if len(found) <= _MAX_ISLANDS_TO_MERGE:
        found = _merge_overlapping(found)
    ordered = sorted(found, key=lambda f: (f[0][0], f[0][1]))
    return [((b[0], b[1], b[2], b[3]), members) for b, members in ordered]


def _merge_overlapping(
    found: list[tuple[list[int], list[Run]]],
) -> list[tuple[list[int], list[Run]]]:
    """Islands whose boxes overlap made one (passes until no two boxes overlap)."""
    merged = True
    while merged:
        merged = False
        kept: list[tuple[list[int], list[Run]]] = []
        for box, members in sorted(found, key=lambda f: (f[0][0], f[0][1])):
            for other in kept:
                o = other[0]
                if box[0] <= o[2] and o[0] <= box[2] and box[1] <= o[3] and o[1] <= box[3]:
                    o[0], o[1] = min(o[0], box[0]), min(o[1], box[1])
                    o[2], o[3] = max(o[2], box[2]), max(o[3], box[3])
                    other[1].extend(members)
                    merged = True
                    break
            else:
                kept.append((box, members))
        found = kept
    return found


@dataclass(eq=False)
class _Table:
    """Filled cells written as one table: its box (top, left, bottom, right), its runs, and
    where its figures start (rows above ``body_top`` are header rows joined from label
    islands; None: no labels were joined, the header is guessed from the first row)."""

    box: list[int]
    members: list[Run]
    body_top: int | None = None


def _is_figure(text: str) -> bool:
    return bool(_FIGURE.fullmatch(text.strip()))


def join_spacer_split(grid: Grid) -> list[_Table]:
    """The tables of ``grid`` in reading order: its islands, with a table that blank spacer
    rows or columns cut into pieces joined back (see the module docstring).

    Why: reports space their columns and rows apart with empty cells (a half-year segment
    table: labels, a blank column, figures, a blank column, more figures; headers a blank row
    above), and 4-connected islands alone cut them into tables of bare numbers."""
    found = [_Table([*box], members) for box, members in islands(grid)]
    if len(found) > _MAX_ISLANDS_TO_MERGE:
        return found

    def values(table: _Table, row: int | None = None) -> list[str]:
        return [
            grid[(r, c)]
            for r, c0, c1 in table.members
            if row is None or r == row
            for c in range(c0, c1 + 1)
        ]

    def absorb(into: _Table, other: _Table) -> None:
        box, o = into.box, other.box
        box[0], box[1] = min(box[0], o[0]), min(box[1], o[1])
        box[2], box[3] = max(box[2], o[2]), max(box[3], o[3])
        into.members.extend(other.members)
        found.remove(other)

    # Row labels: an island of bare figures joins the nearest island at its left (across at
    # most ``_MAX_SPACER_COLUMNS`` blank columns) when its rows lie within that island's rows.
    joined = True
    while joined:
        joined = False
        for piece in sorted(found, key=lambda t: t.box[1]):
            if not all(_is_figure(v) for v in values(piece)):
                continue
            top, left, bottom, _ = piece.box
            beside = [
                t for t in found if t.box[3] < left and t.box[0] <= bottom and top <= t.box[2]
            ]
            if not beside:
                continue
            nearest = max(beside, key=lambda t: t.box[3])
            box = nearest.box
            if box[0] <= top and bottom <= box[2] and left - box[3] - 1 <= _MAX_SPACER_COLUMNS:
                absorb(nearest, piece)
                joined = True
                break
    # Column labels: a table whose own first row holds figures (no header of its own) takes
    # the islands of labels just above it, within its columns, at most ``_MAX_SPACER_ROWS``
    # blank rows up, as header rows.
    for table in sorted(found, key=lambda t: t.box[0]):
        if table not in found:
            continue
        top, left, _, right = table.box
        if not any(_is_figure(v) for v in values(table, top)):
            continue
        labels = [
            t
            for t in found
            if t is not table
            and left <= t.box[1]
            and t.box[3] <= right
            and 0 <= top - t.box[2] - 1 <= _MAX_SPACER_ROWS
            and t.box[2] - t.box[0] < _MAX_HEADER_ROWS
            and not any(_is_figure(v) for v in values(t))
        ]
        if labels:
            table.body_top = top
            for label in labels:
                absorb(table, label)
    body_tops = {id(t.members): t.body_top for t in found}
    merged = _merge_overlapping([(t.box, t.members) for t in found])
    tables = [_Table(box, members, body_tops.get(id(members))) for box, members in merged]
    return sorted(tables, key=lambda t: (t.box[0], t.box[1]))


def _box_rows(grid: Grid, members: list[Run], key: str) -> list[list[str]]:
    """The cell texts of an island, its empty rows and columns dropped."""
    rows = sorted({r for r, _, _ in members})
    cols = sorted({c for _, c0, c1 in members for c in range(c0, c1 + 1)})
    check_size(key, "cells in one table (rows x columns)", len(rows) * len(cols), 4 * MAX_CELLS)
    return [[grid.get((r, c), "") for c in cols] for r in rows]


def _write_cells(layer: TextLayer, grid: Grid, deadline: Deadline, name: str, key: str) -> None:
    for table in join_spacer_split(grid):
        deadline.check(f"sheet {name!r} table at row {table.box[0]:,}")
        rows = _box_rows(grid, table.members, key)
        header_rows = None
        if table.body_top is not None:  # label islands joined over its figures
            header_rows = len({r for r, _, _ in table.members if r < table.body_top})
        # Label rows: a top row holding one value (repeated by a merge or alone) over a
        # wider table is a title line, not the header.
        while len(rows) > 1 and len(rows[0]) > 1 and len({v for v in rows[0] if v}) == 1:
            layer.paragraph(next(v for v in rows[0] if v))
            rows = rows[1:]
            used = [i for i in range(len(rows[0])) if any(row[i] for row in rows)]
            rows = [[row[i] for i in used] for row in rows]
            if header_rows:
                header_rows -= 1
        if len(rows) == 1 and len({v for v in rows[0] if v}) == 1:
            layer.paragraph(next(v for v in rows[0] if v))  # one value, alone or merged
            continue
        if header_rows is None:
            header_rows = 1 if has_header(rows) else 0
        layer.table(rows, header_rows=header_rows)


# --- charts ----------------------------------------------------------------------------------


def _local(element: etree._Element) -> str:
    return etree.QName(element).localname


def _resolve(formula: str, sheets: dict[str, _Sheet]) -> list[str]:
    """The cell texts a chart reference like ``'Data'!$B$2:$B$7`` points at (empty if unknown)."""
    from openpyxl.utils.cell import column_index_from_string

    formula = formula.strip().strip("()")
    if "!" not in formula or "," in formula:
        return []
    sheet_name, ref = formula.rsplit("!", 1)
    sheet_name = sheet_name.strip()
    if sheet_name.startswith("'") and sheet_name.endswith("'"):
        sheet_name = sheet_name[1:-1].replace("''", "'")
    sheet = sheets.get(sheet_name)
    if sheet is None:
        return []
    ends = [_CELL_REF.fullmatch(p) for p in ref.split(":")]
    if not ends or not all(ends) or len(ends) > 2:
        return []
    coords = [(int(m.group(2)), column_index_from_string(m.group(1).upper())) for m in ends if m]
    (r0, c0), (r1, c1) = coords[0], coords[-1]
    if (r1 - r0 + 1) * (c1 - c0 + 1) > 100_000:
        return []
    return [
        sheet.grid.get((r, c), "")
        for r in range(min(r0, r1), max(r0, r1) + 1)
        for c in range(min(c0, c1), max(c0, c1) + 1)
    ]


def _points(element: etree._Element | None, sheets: dict[str, _Sheet]) -> list[str]:
    """The values of a series' ``tx``/``cat``/``val`` element: cache, literal, or cells."""
    if element is None:
        return []
    direct = element.find("{*}v")
    if direct is not None:
        return [direct.text or ""]
    for cache in element.iter("{*}strCache", "{*}numCache", "{*}strLit", "{*}numLit"):
        count_el = cache.find("{*}ptCount")
        count = int(count_el.get("val", "0")) if count_el is not None else 0
        values: dict[int, str] = {}
        for pt in cache.iterfind("{*}pt"):
            v = pt.find("{*}v")
            values[int(pt.get("idx", "0"))] = v.text or "" if v is not None else ""
        count = max(count, max(values, default=-1) + 1)
        if count > 100_000:
            return []
        return [values.get(i, "") for i in range(count)]
    f = element.find(".//{*}f")
    if f is not None and f.text:
        return _resolve(f.text, sheets)
    return []


def _number_text(value: str) -> str:
    try:
        number = float(value)
    except ValueError:
        return value
    return format_value(number) or value


def _chart(root: etree._Element, sheets: dict[str, _Sheet]) -> tuple[str | None, str, list]:
    """(title, kind, rows) of a chart part: rows are header + one row per category."""
    chart = root.find("{*}chart")
    if chart is None:
        return None, "Chart", []
    title = None
    title_el = chart.find("{*}title")
    if title_el is not None:
        runs = [t.text or "" for t in title_el.iter("{*}t")]
        title = "".join(runs).strip() or None
        if title is None:
            names = _points(title_el.find("{*}tx"), sheets)
            title = " ".join(n for n in names if n).strip() or None
    kinds: list[str] = []
    series: list[tuple[str, list[str], list[str]]] = []
    plot = chart.find("{*}plotArea")
    for group in plot if plot is not None else []:
        local = _local(group)
        if not local.endswith("Chart"):
            continue
        kind = local[: -len("Chart")].replace("3D", "").replace("Of", " of ")
        kinds.append(kind)
        for ser in group.iterfind("{*}ser"):
            name_values = _points(ser.find("{*}tx"), sheets)
            name = " ".join(v for v in name_values if v) or f"Series {len(series) + 1}"
            cats = _points(ser.find("{*}cat"), sheets) or _points(ser.find("{*}xVal"), sheets)
            vals = _points(ser.find("{*}val"), sheets) or _points(ser.find("{*}yVal"), sheets)
            series.append((name, cats, vals))
    kind_text = " and ".join(dict.fromkeys(k.capitalize() for k in kinds)) or "Chart"
    kind_text = f"{kind_text} chart" if kinds else kind_text
    rows: list[list[str]] = []
    if series:
        categories = next((s[1] for s in series if s[1]), [])
        length = max(len(categories), *(len(s[2]) for s in series))
        rows.append(["", *(s[0] for s in series)])
        for i in range(length):
            label = categories[i] if i < len(categories) else str(i + 1)
            rows.append(
                [
                    _number_text(label),
                    *(_number_text(s[2][i]) if i < len(s[2]) else "" for s in series),
                ]
            )
    return title, kind_text, rows


_XDR = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
_DML = "http://schemas.openxmlformats.org/drawingml/2006/main"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def _shape_texts(archive: zipfile.ZipFile, sheet: _Sheet, key: str) -> list[list[str]]:
    """The paragraphs of each text box or shape with text drawn on the sheet (notes, labels,
    instructions), top to bottom then left to right by the cell each is anchored at; a
    ``mc:Fallback`` copy of a shape is not read twice."""
    found: list[tuple[int, int, int, list[str]]] = []
    for kind, drawing in _rels(archive, sheet.path, key):
        if kind != "drawing":
            continue
        root = _read_part(archive, drawing, key)
        if root is None:
            continue
        for order, anchor in enumerate(root):
            if not isinstance(anchor.tag, str):
                continue
            start = anchor.find(f"{{{_XDR}}}from")
            row = _int_text(start, "row") if start is not None else 0
            col = _int_text(start, "col") if start is not None else 0
            for body in anchor.iter(f"{{{_XDR}}}txBody"):
                if any(a.tag == _MC_FALLBACK for a in body.iterancestors()):
                    continue
                paragraphs = [
                    "".join(t.text or "" for t in para.iter(f"{{{_DML}}}t"))
                    for para in body.iter(f"{{{_DML}}}p")
                ]
                if any(p.strip() for p in paragraphs):
                    found.append((row, col, order, paragraphs))
    found.sort(key=lambda item: item[:3])
    return [paragraphs for *_, paragraphs in found]


def _int_text(parent: etree._Element, local: str) -> int:
    child = parent.find(f"{{{_XDR}}}{local}")
    try:
        return int((child.text or "0") if child is not None else "0")
    except ValueError:
        return 0


def _charts_of(
    archive: zipfile.ZipFile, sheet: _Sheet, key: str, warnings: list[str]
) -> list[etree._Element]:
    """The chart parts drawn on ``sheet``. A chart part that is not well-formed is left out
    with a warning, as Word's and PowerPoint's readers do: the sheets hold the figures, and
    LibreOffice 7.4 writes such parts when it saves some Excel 97 charts as .xlsx (text past
    the root element's end), which failed the whole workbook."""
    roots: list[etree._Element] = []
    for kind, drawing in _rels(archive, sheet.path, key):
        if kind != "drawing":
            continue
        for sub_kind, part in _rels(archive, drawing, key):
            if sub_kind != "chart":
                continue
            try:
                root = _read_part(archive, part, key)
            except CorruptDocumentError as damaged:
                warnings.append(f"chart {part} on sheet {sheet.name!r} left out: {damaged.problem}")
                continue
            if root is not None:
                roots.append(root)
    return roots


# --- comments --------------------------------------------------------------------------------


def _comments_of(
    archive: zipfile.ZipFile, sheet: _Sheet, persons: dict[str, str], key: str
) -> list[tuple[str, str, str, str]]:
    """(cell, author, time, text) of the sheet's comments: legacy notes, then threads."""
    legacy: list[tuple[str, str, str, str]] = []
    threaded: list[tuple[str, str, str, str]] = []
    for kind, part in _rels(archive, sheet.path, key):
        if kind == "comments":
            root = _read_part(archive, part, key)
            if root is None:
                continue
            authors = [a.text or "" for a in root.iterfind("{*}authors/{*}author")]
            for comment in root.iterfind("{*}commentList/{*}comment"):
                index = int(comment.get("authorId", "0") or 0)
                author = authors[index] if 0 <= index < len(authors) else ""
                text = "".join(t.text or "" for t in comment.iter("{*}t"))
                legacy.append((comment.get("ref") or "", author, "", text))
        elif kind == "threadedComment":
            root = _read_part(archive, part, key)
            if root is None:
                continue
            for comment in root.iterfind("{*}threadedComment"):
                text_el = comment.find("{*}text")
                author = persons.get(comment.get("personId") or "", "")
                text = text_el.text if text_el is not None and text_el.text else ""
                when = comment.get("dT") or ""
                threaded.append((comment.get("ref") or "", author, when, text))
    if threaded:
        # Legacy copies of threaded comments (author "tc={...}") repeat them: keep the threads.
        legacy = [c for c in legacy if not c[1].startswith("tc=")]
    return legacy + threaded


def _persons(archive: zipfile.ZipFile, workbook: str, key: str) -> dict[str, str]:
    persons: dict[str, str] = {}
    for kind, part in _rels(archive, workbook, key):
        if kind == "person":
            root = _read_part(archive, part, key)
            if root is not None:
                for person in root.iterfind("{*}person"):
                    persons[person.get("id") or ""] = person.get("displayName") or ""
    return persons


# --- the document ----------------------------------------------------------------------------


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of an XLSX/XLSM workbook (see the module docstring)."""
    key = document.source_key
    deadline = current_deadline(key)
    with open_zip(raw, key) as archive:
        _check_package(archive, key)
        workbook_part, sheets = _sheets(archive, key)
        styles = _styles(archive, workbook_part, key, deadline)
        budget = [0]
        members = set(archive.namelist())
        for sheet in sheets:
            if sheet.kind == "worksheet" and sheet.path in members:
                merges = _read_sheet(sheet, archive, styles, deadline, key, budget)
                _apply_merges(sheet, merges, key, budget, deadline)
        by_name = {s.name: s for s in sheets}
        persons = _persons(archive, workbook_part, key)
        layer = TextLayer()
        chart_number = 0
        warnings: list[str] = []
        for sheet in sheets:
            deadline.check(f"sheet {sheet.name!r}")
            charts = _charts_of(archive, sheet, key, warnings) if sheet.path else []
            comments = _comments_of(archive, sheet, persons, key) if sheet.path else []
            shapes = _shape_texts(archive, sheet, key) if sheet.path else []
            if not sheet.grid and not charts and not comments and not shapes:
                continue
            layer.heading(sheet.name, 1)
            _write_cells(layer, sheet.grid, deadline, sheet.name, key)
            for paragraphs in shapes:
                layer.lines(paragraphs)
            for root in charts:
                chart_number += 1
                title, kind, rows = _chart(root, by_name)
                layer.heading(title or f"Chart {chart_number}", 2)
                layer.paragraph(kind)
                layer.table(rows, header_rows=1)
            if comments:
                layer.heading("Comments", 2)
                layer.lines([_comment_line(*c) for c in comments])
    parsed = layer.parsed(document, "the workbook holds no cell with a value")
    parsed.warnings.extend(warnings)
    return parsed


def _comment_line(ref: str, author: str, when: str, text: str) -> str:
    """``A1 [author: Jane, time: 2026-06-18T17:12:57]: text`` (the parts the file gives)."""
    about = ", ".join(
        p for p in (f"author: {author}" if author else "", f"time: {when}" if when else "") if p
    )
    return f"{ref} [{about}]: {text}" if about else f"{ref}: {text}"


__all__ = ["MAX_CELLS", "MAX_SHEET_XML_BYTES", "XLSM_MEDIA_TYPE", "XLSX_MEDIA_TYPE", "parse"]
