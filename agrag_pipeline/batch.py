"""Run one step over many documents so that one bad document never fails the others.

Each document's failure is caught, named (source key and problem) and recorded in the
warehouse's failure records; what was stored before for that document stays untouched, because
every write is atomic and happens only after the step succeeded.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

from agrag_pipeline.models import Document
from agrag_pipeline.storage import Warehouse

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    source_key: str
    result: T | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def run_isolated(
    step: str,
    source_keys: Iterable[str],
    work: Callable[[str], T],
    warehouse: Warehouse | None = None,
    on_error: Callable[[str, str], None] | None = None,
) -> list[Outcome[T]]:
    """Call ``work(key)`` for each key; a failure becomes an ``Outcome`` with its message."""
    outcomes: list[Outcome[T]] = []
    for key in source_keys:
        try:
            outcomes.append(Outcome(key, result=work(key)))
            if warehouse is not None:
                warehouse.clear_failure(Document.node_id_for(key), step)
        except Exception as exc:  # one document's failure must not fail the batch
            message = _describe(key, exc)
            if warehouse is not None:
                warehouse.record_failure(
                    Document.node_id_for(key),
                    step,
                    {
                        "source_key": key,
                        "step": step,
                        "error": message,
                        "type": type(exc).__name__,
                        "at": datetime.now(UTC).isoformat(),
                        "traceback": traceback.format_exc(limit=8),
                    },
                )
            if on_error is not None:
                on_error(key, message)
            outcomes.append(Outcome(key, error=message))
    return outcomes


def _describe(source_key: str, exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    # DocumentError messages already start with the source key.
    return (
        text if text.startswith(f"{source_key}:") else f"{source_key}: {type(exc).__name__}: {text}"
    )
