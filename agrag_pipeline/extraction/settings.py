"""Where the chat model is served: ``llm:`` in the settings file.

Not fingerprinted and not in the response cache key: the same model answers the same request
wherever it is served. What decides the answer (model, temperature, gleanings, prompt version,
token limit, seed) lives in ``extraction:`` and is fingerprinted there.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LlmSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The OpenAI-compatible API root, e.g. ``https://api.openai.com/v1`` or
    #: ``http://127.0.0.1:8080/v1`` (llama.cpp, vLLM, Ollama).
    base_url: str = Field(min_length=1)
    #: The key is read from this environment variable, never from the settings file.
    api_key_env: str = "AGRAG_LLM_API_KEY"
    #: ``json_schema`` is OpenAI's strict structured output (OpenAI, vLLM, Ollama, llama.cpp's
    #: own server); ``json_object`` sends ``{"type": "json_object", "schema": ...}``, the form
    #: llama-cpp-python's server takes.
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    #: Seconds one request may take before it counts as failed (and is retried).
    timeout_s: float = Field(default=120.0, gt=0.0)
    #: Retries of one request after a timeout, a connection error, 408/429/5xx, or an answer
    #: that is empty, truncated or breaks the schema.
    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=1.0, ge=0.0)
    max_backoff_s: float = Field(default=30.0, ge=0.0)
