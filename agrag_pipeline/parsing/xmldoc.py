"""Generic XML (an ``.xml`` that is not a JATS article): element text under its element path.

Parsed like JATS (``jats.parse_xml``): lxml with no DTD loading, no entity resolution, no
network, libxml2's depth and size limits on; a DTD that declares entities (billion laughs, an
external entity reading a local file) is refused before parsing.

The element tree is read as the mapping JSON would give (``structured`` writes it, so XML reads
like JSON and YAML): child elements are keys by their local name (namespace prefixes dropped),
repeated children a list, attributes keys ``@name`` (written ``title@lang: en``), an element's
own text its value. So the root's repeated children (``<factbook><country>…``) are records,
each a section titled by a ``name``/``title``/``id`` child or attribute. An element of mixed
content (text and child elements, as in ``<p>a <b>bold</b> word</p>``) is one value, its text
read through (``a bold word``), as is one holding entities a DTD we never load would define
(``&nbsp;``, read as their HTML5 characters); comments and processing instructions are left
out; empty
elements without attributes write nothing. The root element's name is recorded as
``xml_root`` in the document's metadata.
"""

from __future__ import annotations

import html.entities
import re

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import check_size, current_deadline
from agrag_pipeline.parsing.errors import DocumentTooLargeError
from agrag_pipeline.parsing.jats import parse_xml
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.structured import (
    MAX_DEPTH,
    MAX_VALUES,
    OWN_TEXT,
    Attribute,
    StructuredWriter,
    finish,
    write_document,
)

MEDIA_TYPE = "application/xml"

_SPACE = re.compile(r"\s+")


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1] if name.startswith("{") else name


def _full_text(element: etree._Element) -> str:
    """All text inside ``element`` in order, entities left unresolved (``&nbsp;`` of a DTD we
    never load) read as their HTML5 characters."""
    parts = [element.text or ""]
    for child in element:
        if isinstance(child.tag, str):
            parts.append(_full_text(child))
        elif isinstance(child, etree._Entity):
            name = (child.name or "").strip("&;")
            parts.append(html.entities.html5.get(name + ";", ""))
        parts.append(child.tail or "")
    return "".join(parts)


class _Reader:
    def __init__(self, source_key: str) -> None:
        self.source_key = source_key
        self.deadline = current_deadline(source_key)
        self.elements = 0

    def value(self, element: etree._Element, depth: int) -> object:
        """The element as a JSON-like value (None: nothing to write)."""
        if depth > MAX_DEPTH:
            raise DocumentTooLargeError(
                self.source_key, f"nested deeper than the limit of {MAX_DEPTH} levels"
            )
        self.elements += 1
        check_size(self.source_key, "elements", self.elements, MAX_VALUES)
        self.deadline.tick(f"element {self.elements:,}")
        attributes: dict[object, object] = {
            Attribute("@" + _local(str(k))): str(v) for k, v in element.attrib.items()
        }
        children = [c for c in element if isinstance(c.tag, str)]
        own = (element.text or "").strip()
        entities = len(children) < len(element)
        if entities or (children and (own or any((c.tail or "").strip() for c in element))):
            own = _SPACE.sub(" ", _full_text(element)).strip()
            children = []
        if not children:
            if not attributes:
                return own or None
            if own:
                attributes[OWN_TEXT] = own
            return attributes
        result = attributes
        for child in children:
            value = self.value(child, depth + 1)
            if value is None:
                continue
            name = _local(str(child.tag))
            if name not in result:
                result[name] = value
                continue
            existing = result[name]
            if isinstance(existing, list):
                existing.append(value)
            else:
                result[name] = [existing, value]
        return result or None


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """An XML document's element text under element paths, records as sections."""
    key = document.source_key
    root = parse_xml(raw, key)
    document.metadata["xml_root"] = _local(str(root.tag))
    value = _Reader(key).value(root, 0)
    writer = StructuredWriter(key)
    write_document(writer, value)
    return finish(writer, document, "XML")


__all__ = ["MEDIA_TYPE", "parse"]
