"""The default backend: the real all-MiniLM-L6-v2, offline, weights checked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from embedding_support import cosine

from agrag_pipeline.embedding.base import embedding_fingerprint
from agrag_pipeline.embedding.factory import make_embedder
from agrag_pipeline.embedding.sentence_transformer import (
    SentenceTransformerEmbedder,
    WeightsMismatchError,
    file_sha256,
    packaged_minilm_dir,
    verify_weights,
)
from agrag_pipeline.embedding.settings import (
    MINILM_WEIGHTS_SHA256,
    MPNET_WEIGHTS_SHA256,
    EmbeddingSettings,
)

TEXTS = [
    "Rust's ownership rules decide when memory is freed.",
    "In Rust, each value has an owner, and the value is dropped when its owner goes out of scope.",
    "The recipe needs two cups of flour and a pinch of salt.",
]


def test_packaged_weights_are_the_published_ones() -> None:
    assert file_sha256(packaged_minilm_dir() / "model.safetensors") == MINILM_WEIGHTS_SHA256


def test_default_model_gives_384_dimensional_unit_vectors(minilm: SentenceTransformerEmbedder):
    vectors = minilm.embed(TEXTS)
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_similar_texts_are_closer_than_unrelated_ones(minilm: SentenceTransformerEmbedder):
    own_a, own_b, recipe = minilm.embed(TEXTS)
    assert cosine(own_a, own_b) > cosine(own_a, recipe) + 0.2
    assert cosine(own_a, own_b) > cosine(own_b, recipe) + 0.2


def test_default_model_limits_come_from_the_model(minilm: SentenceTransformerEmbedder):
    assert minilm.max_sequence_tokens == 256
    assert minilm.tokenizer_path == packaged_minilm_dir() / "tokenizer.json"
    assert minilm.pooling == "mean"


def test_grouping_by_token_length_keeps_each_vector_with_its_text(
    minilm: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
):
    texts = [("word " * n).strip() + f" end {n}" for n in (50, 3, 120, 9, 1, 77, 30)]
    one_by_one = np.stack([minilm.embed([t])[0] for t in texts])
    monkeypatch.setattr(minilm, "batch_size", 2)  # several length groups, order restored
    np.testing.assert_allclose(minilm.embed(texts), one_by_one, atol=1e-5)


def test_texts_over_the_limit_are_counted_not_silently_truncated(
    minilm: SentenceTransformerEmbedder,
):
    before = minilm.truncated_total
    result = minilm.embed_counted(["short text", "token " * 400, "another short one"])
    assert result.truncated_count == 1
    assert minilm.truncated_total == before + 1


def test_fingerprint_names_the_weights_and_settings(minilm: SentenceTransformerEmbedder):
    expected = embedding_fingerprint(
        backend="sentence-transformers",
        model="sentence-transformers/all-MiniLM-L6-v2",
        weights=MINILM_WEIGHTS_SHA256,
        dimension=384,
        normalize=True,
        pooling="mean",
        max_sequence_tokens=256,
    )
    assert minilm.fingerprint == expected
    assert len(expected) == 64
    other = embedding_fingerprint(
        backend="sentence-transformers",
        model="sentence-transformers/all-MiniLM-L6-v2",
        weights=MINILM_WEIGHTS_SHA256,
        dimension=384,
        normalize=False,
        pooling="mean",
        max_sequence_tokens=256,
    )
    assert other != expected


def test_tampered_weights_are_refused_before_loading(tmp_path: Path):
    model_dir = tmp_path / "minilm"
    shutil.copytree(packaged_minilm_dir(), model_dir)
    weights = model_dir / "model.safetensors"
    with weights.open("r+b") as f:
        f.seek(1_000_000)
        byte = f.read(1)
        f.seek(1_000_000)
        f.write(bytes([byte[0] ^ 0x01]))
    settings = EmbeddingSettings(model_dir=str(model_dir))
    with pytest.raises(
        WeightsMismatchError, match=r"SHA-256 is .* expected " + MINILM_WEIGHTS_SHA256
    ):
        make_embedder(settings, tmp_path / "cache")


def test_weights_checked_once_are_hashed_again_after_a_write_that_restores_their_mtime(
    tmp_path: Path,
):
    model_dir = tmp_path / "minilm"
    shutil.copytree(packaged_minilm_dir(), model_dir)
    weights = model_dir / "model.safetensors"
    assert verify_weights(model_dir, MINILM_WEIGHTS_SHA256) == MINILM_WEIGHTS_SHA256
    before = weights.stat()
    with weights.open("r+b") as f:  # same size, one bit changed, the old times put back
        f.seek(1_000_000)
        byte = f.read(1)
        f.seek(1_000_000)
        f.write(bytes([byte[0] ^ 0x01]))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert weights.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(WeightsMismatchError, match="SHA-256 is "):
        verify_weights(model_dir, MINILM_WEIGHTS_SHA256)


def test_unknown_model_without_a_directory_is_a_clear_error(tmp_path: Path):
    settings = EmbeddingSettings(model="intfloat/e5-small-v2")
    with pytest.raises(Exception, match="only sentence-transformers/all-MiniLM-L6-v2 ships"):
        make_embedder(settings, tmp_path)


def test_a_known_model_is_checked_against_its_own_published_weights(tmp_path: Path):
    """Naming all-mpnet-base-v2 with a directory holding other weights (the real MiniLM ones)
    is refused against mpnet's published hash, not loaded under the wrong name."""
    settings = EmbeddingSettings(
        model="sentence-transformers/all-mpnet-base-v2", model_dir=str(packaged_minilm_dir())
    )
    assert settings.weights_sha256 == MPNET_WEIGHTS_SHA256
    with pytest.raises(WeightsMismatchError, match="expected " + MPNET_WEIGHTS_SHA256):
        make_embedder(settings, tmp_path / "cache")


