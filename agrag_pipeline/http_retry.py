"""What the HTTP clients (embeddings, extraction) share when a server asks them to wait."""

from __future__ import annotations

import email.utils
import time

import requests


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
