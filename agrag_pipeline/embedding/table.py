"""One document's embeddings as an Arrow table: the public Parquet layout downstream reads.

The vector is a ``fixed_size_list<float32>[dim]`` so readers (pyarrow, DuckDB, Polars, pandas)
get a fixed-width array column, and the embedding fingerprint is both a column (for joins
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


def embeddings_schema(dimension: int, embedding_fingerprint: str) -> pa.Schema:
    return pa.schema(
        [
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("document_id", pa.string(), nullable=False),
            pa.field("content_hash", pa.string(), nullable=False),
            pa.field("index", pa.int32(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
            pa.field("embedding_fingerprint", pa.string(), nullable=False),
        ],
        metadata={
            FINGERPRINT_KEY: embedding_fingerprint.encode(),
            DIMENSION_KEY: str(dimension).encode(),
        },
    )


def embeddings_table(
    chunks: Sequence[Chunk], vectors: np.ndarray, embedding_fingerprint: str
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
            "content_hash": pa.array([c.content_hash for c in chunks], pa.string()),
            "index": pa.array([c.index for c in chunks], pa.int32()),
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
    return embeddings_table(chunks, vectors, embedder.fingerprint), stats
