"""The raw-root sensor: registers documents, requests work for new and changed ones, and
removes deleted ones.

The cursor stays small: what the sensor saw of each file (size, mtime, content hash) is kept in
the Dagster instance's key-value table (``ScanState``), one row per raw root; the cursor only
names the state it belongs to (``v2:<digest>:<files>``). A cursor reset in the UI, or a state
that does not match the cursor, starts from the warehouse (each registered document is compared
with the version it holds), so nothing is redone that is current.

Each tick logs what it found by name: new, changed, deleted documents, and every skipped or
refused file with its reason.

Changed documents are moved to the end of the partitions' order (``gather_at_end``) where they
lie scattered, so that the backfill takes them in one run (new documents are added after them).

Deleted documents: the partition is removed and the document's derived tables (sections,
chunks, embeddings) are deleted, so loaders reading the warehouse never retrieve a document
that no longer exists. Its raw snapshots and text layers stay (content-addressed history), so a
chunk exported earlier can still be traced to the text it came from; Dagster keeps the
materialisation history.
"""

import hashlib
import os

import dagster as dg

from agrag_pipeline.defs.dagster_internals import (
    HIDDEN_TAG_PREFIX,
    AssetGraphSubset,
    AssetKeyPartitionKey,
)
from agrag_pipeline.defs.partitions import documents_partitions, gather_at_end
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.freshness import ChangePlan, encode_cursor, plan_changes, remove_deleted
from agrag_pipeline.models import Document

#: Every per-document asset, sinks included: a new or changed document reaches the graph and
#: the search index in the same backfill as its chunks.
ASSET_KEYS = ("raw_documents", "sections", "chunks", "embeddings", "graph", "search_index")
#: How many names one log line lists before it says "and N more".
NAMED_PER_LINE = 20
#: The digest of the changes a sensor run was requested for (hidden in the UI's runs list).
CHANGES_TAG = f"{HIDDEN_TAG_PREFIX}agrag_changes"


class ScanState:
    """The sensor's per-file memory, in the instance's key-value table, named by the cursor."""

    def __init__(self, instance: dg.DagsterInstance, raw_root: str) -> None:
        self._storage = instance.run_storage
        self.key = "agrag/raw_root_scan/" + hashlib.sha256(raw_root.encode()).hexdigest()[:16]
        self._loaded: str | None = None

    def load(self, cursor: str | None) -> str | None:
        """The stored scan if ``cursor`` names it, else None (start from the warehouse)."""
        if not cursor or not cursor.startswith("v2:"):
            return None
        stored = self._storage.get_cursor_values({self.key}).get(self.key)
        if stored is None or _digest(stored) != cursor.split(":")[1]:
            return None
        self._loaded = _digest(stored)
        return stored

    def save(self, plan: ChangePlan) -> str:
        """Store the scan (unless it is the one loaded: a quiet tick over 100,000 documents
        would rewrite 11 MB); return the cursor that names it."""
        state = encode_cursor(plan.seen)
        digest = _digest(state)
        if digest != self._loaded:
            self._storage.set_cursor_values({self.key: state})
        return f"v2:{digest}:{len(plan.seen)}"


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def _names(keys: list[str]) -> str:
    shown = ", ".join(keys[:NAMED_PER_LINE])
    more = len(keys) - NAMED_PER_LINE
    return shown + (f" and {more} more" if more > 0 else "")


def automation_status() -> dg.DefaultSensorStatus:
    """Sensor and schedule run by default; ``AGRAG_AUTOMATION=off`` starts them stopped."""
    off = os.environ.get("AGRAG_AUTOMATION", "on").lower() in {"off", "0", "false", "stopped"}
    return dg.DefaultSensorStatus.STOPPED if off else dg.DefaultSensorStatus.RUNNING


def backfill_request(
    context: dg.SensorEvaluationContext, keys: list[str], tags: dict[str, str]
) -> dg.RunRequest:
    """A backfill over exactly ``keys`` for every asset, so the assets' ``BackfillPolicy`` batches
    many documents per run instead of launching one run per document.

    Dagster's own automation sensor launches backfills this way; the constructor is marked
    private in Dagster 1.13 (``RunRequest.for_asset_graph_subset``), so it is wrapped here alone.
    """
    assert context.repository_def is not None
    asset_graph = context.repository_def.asset_graph
    subset = AssetGraphSubset.from_asset_partition_set(
        {AssetKeyPartitionKey(dg.AssetKey(a), k) for a in ASSET_KEYS for k in keys},
        asset_graph,
    )
    return dg.RunRequest.for_asset_graph_subset(subset, tags=tags)


