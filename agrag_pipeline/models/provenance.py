"""Where a chunk or section came from: character offsets, and pages and boxes for paged sources.

Both kinds carry ``start``/``end``: character offsets into the document version's stored text
layer, so ``provenance.extract(text_layer)`` reproduces the text exactly. A table chunk that
repeats its table's header above its rows names that header's span in ``repeated_header``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, model_validator

#: What separates a repeated table header from the rows below it in a chunk's text.
HEADER_SEPARATOR = "\n"


class CharSpan(BaseModel):
    """A half-open range ``[start, end)`` of Python string indices into a text layer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> CharSpan:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before its start {self.start}")
        return self


class _Located(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    repeated_header: CharSpan | None = None

    @model_validator(mode="after")
    def _ordered(self) -> _Located:
        if self.end < self.start:
            raise ValueError(f"provenance end {self.end} is before its start {self.start}")
        return self

    def extract(self, text_layer: str) -> str:
        """The exact text this provenance names in ``text_layer``."""
        body = text_layer[self.start : self.end]
        if self.repeated_header is None:
            return body
        header = text_layer[self.repeated_header.start : self.repeated_header.end]
        return header + HEADER_SEPARATOR + body


class TextProvenance(_Located):
    """A text source (Markdown, plain text, HTML): character offsets, no page spans."""

    kind: Literal["text"] = "text"


class PageBox(BaseModel):
    """A rectangle on one page, in PDF points, with the corner its coordinates count from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    page: int = Field(ge=1, description="1-based page number")
    # Finite only: an infinite coordinate is no location, and cannot be written as JSON.
    x0: FiniteFloat
    y0: FiniteFloat
    x1: FiniteFloat
    y1: FiniteFloat
    origin: Literal["top-left", "bottom-left"] = "top-left"

    @model_validator(mode="after")
    def _ordered(self) -> PageBox:
        if self.x1 < self.x0 or self.y1 < self.y0:
            raise ValueError(f"box ({self.x0}, {self.y0}, {self.x1}, {self.y1}) is inverted")
        return self


class PageProvenance(_Located):
    """A source with page layout (PDF): the pages the text spans and its boxes on them."""

    kind: Literal["page"] = "page"
    pages: list[int] = Field(min_length=1)
    boxes: list[PageBox] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pages_consistent(self) -> PageProvenance:
        if any(p < 1 for p in self.pages):
            raise ValueError(f"page numbers are 1-based, got {self.pages}")
        if self.pages != sorted(set(self.pages)):
            raise ValueError(f"pages must be ascending and distinct, got {self.pages}")
        stray = {b.page for b in self.boxes} - set(self.pages)
        if stray:
            raise ValueError(f"boxes on pages {sorted(stray)} that are not in pages {self.pages}")
        return self


Provenance = Annotated[TextProvenance | PageProvenance, Field(discriminator="kind")]
