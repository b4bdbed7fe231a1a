"""Typed parse errors: each names the document (its source key) and the problem."""

from __future__ import annotations


class DocumentError(ValueError):
    """A document that cannot be parsed. ``str()`` reads ``<source key>: <problem>``."""

    def __init__(self, source_key: str, problem: str) -> None:
        super().__init__(f"{source_key}: {problem}")
        self.source_key = source_key
        self.problem = problem


class UnsupportedFormatError(DocumentError):
    """No parser for this media type or extension."""


class EncodingError(DocumentError):
    """Bytes that are not text in the accepted encodings (binary behind a text extension, …)."""


class EmptyDocumentError(DocumentError):
    """A file with no bytes, or no text at all."""


class CorruptDocumentError(DocumentError):
    """A truncated, encrypted or otherwise unreadable file."""


class DocumentTooLargeError(DocumentError):
    """Over the configured size limit."""


class ParseTimeoutError(DocumentError):
    """Parsing ran past its time budget (checked between pages: a hostile PDF cannot hang a run)."""
