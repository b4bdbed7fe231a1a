"""An OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, TEI, Ollama speak it).

Requests are batched; 429, 5xx and connection failures are retried with exponential backoff and
jitter (a server's ``Retry-After`` wins); every other failure is an ``EmbeddingError`` that says
what came back, so a wrong dimension or a short response never slips into the outputs.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import requests

from agrag_pipeline.embedding.base import (
    Embedder,
    EmbeddingError,
    Vectors,
    embedding_fingerprint,
    l2_normalize,
)
from agrag_pipeline.http_retry import RequestFailed, RequestRefused, post_json_with_retries

if TYPE_CHECKING:
    from agrag_pipeline.embedding.settings import EmbeddingSettings, OpenAICompatibleSettings

logger = logging.getLogger(__name__)

BACKEND = "openai"


class EmbeddingRequestError(EmbeddingError):
    """The endpoint refused a request or answered with something that is not embeddings."""


class OpenAICompatibleEmbedder(Embedder):
    """Embeds through ``POST {base_url}/embeddings`` with ``{"model", "input": [...]}``."""

    def __init__(
        self,
        settings: OpenAICompatibleSettings,
        *,
        model: str,
        batch_size: int = 32,
        normalize: bool = True,
        tokenizer_path: Path | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.model = model
        self.batch_size = batch_size
        self.normalize = normalize
        self.url = settings.base_url.rstrip("/") + "/embeddings"
        self.dimension = settings.dimension
        self.max_sequence_tokens = settings.max_sequence_tokens
        self.tokenizer_path = tokenizer_path
        self.session = session or requests.Session()
        self._sleep = sleep
        self.fingerprint = embedding_fingerprint(
            backend=BACKEND,
            model=model,
            weights=settings.revision or "unknown",
            dimension=self.dimension,
            normalize=normalize,
            pooling="endpoint",
            max_sequence_tokens=self.max_sequence_tokens,
        )

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> OpenAICompatibleEmbedder:
        from agrag_pipeline.embedding.sentence_transformer import packaged_minilm_dir

        tokenizer = settings.openai.tokenizer
        tokenizer_path = Path(tokenizer) if tokenizer else packaged_minilm_dir() / "tokenizer.json"
        return cls(
            settings.openai,
            model=settings.model,
            batch_size=settings.batch_size,
            normalize=settings.normalize,
            tokenizer_path=tokenizer_path,
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.settings.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _encode(self, texts: list[str]) -> Vectors:
        parts = [
            self._request_batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        vectors = np.concatenate(parts, axis=0)
        return l2_normalize(vectors) if self.normalize else vectors

    def _request_batch(self, texts: list[str]) -> Vectors:
        payload = {"model": self.model, "input": texts}
        try:
            return post_json_with_retries(
                self.session,
                self.url,
                payload,
                headers=self._headers,
                read=lambda response, _attempts: self._parse(response, len(texts)),
                timeout_s=self.settings.timeout_s,
                max_retries=self.settings.max_retries,
                base_backoff_s=self.settings.backoff_s,
                max_backoff_s=self.settings.max_backoff_s,
                sleep=self._sleep,
                log=logger,
            )
        except RequestRefused as refused:
            raise EmbeddingRequestError(
                f"POST {self.url} answered {refused.response.status_code}: "
                f"{refused.response.text[:500]}"
            ) from None
        except RequestFailed as failed:
            raise EmbeddingRequestError(
                f"POST {self.url} failed after {failed.attempts} attempts; "
                f"last failure: {failed.reason}"
            ) from None

    def _parse(self, response: requests.Response, expected: int) -> Vectors:
        try:
            body: Any = response.json()
        except ValueError as exc:
            raise EmbeddingRequestError(
                f"POST {self.url} answered 200 with non-JSON: {response.text[:200]!r}"
            ) from exc
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingRequestError(f"POST {self.url}: response has no 'data' list")
        if len(data) != expected:
            raise EmbeddingRequestError(
                f"POST {self.url}: {len(data)} embeddings for {expected} inputs"
            )
        try:
            items = sorted(data, key=lambda item: int(item["index"]))
            indices = [int(item["index"]) for item in items]
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingRequestError(
                f"POST {self.url}: malformed embedding item: {exc}"
            ) from exc
        if indices != list(range(expected)):
            raise EmbeddingRequestError(f"POST {self.url}: indices {indices} are not 0..{expected}")
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            got = vectors.shape[1] if vectors.ndim == 2 else "ragged"
            raise EmbeddingRequestError(
                f"POST {self.url}: embeddings of dimension {got}, expected {self.dimension} "
                "(embedding.openai.dimension)"
            )
        return vectors
