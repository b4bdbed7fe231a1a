"""Plain text: the decoded text is the text layer; one level-0 section, no headings invented.

Guessing headings from capitalisation or underlines would make structure the author did not
write; chunkers split the one section by size anyway.
"""

from __future__ import annotations

from agrag_pipeline.models import Document, Section
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import build_sections

MEDIA_TYPE = "text/plain"


def parse(text: str, document: Document) -> list[Section]:
    """One level-0 section spanning the text (trimmed); none for whitespace-only text."""
    return build_sections(text, document, headings=[], tables=[])


def parsed(text: str, document: Document) -> ParsedDocument:
    """``text`` as the document's text layer, with its one section (``parse``)."""
    return ParsedDocument(document=document, text_layer=text, sections=parse(text, document))
