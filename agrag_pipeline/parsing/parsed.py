"""``ParsedDocument``: what every parser returns, and what the chunker consumes.

Contract (every parser keeps it, tests check it over the whole corpus):
- ``text_layer`` is the document version's text: for plain text and Markdown the decoded source
  itself, for HTML and PDF the extracted text. It is stored with the version, so
  ``text_layer[start:end]`` reproduces any section's or chunk's text exactly.
- ``sections`` are in reading order (ascending ``start``), their spans do not overlap, and each
  is the section's *own* text (its heading line included, its children excluded). Together they
  cover every non-whitespace character of the text layer.
- ``layout`` (paged sources only) maps spans of the text layer to pages and boxes, so a chunk cut
  from any span can name its pages and boxes (``locate``).
"""

from __future__ import annotations

import bisect

from pydantic import BaseModel, ConfigDict, Field

from agrag_pipeline.models import Document, PageBox, Section


class LayoutSpan(BaseModel):
    """A run of the text layer (typically one line of a page) and where it is drawn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    box: PageBox


class ParsedDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    document: Document
    text_layer: str
    sections: list[Section] = Field(default_factory=list)
    layout: list[LayoutSpan] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def paged(self) -> bool:
        """True for a source with page layout (a PDF)."""
        return bool(self.layout)

    def locate(self, start: int, end: int) -> tuple[list[int], list[PageBox]]:
        """Pages and boxes of the layout spans that overlap ``[start, end)``, in layout order."""
        if not self.layout or end <= start:
            return [], []
        starts = [span.start for span in self.layout]
        # The first span that could overlap: the last one starting at or before ``start``.
        first = max(bisect.bisect_right(starts, start) - 1, 0)
        boxes: list[PageBox] = []
        for span in self.layout[first:]:
            if span.start >= end:
                break
            if span.end > start:
                boxes.append(span.box)
        pages = sorted({box.page for box in boxes})
        return pages, boxes
