"""One dynamic partition per document, keyed by its source key (DESIGN.md, Identity).

Trade-off: for a dynamic partitions definition the UI's Materialize dialog always offers "Add a
partition" (Dagster 1.13 has no switch to hide it), so a user can add a key no file has. Such a
partition fails at ``raw_documents`` with an error naming the missing file, and the sensor
removes registered partitions whose file is absent on its next tick. Static partitions would
hide the button but need a code reload for every new document, so dynamic partitions stay.

Runs are cut by ``BackfillPolicy.multi_run``: up to ``DOCUMENTS_PER_RUN`` documents per run,
and two runs at once (``max_concurrent_runs: 2`` in the shipped dagster.yaml) use both cores.
"""

from collections.abc import Sequence

import dagster as dg

from agrag_pipeline.defs.dagster_internals import DynamicPartitionsTable, SqlEventLogStorage
from agrag_pipeline.freshness import contiguous_runs

documents_partitions = dg.DynamicPartitionsDefinition(name="documents")

#: Many small documents per run: a backfill of 1,000 documents launches 20 runs, not 1,000.
DOCUMENTS_PER_RUN = 50
batched_backfills = dg.BackfillPolicy.multi_run(max_partitions_per_run=DOCUMENTS_PER_RUN)

#: The run tags by which a run names the partitions it covers (Dagster's, documented).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
#: Runs whose range is resolved when they execute: the keys in it must stay where they are.
_UNFINISHED = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]
#: Keys per statement (SQLite allows 32,766 parameters in one; PostgreSQL 65,535).
_KEYS_PER_STATEMENT = 1000


def gather_at_end(
    instance: dg.DagsterInstance, keys: Sequence[str], order: Sequence[str]
) -> list[str]:
    """Moves ``keys``, documents already registered that changed, to the end of the documents'
    partition order when fewer runs then take them; returns the keys moved.

    Why: Dagster cuts a backfill into runs by ranges of neighbouring partitions
    (dagster-io/dagster#32335): ten changed documents scattered over a thousand were ten runs,
    each paying a run's start. Moved together to the end (new documents are added after them),
    they are one run. The partitions' order is their registration order; after a move it is the
    order in which documents last changed. ``order``: the registered keys, in order.

    A key inside the range of an unfinished run stays where it is: such a run reads its range
    when it executes, so a key moved out of it would leave that run, and a bound moved away
    would widen or invert it.
    """
    position = {k: i for i, k in enumerate(order)}
    keys = [k for k in keys if k in position]
    if not keys:
        return []
    runs_now = len(contiguous_runs(order, keys, DOCUMENTS_PER_RUN))
    if runs_now <= -(-len(keys) // DOCUMENTS_PER_RUN):
        return []
    held: set[str] = set()
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=_UNFINISHED)):
        start, end = run.tags.get(RANGE_START_TAG), run.tags.get(RANGE_END_TAG)
        if start in position and end in position:
            held.update(order[position[start] : position[end] + 1])
        else:
            held.update(k for k in (start, end) if k is not None)
    wanted = set(keys) - held
    moving = [k for k in order if k in wanted]
    if moving:
        _move_to_end(instance, documents_partitions.name or "documents", moving)
    return moving


def _move_to_end(instance: dg.DagsterInstance, name: str, keys: list[str]) -> None:
    """Deletes and adds again ``keys`` in one transaction: a new row id puts them last."""
    storage = instance.event_log_storage
    if not isinstance(storage, SqlEventLogStorage):  # no SQL storage: Dagster's calls, apart
        for key in keys:
            instance.delete_dynamic_partition(name, key)
        instance.add_dynamic_partitions(name, keys)
        return
    table = DynamicPartitionsTable
    with storage.index_transaction() as conn:
        for at in range(0, len(keys), _KEYS_PER_STATEMENT):
            part = keys[at : at + _KEYS_PER_STATEMENT]
            conn.execute(
                table.delete().where(
                    (table.c.partitions_def_name == name) & table.c.partition.in_(part)
                )
            )
        conn.execute(table.insert(), [{"partitions_def_name": name, "partition": k} for k in keys])
