"""Arrow tables for sections, layout and chunks: the Parquet files downstream loaders read.

Every model field has a column of its own, in a flat, loader-friendly shape (UUIDs as strings,
lists as Arrow lists, provenance both as exact JSON and as plain ``char_start``/``char_end``/
``pages`` columns for DuckDB or Polars). Reading a table back gives models equal to the ones
written. Fingerprints go into the Parquet schema's key-value metadata under ``agrag.*`` keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from agrag_pipeline.models import Chunk, PageBox, Section
from agrag_pipeline.parsing.parsed import LayoutSpan

METADATA_PREFIX = "agrag."

_UTC_TS = pa.timestamp("us", tz="UTC")

#: Each column of the chunks table, its type and what it means (the ``description`` of its
#: Parquet field metadata, so a loader can read the schema without this code).
_CHUNK_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("id", pa.string(), "Chunk.id: UUIDv5 of document_id, content_hash, chunker_hash and index"),
    ("document_id", pa.string(), "UUIDv5 of the source key; stable across document versions"),
    ("source_key", pa.string(), "the document's path under the raw root (POSIX)"),
    ("content_hash", pa.string(), "SHA-256 of the raw bytes of the document version"),
    ("index", pa.int32(), "position of the chunk in its document, from 0"),
    ("text", pa.large_string(), "the chunk text, exactly text_layer[char_start:char_end]"),
    (
        "contextual_text",
        pa.large_string(),
        "exactly what is embedded: the heading path above the text, markup no reader sees left out",
    ),
    ("content_kind", pa.string(), "'text' for running text, 'table' for a chunk of a table"),
    ("heading_path", pa.list_(pa.string()), "headings containing the chunk, outermost first"),
    ("section_ids", pa.list_(pa.string()), "ids of the sections the chunk holds, reading order"),
    ("provenance", pa.string(), "the exact provenance as JSON (offsets, repeated header, pages)"),
    ("provenance_kind", pa.string(), "'text' (character offsets) or 'page' (pages and boxes)"),
    ("char_start", pa.int64(), "start offset into the version's text layer"),
    ("char_end", pa.int64(), "end offset (exclusive) into the version's text layer"),
    (
        "header_start",
        pa.int64(),
        "a table chunk's repeated header: its start offset (null: none repeated); the text is "
        "text_layer[header_start:header_end] + '\\n' + text_layer[char_start:char_end]",
    ),
    ("header_end", pa.int64(), "end offset (exclusive) of the repeated header, or null"),
    ("pages", pa.list_(pa.int32()), "1-based pages the chunk spans (empty for text sources)"),
    ("chunker", pa.string(), "name of the chunker that made the chunk"),
    ("chunker_hash", pa.string(), "SHA-256 fingerprint of the chunker's name, version, settings"),
    ("schema_fingerprint", pa.string(), "structure hash of the graph schema of the run"),
    ("extraction_fingerprint", pa.string(), "hash of schema descriptions, extraction settings"),
    ("token_count", pa.int32(), "tokens of contextual_text as the embedding model counts them"),
    ("created_at", _UTC_TS, "when the chunk row was made (UTC)"),
    ("metadata", pa.string(), "Chunk.metadata as JSON"),
]

CHUNK_SCHEMA = pa.schema(
    [
        pa.field(name, kind, metadata={"description": description})
        for name, kind, description in _CHUNK_COLUMNS
    ]
)

_BOX = pa.struct(
    [
        ("page", pa.int32()),
        ("x0", pa.float64()),
        ("y0", pa.float64()),
        ("x1", pa.float64()),
        ("y1", pa.float64()),
        ("origin", pa.string()),
    ]
)
_SPAN = pa.struct([("start", pa.int64()), ("end", pa.int64())])

#: Each column of the sections table, its type and what it means (Parquet field metadata, as
#: for the chunks table).
_SECTION_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("id", pa.string(), "Section.id: UUIDv5 of document_id, content_hash and tree position"),
    ("document_id", pa.string(), "UUIDv5 of the source key; stable across document versions"),
    ("content_hash", pa.string(), "SHA-256 of the raw bytes of the document version"),
    ("ordinal", pa.int32(), "position of the section in reading order within the document"),
    ("heading", pa.string(), "the section's heading text (null for text before any heading)"),
    ("level", pa.int8(), "heading level 1-6; 0 for text before the first heading"),
    ("heading_path", pa.list_(pa.string()), "headings containing the section, outermost first"),
    ("kind", pa.string(), "'text' for running text, 'table' for a table"),
    ("parent_id", pa.string(), "id of the enclosing section (null at the top level)"),
    (
        "char_start",
        pa.int64(),
        "start offset into the version's text layer of the section's own text (heading included)",
    ),
    ("char_end", pa.int64(), "end offset (exclusive); child sections are not included"),
    ("table_header", _SPAN, "a table's header row as a text-layer span {start, end}, or null"),
    ("table_rows", pa.list_(_SPAN), "a table's body rows as text-layer spans {start, end}"),
    ("pages", pa.list_(pa.int32()), "1-based pages the section spans (empty for text sources)"),
    (
        "boxes",
        pa.list_(_BOX),
        "where the section lies on its pages: {page, x0, y0, x1, y1} in PDF points, with the "
        "corner they count from (origin)",
    ),
    ("created_at", _UTC_TS, "when the section row was made (UTC)"),
    ("metadata", pa.string(), "Section.metadata as JSON"),
]

SECTION_SCHEMA = pa.schema(
    [
        pa.field(name, kind, metadata={"description": description})
        for name, kind, description in _SECTION_COLUMNS
    ]
)

LAYOUT_SCHEMA = pa.schema(
    [
        pa.field("char_start", pa.int64(), metadata={"description": "start offset of a span"}),
        pa.field("char_end", pa.int64(), metadata={"description": "end offset (exclusive)"}),
        pa.field("box", _BOX, metadata={"description": "where the span lies on its page"}),
    ]
)


def with_metadata(table: pa.Table, metadata: Mapping[str, str | None]) -> pa.Table:
    """Attach ``agrag.*`` key-value metadata (fingerprints, ids) to a table's schema."""
    kv = {f"{METADATA_PREFIX}{k}".encode(): str(v).encode() for k, v in metadata.items() if v}
    return table.replace_schema_metadata({**(table.schema.metadata or {}), **kv})


