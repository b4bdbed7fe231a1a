"""SVG drawings (``.svg``; ``.svgz`` is a gzip container whose member is the drawing): the words a
viewer shows and the ones it describes the drawing with, never the geometry.

Read as generic XML, a drawing is its attributes (``g.path@d: M -9,-15 H 4 C 12,...``): noise
that buries the labels of a diagram. Here the text layer is the document's ``<title>`` and
``<desc>``, then each ``<text>`` element (its ``<tspan>``/``<textPath>`` pieces joined; one
line per element, or per ``<tspan>`` placed on a line of its own by ``x``/``dy``), Inkscape's
flowed text (``<flowPara>``) and a ``<foreignObject>``'s HTML text (draw.io writes its labels
there), in document order; of a ``<switch>``, its first child only (the label's HTML, not its plain
fallback). A shape's own ``<title>`` is a tooltip (Graphviz writes the node's id there) and is
left out. Graphviz's and draw.io's diagrams, charts and annotated figures read
as their labels. A drawing without words has no text: no chunks, a note (``parse_document``),
as for a picture. The XML is parsed as every XML file is (``jats.parse_xml``: no entity
expansion, no external reads).
"""

from __future__ import annotations

import re

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import EmptyDocumentError
from agrag_pipeline.parsing.jats import local_name, parse_xml
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, build_sections

MEDIA_TYPE = "image/svg+xml"

#: Elements whose text is a line of its own (a label, a flowed paragraph, an HTML block).
_LINE_ELEMENTS = frozenset({"text", "flowPara", "p", "div", "li", "td", "th"})
#: Elements never read: styles, scripts, editor metadata, and what is defined for reuse.
_SKIPPED = frozenset({"style", "script", "defs", "font", "metadata"})


def _text_of(element: etree._Element) -> str:
    """All text inside ``element``, whitespace collapsed (a ``<tspan>`` placed on a line of its
    own keeps it: ``TspanLines``)."""
    pieces: list[str] = []
    lines = TspanLines()
    for node in element.iter():
        if not isinstance(node.tag, str):
            continue
        piece = node is not element and local_name(node) == "tspan"
        if piece and lines.starts_line(node.get("x"), node.get("y"), node.get("dy")):
            pieces.append("\n")
        for run in (node.text, node.tail if node is not element else None):
            if run:
                pieces.append(shown_run(run))
    text_lines = ("".join(pieces)).split("\n")
    return "\n".join(" ".join(line.split()) for line in text_lines if line.strip())


def shown_run(run: str) -> str:
    """A run of a ``<text>`` element's text as a viewer shows it: the source's line breaks are
    indentation, not the drawing's, so a blank run holding one shows nothing ("Liège</tspan>\n\t
    <tspan>, éditions") and a line break inside a run is a space. Also HTML's inline SVG."""
    if not run.strip() and "\n" in run:
        return ""
    return run.replace("\n", " ")


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _first_number(value: str | None) -> float | None:
    match = _NUMBER.search(value or "")
    return float(match.group()) if match else None


class TspanLines:
    """Which ``<tspan>`` pieces of one ``<text>`` start a line: a ``dy`` other than zero, a
    ``y`` other than the line's, or an ``x`` back to the left of the last piece's. Layout
    programs (InDesign's SVG export) place every piece by ``x`` and ``y``, the pieces of one
    line at one ``y``: an ``x`` alone is no new line."""

    def __init__(self) -> None:
        self.y: float | None = None
        self.x: float | None = None

    def starts_line(self, x: str | None, y: str | None, dy: str | None) -> bool:
        new_line = False
        shift = _first_number(dy)
        if shift:
            new_line = True
        at_y = _first_number(y)
        if at_y is not None:
            new_line = new_line or (self.y is not None and abs(at_y - self.y) > 0.01)
            self.y = at_y
        at_x = _first_number(x)
        if at_x is not None:
            new_line = new_line or (at_y is None and self.x is not None and at_x < self.x)
            self.x = at_x
        return new_line


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The drawing's title and description, then its labels in document order."""
    key = document.source_key
    title, lines = drawing_text(parse_xml(raw, key), key)
    if not title and not lines:
        raise EmptyDocumentError(key, "the drawing holds no text (no title, label or description)")
    if title:
        document.metadata["title"] = title
    text = "\n".join([title, "", *lines] if title else lines)
    headings = [HeadingMark(0, len(title), 1, title)] if title else []
    sections = build_sections(text, document, headings, [])
    return ParsedDocument(document=document, text_layer=text, sections=sections)


def drawing_text(root: etree._Element, key: str) -> tuple[str, list[str]]:
    """(the drawing's own title, its description and labels, a line each, in document order).
    Also an EPUB's pages drawn as SVG (``epub``)."""
    deadline = current_deadline(key)
    title = ""
    lines: list[str] = []
    stack = [root]
    seen = 0
    while stack:
        element = stack.pop()
        seen += 1
        if seen % 4096 == 0:
            deadline.tick(f"SVG element {seen:,}")
        if not isinstance(element.tag, str):
            continue
        name = local_name(element)
        if name in _SKIPPED:
            continue
        if name in ("title", "desc"):
            # The drawing's own; a shape's is a tooltip (Graphviz: the node's id), left out.
            if element.getparent() is root:
                if name == "title" and not title:
                    title = _text_of(element)
                elif text := _text_of(element):
                    lines.append(text)
            continue
        if name == "switch":  # a viewer shows its first child it can: draw.io's HTML label
            children = [c for c in element if isinstance(c.tag, str)]
            stack.extend(children[:1])
            continue
        if name in _LINE_ELEMENTS:
            text = _text_of(element)
            if text:
                lines.append(text)
            continue
        stack.extend(reversed([c for c in element if isinstance(c.tag, str)]))
    return title, lines


__all__ = ["MEDIA_TYPE", "TspanLines", "drawing_text", "parse", "shown_run"]
