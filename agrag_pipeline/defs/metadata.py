"""Turn the core's step results into Dagster metadata (presentation only, no logic)."""

from __future__ import annotations

from typing import Any

import dagster as dg
import pyarrow as pa

from agrag_pipeline.pipeline import ChunksResult, EmbeddingsResult, SectionsResult, SnapshotResult
from agrag_pipeline.reporting import chunk_preview_markdown, column_schema
from agrag_pipeline.storage.tables import CHUNK_SCHEMA, SECTION_SCHEMA
from agrag_pipeline.storage.warehouse import Warehouse


def table_schema(schema: pa.Schema) -> dg.TableSchema:
    return dg.TableSchema(columns=[dg.TableColumn(n, t) for n, t in column_schema(schema)])


def _path(warehouse: Warehouse, path: str) -> dg.MetadataValue:
    uri = warehouse.uri(path)
    return dg.MetadataValue.path(uri)


def snapshot_metadata(result: SnapshotResult, warehouse: Warehouse) -> dict[str, Any]:
    doc = result.document
    return {
        "agrag/status": "ok",
        "source_key": doc.source_key,
        "document_id": str(doc.id),
        "content_hash": doc.content_hash,
        "media_type": doc.media_type,
        "size_bytes": doc.size_bytes,
        "changed": result.changed,
        "path": _path(warehouse, result.raw_path),
    }


def sections_metadata(result: SectionsResult, warehouse: Warehouse) -> dict[str, Any]:
    parsed = result.parsed
    tables = sum(1 for s in parsed.sections if s.kind == "table")
    outline = [" > ".join(s.heading_path) for s in parsed.sections if s.heading][:30]
    return {
        "agrag/status": "reused" if result.reused else "ok",
        "dagster/row_count": len(parsed.sections),
        "dagster/column_schema": table_schema(SECTION_SCHEMA),
        "source_key": result.document.source_key,
        "content_hash": result.document.content_hash,
        "table_sections": tables,
        "text_layer_chars": len(parsed.text_layer),
        "pages": len({b.page for s in parsed.layout for b in [s.box]}) if parsed.layout else 0,
        "outline": dg.MetadataValue.md("\n".join(f"- {h}" for h in outline) or "(no headings)"),
        "warnings": dg.MetadataValue.json(parsed.warnings),
        "path": _path(warehouse, result.path),
        "text_layer_path": _path(warehouse, result.text_layer_path),
    }


def chunks_metadata(result: ChunksResult, warehouse: Warehouse) -> dict[str, Any]:
    chunks = result.chunks
    first = chunks[0] if chunks else None
    return {
        "agrag/status": "reused" if result.reused else "ok",
        "dagster/row_count": len(chunks),
        "dagster/column_schema": table_schema(CHUNK_SCHEMA),
        "source_key": result.document.source_key,
        "content_hash": result.document.content_hash,
        "table_chunks": sum(1 for c in chunks if c.content_kind == "table"),
        "token_count": dg.MetadataValue.json(result.token_stats()),
        "preview": dg.MetadataValue.md(chunk_preview_markdown(chunks)),
        "chunker": first.chunker if first else None,
        "chunker_hash": first.chunker_hash if first else None,
        "schema_fingerprint": first.schema_fingerprint if first else None,
        "extraction_fingerprint": first.extraction_fingerprint if first else None,
        "path": _path(warehouse, result.path),
    }


def embeddings_metadata(result: EmbeddingsResult, warehouse: Warehouse) -> dict[str, Any]:
    return {
        "agrag/status": "reused" if result.reused else "ok",
        "dagster/row_count": result.rows,
        "source_key": result.document.source_key,
        "content_hash": result.document.content_hash,
        "embedding_fingerprint": result.fingerprint,
        "cache_hits": result.cache_hits,
        "cache_misses": result.cache_misses,
        "truncated_texts": result.truncated,
        "path": _path(warehouse, result.path),
    }


def failure_metadata(source_key: str, error: str) -> dict[str, Any]:
    return {
        "agrag/status": "failed",
        "source_key": source_key,
        "error": dg.MetadataValue.md(f"```\n{error}\n```"),
    }