def test_an_explicit_weights_hash_overrides_the_published_one(tmp_path: Path):
    """A hash written in the settings wins (None: no check), so a fine-tuned copy of a known
    model stays loadable."""
    settings = EmbeddingSettings.model_validate(
        {
            "model": "sentence-transformers/all-mpnet-base-v2",
            "model_dir": str(packaged_minilm_dir()),
            "weights_sha256": MINILM_WEIGHTS_SHA256,
        }
    )
    embedder = make_embedder(settings, tmp_path / "cache")
    assert embedder.fingerprint != make_embedder(EmbeddingSettings(), tmp_path).fingerprint
    assert (
        EmbeddingSettings.model_validate({"model": "x/y", "weights_sha256": None}).weights_sha256
        is None
    )


def test_a_local_model_directory_brings_its_own_tokenizer_and_limit(tmp_path: Path) -> None:
    # The chunker counts tokens with the model that embeds: a model directory's own
    # tokenizer.json and max_seq_length, never the packaged MiniLM's.
    import json

    from agrag_pipeline.runtime import Runtime
    from agrag_pipeline.settings import load_settings

    model_dir = tmp_path / "model"
    shutil.copytree(packaged_minilm_dir(), model_dir)
    config = model_dir / "sentence_bert_config.json"
    values = json.loads(config.read_text(encoding="utf-8"))
    values["max_seq_length"] = 128
    config.write_text(json.dumps(values), encoding="utf-8")
    shipped = load_settings()
    settings = shipped.model_copy(
        update={"embedding": shipped.embedding.model_copy(update={"model_dir": str(model_dir)})}
    )
    rt = Runtime(settings=settings, raw_root=str(tmp_path), warehouse_root=str(tmp_path / "w"))
    assert rt.tokenizer() == (model_dir / "tokenizer.json", 128)
    (model_dir / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match=r"holds no tokenizer\.json"):
        rt.tokenizer()


def test_a_forking_process_never_asks_a_gpu_build_of_torch_for_its_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``torch.cuda.is_available()`` starts CUDA's driver on a CUDA build, and a process that
    did cannot fork a child that uses CUDA: the forkserver then builds no model (each run
    builds its own, as before) and leaves torch's threads alone."""
    import torch

    from agrag_pipeline.embedding import sentence_transformer

    def asked() -> bool:
        raise AssertionError("torch.cuda.is_available() was called before a fork")

    monkeypatch.setattr(torch.version, "cuda", "12.8")  # as a CUDA build of torch says
    monkeypatch.setattr(torch.cuda, "is_available", asked)
    threads = torch.get_num_threads()
    for device in ("auto", "cuda"):
        built = sentence_transformer.build_model_for_forked_workers(
            EmbeddingSettings(device=device)
        )
        assert built is False
    assert sentence_transformer._BUILT_BEFORE_FORKING == {}
    assert torch.get_num_threads() == threads
