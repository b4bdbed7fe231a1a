"""raw_documents -> sections -> chunks -> embeddings, one dynamic partition per document.

How runs are cut: each asset body loops over ``context.partition_keys`` (a backfill hands it up
to ``DOCUMENTS_PER_RUN`` documents in one process, under ``BackfillPolicy.multi_run``), calls
the core per document and writes files itself through the warehouse. We chose this over an IO
manager because a run covers many partitions: an IO manager would get one object for the whole
range and could not report per-document metadata or isolate one bad document from the others.

How failures are told: a document that fails gets Dagster's own "Failed" partition status on
every asset it did not reach, and the run that failed it ends failed, naming it. Dagster gives a
batched step one output for all its partitions and cannot fail one of them
(dagster-io/dagster#17836), so each step logs one materialisation per document it made and none
for the others, its output derives none (``_OWN_EVENTS``) but lets the run go on for the good
documents, and the run's last step raises a ``Failure`` naming the documents not made. Dagster
computes a partition's "Failed" status from exactly that: a failed run that planned the
partition (one planned event per partition: ``instance_storage.py``) and did not materialise
it. The other documents are materialised, and their checks evaluated, as in a run that succeeds.

How checks are reported: defined on the assets (``check_specs``), evaluated by the asset step
right after its materialisations, one evaluation per document and check that targets that
document's materialisation (``checks.py`` says why ``AssetCheckResult`` cannot do this).

How data versions are recorded, and the trade-off: Dagster 1.13 records one data version for all
partitions of a run (dagster-io/dagster#18649, #34013) and computes the logical version of a
ranged run from a hash over the whole range, so any content-derived or Dagster-computed data
version differs between a batched run and a single-document run of the same, unchanged
document, and the UI then shows the downstream partition as falsely "Unsynced". So every asset
records its *code version* (which folds in the settings fingerprints) as its data version (the
tags Dagster would derive, written by ``_provenance_tags`` on each document's materialisation): the
same in batched and single runs, so Dagster's staleness is exactly "these outputs were made with
other settings or code", for every partition. What it cannot show is a changed raw file: that is
found by content hash (the sensor and the nightly refresh), which re-runs the whole chain for
the document; each partition's metadata names its real version (``content_hash``) and links the
upstream materialisation it was made from. (Since each document's materialisation is now logged
by hand, a per-document content version could be recorded the same way; not done yet.)
"""

import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import dagster as dg
import sqlalchemy as sa
from dagster import DagsterEventType, DefaultRunLauncher
from pydantic import Field

from agrag_pipeline.batch import Outcome, run_batched, run_isolated
from agrag_pipeline.defs import metadata as md
from agrag_pipeline.defs.backfill_tags import tag_backfill
from agrag_pipeline.defs.checks import check_specs, report_checks
from agrag_pipeline.defs.dagster_internals import (
    BACKFILL_ID_TAG,
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    DEFAULT_DATA_VERSION,
    NULL_EVENT_POINTER,
    SYSTEM_METADATA_KEY_SOURCE_ASSET_OBSERVATION,
    SqlEventLogStorage,
    SqlEventLogStorageTable,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)
from agrag_pipeline.defs.event_batches import EventBatcher
from agrag_pipeline.defs.partitions import batched_backfills, documents_partitions
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.defs.run_launcher import worker_tags
from agrag_pipeline.embedding.threads import limit_threads, share_of_cores
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import (
    build_chunks,
    build_embeddings,
    build_sections,
    current_document,
    snapshot_document,
)
from agrag_pipeline.runtime import PARSE_VERSION, Runtime
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.validation import CheckOutcome, check_chunks, check_embeddings, check_sections

T = TypeVar("T")
P = TypeVar("P")

GROUP = "ingestion"
OWNERS = ["team:agrag-pipeline"]
ASSET_NAMES = ("raw_documents", "sections", "chunks", "embeddings")
#: Every per-document step in pipeline order (the failure records' step names).
PIPELINE_ORDER = (*ASSET_NAMES, "graph", "search_index")
#: How many documents a step's failure names before it says "and N more".
NAMED_IN_FAILURE = 20
#: Output metadata that tells Dagster the step logged its asset's materialisations itself:
#: Dagster's own marker for bodies that log their events per partition (it is how a source
#: asset's observation function reports), so the output derives none for the whole range.
_OWN_EVENTS = SYSTEM_METADATA_KEY_SOURCE_ASSET_OBSERVATION


