"""The headings a tagged PDF declares in its structure tree.

Why: Word, LibreOffice and accessible (PDF/UA, Section 508) documents tag each heading as
``H1``-``H6`` (or ``H`` inside nested ``Sect`` elements, and the document's ``Title``): the
author's own headings, as a Word file's heading styles are. A PDF without an outline had only
its typography to go by, which takes a title's second line or a bold caption for a heading and
misses a subheading set in bold at the body's size. The parse matches these titles to their
lines as it matches an outline's (``pdf._outline_headings``): exact text, on their page, in
heading type.

Each heading element's text is the text of the page's objects its marked-content ids name
(``/MCID``), read through PDFium; an element with no such text gives its ``/ActualText``. The
rest of what tags declare is used elsewhere: a heading set by hand in a tagged heading's look
(``pdf._with_lines_set_alike``), content marked ``/Artifact`` (``pdf_layout._ArtifactMarks``).
Budgets: ``MAX_ELEMENTS`` elements are visited in a document (a larger tree is not followed:
the parse says so and goes by the outline or typography), ``MAX_HEADINGS`` headings kept.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pypdfium2
import pypdfium2.raw as pdfium_c

#: Elements visited in one document, all pages together; a tree past it is not followed.
MAX_ELEMENTS = 200_000
#: Headings kept from one document.
MAX_HEADINGS = 5_000
#: Deeper than this, a tree is no document's structure (and recursion must stop).
_MAX_DEPTH = 64

_HEADING_LEVELS = {f"H{n}": n for n in range(1, 7)}
_SECTIONS = frozenset({"Sect", "Part", "Art", "Chapter", "Section"})


class TaggedHeadings:
    """Collects the declared headings page by page, while the parse has each page open."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, str, int]] = []  # (level, text, 1-based page)
        self.paragraphs = 0  # ``P`` elements seen: the share of headings says if tags are sane
        self.has_title = False
        self._budget = MAX_ELEMENTS

    def read_page(
        self, page: pypdfium2.PdfPage, number: int, textpage: pypdfium2.PdfTextPage
    ) -> None:
        """Add the heading elements of ``page`` (page ``number``, from 1; ``textpage``: its
        text, which PDFium reads an object's text through)."""
        if self._budget <= 0 or len(self.entries) >= MAX_HEADINGS:
            return
        tree = pdfium_c.FPDF_StructTree_GetForPage(page.raw)
        if not tree:
            return
        try:
            found: list[tuple[str, int, list[int], str]] = []
            for k in range(pdfium_c.FPDF_StructTree_CountChildren(tree)):
                child = pdfium_c.FPDF_StructTree_GetChildAtIndex(tree, k)
                if child:
                    self._walk(child, 0, 0, found)
            if found:
                self._add(page, number, textpage, found)
        finally:
            pdfium_c.FPDF_StructTree_Close(tree)

    def levelled(self) -> list[tuple[int, str, int | None]]:
        """The entries, ``Title`` at level 1 and the headings one level under it if there is
        one, in the outline's shape (level, title, page)."""
        shift = 1 if self.has_title else 0
        return [
            (1 if level == 0 else min(level + shift, 6), text, page)
            for level, text, page in self.entries
        ]

    @property
    def cut_short(self) -> bool:
        """The tree was larger than ``MAX_ELEMENTS``: what was read is not the whole."""
        return self._budget <= 0

    def plausible(self) -> bool:
        """Tags to follow: read whole, and not marking most text as headings."""
        if not self.entries or self.cut_short:
            return False
        return len(self.entries) <= 20 or len(self.entries) <= self.paragraphs

    def _walk(
        self, element: Any, depth: int, sections: int, found: list[tuple[str, int, list[int], str]]
    ) -> None:
        self._budget -= 1
        if self._budget <= 0 or depth > _MAX_DEPTH:
            return
        kind = _string(pdfium_c.FPDF_StructElement_GetType, element)
        if kind == "P":
            self.paragraphs += 1
        level = _HEADING_LEVELS.get(kind)
        if kind == "H":
            level = max(sections, 1)
        elif kind == "Title":
            level = 0
        if level is not None:
            ids = list(self._marked_content_ids(element, depth))
            found.append(
                (kind, level, ids, _string(pdfium_c.FPDF_StructElement_GetActualText, element))
            )
            return
        inside = sections + 1 if kind in _SECTIONS else sections
        for k in range(pdfium_c.FPDF_StructElement_CountChildren(element)):
            if self._budget <= 0:
                return
            child = pdfium_c.FPDF_StructElement_GetChildAtIndex(element, k)
            if child:
                self._walk(child, depth + 1, inside, found)

    def _marked_content_ids(self, element: Any, depth: int) -> Iterator[int]:
        """The marked-content ids of ``element`` and of the elements inside it (a heading's
        ``Span``, ``Link``), within the document's budget (a tree may loop back on itself)."""
        for k in range(pdfium_c.FPDF_StructElement_GetMarkedContentIdCount(element)):
            self._budget -= 1
            if self._budget <= 0:
                return
            mcid = pdfium_c.FPDF_StructElement_GetMarkedContentIdAtIndex(element, k)
            if mcid >= 0:
                yield mcid
        if depth > _MAX_DEPTH:
            return
        for k in range(pdfium_c.FPDF_StructElement_CountChildren(element)):
            self._budget -= 1
            if self._budget <= 0:
                return
            child = pdfium_c.FPDF_StructElement_GetChildAtIndex(element, k)
            if child:
                yield from self._marked_content_ids(child, depth + 1)

    def _add(
        self,
        page: pypdfium2.PdfPage,
        number: int,
        textpage: pypdfium2.PdfTextPage,
        found: list[tuple[str, int, list[int], str]],
    ) -> None:
        wanted = {mcid for _, _, ids, _ in found for mcid in ids}
        pieces = _marked_pieces(page, textpage, wanted)
        for kind, level, ids, actual in found:
            # One heading's ids in its order, joined as one run of objects: a producer that
            # gives each line of a wrapped heading an id of its own has the same line break.
            marked = _joined([piece for mcid in ids for piece in pieces.get(mcid, [])])
            text = " ".join(marked.split()) or " ".join(actual.split())
            if not text:
                continue
            self.has_title = self.has_title or kind == "Title"
            self.entries.append((level, text, number))
            if len(self.entries) >= MAX_HEADINGS:
                return


