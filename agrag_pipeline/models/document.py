"""``Document``: one version of a raw document, and the stable logical-document id."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import Field, StringConstraints, model_validator

from agrag_pipeline.models.base import DataPoint

#: The one fixed namespace under which every project UUIDv5 is made. Never change it: other
#: systems join on ids derived from it.
PROJECT_NAMESPACE = uuid.UUID("6f1c5a2e-4b8d-5e0f-9a47-2d3c1b8e7f60")

ContentHash = Annotated[
    str, StringConstraints(min_length=64, max_length=64, pattern="^[0-9a-f]{64}$")
]


class Document(DataPoint):
    """A version of a raw document: where it lives (source key) and what its bytes are.

    ``id`` is always ``node_id_for(source_key)``: stable across content versions, so a renamed
    file is a new logical document and an edited one is the same document with a new
    ``content_hash``.
    """

    source_key: str = Field(min_length=1)
    media_type: str = Field(min_length=1)
    size_bytes: int = Field(ge=0)
    content_hash: ContentHash

    @staticmethod
    def node_id_for(source_key: str) -> uuid.UUID:
        """The document node id for a source key (POSIX path relative to the raw root)."""
        return uuid.uuid5(PROJECT_NAMESPACE, f"document:{source_key}")

    @model_validator(mode="after")
    def _id_follows_source_key(self) -> Document:
        expected = self.node_id_for(self.source_key)
        if self.id is None:
            # validate_assignment would re-enter this validator; bypass it for the derived id.
            object.__setattr__(self, "id", expected)
        elif self.id != expected:
            raise ValueError(
                f"id {self.id} is not Document.node_id_for({self.source_key!r}) = {expected}"
            )
        return self