class StepConfig(dg.Config):
    force: bool = Field(
        default=False,
        description="Recompute even when the stored output already matches this version "
        "and these settings.",
    )


def latest_materializations(
    instance: dg.DagsterInstance, asset: str, keys: list[str]
) -> dict[str, md.Pointer]:
    """The latest materialisation of each of ``keys`` of ``asset`` (two queries, any count).

    On a SQL event log the pointers are read from the event log's columns (storage id, run,
    partition) and the stored event's JSON (its time and data version tag), not from records
    Dagster deserialises whole with their metadata: each step reads its upstream's pointers,
    and deserialising them cost about 5% of a run worker's CPU.
    """
    asset_key = dg.AssetKey(asset)
    storage = instance.event_log_storage
    ids = storage.get_latest_storage_id_by_partition(
        asset_key, DagsterEventType.ASSET_MATERIALIZATION, set(keys)
    )
    if not ids:
        return {}
    if isinstance(storage, SqlEventLogStorage):
        return _pointers_from_columns(storage, asset, list(ids.values()))
    return _pointers_from_records(instance, asset, list(ids.values()))


def _pointers_from_records(
    instance: dg.DagsterInstance, asset: str, storage_ids: list[int]
) -> dict[str, md.Pointer]:
    """``latest_materializations`` from Dagster's records (any event log storage)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), storage_ids=storage_ids),
        limit=len(storage_ids),
    ).records
    return {
        r.partition_key: md.Pointer(
            asset,
            r.partition_key,
            r.run_id,
            r.storage_id,
            r.timestamp,
            ((r.asset_materialization.tags or {}) if r.asset_materialization else {}).get(
                DATA_VERSION_TAG
            ),
        )
        for r in records
        if r.partition_key is not None
    }


def _pointers_from_columns(
    storage: SqlEventLogStorage, asset: str, storage_ids: list[int]
) -> dict[str, md.Pointer]:
    """``latest_materializations`` read from the index's rows: one query, a JSON parse each."""
    table = SqlEventLogStorageTable
    query = sa.select(table.c.id, table.c.run_id, table.c.partition, table.c.event).where(
        table.c.id.in_(storage_ids)
    )
    pointers = {}
    with storage.index_connection() as conn:
        for storage_id, run_id, partition, stored in conn.execute(query):
            if partition is None:
                continue
            entry = json.loads(stored)
            made = entry["dagster_event"]["event_specific_data"]["materialization"]
            pointers[partition] = md.Pointer(
                asset,
                partition,
                run_id,
                int(storage_id),
                float(entry["timestamp"]),
                (made.get("tags") or {}).get(DATA_VERSION_TAG),
            )
    return pointers


def materialized_in_run(instance: dg.DagsterInstance, run_id: str, asset: str) -> set[str]:
    """The partitions of ``asset`` this run materialised (read from the run's own events, so a
    concurrent run of the same documents changes nothing here).

    On a SQL event log (SQLite, PostgreSQL) this reads the columns Dagster writes beside each
    event (its type, asset key and partition), one query; deserialising every materialisation
    of the run instead cost each step O(the run's events), about 4% of a whole-graph run.
    """
    asset_key = dg.AssetKey(asset)
    storage = instance.event_log_storage
    if isinstance(storage, SqlEventLogStorage):
        table = SqlEventLogStorageTable
        query = sa.select(table.c.partition).where(
            table.c.run_id == run_id,
            table.c.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION.value,
            table.c.asset_key == asset_key.to_string(),
        )
        with storage.run_connection(run_id) as conn:
            return {row[0] for row in conn.execute(query) if row[0] is not None}
    found: set[str] = set()
    cursor = None
    while True:
        page = instance.get_records_for_run(
            run_id, cursor, of_type=DagsterEventType.ASSET_MATERIALIZATION, limit=1000
        )
        for record in page.records:
            event = record.event_log_entry.dagster_event
            if event is not None and event.asset_key == asset_key and event.partition:
                found.add(event.partition)
        if not page.has_more:
            return found
        cursor = page.cursor


