"""PPTX (PowerPoint 2007+) with python-pptx (MIT) for the package and object model.

python-pptx gives slide order, placeholder positions inherited from layouts, notes slides and
chart data; the shape tree is walked over its XML (python-pptx skips ``mc:AlternateContent``
and shapes it does not know, which hold text too). Before python-pptx sees the bytes, the
package is checked by ``archive.open_zip`` (zip-bomb checks) and every XML part is refused if
it declares a DTD (billion laughs, external entities); a Strict OOXML package is rewritten to
Transitional names in memory, which python-pptx alone would refuse.

Text layer (blocks separated by a blank line, see ``word.Writer``), per slide in order:
- the slide title (its ``title``/``ctrTitle`` placeholder) as a level-1 heading; a slide
  without one is titled by a single short line at its top when it has one (a text box used as
  a title), else ``"Slide N"``. A slide with no text at all is left out;
- shapes in reading order: top to bottom, left to right by position (shapes whose tops are
  within 2% of the slide height form one row); a group's members in their own order at the
  group's place;
- a text frame is a block of its paragraphs, one per line; bulleted and numbered paragraphs
  (explicit bullets, or body placeholders unless the paragraph, the placeholder's or its
  layout's list style says ``buNone``) start with ``-`` or their number, indented two spaces
  per level; equations are their linear text (``omml.py``);
- a table is a table section (``| a | b |`` rows, the first row the header of a table of two
  or more rows; a merged cell repeats its text in every cell it covers); a chart is its data
  table (categories by series) after its title; SmartArt is its node texts, one per line;
- a picture is ``[Image: alt text]`` when it has alt text (a file name is not alt text);
- a shape this module does not recognise is reduced to the text of all its ``a:t``;
- the speaker notes are a child section headed ``Notes``, the slide's comments (legacy and
  modern) one headed ``Comments``, each ``[author: Name (initials), time: ...]: text``.
Hidden slides are read like the others. No page spans: a slide is not a page of flowing text
(its title, or ``Slide N``, is in the heading path).
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lxml import etree
from pptx import Presentation
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.shapetree import SlideShapeFactory

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import omml
from agrag_pipeline.parsing.archive import (
    MAX_XML_PART_BYTES,
    open_zip,
    parse_xml,
    read_member,
    refuse_dtd,
    transitional_uri,
)
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.charts import chart_table
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, build_sections
from agrag_pipeline.parsing.word import Writer, clean, comment_line, diagram_lines, is_file_name

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
MACRO_MEDIA_TYPE = "application/vnd.ms-powerpoint.presentation.macroEnabled.12"

P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
DGM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
P188 = "http://schemas.microsoft.com/office/powerpoint/2018/8/main"
MODERN_COMMENTS = "http://schemas.microsoft.com/office/2018/10/relationships/comments"
LEGACY_COMMENTS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments"
AUTHORS = "http://schemas.microsoft.com/office/2018/10/relationships/authors"
LEGACY_AUTHORS = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/commentAuthors"
)

NOTES, COMMENTS = "Notes", "Comments"
#: Shapes whose tops differ by less than this share of the slide height are one row.
ROW_TOLERANCE = 0.02
#: An untitled slide's top line is its title when it is this short …
_MAX_TITLE_WORDS = 15
#: … and starts in this top share of the slide.
_TITLE_ZONE = 0.25
_TITLE_TYPES = frozenset({"title", "ctrTitle"})
_NO_BULLET_TYPES = frozenset({"title", "ctrTitle", "subTitle", "dt", "ftr", "sldNum", "hdr"})
_SHAPES = frozenset({"sp", "pic", "grpSp", "graphicFrame", "cxnSp", "contentPart"})
_AUTONUM = re.compile(r"(arabic|alphaLc|alphaUc|romanLc|romanUc)(.*)")


def _p(local: str) -> str:
    return f"{{{P}}}{local}"


def _a(local: str) -> str:
    return f"{{{A}}}{local}"


# --- the package: checked, and Strict mapped to Transitional ---------------------------------


#: The main part of a presentation as python-pptx accepts it, and of a show (``.ppsx``) and a
#: template (``.potx``), macro-enabled or not, which it refuses though their parts are a
#: presentation's: their packages are read with the presentation's content type.
_PRESENTATION_MAIN = (
    b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
)
_SHOW_OR_TEMPLATE_MAIN = (
    b"application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml",
    b"application/vnd.openxmlformats-officedocument.presentationml.template.main+xml",
    b"application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml",
    b"application/vnd.ms-powerpoint.template.macroEnabled.main+xml",
)
_CONTENT_TYPES = "[Content_Types].xml"


def checked_package(raw: bytes, source_key: str, deadline: Deadline) -> bytes:
    """``raw`` after the bomb and DTD checks; a Strict package rewritten with Transitional names,
    a show's or a template's with a presentation's main content type."""
    with open_zip(raw, source_key) as archive:
        xml_parts: list[zipfile.ZipInfo] = []
        strict = show_or_template = False
        for info in archive.infolist():
            if info.filename.lower().endswith((".xml", ".rels", ".vml")):
                deadline.tick(f"part {info.filename}")
                data = read_member(archive, info.filename, source_key, max_bytes=MAX_XML_PART_BYTES)
                refuse_dtd(data, source_key, info.filename)
                strict = strict or b"http://purl.oclc.org/ooxml/" in data
                if info.filename == _CONTENT_TYPES:
                    show_or_template = any(t in data for t in _SHOW_OR_TEMPLATE_MAIN)
                xml_parts.append(info)
        if not strict and not show_or_template:
            return raw
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as rewritten:
            for info in archive.infolist():
                deadline.check(f"part {info.filename}")
                data = read_member(archive, info.filename, source_key)
                if info.filename == _CONTENT_TYPES:
                    for main in _SHOW_OR_TEMPLATE_MAIN:
                        data = data.replace(main, _PRESENTATION_MAIN)
                if strict and info in xml_parts:
                    root = parse_xml(data, source_key, info.filename)
                    for rel in root.iter(f"{{{PKG_REL}}}Relationship"):
                        rel.set("Type", transitional_uri(rel.get("Type", "")))
                    data = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
                rewritten.writestr(info.filename, data)
        return out.getvalue()


