"""The static (model2vec) backend: fast, offline, and honest about what it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from embedding_support import cosine

from agrag_pipeline.embedding.factory import make_embedder
from agrag_pipeline.embedding.sentence_transformer import packaged_minilm_dir
from agrag_pipeline.embedding.settings import EmbeddingSettings, StaticSettings
from agrag_pipeline.embedding.static import StaticEmbedder


@pytest.fixture(scope="module")
def tiny_static_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small model2vec model over MiniLM's tokenizer, built here (no download)."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(packaged_minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((tokenizer.get_vocab_size(), 16)).astype(np.float32)
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)
    path = tmp_path_factory.mktemp("static")
    model.save_pretrained(str(path))
    return path


def test_static_model_from_a_directory_embeds_unit_vectors(tiny_static_dir: Path, tmp_path):
    settings = EmbeddingSettings(
        backend="model2vec", static=StaticSettings(model_dir=str(tiny_static_dir))
    )
    embedder = make_embedder(settings, tmp_path)
    assert isinstance(embedder, StaticEmbedder)
    vectors = embedder.embed(["ownership in rust", "ownership in rust", "flour and salt"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[1])
    assert len(embedder.fingerprint) == 64


@pytest.mark.slow
def test_distilled_from_minilm_once_and_agrees_with_it(minilm, tmp_path):
    """Distils a real model2vec model from the packaged MiniLM (~20 s) and reuses it."""
    settings = EmbeddingSettings(backend="model2vec")
    static = make_embedder(settings, tmp_path)
    assert static.dimension == 256
    model_dirs = list((tmp_path / "model2vec").iterdir())
    again = make_embedder(settings, tmp_path)  # reused, not distilled again
    assert list((tmp_path / "model2vec").iterdir()) == model_dirs
    assert again.fingerprint == static.fingerprint
    texts = [
        "Rust's ownership rules decide when memory is freed.",
        "Each value in Rust has an owner that drops it at the end of its scope.",
        "The recipe needs two cups of flour and a pinch of salt.",
    ]
    a, b, c = static.embed(texts)
    assert cosine(a, b) > cosine(a, c)
