"""PDF with pdfplumber (MIT; pdfminer.six underneath): text with pages, boxes and tables.

Text layer: per page, text lines (pdfplumber's ``extract_text_lines``) and table rows in
top-to-bottom order, joined by ``"\\n"``; pages joined by ``PAGE_SEPARATOR`` (``"\\n\\n"``).
A table found by ``find_tables`` is written one row per line, cells joined by `` | ``, and its
characters are taken out of the text lines, so table text is never duplicated. The first row of
a table of two or more rows is its header (PDF tables do not mark headers).
``ParsedDocument.layout`` holds one ``LayoutSpan`` per text line and per table row: 1-based page
and box in PDF points, origin ``"top-left"`` (pdfplumber's ``top``/``bottom``).

Headings: from the outline (bookmarks) when it has entries that can be found in the text (title
matched to the lines of the entry's destination page, levels from the outline); otherwise from
typography: short lines set clearly larger than the body's median size (levels by size), or
bold lines at body size (the next level down).

Bounds: more than ``MAX_PAGES`` pages is refused (``DocumentTooLargeError``); the time budget is
checked between pages (``ParseTimeoutError``). A single page that pdfminer spends unbounded
time on can only be stopped by running the parse in a worker process with a timeout: that is
the caller's choice (the Dagster shell), not done here.

No text layer (a scan with no OCR text): an empty text layer, no sections, and a warning.

Known limits: reading order is pdfplumber's line clustering, so two-column pages interleave
their columns line by line; right-to-left scripts come out in visual (reversed) order.
"""

from __future__ import annotations

import io
import statistics
import time
from dataclasses import dataclass
from typing import Any

import pdfplumber
from pdfminer.pdfdocument import PDFNoOutlines, PDFPasswordIncorrect
from pdfminer.pdftypes import resolve1

from agrag_pipeline.models import Document, PageBox
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    ParseTimeoutError,
)
from agrag_pipeline.parsing.parsed import LayoutSpan, ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections

MEDIA_TYPE = "application/pdf"
PAGE_SEPARATOR = "\n\n"
CELL_SEPARATOR = " | "
MAX_PAGES = 2000
TIME_BUDGET_S = 300.0

#: Typography: a heading is set at least this much larger than the body's median size …
_LARGER = 1.15
#: … and is a short line.
_MAX_HEADING_CHARS = 120
_BOLD_MARKERS = ("bold", "black", "heavy", "semibold", "demi")


@dataclass
class _Line:
    start: int
    end: int
    page: int
    top: float
    bottom: float
    text: str
    size: float
    bold: bool


def parse(
    raw: bytes,
    document: Document,
    *,
    max_pages: int = MAX_PAGES,
    time_budget_s: float = TIME_BUDGET_S,
) -> ParsedDocument:
    """The text layer, layout and sections of a PDF."""
    key = document.source_key
    deadline = time.monotonic() + time_budget_s
    try:
        pdf = pdfplumber.open(io.BytesIO(raw))
    except Exception as exc:
        # pdfplumber wraps pdfminer's errors in its PdfminerException (first argument).
        cause = exc.args[0] if exc.args and isinstance(exc.args[0], Exception) else exc
        if isinstance(cause, PDFPasswordIncorrect):
            raise CorruptDocumentError(key, "the PDF is encrypted and needs a password") from None
        raise CorruptDocumentError(
            key, f"not a readable PDF (truncated or corrupt?): {type(exc).__name__}: {exc}"
        ) from None
    with pdf:
        try:
            pages = pdf.pages
        except Exception as exc:
            raise CorruptDocumentError(
                key, f"the PDF's page tree cannot be read: {type(exc).__name__}: {exc}"
            ) from None
        if len(pages) > max_pages:
            raise DocumentTooLargeError(
                key, f"{len(pages)} pages is over the limit of {max_pages} pages"
            )
        builder = _LayerBuilder()
        warnings: list[str] = []
        for page in pages:
            if time.monotonic() > deadline:
                raise ParseTimeoutError(
                    key, f"gave up after {time_budget_s:.0f} s at page {page.page_number}"
                )
            try:
                had_text = builder.add_page(page)
            except Exception as exc:
                raise CorruptDocumentError(
                    key, f"page {page.page_number} cannot be read: {type(exc).__name__}: {exc}"
                ) from None
            if not had_text:
                warnings.append(f"page {page.page_number} has no text layer")
        text = builder.text()
        if not text.strip():
            return ParsedDocument(
                document=document,
                text_layer="",
                warnings=[
                    f"no text layer on any of its {len(pages)} page(s): a scan without OCR "
                    "text? (no sections; OCR is not done here)"
                ],
            )
        headings = _outline_headings(pdf, builder.lines, warnings)
        if not headings:
            headings = _typographic_headings(builder.lines)
    parsed = ParsedDocument(
        document=document, text_layer=text, layout=builder.layout, warnings=warnings
    )
    parsed.sections = build_sections(text, document, headings, builder.tables, locate=parsed.locate)
    return parsed


