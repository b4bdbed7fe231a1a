"""Run one step over many documents so that one bad document never fails the others.

Each document's failure is caught, named (source key and problem) and recorded in the
warehouse's failure records; what was stored before for that document stays untouched, because
every write is atomic and happens only after the step succeeded.

Recording is best effort and never aborts the batch: a failure record that cannot be written
(a full disk, a failures path that is a folder) or a success whose stale record cannot be
cleared is logged as a warning, kept in ``Outcome.record_error`` and, for a failure, appended
to ``Outcome.error``, so the caller still reports it; the remaining documents are tried.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, Generic, TypeVar

from agrag_pipeline.models import Document
from agrag_pipeline.storage import Warehouse

T = TypeVar("T")
P = TypeVar("P")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome(Generic[T]):
    source_key: str
    result: T | None = None
    error: str | None = None
    #: Why the failure record could not be written or cleared, if it could not.
    record_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def run_isolated(
    step: str,
    source_keys: Iterable[str],
    work: Callable[[str], T],
    warehouse: Warehouse | None = None,
    on_error: Callable[[str, str], None] | None = None,
    failure_context: Callable[[str], Mapping[str, Any]] | None = None,
) -> list[Outcome[T]]:
    """Call ``work(key)`` for each key; a failure becomes an ``Outcome`` with its message.

    ``failure_context(key)`` adds to a failure's record what it failed on (the document's
    version, the step's code version), so a later run can tell it would fail the same way.
    """
    outcomes: list[Outcome[T]] = []
    for key in source_keys:
        try:
            result = work(key)
        except Exception as exc:  # one document's failure must not fail the batch
            message = _describe(key, exc)
            record_error = None
            if warehouse is not None:
                record = {
                    "source_key": key,
                    "step": step,
                    "error": message,
                    "type": type(exc).__name__,
                    "at": datetime.now(UTC).isoformat(),
                    "traceback": traceback.format_exc(limit=8),
                }
                if failure_context is not None:
                    try:
                        record = {**failure_context(key), **record}
                    except Exception as context_exc:  # never lose the failure for its context
                        log.warning("%s: no failure context: %s", _printable(key), context_exc)
                record_error = _best_effort(
                    key,
                    "record the failure",
                    partial(warehouse.record_failure, Document.node_id_for(key), step, record),
                )
            if record_error is not None:
                message = f"{message} ({record_error})"
            if on_error is not None:
                on_error(key, message)
            outcomes.append(Outcome(key, error=message, record_error=record_error))
            continue
        record_error = None
        if warehouse is not None:
            record_error = _best_effort(
                key,
                "clear its earlier failure record",
                partial(warehouse.clear_failure, Document.node_id_for(key), step),
            )
        outcomes.append(Outcome(key, result=result, record_error=record_error))
    return outcomes


def run_batched(
    step: str,
    source_keys: Iterable[str],
    prepare: Callable[[str], P],
    commit: Callable[[dict[str, P]], Mapping[str, T | Exception]],
    warehouse: Warehouse | None = None,
    on_error: Callable[[str, str], None] | None = None,
    failure_context: Callable[[str], Mapping[str, Any]] | None = None,
    around: Callable[[], AbstractContextManager[object]] | None = None,
) -> list[Outcome[T]]:
    """``run_isolated`` for a step that writes many documents at once: ``prepare(key)`` for
    each document (a failure is that document's), then ``commit`` of every prepared one
    together, which returns each document's result or its own error (an exception it raises
    is every prepared document's). Failures are recorded and reported exactly as
    ``run_isolated`` does, in key order. ``around()``, if given, is held from the first
    ``prepare`` to the end of ``commit`` (a sink's lock: what was read is what is written).
    """
    keys = list(source_keys)
    done: dict[str, T | Exception] = {}
    with around() if around is not None else nullcontext():
        prepared: dict[str, P] = {}
        for key in keys:
            try:
                prepared[key] = prepare(key)
            except Exception as exc:  # one document's failure must not fail the batch
                done[key] = exc
        if prepared:
            try:
                committed = commit(prepared)
            except Exception as exc:
                committed = dict.fromkeys(prepared, exc)
            for key in prepared:
                done[key] = committed.get(key, _NotCommitted(f"{key}: not written by {step}"))

    def replay(key: str) -> T:
        found = done[key]
        if isinstance(found, Exception):
            raise found
        return found

    return run_isolated(step, keys, replay, warehouse, on_error, failure_context)


class _NotCommitted(RuntimeError):
    """A batch's commit returned nothing for a document it was given."""


def _best_effort(source_key: str, what: str, action: Callable[[], object]) -> str | None:
    """Run ``action``; on any error say why (and log it) instead of raising."""
    try:
        action()
    except Exception as exc:
        problem = f"could not {what}: {type(exc).__name__}: {exc}"
        log.warning("%s: %s", _printable(source_key), problem)
        return problem
    return None


def _printable(text: str) -> str:
    """``text`` with undecodable bytes (surrogate escapes) shown as ``\\xNN``, never raising."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _describe(source_key: str, exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    # DocumentError messages already start with the source key.
    return (
        text if text.startswith(f"{source_key}:") else f"{source_key}: {type(exc).__name__}: {text}"
    )