def read_metadata(table_or_schema: pa.Table | pa.Schema) -> dict[str, str]:
    schema = table_or_schema.schema if isinstance(table_or_schema, pa.Table) else table_or_schema
    prefix = METADATA_PREFIX.encode()
    return {
        k[len(prefix) :].decode(): v.decode()
        for k, v in (schema.metadata or {}).items()
        if k.startswith(prefix)
    }


# -- chunks -----------------------------------------------------------------------------------
def column_descriptions(schema: pa.Schema) -> dict[str, str]:
    """Each column's ``description`` from a table's Parquet field metadata."""
    return {
        f.name: (f.metadata or {}).get(b"description", b"").decode()
        for f in schema
        if f.metadata and b"description" in f.metadata
    }


def chunks_to_table(chunks: Sequence[Chunk], source_key: str | None = None) -> pa.Table:
    """The chunks of one document; ``source_key`` names it in every row."""
    rows: dict[str, list[Any]] = {name: [] for name in CHUNK_SCHEMA.names}
    for c in chunks:
        prov = c.provenance
        rows["id"].append(str(c.id) if c.id else None)
        rows["document_id"].append(str(c.document_id))
        rows["source_key"].append(source_key)
        rows["content_hash"].append(c.content_hash)
        rows["index"].append(c.index)
        rows["text"].append(c.text)
        rows["contextual_text"].append(c.contextual_text)
        header = prov.repeated_header
        rows["header_start"].append(header.start if header is not None else None)
        rows["header_end"].append(header.end if header is not None else None)
        rows["content_kind"].append(c.content_kind)
        rows["heading_path"].append(list(c.heading_path))
        rows["section_ids"].append([str(s) for s in c.section_ids])
        rows["provenance"].append(_json(prov.model_dump(mode="json")))
        rows["provenance_kind"].append(prov.kind)
        rows["char_start"].append(prov.start)
        rows["char_end"].append(prov.end)
        rows["pages"].append(list(prov.pages) if prov.kind == "page" else [])
        rows["chunker"].append(c.chunker)
        rows["chunker_hash"].append(c.chunker_hash)
        rows["schema_fingerprint"].append(c.schema_fingerprint)
        rows["extraction_fingerprint"].append(c.extraction_fingerprint)
        token_count = c.metadata.get("token_count")
        rows["token_count"].append(int(token_count) if token_count is not None else None)
        rows["created_at"].append(c.created_at)
        rows["metadata"].append(_json(c.metadata))
    return pa.table(rows, schema=CHUNK_SCHEMA)


