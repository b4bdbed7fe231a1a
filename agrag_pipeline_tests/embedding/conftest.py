"""Fixtures for the embedding tests: the real default model, loaded once per session."""

from __future__ import annotations

import pytest
from embedding_support import CountingEmbedder

from agrag_pipeline.embedding.sentence_transformer import SentenceTransformerEmbedder
from agrag_pipeline.embedding.settings import EmbeddingSettings


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the packaged weights, SHA-256 checked, offline."""
    return SentenceTransformerEmbedder.from_settings(EmbeddingSettings())


@pytest.fixture
def counting(minilm: SentenceTransformerEmbedder) -> CountingEmbedder:
    return CountingEmbedder(minilm)