def _tag_run(context: dg.AssetExecutionContext, runtime: Runtime) -> None:
    """Give the run the fingerprint tags, however it was launched (UI, sensor, CLI), so runs
    can be filtered by fingerprint, and its worker's pid and host, so run monitoring can fail
    it if that process dies (``run_launcher.py``); one write, only when a tag is missing. The
    backfill a run belongs to gets the fingerprint tags too (``backfill_tags.py``)."""
    tags = {**runtime.fingerprint_tags(), **worker_tags()}
    if any(context.run.tags.get(k) != v for k, v in tags.items()):
        context.instance.add_run_tags(context.run.run_id, tags)
    backfill_id = context.run.tags.get(BACKFILL_ID_TAG)
    if backfill_id:  # the Runs page lists the backfill, filtered by its own tags
        try:
            tag_backfill(context.instance, backfill_id, runtime.fingerprint_tags())
        except Exception as exc:  # a convenience for the UI: never fail a step for it
            context.log.warning(f"could not tag backfill {backfill_id}: {exc}")


@dataclass(frozen=True)
class _Place:
    """Where a step stands in its run's execution plan (re-executions included)."""

    #: The step this one depends on runs in this run (its failures block documents here).
    upstream_runs: bool
    #: No step of this run depends on this one: it ends the run's work for its documents.
    last: bool
    #: Of the last steps that depend on the same step, this one runs last: it names the
    #: documents that failed upstream (the others name only their own failures, so each
    #: failed document is summarised once).
    names_upstream_failures: bool


def _place_in_run(context: dg.AssetExecutionContext) -> _Place:
    step_context = context.get_step_execution_context()
    plan = step_context.execution_plan
    me = step_context.step
    order = [s.key for s in plan.get_steps_to_execute_in_topo_order()]

    def sources(key: str) -> frozenset[str]:
        step = plan.get_step_by_key(key)
        return frozenset(
            h.step_key for i in step.step_inputs for h in i.get_step_output_handle_dependencies()
        ) & frozenset(order)

    last_steps = [k for k in order if not any(k in sources(other) for other in order)]
    siblings = [k for k in last_steps if sources(k) == sources(me.key)]
    return _Place(
        upstream_runs=bool(sources(me.key)),
        last=me.key in last_steps,
        names_upstream_failures=bool(siblings) and siblings[-1] == me.key,
    )


def _provenance_tags(
    code_version: str | None, upstreams: dict[str, md.Pointer | None]
) -> dict[str, str]:
    """The data-version tags Dagster writes on a materialisation it derives from an output:
    the code version as data version (see the module docstring) and, for every upstream asset,
    its partition's materialisation this one was made from, so staleness is computed per
    document (an upstream left out reads as "has a new dependency": a false "Unsynced")."""
    if code_version is None:
        return {}
    tags = {
        CODE_VERSION_TAG: code_version,
        DATA_VERSION_TAG: code_version,
        DATA_VERSION_IS_USER_PROVIDED_TAG: "true",
    }
    for upstream, pointer in upstreams.items():
        key = dg.AssetKey(upstream)
        tags[get_input_data_version_tag(key)] = (
            pointer.data_version if pointer and pointer.data_version else DEFAULT_DATA_VERSION.value
        )
        tags[get_input_event_pointer_tag(key)] = (
            str(pointer.storage_id) if pointer else NULL_EVENT_POINTER
        )
    return tags


def _why_not_made(warehouse: Warehouse, key: str) -> str:
    """Where a document stopped, from its failure records: the earliest step that failed."""
    try:
        failures = warehouse.read_failures(Document.node_id_for(key))
    except Exception as exc:  # the summary must not fail on a record it cannot read
        return f"its failure record could not be read: {exc}"
    order = {name: i for i, name in enumerate(PIPELINE_ORDER)}
    for step in sorted(failures, key=lambda s: order.get(s, len(order))):
        error = str(failures[step].get("error") or "").strip().splitlines()
        return f"{step} failed: {error[0][:300] if error else 'no error recorded'}"
    return "an earlier asset was not made for it in this run"


