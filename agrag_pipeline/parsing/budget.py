"""Time and size budgets for parsers: a hostile document ends in a clear per-document error.

Why cooperative: a parse runs in the worker's own thread (often inside C code: Lexbor,
pdfium, lxml), which Python cannot interrupt safely. Each parser instead calls
``deadline.check(where)`` between units of work (pages, elements, rows, slides); past the
budget it raises ``ParseTimeoutError`` naming the document and where it gave up.

``parse_document`` opens one ``Deadline`` per document and makes it current for the parse, so a
parser with the plain ``(raw, document)`` signature reaches it through ``current_deadline()``
without a new parameter. Outside ``parse_document`` ``current_deadline()`` is a deadline that
never expires, so a parser called directly (tests, tools) still runs.

Size budgets (``check_size``) refuse what would exhaust memory before building it, with a
``DocumentTooLargeError`` naming the quantity and the limit.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from collections.abc import Iterator

from agrag_pipeline.parsing.errors import DocumentTooLargeError, ParseTimeoutError

#: Default time budget of one document's parse, in seconds (every format).
DEFAULT_TIME_BUDGET_S = 300.0

#: How many ``tick()`` calls pass between two clock reads (cheap checks in hot loops).
_TICK_EVERY = 1024


class Deadline:
    """A parse's time budget: ``check(where)`` raises ``ParseTimeoutError`` once it is spent."""

    __slots__ = ("_ticks", "ends_at", "seconds", "source_key", "started_at")

    def __init__(self, source_key: str, seconds: float = DEFAULT_TIME_BUDGET_S) -> None:
        if not seconds > 0:
            raise ValueError(f"a time budget must be positive, got {seconds!r}")
        self.source_key = source_key
        self.seconds = float(seconds)
        self.started_at = time.monotonic()
        self.ends_at = self.started_at + self.seconds
        self._ticks = 0

    @classmethod
    def unlimited(cls, source_key: str = "") -> Deadline:
        return cls(source_key, math.inf)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    @property
    def remaining(self) -> float:
        return self.ends_at - time.monotonic()

    @property
    def expired(self) -> bool:
        return time.monotonic() > self.ends_at

    def check(self, where: str) -> None:
        """Raise ``ParseTimeoutError`` if the budget is spent; ``where`` names the position
        (``"page 12"``, ``"element 40,000"``) for the error message."""
        if time.monotonic() > self.ends_at:
            raise ParseTimeoutError(
                self.source_key,
                f"gave up after {self.seconds:g} s (time budget) at {where}",
            )

    def tick(self, where: str) -> None:
        """``check`` every ``_TICK_EVERY`` calls: for loops over many small items."""
        self._ticks += 1
        if self._ticks % _TICK_EVERY == 0:
            self.check(where)


def check_size(source_key: str, what: str, value: int, limit: int) -> None:
    """Raise ``DocumentTooLargeError`` when ``value`` (of ``what``) is over ``limit``."""
    if value > limit:
        raise DocumentTooLargeError(
            source_key, f"{value:,} {what} is over the limit of {limit:,} {what}"
        )


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "agrag_parse_deadline", default=None
)


def current_deadline(source_key: str = "") -> Deadline:
    """The deadline of the parse running in this context (unlimited outside one)."""
    deadline = _CURRENT.get()
    return deadline if deadline is not None else Deadline.unlimited(source_key)


@contextlib.contextmanager
def deadline_scope(deadline: Deadline) -> Iterator[Deadline]:
    """Make ``deadline`` current while a parse runs (``parse_document`` does this)."""
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


__all__ = [
    "DEFAULT_TIME_BUDGET_S",
    "Deadline",
    "check_size",
    "current_deadline",
    "deadline_scope",
]
