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
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import requests

from agrag_pipeline.extraction.settings import LlmSettings
from agrag_pipeline.http_retry import retry_after_s

log = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})

T = TypeVar("T")


class ChatCallError(RuntimeError):
    """A request that failed for good; ``reason`` is the last failure, in one line."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(f"{reason} (after {attempts} attempt{'s' if attempts != 1 else ''})")
        self.reason = reason
        self.attempts = attempts


class AnswerError(ValueError):
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
        attempts = self.settings.max_retries + 1
        reason = "not sent"
        for attempt in range(attempts):
            response: requests.Response | None = None
            try:
                self.requests_sent += 1
                response = self.session.post(
                    self.url, json=body, headers=self._headers(), timeout=self.settings.timeout_s
                )
            except requests.Timeout:
                reason = f"timed out after {self.settings.timeout_s:g} s"
            except requests.ConnectionError as exc:
                reason = f"connection failed: {_one_line(str(exc))[:200]}"
            else:
                if response.status_code == 200:
                    try:
                        return self._answer(response, parse, attempt + 1)
                    except AnswerError as exc:
                        reason = str(exc)
                elif response.status_code in _RETRY_STATUS:
                    reason = f"HTTP {response.status_code}: {_one_line(response.text)[:200]}"
                else:
                    raise ChatCallError(
                        f"POST {self.url} answered {response.status_code}: "
                        f"{_one_line(response.text)[:300]}",
                        attempt + 1,
                    )
            if attempt + 1 < attempts:
                delay = self._backoff_s(attempt, response)
                log.warning(
                    "POST %s: %s; retry %d/%d in %.2fs",
                    self.url,
                    reason,
                    attempt + 1,
                    self.settings.max_retries,
                    delay,
                )
                self._sleep(delay)
        raise ChatCallError(reason, attempts)

    def _answer(
        self, response: requests.Response, parse: Callable[[str], T], attempts: int
    ) -> ChatAnswer[T]:
        if not response.content:
            raise AnswerError("empty response body")
        try:
            body = response.json()
        except ValueError:
            raise AnswerError(
                f"response body is not JSON (truncated?): {_one_line(response.text)[:120]!r}"
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

    def _backoff_s(self, attempt: int, response: requests.Response | None) -> float:
        if response is not None:
            retry_after = retry_after_s(response)
            if retry_after is not None:
                return min(retry_after, self.settings.max_backoff_s)
        base = min(self.settings.backoff_s * 2**attempt, self.settings.max_backoff_s)
        return base * (0.5 + random.random() / 2)  # jitter: spread clients that failed together


def _one_line(text: str) -> str:
    return " ".join(text.split())
