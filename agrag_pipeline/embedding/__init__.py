"""Embedding: texts -> float32 vectors, through a swappable backend and a content cache.

Backends, one module each: ``sentence_transformer`` (default, offline MiniLM),
``openai_compatible`` (HTTP), ``static`` (model2vec). Heavy libraries (torch, model2vec) load
only when a backend is built.
"""

from agrag_pipeline.embedding.base import Embedded, Embedder, EmbeddingError
from agrag_pipeline.embedding.cache import CacheStats, EmbeddingCache, embed_with_cache, text_sha256
from agrag_pipeline.embedding.factory import make_embedder
from agrag_pipeline.embedding.settings import EmbeddingSettings, OpenAICompatibleSettings
from agrag_pipeline.embedding.table import embed_chunks, embeddings_schema, embeddings_table

__all__ = [
    "CacheStats",
    "Embedded",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "EmbeddingSettings",
    "OpenAICompatibleSettings",
    "embed_chunks",
    "embed_with_cache",
    "embeddings_schema",
    "embeddings_table",
    "make_embedder",
    "text_sha256",
]
