"""A step's materialisations, and its check evaluations, logged in batches (one of each kind
per step, up to ``MAX_EVENTS_PER_BATCH`` events).

Why: each event a step body logs (``context.log_event``, or a yielded ``AssetMaterialization``)
is stored alone, in two transactions and, for a check evaluation, serialised twice; a run of
50 documents stores a step's 150-450 events that way. Dagster batches only the materialisations
it derives from a partitioned output, which our steps do not make (they log one per document:
``assets.py`` says why). So the events are logged here the way Dagster logs its own batches:
each built with the batch's metadata, the last one closing the batch, which hands them all to
the storage at once (``instance_storage.store_event_batch``: one transaction per file). Check
evaluations go as a batch only where the storage takes one (``stores_check_evaluation_batches``;
Dagster's own storages take only materialisations and planned events), else one by one.

Nothing changes for the reader of the event log: the same events, in the same order, with the
same messages; they are stored when the last of the batch is logged instead of one by one, a
moment later (a step logs its documents' events after their work is done, as before).
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg
from dagster import DagsterEvent, DagsterEventType

from agrag_pipeline.defs.dagster_internals import DagsterEventBatchMetadata, new_event_batch_id
from agrag_pipeline.defs.instance_storage import stores_check_evaluation_batches


def check_evaluation_message(evaluation: dg.AssetCheckEvaluation) -> str:
    """The message Dagster gives an evaluation it logs (``DagsterEvent.asset_check_evaluation``,
    which takes no batch)."""
    return (
        f"Asset check '{evaluation.check_name}' on '{evaluation.asset_key.to_user_string()}' "
        + ("passed." if evaluation.passed else "did not pass.")
        + ("" if evaluation.description is None else f" Description: '{evaluation.description}'")
    )


#: Events per batch, at most: a step logs a batch when it holds this many, so a run of many
#: documents (``agrag materialize`` runs every document in one run) never keeps all its
#: evaluations in memory at once.
MAX_EVENTS_PER_BATCH = 500


class EventBatcher:
    """A step's events of one kind, logged in batches of at most ``MAX_EVENTS_PER_BATCH``:
    ``add`` returns the events of a batch it logged (for the step to yield), ``flush`` the
    rest's."""

    def __init__(self, context: dg.AssetExecutionContext) -> None:
        self._context = context
        self._pending: list[dg.AssetMaterialization | dg.AssetCheckEvaluation] = []

    def add(self, event: dg.AssetMaterialization | dg.AssetCheckEvaluation) -> list[DagsterEvent]:
        self._pending.append(event)
        return self.flush() if len(self._pending) >= MAX_EVENTS_PER_BATCH else []

    def flush(self) -> list[DagsterEvent]:
        pending, self._pending = self._pending, []
        return log_in_one_batch(self._context, pending)


def log_in_one_batch(
    context: dg.AssetExecutionContext,
    events: Sequence[dg.AssetMaterialization | dg.AssetCheckEvaluation],
) -> list[DagsterEvent]:
    """Log ``events`` (stored at once when the last is logged); return them as Dagster events
    for the step to yield, so they are in the step's event stream as logged events are.

    Evaluations are logged one by one when the instance's storage takes no batch of them.
    """
    if not events:
        return []
    step = context.get_step_execution_context()
    if any(isinstance(e, dg.AssetCheckEvaluation) for e in events) and (
        not stores_check_evaluation_batches(context.instance.event_log_storage)
    ):
        for evaluation in events:
            context.log_event(evaluation)
        return []
    batch_id = new_event_batch_id()
    last = len(events) - 1
    logged = []
    for i, event in enumerate(events):
        closing = DagsterEventBatchMetadata(batch_id, i == last)
        if isinstance(event, dg.AssetMaterialization):
            logged.append(DagsterEvent.asset_materialization(step, event, closing))
        else:
            logged.append(
                DagsterEvent.from_step(
                    event_type=DagsterEventType.ASSET_CHECK_EVALUATION,
                    step_context=step,
                    event_specific_data=event,
                    message=check_evaluation_message(event),
                    batch_metadata=closing,
                )
            )
    return logged