#: How much of a document's error one line of a run's failure shows (the log has it all).
SHORT_ERROR_CHARS = 160


def short_error(key: str, why: str) -> str:
    """Why a document was not made, as one short line for a list that names it already: its
    first line, without the ``<key>: `` the core begins its messages with, cut to
    ``SHORT_ERROR_CHARS`` (the whole message is in the run's log and the failure's metadata)."""
    lines = why.strip().splitlines()
    first = lines[0].strip().replace(f"{key}: ", "", 1) if lines else ""
    if not first:
        return "no error recorded"
    if len(first) > SHORT_ERROR_CHARS or len(lines) > 1:
        return first[: SHORT_ERROR_CHARS - 1].rstrip() + "…"
    return first


def documents_failed(step: str, total: int, not_made: dict[str, str], made: int) -> dg.Failure:
    """The step's failure naming the documents it could not make, so the run ends failed and
    Dagster marks exactly those partitions failed (the others were materialised)."""
    shown = sorted(not_made)[:NAMED_IN_FAILURE]
    more = len(not_made) - len(shown)
    lines = [f"- {key}: {short_error(key, not_made[key])}" for key in shown]
    if more > 0:
        lines.append(f"- and {more} more (the run's log names each one)")
    return dg.Failure(
        description=f"{len(not_made)} of {total} documents failed ({step} was made for "
        f"{made}):\n" + "\n".join(lines),
        metadata={
            "failed_documents": len(not_made),
            "documents": total,
            "failed": dg.MetadataValue.json(dict(sorted(not_made.items()))),
        },
        allow_retries=False,
    )


@dataclass(frozen=True)
class Batch(Generic[P, T]):
    """How a sink step writes a run's documents at once (``_materialize``): ``commit`` writes
    the prepared documents together (source key -> its result or its error), ``around`` is
    held from the first document prepared to the commit's end (the sink's lock), and
    ``evaluate`` evaluates the checks of the documents made, together."""

    commit: Callable[[dict[str, P]], Mapping[str, T | Exception]]
    around: Callable[[], AbstractContextManager[object]] | None = None
    evaluate: Callable[[list[str]], Mapping[str, list[CheckOutcome]]] | None = None


