"""What the pipeline's steps stored, read back: the current version, its sections, its chunks.

The steps (``pipeline``) write these tables; the steps after them, the checks (``validation``)
and the sinks (graph, extraction, index) read them. The readers live here, below all of them,
so a sink never imports the module that runs it (``pipeline`` -> ``runtime`` -> sinks).
A table of another version, or none, is a ``StaleInputError`` naming the upstream failure.
"""

from __future__ import annotations

from typing import Any

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Chunk, Document
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.parsing.parsed import LayoutSpan, ParsedDocument
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import (
    chunks_from_table,
    layout_from_table,
    layout_to_table,
    read_metadata,
    sections_from_table,
)
from agrag_pipeline.storage.warehouse import DamagedFileError

#: The steps in pipeline order (also the Dagster asset names).
STEPS = ("raw_documents", "sections", "chunks", "embeddings")


class StaleInputError(DocumentError):
    """An upstream output belongs to another version of the document than the current one."""


def current_document(warehouse: Warehouse, source_key: str) -> Document:
    """The version that ``raw_documents`` last snapshotted for ``source_key``."""
    document = warehouse.get_document(Document.node_id_for(source_key))
    if document is None:
        raise StaleInputError(source_key, "no snapshot exists: materialise raw_documents first")
    return document


#: Prefix of what a parser recorded in the document's metadata (``text_encoding``...), kept in
#: the sections table's metadata so a reused parse reports it too.
PARSER_METADATA = "parsed."


def load_parsed(warehouse: Warehouse, document: Document) -> ParsedDocument:
    """Rebuild the ParsedDocument of ``document`` from what ``build_sections`` stored."""
    assert document.id is not None
    if not warehouse.has_table("sections", document.id):
        raise _missing(warehouse, document, "sections")
    table = warehouse.read_table("sections", document.id)
    _require_version(warehouse, table, document, "sections")
    meta = read_metadata(table)
    text_sha256 = meta.get("text_sha256")
    recorded = {
        key[len(PARSER_METADATA) :]: value
        for key, value in meta.items()
        if key.startswith(PARSER_METADATA)
    }
    text_layer = warehouse.get_text_layer(document.id, document.content_hash, sha256=text_sha256)
    layout = _stored_layout(warehouse, document, meta)
    if recorded:
        document = document.model_copy(update={"metadata": {**document.metadata, **recorded}})
    return ParsedDocument(
        document=document,
        text_layer=text_layer,
        sections=sections_from_table(table),
        layout=layout,
    )


def _stored_layout(
    warehouse: Warehouse, document: Document, sections_meta: dict[str, str]
) -> list[LayoutSpan]:
    """The version's page layout. A damaged or missing one (set aside by the warehouse) is
    parsed again from the snapshot when that gives the very text the sections were built on,
    so no step fails on it run after run and no chunk loses its pages; otherwise the error,
    naming the file, stands (the sections step, with its settings, rebuilds it)."""
    assert document.id is not None
    spans = sections_meta.get("layout_spans")
    try:
        table = warehouse.get_layout(
            document.id, document.content_hash, spans=int(spans) if spans else None
        )
    except DamagedFileError as exc:
        raw = warehouse.get_raw(document.id, document.content_hash)
        parsed = parse_document(raw, document.source_key, document.media_type)
        text = parsed.text_layer.encode("utf-8", "surrogatepass")
        if not parsed.layout or content_hash(text) != sections_meta.get("text_sha256"):
            raise
        warehouse.put_layout(document.id, document.content_hash, layout_to_table(parsed.layout))
        warehouse.report_repair(f"{exc}; parsed again from the snapshot")
        return parsed.layout
    return layout_from_table(table) if table is not None else []


def load_chunks(warehouse: Warehouse, document: Document) -> list[Chunk]:
    assert document.id is not None
    if not warehouse.has_table("chunks", document.id):
        raise _missing(warehouse, document, "chunks")
    return load_chunks_table(warehouse, document)[0]


def load_chunks_table(warehouse: Warehouse, document: Document) -> tuple[list[Chunk], Any]:
    """The chunks of ``document`` and the ``agrag.*`` metadata of the very table read."""
    assert document.id is not None
    if not warehouse.has_table("chunks", document.id):
        raise _missing(warehouse, document, "chunks")
    table = warehouse.read_table("chunks", document.id)
    _require_version(warehouse, table, document, "chunks")
    return chunks_from_table(table), read_metadata(table)


def require_stored(warehouse: Warehouse, document: Document, what: str) -> None:
    """Raise ``StaleInputError`` unless ``what`` (a step's table) is stored for the document,
    naming the upstream failure if one is recorded (for steps outside this module: sinks)."""
    assert document.id is not None
    if not warehouse.has_table(what, document.id):
        raise _missing(warehouse, document, what)


def _require_version(warehouse: Warehouse, table: Any, document: Document, what: str) -> None:
    stored = read_metadata(table).get("content_hash")
    if stored != document.content_hash:
        raise _missing(warehouse, document, what, stored_version=stored)


def _missing(
    warehouse: Warehouse, document: Document, what: str, stored_version: str | None = None
) -> StaleInputError:
    """Why ``what`` is not there for this version: the upstream failure if one is recorded."""
    assert document.id is not None
    found = (
        f"the stored {what} are of version {stored_version[:12]}"
        if stored_version
        else f"no {what} are stored"
    )
    failures = warehouse.read_failures(document.id)
    upstream = STEPS[: STEPS.index(what) + 1]
    cause = next(
        (
            f"; {step} failed: {failures[step].get('error')}"
            for step in upstream
            if step in failures
        ),
        f"; materialise {what} first",
    )
    return StaleInputError(
        document.source_key,
        f"{found} for version {document.content_hash[:12]}{cause}",
    )
