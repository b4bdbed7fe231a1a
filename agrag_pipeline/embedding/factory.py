"""``make_embedder``: the one place a backend is chosen from the settings."""

from __future__ import annotations

from pathlib import Path

from agrag_pipeline.embedding.base import Embedder
from agrag_pipeline.embedding.settings import EmbeddingSettings


def make_embedder(settings: EmbeddingSettings, cache_dir: Path) -> Embedder:
    """Build the embedder the settings name.

    ``cache_dir`` holds what a backend makes once and reuses (the distilled static model); the
    embedding cache itself is ``EmbeddingCache.in_dir(cache_dir)``.
    """
    if settings.backend == "sentence-transformers":
        from agrag_pipeline.embedding.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder.from_settings(settings)
    if settings.backend == "openai":
        from agrag_pipeline.embedding.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder.from_settings(settings)
    if settings.backend == "model2vec":
        from agrag_pipeline.embedding.static import StaticEmbedder

        return StaticEmbedder.from_settings(settings, Path(cache_dir))
    raise ValueError(f"unknown embedding backend {settings.backend!r}")