def _materialize(
    context: dg.AssetExecutionContext,
    runtime: Runtime,
    step: str,
    work: Callable[[str], Any],  # T, or with ``batch`` what its commit takes (P)
    describe: Callable[[T, Warehouse], dict[str, Any]],
    upstream: str | None = None,
    evaluate: Callable[[str], list[CheckOutcome]] | None = None,
    also_upstream: tuple[str, ...] = (),
    batch: Batch[Any, T] | None = None,
) -> Iterator[Any]:
    """Run ``work`` per document; materialise only the documents it made, then their checks.

    A batched step cannot fail one partition (dagster-io/dagster#17836), so: each document
    made gets its own materialisation (with the data-version tags Dagster would derive), the
    step's output records none (``_OWN_EVENTS``) but still lets the next step of the run go
    on, and the run's last step fails naming the documents not made. A failed run that
    planned a partition and did not materialise it is what Dagster shows as a "Failed"
    partition: exactly those documents, on every asset they did not reach. A document whose
    upstream failed in this run is not tried again (its error is logged once, where it failed).
    ``also_upstream`` names the asset's other dependencies (recorded and linked, not blocking).
    With ``batch`` (a sink that writes a run's documents at once), ``work`` prepares each
    document and ``batch`` writes them together and evaluates their checks together; each
    document still fails, and is reported, on its own (``batch.run_batched``).
    """
    _tag_run(context, runtime)
    keys = list(context.partition_keys)
    place = _place_in_run(context)
    inputs = {
        asset: latest_materializations(context.instance, asset, keys)
        for asset in ((upstream,) if upstream else ()) + also_upstream
    }
    made_upstream = (
        materialized_in_run(context.instance, context.run.run_id, upstream)
        if upstream and place.upstream_runs
        else None
    )
    blocked = [k for k in keys if made_upstream is not None and k not in made_upstream]
    code_version = context.assets_def.code_versions_by_key[dg.AssetKey(step)]

    def failed_on(key: str) -> dict[str, Any]:
        """The version and the code and settings (code version) a failure happened on; not
        the version for a failed snapshot (the stored one is the one before the file's)."""
        found: dict[str, Any] = {"code_version": code_version} if code_version else {}
        if step != "raw_documents":
            document = runtime.warehouse.get_document(Document.node_id_for(key))
            if document is not None:
                found["content_hash"] = document.content_hash
        return found

    tried = [k for k in keys if k not in set(blocked)]

    def on_error(_key: str, msg: str) -> None:
        context.log.error(f"{step}: {msg}")

    outcomes: list[Outcome[T]] = (
        run_isolated(step, tried, work, runtime.warehouse, on_error, failed_on)
        if batch is None
        else run_batched(
            step, tried, work, batch.commit, runtime.warehouse, on_error, failed_on, batch.around
        )
    )
    backfill = (
        {BACKFILL_ID_TAG: context.run.tags[BACKFILL_ID_TAG]}
        if context.run.tags.get(BACKFILL_ID_TAG)
        else {}
    )
    made: list[str] = []
    materializations = EventBatcher(context)
    reused = 0
    for outcome in outcomes:
        if not outcome.ok:
            continue
        assert outcome.result is not None
        key = outcome.source_key
        meta = describe(outcome.result, runtime.warehouse)
        reused += meta.get("agrag/status") == "reused"
        pointers = {asset: found.get(key) for asset, found in inputs.items()}
        for asset, pointer in pointers.items():
            meta.update(md.pointer_metadata(pointer, asset))
        yield from materializations.add(
            dg.AssetMaterialization(
                asset_key=step,
                partition=key,
                metadata=meta,
                tags={
                    **_provenance_tags(code_version, pointers),
                    **backfill,
                    **runtime.fingerprint_tags(),
                },
            )
        )
        made.append(key)
    yield from materializations.flush()
    failed = {o.source_key: f"{step} failed: {o.error}" for o in outcomes if not o.ok}
    context.log.info(
        f"{step}: {len(made)} of {len(keys)} documents done ({reused} already current), "
        f"{len(failed)} failed"
        + (f", {len(blocked)} not tried (an earlier step failed for them)" if blocked else "")
    )
    not_made = {**{k: _why_not_made(runtime.warehouse, k) for k in blocked}, **failed}
    if not made:
        raise documents_failed(step, len(keys), not_made, 0)
    yield dg.MaterializeResult(metadata={_OWN_EVENTS: True})
    if batch is not None and batch.evaluate is not None:
        evaluated = batch.evaluate(made)
        evaluate = evaluated.__getitem__
    if evaluate is not None:
        targets = latest_materializations(context.instance, step, made)
        yield from report_checks(context, step, made, targets, evaluate)
    if place.last and not place.names_upstream_failures:
        not_made = failed
    if place.last and not_made:
        raise documents_failed(step, len(keys), not_made, len(made))


def embedding_threads(context: dg.AssetExecutionContext, configured: int | None) -> int | None:
    """The local model's CPU threads in this run: the setting, else, in a backfill's run whose
    steps run where its sibling runs do (a local run launcher, not the Celery executor), this
    run's share of the cores beside the other runs the instance runs at once (see
    ``embedding.threads``); a run on its own, a pod per run or a Celery worker keeps torch's
    default (every core it has)."""
    if configured is not None or BACKFILL_ID_TAG not in context.run.tags:
        return configured
    on_this_machine = isinstance(context.instance.run_launcher, DefaultRunLauncher)
    if not on_this_machine or os.environ.get("AGRAG_EXECUTOR", "in_process") == "celery":
        return None
    queue = context.instance.get_concurrency_config().run_queue_config
    at_once = queue.max_concurrent_runs if queue is not None else 1
    return share_of_cores(at_once) if at_once and at_once > 1 else None


