"""XLSX and XLSM workbooks with openpyxl (read-only, cached values), after ``archive.open_zip``.

Why openpyxl: the maintained MIT-licensed reader of the format; its read-only mode streams a
sheet's cells row by row (so a large sheet costs time, not memory, and our deadline is checked
between rows) and converts values by their number formats (dates). What read-only mode does not
give (merged ranges, comments, charts) is read from the package's own parts, parsed without DTDs
or entities (``archive.parse_xml``).

The text layer, per sheet in workbook order (empty sheets are left out):
- the sheet name as a level-1 heading;
- each *table*: a 4-connected island of filled cells (islands whose boxes overlap are one
  table), its empty rows and columns dropped, written as pipe rows (``textlayer``) in reading
  order (top, then left). The used range is never trusted: only cells that hold a value count, so
  an "inflated" sheet whose dimension says a million rows costs what its filled cells cost;
- a merged range repeats its value in every cell it covers (inside the filled area), so each row
  reads on its own; a table's top rows that hold a single value (a label over the table) are a
  text line before it, and an island of one cell is a text line, not a table;
- header: the table's first row, unless it looks like data (numbers over numbers);
- formulas give their cached value (what Excel last computed; none if never computed);
- values: dates as ISO dates (with the time where the number format shows one), numbers as
  Excel shows them by default (15 significant digits; ``%`` formats as percentages), booleans as
  TRUE/FALSE;
- each chart (on a worksheet or a chart sheet) is a level-2 heading (its title, else "Chart N"),
  a line naming its kind ("Bar chart") and its data as a table (series by category), from the
  chart's cached values or, without a cache, from the cells its series refer to;
- comments (legacy notes and threaded comments with their replies) are kept, under a level-2
  heading "Comments", one line each: ``A1 (author): text``: they are part of what people wrote.

Budgets: the worksheets' declared XML size (``MAX_SHEET_XML_BYTES``), filled cells
(``MAX_CELLS``), and the parse's ``Deadline``; past one, a ``DocumentTooLargeError`` or
``ParseTimeoutError`` naming the file.
"""

from __future__ import annotations

import datetime as dt
import io
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.archive import open_zip, parse_xml, refuse_dtd
from agrag_pipeline.parsing.budget import Deadline, check_size, current_deadline
from agrag_pipeline.parsing.delimited import has_header
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer
from agrag_pipeline.parsing.tree import build_sections

XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLSM_MEDIA_TYPE = "application/vnd.ms-excel.sheet.macroEnabled.12"

#: The worksheets' and shared strings' declared (uncompressed) XML may not exceed this.
MAX_SHEET_XML_BYTES = 256 * 1024 * 1024
#: Filled cells (merged copies included) a workbook may hold.
MAX_CELLS = 3_000_000
#: Island boxes are merged only below this many islands (pairwise; beyond, kept apart).
_MAX_ISLANDS_TO_MERGE = 2_000

_MERGE_REF = re.compile(rb"<(?:[\w.-]+:)?mergeCell\b[^>]*?\bref=[\"']([A-Za-z0-9:$]+)[\"']")
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
                refuse_dtd(stream.read(4096), key, name)
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
    if isinstance(value, int):
        return str(value)
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


def _read_cells(
    sheet: _Sheet, workbook: Any, deadline: Deadline, key: str, budget: list[int]
) -> None:
    worksheet = workbook[sheet.name]
    worksheet.reset_dimensions()  # never trust the declared used range
    grid = sheet.grid
    for row_index, row in enumerate(worksheet.iter_rows(), start=1):
        if not row:  # a row the sheet does not hold (openpyxl pads the gaps)
            continue
        deadline.tick(f"sheet {sheet.name!r} row {row_index:,}")
        for col_index, cell in enumerate(row, start=1):
            value = cell.value
            if value is None:
                continue
            text = format_value(value, getattr(cell, "number_format", "General") or "General")
            if text is None:
                continue
            grid[(row_index, col_index)] = text
            budget[0] += 1
        check_size(key, "filled cells", budget[0], MAX_CELLS)


def _apply_merges(
    sheet: _Sheet, archive: zipfile.ZipFile, key: str, budget: list[int], deadline: Deadline
) -> None:
    """Repeat each merged range's value over the cells it covers (inside the filled area)."""
    from openpyxl.utils.cell import range_boundaries

    if not sheet.grid:
        return
    data = archive.read(sheet.path)
    # Merged ranges follow the cell data; search only past it (cells may hold any text).
    after = data.rfind(b"sheetData>")
    start = data.find(b"mergeCells", max(after, 0))
    if start < 0:
        return
    max_row = max(r for r, _ in sheet.grid)
    max_col = max(c for _, c in sheet.grid)
    for match in _MERGE_REF.finditer(data, max(start, 0)):
        try:
            c0, r0, c1, r1 = range_boundaries(match.group(1).decode("ascii"))
        except (ValueError, TypeError):
            continue
        if None in (c0, r0, c1, r1):
            continue
        assert c0 is not None and r0 is not None and c1 is not None and r1 is not None
        value = sheet.grid.get((r0, c0))
        if value is None:
            continue
        for r in range(r0, min(r1, max_row) + 1):
            deadline.tick(f"sheet {sheet.name!r} merged range {match.group(1).decode()}")
            for c in range(c0, min(c1, max_col) + 1):
                if (r, c) not in sheet.grid:
                    sheet.grid[(r, c)] = value
                    budget[0] += 1
        check_size(key, "filled cells", budget[0], MAX_CELLS)


