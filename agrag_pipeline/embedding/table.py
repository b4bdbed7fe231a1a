"""One document's embeddings as an Arrow table: the public Parquet layout downstream reads.

Each row names its chunk (``chunk_id``, ``index``), its document (``document_id``,
``source_key``, ``content_hash``) and the model that made it (``model``, ``embedding_fingerprint``),
so a loader can use the file alone, without joining the chunks table. The vector is a
``fixed_size_list<float32>[dim]`` so readers (pyarrow, DuckDB, Polars, pandas) get a
fixed-width array column, and the embedding fingerprint is both a column (for joins
across files) and the schema's key-value metadata (for a reader that opens one file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from agrag_pipeline.embedding.base import EmbeddingError, Vectors

if TYPE_CHECKING:
    from agrag_pipeline.embedding.base import Embedder
    from agrag_pipeline.embedding.cache import CacheStats, EmbeddingCache
    from agrag_pipeline.models import Chunk

#: Key-value metadata keys in every embeddings table.
FINGERPRINT_KEY = b"embedding_fingerprint"
DIMENSION_KEY = b"embedding_dimension"


def _field(name: str, kind: pa.DataType, description: str, nullable: bool = False) -> pa.Field:
    return pa.field(name, kind, nullable=nullable, metadata={"description": description})


def embeddings_schema(dimension: int, embedding_fingerprint: str) -> pa.Schema:
    return pa.schema(
        [
            _field("chunk_id", pa.string(), "Chunk.id of the chunk embedded (chunks table id)"),
            _field("document_id", pa.string(), "UUIDv5 of the source key"),
            _field("source_key", pa.string(), "the document's path under the raw root", True),
            _field("content_hash", pa.string(), "SHA-256 of the document version's raw bytes"),
            _field("index", pa.int32(), "the chunk's position in its document, from 0"),
            _field("model", pa.string(), "the embedding model's name", True),
            _field(
                "vector",
                pa.list_(pa.float32(), dimension),
                "the embedding of the chunk's contextual_text",
            ),
            _field(
                "embedding_fingerprint",
                pa.string(),
                "SHA-256 of model, weights, dimension, normalisation and embedded text template",
            ),
        ],
        metadata={
            FINGERPRINT_KEY: embedding_fingerprint.encode(),
            DIMENSION_KEY: str(dimension).encode(),
        },
    )


def model_name(embedder: Embedder) -> str:
    """The name of an embedder's model, whichever backend it is."""
    for attribute in ("model_name", "model"):
        value = getattr(embedder, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(embedder).__name__


def embeddings_table(
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    embedding_fingerprint: str,
    *,
    source_key: str | None = None,
    model: str | None = None,
) -> pa.Table:
    """One row per chunk, in the order given; ``vectors[i]`` belongs to ``chunks[i]``."""
    if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
        raise EmbeddingError(f"{len(chunks)} chunks but vectors of shape {vectors.shape}")
    if not np.isfinite(vectors).all():
        raise EmbeddingError("vectors contain NaN or infinity")
    dimension = int(vectors.shape[1])
    ids = []
    for chunk in chunks:
        if chunk.id is None:
            raise EmbeddingError(f"chunk {chunk.index} of {chunk.document_id} has no id")
        ids.append(str(chunk.id))
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1), pa.float32())
    schema = embeddings_schema(dimension, embedding_fingerprint)
    return pa.table(
        {
            "chunk_id": pa.array(ids, pa.string()),
            "document_id": pa.array([str(c.document_id) for c in chunks], pa.string()),
            "source_key": pa.array([source_key] * len(chunks), pa.string()),
            "content_hash": pa.array([c.content_hash for c in chunks], pa.string()),
            "index": pa.array([c.index for c in chunks], pa.int32()),
            "model": pa.array([model] * len(chunks), pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, dimension),
            "embedding_fingerprint": pa.array([embedding_fingerprint] * len(chunks), pa.string()),
        },
        schema=schema,
    )


def embed_chunks(
    embedder: Embedder, chunks: Sequence[Chunk], cache: EmbeddingCache
) -> tuple[pa.Table, CacheStats]:
    """Embed each chunk's ``contextual_text`` through the cache and build its table."""
    from agrag_pipeline.embedding.cache import embed_with_cache

    vectors: Vectors
    vectors, stats = embed_with_cache(embedder, [c.contextual_text for c in chunks], cache)
    table = embeddings_table(chunks, vectors, embedder.fingerprint, model=model_name(embedder))
    return table, stats