# --- text ------------------------------------------------------------------------------------


def _alternate(element: etree._Element) -> etree._Element | None:
    choice = element.find(f"{{{MC}}}Choice")
    return choice if choice is not None else element.find(f"{{{MC}}}Fallback")


def paragraph_text(p: etree._Element) -> str:
    """The text of one ``a:p``: runs, fields, line breaks, equations."""
    out: list[str] = []
    stack: list[etree._Element] = list(reversed(list(p)))
    math_end = -1  # where the last equation ended in ``out``
    while stack:
        node = stack.pop()
        tag = node.tag
        if not isinstance(tag, str):
            continue
        if omml.is_math(node):
            if math_end == len(out):
                out.append(" ")  # equations side by side: "a=b c=d", not "a=bc=d"
            out.append(omml.text(node))
            math_end = len(out)
        elif tag == _a("t"):
            out.append(node.text or "")
        elif tag == _a("br"):
            out.append("\n")
        elif tag == f"{{{MC}}}AlternateContent":
            chosen = _alternate(node)
            if chosen is not None:
                stack.extend(reversed(list(chosen)))
        elif tag in (_a("r"), _a("fld")) or not tag.endswith("Pr"):
            stack.extend(reversed(list(node)))
    return "".join(out)


_ROMAN = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc")]
_ROMAN += [(50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]


def _auto_number(scheme: str, n: int) -> str:
    match = _AUTONUM.match(scheme)
    kind, punct = (match.group(1), match.group(2)) if match else ("arabic", "Period")
    if kind.startswith("alpha"):
        label = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
    elif kind.startswith("roman"):
        label, rest = "", n
        for value, letters in _ROMAN:
            while rest >= value:
                label, rest = label + letters, rest - value
    else:
        label = str(n)
    if kind.endswith("Uc"):
        label = label.upper()
    if punct.startswith("ParenBoth"):
        return f"({label})"
    if punct.startswith("ParenR"):
        return f"{label})"
    if punct.startswith("Period"):
        return f"{label}."
    return label


def unbulleted_levels(*tx_bodies: etree._Element | None) -> frozenset[int]:
    """The paragraph levels (0-8) whose list style (``a:lstStyle``) says ``a:buNone``."""
    levels = set()
    for tx in tx_bodies:
        style = tx.find(_a("lstStyle")) if tx is not None else None
        if style is None:
            continue
        for level in range(9):
            ppr = style.find(_a(f"lvl{level + 1}pPr"))
            if ppr is not None and ppr.find(_a("buNone")) is not None:
                levels.add(level)
    return frozenset(levels)


def text_frame_lines(
    tx_body: etree._Element, bulleted: bool, plain_levels: frozenset[int] = frozenset()
) -> list[str]:
    """The paragraphs of a ``txBody`` as lines, list markers and indentation included.

    ``bulleted``: paragraphs are bullets unless they say otherwise (a body placeholder),
    except at ``plain_levels`` (its list style, or its layout's, has ``buNone`` there)."""
    lines: list[str] = []
    counters: dict[int, tuple[str, int]] = {}
    for p in tx_body.iter(_a("p")):
        text = paragraph_text(p).strip()
        ppr = p.find(_a("pPr"))
        level = 0
        if ppr is not None:
            try:
                level = max(0, min(int(ppr.get("lvl", "0")), 8))
            except ValueError:
                level = 0
        marker: str | None = "-" if bulleted and level not in plain_levels else None
        if ppr is not None:
            if ppr.find(_a("buNone")) is not None:
                marker = None
            elif (auto := ppr.find(_a("buAutoNum"))) is not None:
                scheme = auto.get("type", "arabicPeriod")
                try:
                    start = int(auto.get("startAt", "1"))
                except ValueError:
                    start = 1
                previous = counters.get(level)
                number = previous[1] + 1 if previous and previous[0] == scheme else start
                counters[level] = (scheme, number)
                marker = _auto_number(scheme, number)
            elif ppr.find(_a("buChar")) is not None or ppr.find(_a("buBlip")) is not None:
                marker = "-"
        if not text:
            continue
        for deeper in [k for k in counters if k > level]:
            del counters[deeper]
        text = re.sub(r"[ \t]*\n[ \t]*", " / ", text) if "\n" in text else text
        lines.append(f"{'  ' * level}{marker} {text}" if marker else text)
    return lines


def _all_text(element: etree._Element) -> list[str]:
    """Fallback: the text of every paragraph (or loose ``a:t``) under ``element``."""
    paragraphs = [clean(paragraph_text(p)) for p in element.iter(_a("p"))]
    lines = [p for p in paragraphs if p]
    if lines:
        return lines
    return [t for t in (clean(node.text or "") for node in element.iter(_a("t"))) if t]


# --- slides ----------------------------------------------------------------------------------


@dataclass
class _Item:
    top: float
    left: float
    order: int
    element: etree._Element


def _placeholder(element: etree._Element) -> etree._Element | None:
    for path in ("p:nvSpPr/p:nvPr/p:ph", "p:nvPicPr/p:nvPr/p:ph", "p:nvGraphicFramePr/p:nvPr/p:ph"):
        found = element.find(path, {"p": P})
        if found is not None:
            return found
    return None


class _Slides:
    def __init__(self, presentation: Any, source_key: str, deadline: Deadline) -> None:
        self.presentation = presentation
        self.source_key = source_key
        self.deadline = deadline
        self.writer = Writer()
        self.warnings: list[str] = []
        height = presentation.slide_height or 6858000
        self.tolerance = max(1.0, float(height) * ROW_TOLERANCE)
        self.title_zone = float(height) * _TITLE_ZONE
        self.legacy_authors: dict[str, tuple[str, str]] | None = None
        self.modern_authors: dict[str, tuple[str, str]] | None = None

    # reading order

    def _items(self, container: etree._Element, shapes: Any) -> list[_Item]:
        items: list[_Item] = []
        for element in self._shape_elements(container):
            # A shape without a position (none of its own, none inherited) goes after the
            # placed ones, in document order.
            top = left = math.inf
            try:
                shape = SlideShapeFactory(element, shapes)
                if shape.top is not None and shape.left is not None:
                    top, left = float(shape.top), float(shape.left)
            except Exception:  # a shape python-pptx cannot place (an unknown element)
                pass
            items.append(_Item(top, left, len(items), element))
        return self._reading_order(items)

    def _shape_elements(self, container: etree._Element) -> Iterable[etree._Element]:
        for child in container:
            if not isinstance(child.tag, str):
                continue
            if child.tag == f"{{{MC}}}AlternateContent":
                chosen = _alternate(child)
                if chosen is not None:
                    yield from self._shape_elements(chosen)
            elif etree.QName(child.tag).localname in _SHAPES:
                yield child
            elif etree.QName(child.tag).localname not in ("nvGrpSpPr", "grpSpPr", "extLst"):
                yield child  # unknown: its text by the fallback

    def _reading_order(self, items: list[_Item]) -> list[_Item]:
        rows: list[list[_Item]] = []
        for item in sorted(items, key=lambda i: (i.top, i.left, i.order)):
            if rows and (item.top - rows[-1][0].top <= self.tolerance or item.top == math.inf):
                rows[-1].append(item)
            else:
                rows.append([item])
        return [i for row in rows for i in sorted(row, key=lambda i: (i.left, i.order))]

    # one slide

    def slide(self, number: int, slide: Any) -> None:
        self.deadline.check(f"slide {number}")
        tree = slide.shapes._spTree
        items = self._items(tree, slide.shapes)
        title: str | None = None
        body: list[_Item] = []
        for item in items:
            ph = _placeholder(item.element)
            if title is None and ph is not None and ph.get("type") in _TITLE_TYPES:
                tx = item.element.find(f"{{{P}}}txBody")
                text = clean(" ".join(_all_text(tx))) if tx is not None else ""
                if text:
                    title = text
                    continue
            body.append(item)
        if title is None:
            title, body = self._top_line_title(body)
        blocks = [block for item in body for block in self._blocks(item.element, slide)]
        notes = self._notes(slide)
        comments = self._comments(slide)
        if title is None and not blocks and not notes and not comments:
            return
        self.writer.heading(title or f"Slide {number}", 1)
        for kind, value in blocks:
            if kind == "table":
                rows, header_rows = value
                self.writer.table(rows, header_rows)
            else:
                self.writer.block(value, kind)
        for heading, lines in ((NOTES, notes), (COMMENTS, comments)):
            if lines:
                self.writer.heading(heading, 2)
                for line in lines:
                    self.writer.block(line, "list" if heading == COMMENTS else "para")

    def _top_line_title(self, body: list[_Item]) -> tuple[str | None, list[_Item]]:
        """A single short line at the top of an untitled slide, alone in its row, as its title."""
        for index, item in enumerate(body):
            tx = item.element.find(f"{{{P}}}txBody")
            lines = _all_text(tx) if tx is not None else []
            if not lines:
                if item.element.find(f".//{{{A}}}t") is not None:
                    return None, body  # the topmost text is not a plain text frame
                continue
            short = len(lines) == 1 and len(lines[0].split()) <= _MAX_TITLE_WORDS
            following = body[index + 1 :]
            alone = not following or following[0].top - item.top > self.tolerance
            if short and alone and item.top <= self.title_zone:
                return lines[0], body[:index] + body[index + 1 :]
            return None, body
        return None, body

    def _blocks(self, element: etree._Element, slide: Any) -> list[tuple[str, Any]]:
        """(kind, value) blocks of one shape: ("para"/"list", text) or ("table", (rows, n))."""
        self.deadline.tick("shape")
        local = etree.QName(element.tag).localname
        if local == "grpSp":
            return [
                b
                for item in self._items(element, slide.shapes)
                for b in self._blocks(item.element, slide)
            ]
        if local == "pic":
            alt = self._alt(element)
            return [("para", f"[Image: {alt}]")] if alt else []
        if local == "graphicFrame":
            return self._graphic_frame(element, slide)
        tx = element.find(f"{{{P}}}txBody")
        if local == "sp" and tx is not None:
            ph = _placeholder(element)
            bulleted = ph is not None and ph.get("type", "body") not in _NO_BULLET_TYPES
            plain = unbulleted_levels(tx, self._layout_body(element, slide)) if bulleted else None
            lines = text_frame_lines(tx, bulleted, plain or frozenset())
            return [("para", "\n".join(lines))] if lines else []
        lines = _all_text(element)
        return [("para", "\n".join(lines))] if lines else []

    def _layout_body(self, element: etree._Element, slide: Any) -> etree._Element | None:
        """The ``txBody`` of the layout placeholder this slide placeholder inherits from."""
        try:
            base = SlideShapeFactory(element, slide.shapes)._base_placeholder  # type: ignore[attr-defined]
        except Exception:  # no layout placeholder: nothing inherited
            return None
        return None if base is None else base._element.find(f"{{{P}}}txBody")

    def _alt(self, element: etree._Element) -> str:
        props = element.find(f"{{{P}}}nvPicPr/{{{P}}}cNvPr")
        if props is None:
            return ""
        alt = clean(props.get("descr") or props.get("title") or "")
        return "" if is_file_name(alt) else alt

    def _graphic_frame(self, element: etree._Element, slide: Any) -> list[tuple[str, Any]]:
        data = element.find(f"{{{A}}}graphic/{{{A}}}graphicData")
        if data is None:
            return []
        table = data.find(_a("tbl"))
        if table is not None:
            return [("table", table_grid(table))]
        uri = data.get("uri", "")
        if uri.endswith("/chart"):
            return self._chart(element, slide)
        if uri.endswith("/diagram"):
            return self._diagram(data, slide)
        lines = _all_text(data)
        return [("para", "\n".join(lines))] if lines else []

    def _chart(self, element: etree._Element, slide: Any) -> list[tuple[str, Any]]:
        try:
            frame = SlideShapeFactory(element, slide.shapes)
            if not isinstance(frame, GraphicFrame):
                return []
            return _chart_blocks(*chart_table(frame.chart))
        except Exception as exc:  # a damaged chart part: say so, keep the rest of the slide
            self.warnings.append(f"a chart could not be read: {type(exc).__name__}: {exc}")
            return []

    def _diagram(self, data: etree._Element, slide: Any) -> list[tuple[str, Any]]:
        rel_ids = data.find(f"{{{DGM}}}relIds")
        rid = rel_ids.get(f"{{{R}}}dm") if rel_ids is not None else None
        try:
            part = slide.part.related_part(rid)
        except Exception:
            return []
        lines = diagram_lines(parse_xml(part.blob, self.source_key, str(part.partname)))
        return [("list", "\n".join(lines))] if lines else []

    # notes and comments

    def _notes(self, slide: Any) -> list[str]:
        if not slide.has_notes_slide:
            return []
        frame = slide.notes_slide.notes_text_frame
        if frame is None:
            return []
        lines = text_frame_lines(frame._txBody, False)
        return ["\n".join(lines)] if lines else []

    def _authors(self, modern: bool) -> dict[str, tuple[str, str]]:
        cached = self.modern_authors if modern else self.legacy_authors
        if cached is not None:
            return cached
        found: dict[str, tuple[str, str]] = {}
        part = self.presentation.part
        kind = AUTHORS if modern else LEGACY_AUTHORS
        for rel in part.rels.values():
            if rel.reltype == kind and not rel.is_external:
                root = parse_xml(rel.target_part.blob, self.source_key, "comment authors")
                for author in root:
                    if isinstance(author.tag, str) and author.get("id") is not None:
                        found[author.get("id", "")] = (
                            clean(author.get("name", "")),
                            clean(author.get("initials", "")),
                        )
        if modern:
            self.modern_authors = found
        else:
            self.legacy_authors = found
        return found

    def _comments(self, slide: Any) -> list[str]:
        lines: list[str] = []
        for rel in slide.part.rels.values():
            if rel.is_external or rel.reltype not in (LEGACY_COMMENTS, MODERN_COMMENTS):
                continue
            modern = rel.reltype == MODERN_COMMENTS
            root = parse_xml(rel.target_part.blob, self.source_key, str(rel.target_part.partname))
            authors = self._authors(modern)
            if not modern:
                for cm in root.iter(_p("cm")):
                    text = clean(cm.findtext(_p("text")) or "")
                    lines.append(
                        comment_line(authors.get(cm.get("authorId", "")), cm.get("dt"), text)
                    )
                continue
            for cm in root.iter(f"{{{P188}}}cm", f"{{{P188}}}reply"):
                body = cm.find(f"{{{P188}}}txBody")
                text = clean(" ".join(_all_text(body))) if body is not None else ""
                lines.append(
                    comment_line(authors.get(cm.get("authorId", "")), cm.get("created"), text)
                )
        return [line for line in lines if line]


def table_grid(table: etree._Element) -> tuple[list[list[str]], int]:
    """The cells of an ``a:tbl`` (merged cells repeated) and its header row count."""
    grid: list[list[str]] = []
    for row_index, tr in enumerate(table.findall(_a("tr"))):
        cells: list[str] = []
        for col, tc in enumerate(tr.findall(_a("tc"))):
            if tc.get("hMerge") in ("1", "true") and cells:
                text = cells[-1]
            elif tc.get("vMerge") in ("1", "true") and row_index and col < len(grid[-1]):
                text = grid[-1][col]
            else:
                body = tc.find(_a("txBody"))
                text = clean(" ".join(_all_text(body))) if body is not None else ""
            cells.append(text)
        grid.append(cells)
    return grid, 1 if len(grid) > 1 else 0


def _chart_blocks(title: str, rows: list[list[str]]) -> list[tuple[str, Any]]:
    blocks: list[tuple[str, Any]] = [("para", title)] if title else []
    if rows:
        blocks.append(("table", (rows, 1)))
    return blocks


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a PPTX package."""
    key = document.source_key
    deadline = current_deadline(key)
    package = checked_package(raw, key, deadline)
    try:
        presentation = Presentation(io.BytesIO(package))
    except Exception as exc:  # python-pptx raises many kinds on a package it cannot read
        raise CorruptDocumentError(
            key, f"not a readable PowerPoint package: {type(exc).__name__}: {exc}"
        ) from exc
    slides = _Slides(presentation, key, deadline)
    for number, slide in enumerate(presentation.slides, start=1):
        slides.slide(number, slide)
    text = slides.writer.value()
    if not text.strip():
        raise EmptyDocumentError(key, "the presentation has no text")
    headings = [HeadingMark(h.start, h.end, h.level, h.text) for h in slides.writer.headings]
    sections = build_sections(text, document, headings, slides.writer.tables)
    return ParsedDocument(
        document=document, text_layer=text, sections=sections, warnings=slides.warnings
    )