def chunks_from_table(table: pa.Table) -> list[Chunk]:
    return [
        Chunk.model_validate(
            {
                "id": row["id"],
                "document_id": row["document_id"],
                "content_hash": row["content_hash"],
                "index": row["index"],
                "text": row["text"],
                "content_kind": row["content_kind"],
                "heading_path": row["heading_path"],
                "section_ids": row["section_ids"],
                "provenance": json.loads(row["provenance"]),
                "chunker": row["chunker"],
                "chunker_hash": row["chunker_hash"],
                "schema_fingerprint": row["schema_fingerprint"],
                "extraction_fingerprint": row["extraction_fingerprint"],
                "created_at": row["created_at"],
                "metadata": json.loads(row["metadata"]),
            }
        )
        for row in table.to_pylist()
    ]


# -- sections and layout ----------------------------------------------------------------------
def sections_to_table(sections: Sequence[Section]) -> pa.Table:
    rows: dict[str, list[Any]] = {name: [] for name in SECTION_SCHEMA.names}
    for s in sections:
        rows["id"].append(str(s.id) if s.id else None)
        rows["document_id"].append(str(s.document_id))
        rows["content_hash"].append(s.content_hash)
        rows["ordinal"].append(s.ordinal)
        rows["heading"].append(s.heading)
        rows["level"].append(s.level)
        rows["heading_path"].append(list(s.heading_path))
        rows["kind"].append(s.kind)
        rows["parent_id"].append(str(s.parent_id) if s.parent_id else None)
        rows["char_start"].append(s.start)
        rows["char_end"].append(s.end)
        rows["table_header"].append(s.table_header.model_dump() if s.table_header else None)
        rows["table_rows"].append([r.model_dump() for r in s.table_rows])
        rows["pages"].append(list(s.pages))
        rows["boxes"].append([b.model_dump() for b in s.boxes])
        rows["created_at"].append(s.created_at)
        rows["metadata"].append(_json(s.metadata))
    return pa.table(rows, schema=SECTION_SCHEMA)


def sections_from_table(table: pa.Table) -> list[Section]:
    sections = []
    for row in table.to_pylist():
        row["start"] = row.pop("char_start")
        row["end"] = row.pop("char_end")
        row["metadata"] = json.loads(row["metadata"])
        sections.append(Section.model_validate(row))
    return sections


def layout_to_table(layout: Sequence[LayoutSpan]) -> pa.Table:
    return pa.table(
        {
            "char_start": [s.start for s in layout],
            "char_end": [s.end for s in layout],
            "box": [s.box.model_dump() for s in layout],
        },
        schema=LAYOUT_SCHEMA,
    )


def layout_from_table(table: pa.Table) -> list[LayoutSpan]:
    return [
        LayoutSpan(start=row["char_start"], end=row["char_end"], box=PageBox(**row["box"]))
        for row in table.to_pylist()
    ]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