class _LayerBuilder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.layout: list[LayoutSpan] = []
        self.lines: list[_Line] = []
        self.tables: list[TableMark] = []

    def text(self) -> str:
        return "".join(self.parts)

    def _write(self, text: str, page: int, bbox: tuple[float, float, float, float]) -> int:
        if self.pos:
            self.parts.append("\n")
            self.pos += 1
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        x0, top, x1, bottom = bbox
        box = PageBox(
            page=page, x0=min(x0, x1), y0=min(top, bottom), x1=max(x0, x1), y1=max(top, bottom)
        )
        self.layout.append(LayoutSpan(start=start, end=self.pos, box=box))
        return start

    def add_page(self, page: Any) -> bool:
        """Writes a page's lines and tables in top-to-bottom order; False if it has no text."""
        found = page.find_tables()
        boxes = [t.bbox for t in found]

        def outside_tables(obj: dict[str, Any]) -> bool:
            if obj.get("object_type") != "char":
                return True
            cx = (obj["x0"] + obj["x1"]) / 2
            cy = (obj["top"] + obj["bottom"]) / 2
            return not any(x0 <= cx <= x1 and t <= cy <= b for x0, t, x1, b in boxes)

        text_page = page.filter(outside_tables) if boxes else page
        blocks: list[tuple[float, int, Any]] = []
        for line in text_page.extract_text_lines(return_chars=True, strip=True):
            if line["text"].strip():
                blocks.append((line["top"], 0, line))
        for table in found:
            blocks.append((table.bbox[1], 1, table))
        blocks.sort(key=lambda b: (b[0], b[1]))
        if not blocks:
            return False
        if self.pos:  # page separator: "\n" from _write plus this one
            self.parts.append(PAGE_SEPARATOR[1:])
            self.pos += len(PAGE_SEPARATOR) - 1
        wrote = False
        number = page.page_number
        for _, kind, item in blocks:
            if kind == 0:
                self._add_line(item, number)
                wrote = True
            else:
                wrote = self._add_table(item, number) or wrote
        return wrote

    def _add_line(self, line: dict[str, Any], page: int) -> None:
        text = line["text"]
        bbox = (line["x0"], line["top"], line["x1"], line["bottom"])
        start = self._write(text, page, bbox)
        chars = [c for c in line.get("chars", []) if c.get("text", "").strip()]
        size = statistics.median(c["size"] for c in chars) if chars else 0.0
        bold = bool(chars) and all(
            any(m in str(c.get("fontname", "")).lower() for m in _BOLD_MARKERS) for c in chars
        )
        self.lines.append(
            _Line(start, self.pos, page, line["top"], line["bottom"], text, size, bold)
        )

    def _add_table(self, table: Any, page: int) -> bool:
        rows = table.extract()
        spans: list[tuple[int, int]] = []
        for cells, row in zip(rows, table.rows, strict=False):
            texts = [" ".join((c or "").split()) for c in cells]
            if not any(texts):
                continue
            start = self._write(CELL_SEPARATOR.join(texts), page, row.bbox)
            spans.append((start, self.pos))
        if not spans:
            return False
        header = spans[0] if len(spans) > 1 else None
        body = tuple(spans[1:]) if header else tuple(spans)
        self.tables.append(TableMark(spans[0][0], spans[-1][1], header, body))
        return True


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _outline_entries(pdf: Any) -> list[tuple[int, str, int | None]]:
    """(level, title, 1-based page or None) of each outline entry, in outline order."""
    try:
        outlines = list(pdf.doc.get_outlines())
    except PDFNoOutlines:
        return []
    except Exception:
        return []  # a broken outline is no reason to refuse a readable document
    page_numbers = {p.page_obj.pageid: p.page_number for p in pdf.pages}
    entries = []
    for level, title, dest, action, _ in outlines:
        if not title:
            continue
        entries.append((int(level), str(title), _destination_page(pdf, dest, action, page_numbers)))
    return entries


