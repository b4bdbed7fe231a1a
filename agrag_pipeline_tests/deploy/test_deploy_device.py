"""``embedding.device``: auto picks a GPU when torch sees one and the CPU otherwise; a GPU asked
for by name and absent is a clear error; the device never changes the settings fingerprint."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agrag_pipeline.embedding.base import EmbeddingError
from agrag_pipeline.embedding.sentence_transformer import (
    SentenceTransformerEmbedder,
    resolve_device,
)
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings


def test_auto_runs_on_the_cpu_without_a_gpu_and_gives_the_cpu_vectors() -> None:
    settings = load_settings(DEFAULT_SETTINGS_PATH).embedding
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: auto is not the CPU here")
    assert resolve_device("auto") == "cpu"
    auto = SentenceTransformerEmbedder.from_settings(settings.model_copy(update={"device": "auto"}))
    assert auto.device == "cpu"
    assert str(next(auto.model.parameters()).device) == "cpu"
    assert next(auto.model.parameters()).dtype == torch.float32  # fp16 only on a GPU
    texts = ["Ownership moves a value.", "Traits bound generic parameters."]
    cpu = SentenceTransformerEmbedder.from_settings(settings.model_copy(update={"device": "cpu"}))
    assert np.array_equal(auto.embed(texts), cpu.embed(texts))
    assert auto.fingerprint == cpu.fingerprint


def test_cuda_asked_for_without_a_cuda_build_is_an_error_naming_the_install_path() -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(EmbeddingError, match=r"sees no CUDA GPU.*GPU embedding"):
        resolve_device("cuda")


def test_the_device_is_not_part_of_the_embedding_settings_fingerprint() -> None:
    settings = load_settings(DEFAULT_SETTINGS_PATH)
    fingerprints = set()
    for device in ("auto", "cpu", "cuda", "mps"):
        embedding = settings.embedding.model_copy(
            update={"device": device, "half_precision": device != "cpu"}
        )
        runtime = Runtime(settings.model_copy(update={"embedding": embedding}))
        fingerprints.add(runtime.embedding_settings_fingerprint)
    assert len(fingerprints) == 1
    other_model = settings.embedding.model_copy(update={"normalize": False})
    changed = Runtime(settings.model_copy(update={"embedding": other_model}))
    assert changed.embedding_settings_fingerprint not in fingerprints
