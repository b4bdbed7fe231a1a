"""The data contract: pydantic v2 models that other systems (graph stores, loaders) read."""

from agrag_pipeline.models.base import DataPoint
from agrag_pipeline.models.chunk import Chunk
from agrag_pipeline.models.document import PROJECT_NAMESPACE, Document
from agrag_pipeline.models.node_record import NodeRecord
from agrag_pipeline.models.provenance import (
    CharSpan,
    PageBox,
    PageProvenance,
    Provenance,
    TextProvenance,
)
from agrag_pipeline.models.section import Section, SectionKind

__all__ = [
    "PROJECT_NAMESPACE",
    "CharSpan",
    "Chunk",
    "DataPoint",
    "Document",
    "NodeRecord",
    "PageBox",
    "PageProvenance",
    "Provenance",
    "Section",
    "SectionKind",
    "TextProvenance",
]
