"""What the HTTP clients (embeddings, extraction) share: one retried JSON POST.

Both speak an OpenAI-compatible API, and both must treat the same failures the same way: a
timeout, a connection error or 408/429/5xx is retried with exponential backoff and jitter (a
server's ``Retry-After`` wins, capped); any other status is a mistake in the request or the
configuration and fails at once; an answer the caller's reader refuses (``RetryableAnswer``) is
retried too. The callers turn the two outcomes below into their own errors.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

import requests

T = TypeVar("T")

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class RetryableAnswer(ValueError):
    """A 200 answer the caller cannot use (empty, truncated, off-schema): try again."""


class RequestFailed(RuntimeError):
    """Every attempt failed; ``reason`` is the last failure in one line."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


class RequestRefused(RuntimeError):
    """The server answered with a status that no retry can fix (400, 401, 404, ...)."""

    def __init__(self, response: requests.Response, attempts: int) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response
        self.attempts = attempts


def retry_after_s(response: requests.Response) -> float | None:
    """``Retry-After`` as seconds (delta-seconds or an HTTP date), or None."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_s(
    attempt: int, response: requests.Response | None, *, base_s: float, max_s: float
) -> float:
    """Seconds to wait before attempt ``attempt + 2``: ``Retry-After``, else jittered doubling."""
    if response is not None:
        retry_after = retry_after_s(response)
        if retry_after is not None:
            return min(retry_after, max_s)
    base = min(base_s * 2**attempt, max_s)
    return base * (0.5 + random.random() / 2)  # jitter: spread clients that failed together


def one_line(text: str) -> str:
    return " ".join(text.split())


def post_json_with_retries(
    session: requests.Session,
    url: str,
    body: dict[str, Any],
    *,
    headers: Callable[[], dict[str, str]],
    read: Callable[[requests.Response, int], T],
    timeout_s: float,
    max_retries: int,
    base_backoff_s: float,
    max_backoff_s: float,
    sleep: Callable[[float], None],
    log: logging.Logger,
    on_send: Callable[[], None] | None = None,
) -> T:
    """POST ``body`` as JSON; ``read(response, attempts)`` of the first usable 200 answer.

    Raises ``RequestRefused`` for a status no retry fixes, ``RequestFailed`` after the last
    attempt. ``headers`` is called per attempt, so a key rotated in the environment is picked up.
    """
    attempts = max_retries + 1
    reason = "not sent"
    for attempt in range(attempts):
        response: requests.Response | None = None
        try:
            if on_send is not None:
                on_send()
            response = session.post(url, json=body, headers=headers(), timeout=timeout_s)
        except requests.Timeout:
            reason = f"timed out after {timeout_s:g} s"
        except requests.ConnectionError as exc:
            reason = f"connection failed: {one_line(str(exc))[:200]}"
        else:
            if response.status_code == 200:
                try:
                    return read(response, attempt + 1)
                except RetryableAnswer as exc:
                    reason = str(exc)
            elif response.status_code in RETRY_STATUS:
                reason = f"HTTP {response.status_code}: {one_line(response.text)[:200]}"
            else:
                raise RequestRefused(response, attempt + 1)
        if attempt + 1 < attempts:
            delay = backoff_s(attempt, response, base_s=base_backoff_s, max_s=max_backoff_s)
            log.warning(
                "POST %s: %s; retry %d/%d in %.2fs", url, reason, attempt + 1, max_retries, delay
            )
            sleep(delay)
    raise RequestFailed(reason, attempts)
