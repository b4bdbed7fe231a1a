"""``Section``: a node of a document's section tree, located in the document's text layer."""

from __future__ import annotations

import uuid
from typing import Literal
from uuid import UUID

from pydantic import Field, model_validator

from agrag_pipeline.models.base import DataPoint
from agrag_pipeline.models.document import PROJECT_NAMESPACE, ContentHash
from agrag_pipeline.models.provenance import CharSpan, PageBox

SectionKind = Literal["text", "table"]


class Section(DataPoint):
    """A heading and the content under it, or a table, in a document version.

    ``start``/``end`` index the version's text layer: ``text_layer[start:end]`` is the section's
    own text (its heading line included, its child sections excluded). A table section keeps the
    span of its header row in ``table_header`` so a chunker that splits it can repeat the header.
    """

    id: UUID | None = None
    document_id: UUID
    content_hash: ContentHash
    ordinal: int = Field(ge=0, description="position in reading order within the document")
    heading: str | None = None
    level: int = Field(ge=0, le=6, description="0 for text before the first heading")
    heading_path: list[str] = Field(default_factory=list)
    kind: SectionKind = "text"
    parent_id: UUID | None = None
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    table_header: CharSpan | None = None
    table_rows: list[CharSpan] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)
    boxes: list[PageBox] = Field(default_factory=list)

    @staticmethod
    def node_id_for(document_id: UUID, content_hash: str, tree_position: str) -> UUID:
        """Deterministic section id: document, version and position in the section tree.

        ``tree_position`` is the path of child indices from the root, e.g. ``"0.2.1"``.
        """
        return uuid.uuid5(
            PROJECT_NAMESPACE, f"section:{document_id}:{content_hash}:{tree_position}"
        )

    @model_validator(mode="after")
    def _consistent(self) -> Section:
        if self.end < self.start:
            raise ValueError(f"section end {self.end} is before its start {self.start}")
        if self.kind != "table" and (self.table_header or self.table_rows):
            raise ValueError("only a table section has a table header or rows")
        return self

    def text_in(self, text_layer: str) -> str:
        """The section's own text, cut from the text layer it was parsed from."""
        return text_layer[self.start : self.end]