_Piece = tuple[str, tuple[float, float, float, float]]  # a text object's text and bounds


def _marked_pieces(
    page: pypdfium2.PdfPage, textpage: pypdfium2.PdfTextPage, wanted: set[int]
) -> dict[int, list[_Piece]]:
    """The text objects whose marked-content id is ``wanted``, by id, in content order
    (objects inside form XObjects included)."""
    parts: dict[int, list[_Piece]] = {}

    def visit(count: int, get: Callable[[int], Any], depth: int) -> None:
        for k in range(count):
            obj = get(k)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_TEXT:
                mcid = pdfium_c.FPDFPageObj_GetMarkedContentID(obj)
                if mcid in wanted:
                    text = _object_text(obj, textpage.raw)
                    parts.setdefault(mcid, []).append((text, _bounds(obj)))
            elif kind == pdfium_c.FPDF_PAGEOBJ_FORM and depth < 8:
                inside = pdfium_c.FPDFFormObj_CountObjects(obj)
                visit(inside, partial(pdfium_c.FPDFFormObj_GetObject, obj), depth + 1)

    visit(
        pdfium_c.FPDFPage_CountObjects(page.raw),
        partial(pdfium_c.FPDFPage_GetObject, page.raw),
        0,
    )
    return parts


def _joined(pieces: list[_Piece]) -> str:
    """Text objects' texts in order, a space where the next starts another line (a producer
    writes each line of a wrapped heading as an object of its own, without the space the line
    break stands for). Never
    between objects of one line: producers cut a line into objects inside words (Chrome at
    each kerning pair), and glyph boxes are too loose to tell a word space from a kern."""
    out: list[str] = []
    previous: tuple[float, float] | None = None
    for text, (_, bottom, _, top) in pieces:
        if previous is not None and out and text:
            p_bottom, p_top = previous
            height = max(top - bottom, p_top - p_bottom, 1.0)
            other_line = abs((top + bottom) - (p_top + p_bottom)) / 2 > height / 2
            if other_line and not out[-1].endswith(" ") and not text.startswith(" "):
                out.append(" ")
        out.append(text)
        previous = (bottom, top)
    return "".join(out)


def _bounds(obj: Any) -> tuple[float, float, float, float]:
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    if not pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
        return (0.0, 0.0, 0.0, 0.0)
    return (left.value, bottom.value, right.value, top.value)


def _object_text(obj: Any, textpage: Any) -> str:
    size = pdfium_c.FPDFTextObj_GetText(obj, textpage, None, 0)  # bytes, with the NUL
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDFTextObj_GetText(
        obj, textpage, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort)), size
    )
    return buffer.raw[: size - 2].decode("utf-16-le", errors="replace").replace("\x00", "")


def _string(function: Any, element: Any) -> str:
    size = function(element, None, 0)  # bytes, with the NUL
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    function(element, buffer, size)
    return buffer.raw[: size - 2].decode("utf-16-le", errors="replace")