def _destination_page(pdf: Any, dest: Any, action: Any, page_numbers: dict[int, int]) -> int | None:
    try:
        if dest is None and action is not None:
            action = resolve1(action)
            if isinstance(action, dict):
                dest = action.get("D")
        dest = resolve1(dest)
        if isinstance(dest, bytes | str) or hasattr(dest, "name"):
            name = dest.name if hasattr(dest, "name") else dest
            dest = resolve1(pdf.doc.get_dest(name))
        if isinstance(dest, dict):
            dest = resolve1(dest.get("D"))
        if isinstance(dest, list) and dest:
            ref = dest[0]
            objid = getattr(ref, "objid", None)
            if objid is not None:
                return page_numbers.get(objid)
    except Exception:
        return None
    return None


def _match(lines: list[_Line], index: int, title: str) -> int | None:
    """Index of the last line of ``title`` if it starts at ``lines[index]``, else None."""
    accumulated = _norm(lines[index].text)
    if not accumulated:
        return None
    if accumulated == title or accumulated.startswith(title):
        return index
    last = index
    while title.startswith(accumulated) and last + 1 < len(lines):
        last += 1
        if lines[last].page != lines[index].page:
            return None
        accumulated = f"{accumulated} {_norm(lines[last].text)}"
        if accumulated == title:
            return last
    return None


def _outline_headings(pdf: Any, lines: list[_Line], warnings: list[str]) -> list[HeadingMark]:
    entries = _outline_entries(pdf)
    if not entries:
        return []
    marks: list[HeadingMark] = []
    used: set[int] = set()
    missing = 0
    for level, title, page in entries:
        wanted = _norm(title)
        candidates = [i for i, line in enumerate(lines) if page is None or line.page == page]
        found = None
        for i in candidates:
            if i in used:
                continue
            last = _match(lines, i, wanted)
            if last is not None:
                found = (i, last)
                break
        if found is None:
            missing += 1
            continue
        first, last = found
        used.update(range(first, last + 1))
        marks.append(
            HeadingMark(lines[first].start, lines[last].end, min(max(level, 1), 6), title.strip())
        )
    if missing:
        warnings.append(f"{missing} outline entries were not found in the text")
    marks.sort(key=lambda m: m.start)
    return marks


def _typographic_headings(lines: list[_Line]) -> list[HeadingMark]:
    sizes = [line.size for line in lines if line.size > 0]
    if not sizes:
        return []
    body = statistics.median(sizes)
    body_bold = statistics.median(1.0 if line.bold else 0.0 for line in lines) >= 0.5
    candidates: list[tuple[int, float, bool]] = []  # line index, size (rounded), bold
    for i, line in enumerate(lines):
        text = line.text.strip()
        if not (2 <= len(text) <= _MAX_HEADING_CHARS) or not any(c.isalpha() for c in text):
            continue
        if line.size >= body * _LARGER:
            candidates.append((i, round(line.size * 2) / 2, line.bold))
        elif line.bold and not body_bold and line.size >= body * 0.95:
            candidates.append((i, 0.0, True))  # bold at body size: below every larger size
    if not candidates or len(candidates) > len(lines) * 0.3:
        return []  # nothing stands out, or too much does: typography says nothing here
    ranks = sorted({size for _, size, _ in candidates if size > 0}, reverse=True)
    level_of = {size: min(rank + 1, 6) for rank, size in enumerate(ranks)}
    level_of[0.0] = min(len(ranks) + 1, 6)
    marks: list[HeadingMark] = []
    previous: tuple[int, float, bool] | None = None
    for index, size, bold in candidates:
        line = lines[index]
        if (
            previous is not None
            and previous[0] == index - 1
            and previous[1:] == (size, bold)
            and lines[index - 1].page == line.page
            and line.top - lines[index - 1].bottom < max(line.size, 1.0)
        ):  # a heading wrapped onto a second line: one heading
            last = marks[-1]
            marks[-1] = HeadingMark(last.start, line.end, last.level, f"{last.text} {line.text}")
        else:
            marks.append(HeadingMark(line.start, line.end, level_of[size], line.text.strip()))
        previous = (index, size, bold)
    return marks
