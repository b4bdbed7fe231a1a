"""One client for every chat model: the OpenAI Chat Completions API at a configurable base URL.

OpenAI, vLLM, Ollama and llama.cpp's server all answer ``POST {base_url}/chat/completions``. A
request is retried with exponential backoff and jitter (a server's ``Retry-After`` wins) after a
timeout, a connection error, 408/429/5xx, or an answer its parser refuses (empty, truncated,
not JSON, breaking the schema); after the last attempt it is a ``ChatCallError`` naming the last
reason, which the caller records against the chunk. Any other HTTP status (400, 401, 404) is a
mistake in the request or the configuration, so it fails at once.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import requests

from agrag_pipeline.extraction.settings import LlmSettings
from agrag_pipeline.http_retry import (
    RequestFailed,
    RequestRefused,
    RetryableAnswer,
    one_line,
    post_json_with_retries,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


class ChatCallError(RuntimeError):
    """A request that failed for good; ``reason`` is the last failure, in one line."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(f"{reason} (after {attempts} attempt{'s' if attempts != 1 else ''})")
        self.reason = reason
        self.attempts = attempts


class AnswerError(RetryableAnswer):
    """The model answered, but not with something usable (raised by a parser; retried)."""


@dataclass(frozen=True)
class ChatAnswer(Generic[T]):
    """A parsed answer, the text it was parsed from, and what it cost."""

    value: T
    content: str
    prompt_tokens: int
    completion_tokens: int
    attempts: int


class ChatClient:
    """``POST {base_url}/chat/completions``; the key from the environment only."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.session = session or requests.Session()
        self._sleep = sleep
        #: HTTP requests sent since this object was made (retries included).
        self.requests_sent = 0

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.settings.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def complete(self, body: dict[str, Any], parse: Callable[[str], T]) -> ChatAnswer[T]:
        """Send ``body``; return ``parse(content)`` of the first usable answer."""

        def counted() -> None:
            self.requests_sent += 1

        try:
            return post_json_with_retries(
                self.session,
                self.url,
                body,
                headers=self._headers,
                read=lambda response, attempts: self._answer(response, parse, attempts),
                timeout_s=self.settings.timeout_s,
                max_retries=self.settings.max_retries,
                base_backoff_s=self.settings.backoff_s,
                max_backoff_s=self.settings.max_backoff_s,
                sleep=self._sleep,
                log=log,
                on_send=counted,
            )
        except RequestRefused as refused:
            raise ChatCallError(
                f"POST {self.url} answered {refused.response.status_code}: "
                f"{one_line(refused.response.text)[:300]}",
                refused.attempts,
            ) from None
        except RequestFailed as failed:
            raise ChatCallError(failed.reason, failed.attempts) from None

    def _answer(
        self, response: requests.Response, parse: Callable[[str], T], attempts: int
    ) -> ChatAnswer[T]:
        if not response.content:
            raise AnswerError("empty response body")
        try:
            body = response.json()
        except ValueError:
            raise AnswerError(
                f"response body is not JSON (truncated?): {one_line(response.text)[:120]!r}"
            ) from None
        try:
            choice = body["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise AnswerError("response has no choices[0].message.content") from None
        if not isinstance(content, str) or not content.strip():
            raise AnswerError("the model's answer is empty")
        if choice.get("finish_reason") == "length":
            raise AnswerError("the answer was cut at the token limit (finish_reason: length)")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        value = parse(content)
        return ChatAnswer(
            value=value,
            content=content,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            attempts=attempts,
        )
