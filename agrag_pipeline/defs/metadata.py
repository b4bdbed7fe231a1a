"""Turn the core's step results into Dagster metadata (presentation only, no logic).

Two levels, so that nothing a partition shows belongs to another partition or to the run:

- definition level (``definition_metadata``): what never changes per document, the column
  schema with each column's description (read from the storage tables' Arrow schemas);
- partition level (``*_metadata``): the document's own figures, the file it wrote
  (``dagster/uri``), and named pointers to the upstream materialisation it was made from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import dagster as dg
import pyarrow as pa

from agrag_pipeline.parsing.quality import SCORE_KEY
from agrag_pipeline.pipeline import ChunksResult, EmbeddingsResult, SectionsResult, SnapshotResult
from agrag_pipeline.reporting import chunk_preview_markdown
from agrag_pipeline.storage.tables import CHUNK_SCHEMA, SECTION_SCHEMA
from agrag_pipeline.storage.warehouse import Warehouse


def _description(field: pa.Field) -> str | None:
    meta = field.metadata or {}
    raw = meta.get(b"description") or meta.get(b"doc")
    return raw.decode("utf-8") if raw else None


def table_schema(schema: pa.Schema, fallback: Mapping[str, str] | None = None) -> dg.TableSchema:
    """Dagster's column schema from an Arrow schema; descriptions from each field's metadata."""
    fallback = fallback or {}
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                f.name,
                str(f.type),
                description=_description(f) or fallback.get(f.name),
            )
            for f in schema
        ]
    )


def definition_metadata(asset: str) -> dict[str, Any]:
    """What an asset's definition shows whatever the partition: its tables' columns, each
    described (from the Parquet field metadata, which a loader reads too)."""
    from agrag_pipeline.embedding.table import embeddings_schema
    from agrag_pipeline.sinks.graph.model import EDGES_SCHEMA, NODES_SCHEMA
    from agrag_pipeline.sinks.index import INDEX_COLUMNS

    embedding_columns = {
        c.name: _any_dimension(c) for c in table_schema(embeddings_schema(1, "")).columns
    }
    if asset == "sections":
        return {"dagster/column_schema": table_schema(SECTION_SCHEMA)}
    if asset == "chunks":
        return {"dagster/column_schema": table_schema(CHUNK_SCHEMA)}
    if asset == "embeddings":
        return {"dagster/column_schema": dg.TableSchema(columns=list(embedding_columns.values()))}
    if asset == "graph":
        return {
            "dagster/column_schema": table_schema(NODES_SCHEMA),
            "graph_edges columns": table_schema(EDGES_SCHEMA),
        }
    if asset == "search_index":
        # The LanceDB table's rows: the chunk's columns, its id, what BM25 reads, its vector.
        chunk_columns = {c.name: c for c in table_schema(CHUNK_SCHEMA).columns}
        columns = [
            embedding_columns["chunk_id"],
            *(chunk_columns[name] for name in INDEX_COLUMNS[1:-2]),
            dg.TableColumn(
                INDEX_COLUMNS[-2],
                "large_string",
                "what hybrid search's context BM25 reads: contextual_text with the same "
                "section's neighbouring text (index.bm25_context_chars each side)",
            ),
            embedding_columns["vector"],
        ]
        return {"dagster/column_schema": dg.TableSchema(columns=columns)}
    return {}


def _any_dimension(column: dg.TableColumn) -> dg.TableColumn:
    """The vector column's type for any model (its dimension is the model's)."""
    if column.name != "vector":
        return column
    return dg.TableColumn(column.name, "fixed_size_list<float32>[dimension]", column.description)


@dataclass(frozen=True)
class Pointer:
    """The latest materialisation of an upstream asset's partition."""

    asset: str
    partition: str
    run_id: str
    storage_id: int
    timestamp: float
    #: Its data version (``dagster/data_version``), recorded as the input version downstream.
    data_version: str | None = None


def pointer_metadata(pointer: Pointer | None, asset: str) -> dict[str, Any]:
    """Named links to the upstream partition and run this partition was made from.

    The partition link is the URL Dagster's own UI uses to open one partition of an asset
    (``?view=partitions&partition=``, as its event detail links it): the upstream asset's
    Partitions tab with this document selected, not its overview (which shows whichever
    partition was materialised last). The run link names the exact materialisation's run.
    """
    if pointer is None:
        return {}
    partition = quote(pointer.partition, safe="")
    return {
        f"input/{asset}": dg.MetadataValue.url(
            f"/assets/{asset}?view=partitions&partition={partition}"
        ),
        f"input/{asset} run": dg.MetadataValue.url(f"/runs/{pointer.run_id}"),
    }


def _uri(warehouse: Warehouse, path: str) -> dict[str, Any]:
    uri = warehouse.uri(path)
    return {"dagster/uri": dg.MetadataValue.path(uri)}


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
        **_uri(warehouse, result.raw_path),
    }


def sections_metadata(result: SectionsResult, warehouse: Warehouse) -> dict[str, Any]:
    parsed = result.parsed
    tables = sum(1 for s in parsed.sections if s.kind == "table")
    outline = [" > ".join(s.heading_path) for s in parsed.sections if s.heading][:30]
    return {
        "agrag/status": "reused" if result.reused else "ok",
        "dagster/row_count": len(parsed.sections),
        "source_key": result.document.source_key,
        "content_hash": result.document.content_hash,
        "table_sections": tables,
        "text_layer_chars": len(parsed.text_layer),
        "pages": len({b.page for s in parsed.layout for b in [s.box]}) if parsed.layout else 0,
        "outline": dg.MetadataValue.md("\n".join(f"- {h}" for h in outline) or "(no headings)"),
        "warnings": dg.MetadataValue.json(parsed.warnings),
        **{key: str(value) for key, value in sorted(parsed.document.metadata.items())},
        **_reading_quality(parsed.document.metadata),
        **_uri(warehouse, result.path),
        "text_layer_path": dg.MetadataValue.path(warehouse.uri(result.text_layer_path)),
    }


def _reading_quality(metadata: dict[str, Any]) -> dict[str, Any]:
    """The reading-quality score as a number, so the UI can plot and compare it."""
    score = metadata.get(SCORE_KEY)
    return {SCORE_KEY: dg.MetadataValue.float(float(score))} if score is not None else {}


def chunks_metadata(result: ChunksResult, warehouse: Warehouse) -> dict[str, Any]:
    chunks = result.chunks
    first = chunks[0] if chunks else None
    return {
        "agrag/status": "reused" if result.reused else "ok",
        "dagster/row_count": len(chunks),
        "source_key": result.document.source_key,
        "content_hash": result.document.content_hash,
        "table_chunks": sum(1 for c in chunks if c.content_kind == "table"),
        "token_count": dg.MetadataValue.json(result.token_stats()),
        "preview": dg.MetadataValue.md(chunk_preview_markdown(chunks)),
        "chunker": first.chunker if first else None,
        "chunker_hash": first.chunker_hash if first else None,
        "schema_fingerprint": first.schema_fingerprint if first else None,
        "extraction_fingerprint": first.extraction_fingerprint if first else None,
        **_uri(warehouse, result.path),
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
        **_uri(warehouse, result.path),
    }
