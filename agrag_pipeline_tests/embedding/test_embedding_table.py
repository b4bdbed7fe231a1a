"""The per-document embeddings table: the Parquet layout downstream loaders read."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from embedding_support import CountingEmbedder

from agrag_pipeline.embedding.base import EmbeddingError
from agrag_pipeline.embedding.cache import EmbeddingCache
from agrag_pipeline.embedding.table import embed_chunks, embeddings_table
from agrag_pipeline.models import Chunk, Document, TextProvenance

DOC = Document.node_id_for("rust-book/ch04-01-what-is-ownership.md")
CONTENT = "a" * 64
CHUNKER = "c" * 64


def make_chunks(texts: list[str], headings: list[list[str]]) -> list[Chunk]:
    chunks, offset = [], 0
    for index, (text, path) in enumerate(zip(texts, headings, strict=True)):
        chunks.append(
            Chunk(
                id=Chunk.id_for(DOC, CONTENT, CHUNKER, index),
                document_id=DOC,
                content_hash=CONTENT,
                index=index,
                text=text,
                heading_path=path,
                provenance=TextProvenance(start=offset, end=offset + len(text)),
                chunker_hash=CHUNKER,
            )
        )
        offset += len(text) + 2
    return chunks


def test_table_has_the_published_columns_and_fingerprint(tmp_path):
    chunks = make_chunks(["one", "two"], [["Ownership"], []])
    vectors = np.arange(2 * 4, dtype=np.float32).reshape(2, 4)
    table = embeddings_table(chunks, vectors, "e" * 64)
    assert table.schema.field("vector").type == pa.list_(pa.float32(), 4)
    assert table.schema.field("index").type == pa.int32()
    assert table.column_names == [
        "chunk_id",
        "document_id",
        "source_key",
        "content_hash",
        "index",
        "model",
        "vector",
        "embedding_fingerprint",
    ]
    path = tmp_path / "embeddings.parquet"
    pq.write_table(table, path)
    read = pq.read_table(path)
    assert read.schema.metadata[b"embedding_fingerprint"] == b"e" * 64
    assert read.schema.metadata[b"embedding_dimension"] == b"4"
    assert read.column("chunk_id").to_pylist() == [str(c.id) for c in chunks]
    assert all(uuid.UUID(v) for v in read.column("chunk_id").to_pylist())
    assert read.column("document_id").to_pylist() == [str(DOC)] * 2
    assert read.column("embedding_fingerprint").to_pylist() == ["e" * 64] * 2
    np.testing.assert_array_equal(
        np.stack(read.column("vector").to_numpy(zero_copy_only=False)), vectors
    )


def test_vectors_that_do_not_match_the_chunks_are_refused():
    chunks = make_chunks(["one", "two"], [[], []])
    with pytest.raises(EmbeddingError, match="2 chunks but vectors of shape"):
        embeddings_table(chunks, np.zeros((3, 4), np.float32), "e" * 64)
    with pytest.raises(EmbeddingError, match="NaN"):
        embeddings_table(chunks, np.full((2, 4), np.nan, np.float32), "e" * 64)


def test_the_text_embedded_is_the_contextual_text(counting: CountingEmbedder, tmp_path):
    chunks = make_chunks(
        ["Each value has an owner.", "Strings live on the heap."],
        [["Understanding Ownership", "What Is Ownership?"], []],
    )
    with EmbeddingCache.in_dir(tmp_path) as cache:
        table, stats = embed_chunks(counting, chunks, cache)
    assert counting.embedded == [c.contextual_text for c in chunks]
    assert counting.embedded[0].startswith("Understanding Ownership > What Is Ownership?\n\n")
    assert stats.misses == 2 and table.num_rows == 2
    assert table.column("embedding_fingerprint")[0].as_py() == counting.fingerprint
