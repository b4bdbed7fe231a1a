"""Chunking errors: each names the document (its source key) and the problem."""

from __future__ import annotations

from agrag_pipeline.parsing.errors import DocumentError


class ChunkingError(DocumentError):
    """A document the chunker cannot cut within the settings (e.g. a heading path so long that
    its label leaves no room for text). ``str()`` reads ``<source key>: <problem>``."""