@dg.sensor(
    name="raw_documents_sensor",
    minimum_interval_seconds=30,
    default_status=automation_status(),
    asset_selection=dg.AssetSelection.assets(*ASSET_KEYS),
    description="Scans the raw root: new and changed documents are registered and processed "
    "(batched backfills); deleted ones are removed with their derived tables.",
)
def raw_documents_sensor(
    context: dg.SensorEvaluationContext, pipeline: PipelineResource
) -> dg.SensorResult:
    rt = pipeline.runtime()
    registered = context.instance.get_dynamic_partitions(documents_partitions.name or "documents")

    def stored_hash(key: str) -> str | None:
        document = rt.warehouse.get_document(Document.node_id_for(key))
        return document.content_hash if document else None

    state = ScanState(context.instance, str(rt.raw_root))
    plan = plan_changes(
        rt.raw_root, state.load(context.cursor), registered, stored_hash, rt.settings.documents
    )
    for problem in plan.refused:
        context.log.warning(f"refused: {problem}")
    for problem in plan.skipped:
        context.log.info(f"skipped: {problem}")
    removed_keys = []
    sinks = rt.document_sinks() if plan.deleted else ()  # opening the sinks costs seconds
    for removal in remove_deleted(rt.warehouse, plan.deleted, sinks):
        if removal.error is None:
            removed_keys.append(removal.source_key)
            context.log.info(
                f"{removal.source_key}: deleted from the raw root; "
                f"removed {len(removal.removed)} outputs"
            )
        else:  # kept registered, so the next tick tries again
            context.log.error(f"{removal.source_key}: removing its outputs failed: {removal.error}")
    plan.deleted = removed_keys

    requests = []
    if plan.to_run:
        digest = hashlib.sha256(
            "\n".join(f"{k}={plan.seen[k].content_hash}" for k in plan.to_run).encode()
        ).hexdigest()[:16]
        # The digest of the changes is for us, not a filter: under Dagster's hidden prefix.
        tags = {**rt.fingerprint_tags(), "agrag/trigger": "sensor", CHANGES_TAG: digest}
        requests.append(backfill_request(context, plan.to_run, tags))
    if plan.new:
        context.log.info(f"new ({len(plan.new)}): {_names(plan.new)}")
    if plan.changed:
        context.log.info(f"changed ({len(plan.changed)}): {_names(plan.changed)}")
    summary = (
        f"{len(plan.new)} new, {len(plan.changed)} changed, {len(plan.deleted)} deleted, "
        f"{plan.unchanged} unchanged, {len(plan.skipped)} skipped, {len(plan.refused)} refused"
    )
    context.log.info(summary)

    gone = set(plan.deleted)
    moved = gather_at_end(context.instance, plan.changed, [k for k in registered if k not in gone])
    if moved:
        context.log.info(
            f"moved {len(moved)} changed document(s) to the end of the partitions, so that "
            "the backfill takes them in one run, not one run each"
        )
    if plan.new:
        # Registered here in one statement, not returned as an AddDynamicPartitionsRequest: the
        # sensor daemon checks each requested key with a query of its own before adding, which
        # for 100,000 new documents is 15 s on SQLite and about 19 minutes on PostgreSQL (11 ms
        # a key; BENCHMARKS.md, "Scale"). Registering twice is harmless (existing keys skip).
        context.instance.add_dynamic_partitions(documents_partitions.name or "documents", plan.new)
    partition_requests: list[dg.DeleteDynamicPartitionsRequest] = []
    if plan.deleted:
        partition_requests.append(documents_partitions.build_delete_request(plan.deleted))
    # A tick without runs says what it did in its result (the UI shows the skip reason, else
    # "Sensor function returned an empty result"): a deletion is news, not an empty tick.
    removed = (
        f"removed {len(plan.deleted)} deleted document(s) and their outputs: "
        f"{_names(plan.deleted)}; "
        if plan.deleted
        else ""
    )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        cursor=state.save(plan),
        skip_reason=None if requests else f"{removed}nothing to run: {summary}",
    )