def islands(grid: Grid) -> list[tuple[int, int, int, int]]:
    """Boxes (top, left, bottom, right) of the 4-connected islands of ``grid``, boxes that
    overlap merged, in reading order."""
    seen: set[tuple[int, int]] = set()
    boxes: list[list[int]] = []
    for cell in sorted(grid):
        if cell in seen:
            continue
        seen.add(cell)
        stack = [cell]
        top, left = cell
        bottom, right = cell
        while stack:
            r, c = stack.pop()
            top, bottom = min(top, r), max(bottom, r)
            left, right = min(left, c), max(right, c)
            for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if n in grid and n not in seen:
                    seen.add(n)
                    stack.append(n)
        boxes.append([top, left, bottom, right])
    if len(boxes) <= _MAX_ISLANDS_TO_MERGE:
        merged = True
        while merged:
            merged = False
            for i in range(len(boxes)):
                for j in range(i + 1, len(boxes)):
                    a, b = boxes[i], boxes[j]
                    if a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]:
                        boxes[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2])]
                        boxes[i].append(max(a[3], b[3]))
                        del boxes[j]
                        merged = True
                        break
                if merged:
                    break
    return sorted((b[0], b[1], b[2], b[3]) for b in boxes)


def _box_rows(grid: Grid, box: tuple[int, int, int, int]) -> list[list[str]]:
    """The cell texts of ``box``, empty rows and columns dropped."""
    top, left, bottom, right = box
    cells = [(r, c) for (r, c) in grid if top <= r <= bottom and left <= c <= right]
    rows = sorted({r for r, _ in cells})
    cols = sorted({c for _, c in cells})
    return [[grid.get((r, c), "") for c in cols] for r in rows]


def _write_cells(layer: TextLayer, grid: Grid, deadline: Deadline, name: str) -> None:
    for box in islands(grid):
        deadline.check(f"sheet {name!r} table at row {box[0]:,}")
        rows = _box_rows(grid, box)
        # Label rows: a top row holding one value (repeated by a merge or alone) over a
        # wider table is a title line, not the header.
        while len(rows) > 1 and len(rows[0]) > 1 and len({v for v in rows[0] if v}) == 1:
            layer.paragraph(next(v for v in rows[0] if v))
            rows = rows[1:]
            used = [i for i in range(len(rows[0])) if any(row[i] for row in rows)]
            rows = [[row[i] for i in used] for row in rows]
        if len(rows) == 1 and len(rows[0]) == 1:
            layer.paragraph(rows[0][0])
            continue
        layer.table(rows, header_rows=1 if has_header(rows) else 0)


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


def _charts_of(archive: zipfile.ZipFile, sheet: _Sheet, key: str) -> list[etree._Element]:
    roots: list[etree._Element] = []
    for kind, drawing in _rels(archive, sheet.path, key):
        if kind != "drawing":
            continue
        for sub_kind, part in _rels(archive, drawing, key):
            if sub_kind == "chart":
                root = _read_part(archive, part, key)
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
    import openpyxl

    key = document.source_key
    deadline = current_deadline(key)
    with open_zip(raw, key) as archive:
        _check_package(archive, key)
        workbook_part, sheets = _sheets(archive, key)
        try:
            workbook = openpyxl.load_workbook(
                io.BytesIO(raw), read_only=True, data_only=True, keep_links=False
            )
        except Exception as exc:  # openpyxl raises many kinds on a damaged package
            raise CorruptDocumentError(key, f"not a readable workbook: {exc}") from exc
        budget = [0]
        try:
            names = set(workbook.sheetnames)
            for sheet in sheets:
                if sheet.kind == "worksheet" and sheet.name in names:
                    _read_cells(sheet, workbook, deadline, key, budget)
                    _apply_merges(sheet, archive, key, budget, deadline)
        finally:
            workbook.close()
        by_name = {s.name: s for s in sheets}
        persons = _persons(archive, workbook_part, key)
        layer = TextLayer()
        chart_number = 0
        for sheet in sheets:
            deadline.check(f"sheet {sheet.name!r}")
            charts = _charts_of(archive, sheet, key) if sheet.path else []
            comments = _comments_of(archive, sheet, persons, key) if sheet.path else []
            if not sheet.grid and not charts and not comments:
                continue
            layer.heading(sheet.name, 1)
            _write_cells(layer, sheet.grid, deadline, sheet.name)
            for root in charts:
                chart_number += 1
                title, kind, rows = _chart(root, by_name)
                layer.heading(title or f"Chart {chart_number}", 2)
                layer.paragraph(kind)
                layer.table(rows, header_rows=1)
            if comments:
                layer.heading("Comments", 2)
                layer.lines([_comment_line(*c) for c in comments])
    text = layer.value()
    if not text.strip():
        raise EmptyDocumentError(key, "the workbook holds no cell with a value")
    sections = build_sections(text, document, layer.headings, layer.tables)
    return ParsedDocument(document=document, text_layer=text, sections=sections)


def _comment_line(ref: str, author: str, when: str, text: str) -> str:
    """``A1 [author: Jane, time: 2026-06-18T17:12:57]: text`` (the parts the file gives)."""
    about = ", ".join(
        p for p in (f"author: {author}" if author else "", f"time: {when}" if when else "") if p
    )
    return f"{ref} [{about}]: {text}" if about else f"{ref}: {text}"


__all__ = ["MAX_CELLS", "MAX_SHEET_XML_BYTES", "XLSM_MEDIA_TYPE", "XLSX_MEDIA_TYPE", "parse"]