def per_document_asset(
    name: str, code_version: str, metadata: dict[str, Any] | None = None, stage: str | None = None
) -> dict[str, Any]:
    """The ``@dg.asset`` arguments every per-document asset shares: one partition per document,
    batched backfills, the group and owners, its checks and its stage tag."""
    return {
        "name": name,
        "partitions_def": documents_partitions,
        "backfill_policy": batched_backfills,
        "group_name": GROUP,
        "owners": OWNERS,
        "code_version": code_version,
        "metadata": metadata or {},
        "check_specs": check_specs(name),
        "tags": {"agrag/stage": stage or name},
    }


def build_assets(code_versions: dict[str, str]) -> list[dg.AssetsDefinition]:
    """The four assets, with code versions that fold in the settings fingerprints."""

    def common(name: str) -> dict[str, Any]:
        return per_document_asset(name, code_versions[name], md.definition_metadata(name))

    @dg.asset(
        kinds={"python", "file"},
        description="Each document version's bytes, snapshotted into the warehouse "
        "(so later steps never read a file that changed under them).",
        **common("raw_documents"),
    )
    def raw_documents(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator:
        rt = pipeline.runtime()
        # Once per run, as `agrag core` does per call: files writers killed mid-write left
        # (a live writer's are kept, so concurrent runs are safe).
        try:
            for path in rt.warehouse.remove_stale_temporaries():
                context.log.info(f"removed {path}, left by a writer that was killed")
        except OSError as exc:
            context.log.warning(f"could not clean temporary files: {exc}")
        yield from _materialize(
            context,
            rt,
            "raw_documents",
            lambda key: snapshot_document(rt.warehouse, rt.raw_root, key),
            md.snapshot_metadata,
        )

    @dg.asset(
        deps=[raw_documents],
        kinds={"python", "parquet"},
        description="The document's text layer and section tree (headings, tables, spans).",
        **common("sections"),
    )
    def sections(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        yield from _materialize(
            context,
            rt,
            "sections",
            lambda key: build_sections(
                rt.warehouse,
                current_document(rt.warehouse, key),
                parse_version=PARSE_VERSION,
                ocr=rt.settings.parsing.ocr,
                force=config.force,
            ),
            md.sections_metadata,
            upstream="raw_documents",
            evaluate=lambda key: check_sections(
                rt.warehouse, key, warn_below=rt.settings.parsing.quality.warn_below
            ),
        )

    @dg.asset(
        deps=[sections],
        kinds={"python", "parquet"},
        description="Retrieval-sized chunks (the Chunk model), one Parquet file per document, "
        "tagged with chunker, schema and extraction fingerprints.",
        **common("chunks"),
    )
    def chunks(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        yield from _materialize(
            context,
            rt,
            "chunks",
            lambda key: build_chunks(
                rt.warehouse,
                current_document(rt.warehouse, key),
                rt.chunker,
                schema_fingerprint=rt.schema_fingerprint,
                extraction_fingerprint=rt.extraction_fingerprint,
                force=config.force,
            ),
            md.chunks_metadata,
            upstream="sections",
            evaluate=lambda key: check_chunks(
                rt.warehouse, key, expected_chunker_hash=rt.chunker_hash
            ),
        )

    @dg.asset(
        deps=[chunks],
        kinds={"python", "parquet", "pytorch"},
        # The embedding backend (a model in memory, a GPU, a rate-limited service) is shared:
        # a deployment limits how many steps use it at once (deploy/dagster.yaml, "pools").
        pool="embedding",
        description="One vector per chunk (of its contextual_text), cached by content.",
        **common("embeddings"),
    )
    def embeddings(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        limit_threads(embedding_threads(context, rt.settings.embedding.threads))
        yield from _materialize(
            context,
            rt,
            "embeddings",
            lambda key: build_embeddings(
                rt.warehouse,
                current_document(rt.warehouse, key),
                rt.embedder,
                rt.embedding_cache,
                settings_fingerprint=rt.embedding_settings_fingerprint,
                force=config.force,
            ),
            md.embeddings_metadata,
            upstream="chunks",
            evaluate=lambda key: check_embeddings(
                rt.warehouse, key, dimension=rt.embedder.dimension
            ),
        )

    return [raw_documents, sections, chunks, embeddings]
