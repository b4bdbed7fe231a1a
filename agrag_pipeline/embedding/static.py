"""A static backend (model2vec): one vector per token, averaged; no transformer at run time.

No pretrained model2vec model can be downloaded here, so by default one is distilled offline
from the packaged sentence-transformers model (``model2vec.distill``: one forward pass per
vocabulary token, PCA, SIF weighting; ~20 s on two cores) into the cache directory, once, and
reused after. It is ~100-200x faster than MiniLM on CPU, but gives up much quality: on 300
Rust-book chunks its pairwise cosine similarities correlate with MiniLM's at Spearman 0.46 and
it finds 44% of each chunk's 10 nearest MiniLM neighbours, about what plain TF-IDF gets (0.48,
47%); benchmarks/embedding_bench.py measures it. A pretrained potion model (tokenlearn-trained)
would do better but cannot be downloaded here; point ``static.model_dir`` at one where it can.
So it is opt-in, for corpora where MiniLM on CPU is too slow.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
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
from agrag_pipeline.embedding.sentence_transformer import verify_weights
from agrag_pipeline.fingerprints import file_sha256, fingerprint

if TYPE_CHECKING:
    from agrag_pipeline.embedding.settings import EmbeddingSettings

logger = logging.getLogger(__name__)

BACKEND = "model2vec"
#: Static models carry no sequence limit of their own; this bounds the tokens averaged.
DEFAULT_MAX_TOKENS = 512


def distill_static_model(
    source_dir: Path, cache_dir: Path, *, source_sha256: str, pca_dims: int | None
) -> Path:
    """The directory of a model2vec model distilled from ``source_dir``; made once, then reused.

    The directory name is a fingerprint of the source weights and the distillation settings.
    It is written to a temporary directory beside it and renamed into place, so a crash or a
    concurrent distillation never leaves half a model behind.
    """
    import model2vec

    key = fingerprint(
        {
            "source_weights": source_sha256,
            "pca_dims": pca_dims,
            "model2vec": model2vec.__version__,
        }
    )[:16]
    target = Path(cache_dir) / "model2vec" / f"distilled-{key}"
    if (target / "model.safetensors").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from model2vec.distill import distill

    logger.info("distilling a model2vec model from %s into %s (once)", source_dir, target)
    model = distill(str(source_dir), pca_dims=pca_dims, device="cpu")
    scratch = Path(tempfile.mkdtemp(prefix=".distilling-", dir=target.parent))
    try:
        model.save_pretrained(str(scratch))
        try:
            scratch.rename(target)
        except OSError:
            if not (target / "model.safetensors").is_file():
                raise
            # Another process finished first: its model is as good as ours.
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


class StaticEmbedder(Embedder):
    """A model2vec ``StaticModel`` loaded from a local directory."""

    def __init__(
        self,
        model_dir: Path,
        *,
        model_name: str,
        normalize: bool = True,
        max_sequence_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        from model2vec import StaticModel

        self.model_dir = Path(model_dir)
        weights = self.model_dir / "model.safetensors"
        if not weights.is_file():
            raise EmbeddingError(f"{self.model_dir}: not a model2vec directory (no weights)")
        self.weights_sha256 = file_sha256(weights)
        self.model: Any = StaticModel.from_pretrained(self.model_dir, normalize=normalize)
        self.model_name = model_name
        self.normalize = normalize
        self.dimension = int(self.model.dim)
        self.max_sequence_tokens = max_sequence_tokens
        tokenizer_json = self.model_dir / "tokenizer.json"
        self.tokenizer_path = tokenizer_json if tokenizer_json.is_file() else None
        self.fingerprint = embedding_fingerprint(
            backend=BACKEND,
            model=model_name,
            weights=self.weights_sha256,
            dimension=self.dimension,
            normalize=normalize,
            pooling="mean",
            max_sequence_tokens=max_sequence_tokens,
        )

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings, cache_dir: Path) -> StaticEmbedder:
        if settings.static.model_dir is not None:
            model_dir = Path(settings.static.model_dir)
            name = settings.model
        else:
            from agrag_pipeline.embedding.sentence_transformer import (
                DEFAULT_MODEL,
                packaged_minilm_dir,
            )

            if settings.model_dir is not None:
                source = Path(settings.model_dir)
            elif settings.model == DEFAULT_MODEL:
                source = packaged_minilm_dir()
            else:
                raise EmbeddingError(
                    f"cannot distill {settings.model!r} offline: set embedding.model_dir or "
                    "embedding.static.model_dir"
                )
            source_sha = verify_weights(source, settings.weights_sha256)
            model_dir = distill_static_model(
                source, cache_dir, source_sha256=source_sha, pca_dims=settings.static.pca_dims
            )
            name = f"model2vec-distilled:{settings.model}"
        return cls(model_dir, model_name=name, normalize=settings.normalize)

    def _encode(self, texts: list[str]) -> Vectors:
        vectors = self.model.encode(
            texts, max_length=self.max_sequence_tokens, use_multiprocessing=False
        )
        vectors = np.asarray(vectors, dtype=np.float32)
        return l2_normalize(vectors) if self.normalize else vectors
