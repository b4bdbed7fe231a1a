"""FictionBook 2 (``.fb2``): the XML e-book format of Russian and Eastern European libraries,
one file holding the book's metadata, text and (base64) images.

Parsed like JATS (``jats.parse_xml``: no DTD loading, no entity resolution, no network,
libxml2's limits on). The text layer we write (``textlayer``), in reading order:
- the book's title (``title-info/book-title``) as the level-1 heading, then its authors on one
  line and its annotation;
- each ``body`` in order: its title (the main body's when it differs from the book title; a
  notes body's, "Notes" if it has none) and epigraphs, then its sections, one heading level
  deeper per nesting, titled by their ``title`` (its paragraphs joined);
- paragraphs (``p``), subtitles, quotations (``cite``) and epigraphs with their
  ``text-author``, poems one verse (``v``) a line, stanza by stanza, tables as pipe rows;
- inline markup (``emphasis``, ``strong``, links, note references) read through as text.
Left out: the rest of the metadata (genres, ids, publisher, document history), images and the
base64 ``binary`` parts, stylesheets, empty lines.
"""

from __future__ import annotations

import re

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.jats import (
    child_named,
    entity_text,
    local_name,
    parse_xml,
    strip_namespaces,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "application/x-fictionbook+xml"

_SPACE = re.compile(r"\s+")


def _text(element: etree._Element | None) -> str:
    """The text of ``element`` on one line (entities of a DTD never loaded as characters)."""
    if element is None:
        return ""
    parts = [element.text or ""]
    for child in element:
        if isinstance(child, etree._Entity):
            parts.append(entity_text(child))
        elif isinstance(child.tag, str) and local_name(child) != "binary":
            parts.append(" " if local_name(child) in ("p", "v") else "")
            parts.append(_text(child))
        parts.append(child.tail or "")
    return _SPACE.sub(" ", "".join(parts)).strip()


def _author(author: etree._Element) -> str:
    names = [
        _text(child_named(author, part)) for part in ("first-name", "middle-name", "last-name")
    ]
    return " ".join(n for n in names if n) or _text(child_named(author, "nickname"))


class _Writer:
    def __init__(self, deadline: Deadline) -> None:
        self.layer = TextLayer()
        self.deadline = deadline
        self.count = 0

    def _tick(self) -> None:
        self.count += 1
        self.deadline.tick(f"element {self.count:,}")

    def book(self, root: etree._Element) -> None:
        info = child_named(child_named(root, "description"), "title-info")
        title = _text(child_named(info, "book-title"))
        if title:
            self.layer.heading(title, 1)
        if info is not None:
            authors = [_author(a) for a in info if local_name(a) == "author"]
            self.layer.paragraph(", ".join(a for a in authors if a))
            annotation = child_named(info, "annotation")
            if annotation is not None:
                self.blocks(annotation, 2)
        level = 2 if title else 1
        for body in root:
            if local_name(body) != "body":
                continue
            heading = _text(child_named(body, "title"))
            if body.get("name") and not heading:
                heading = body.get("name", "").capitalize()
            if heading and heading != title:
                self.layer.heading(heading, level)
                self.blocks(body, level + 1)
            else:
                self.blocks(body, level)

    def blocks(self, element: etree._Element, level: int) -> None:
        for child in element:
            if isinstance(child.tag, str):
                self.block(child, level)

    def block(self, element: etree._Element, level: int) -> None:
        self._tick()
        name = local_name(element)
        if name == "section":
            heading = _text(child_named(element, "title"))
            if heading:
                self.layer.heading(heading, min(level, 6))
            self.blocks(element, level + 1 if heading else level)
        elif name in ("p", "subtitle", "text-author"):
            self.layer.paragraph(_text(element))
        elif name in ("cite", "epigraph", "annotation"):
            self.blocks(element, level)
        elif name == "poem":
            for part in element:
                part_name = local_name(part)
                if part_name == "stanza":
                    self.layer.paragraph(_text(child_named(part, "title")))
                    self.layer.lines([_text(v) for v in part if local_name(v) == "v"])
                elif part_name in ("title", "text-author"):
                    self.layer.paragraph(_text(part))
                elif part_name == "epigraph":
                    self.blocks(part, level)
        elif name == "table":
            rows = [
                [_text(cell) for cell in row if local_name(cell) in ("td", "th")]
                for row in element
                if local_name(row) == "tr"
            ]
            first = next((r for r in element if local_name(r) == "tr"), None)
            header = int(first is not None and all(local_name(c) == "th" for c in first))
            self.layer.table(rows, header_rows=header)
        # title (written by its section), image, empty-line, binary: nothing to read


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a FictionBook."""
    key = document.source_key
    if not raw.strip():
        raise EmptyDocumentError(key, "the file is empty")
    root = parse_xml(raw, key)
    strip_namespaces(root)
    if local_name(root) != "FictionBook":
        raise CorruptDocumentError(
            key, f"not a FictionBook: the root element is <{local_name(root) or '?'}>"
        )
    writer = _Writer(current_deadline(key))
    writer.book(root)
    return writer.layer.parsed(document, "the FictionBook holds no text")


__all__ = ["MEDIA_TYPE", "parse"]
