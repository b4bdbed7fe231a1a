"""Every name the shell takes from Dagster's private modules (``dagster._...``), in one place.

Why: Dagster may move or change a private name in any release without notice. Gathered here,
an upgrade is checked in one file. The comment above each import names the modules that use it
and the public API that is missing for it (Dagster 1.13); ``test_layering`` keeps every other
module on the public ``dagster`` API. Names ``dagster`` exports publicly (``DagsterEventType``,
``DefaultRunLauncher``, ``DagsterRun``, ``JobExecutionResult``) are imported from it instead.
"""

from __future__ import annotations

from typing import Any

# checks.py: ``dg.AssetCheckEvaluation(target_materialization_data=...)`` is public, but the type
# of that argument is not exported; it ties an evaluation the step logs per document to the
# materialisation it checked.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

# sensors.py (a backfill over exactly the changed documents): ``dg.RunRequest.
# for_asset_graph_subset`` is public but takes an ``AssetGraphSubset``, which has no public
# constructor, nor has the asset-partition pair it is built from (``AssetKeyPartitionKey``).
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset

# assets.py (data provenance of the materialisations a step logs itself): Dagster writes these
# tags only on a materialisation it derives from an op's output; one logged per document with
# ``context.log_event`` has no public way to carry its code version and its upstreams' data
# versions, without which staleness is not per document.
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    DEFAULT_DATA_VERSION,
    NULL_EVENT_POINTER,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)

# sensors.py: see ``AssetGraphSubset``.
from dagster._core.definitions.events import AssetKeyPartitionKey

# launch.py (execute a job as a run of this code location): no public way to create a run
# with a code-location origin (the one ``dagster dev`` serves) and execute it in this process;
# ``execute_in_process`` and ``dg.execute_job`` make runs without a ``remote_job_origin``, which
# the UI shows apart from the job. The origin classes, the reconstructable repository, its
# singleton name and ``execute_run`` below are all for that.
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository
from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME

# assets.py: no public output flag saying "the body logged its materialisations itself, per
# partition"; this is Dagster's own marker for observation functions that do so.
from dagster._core.definitions.source_asset import SYSTEM_METADATA_KEY_SOURCE_ASSET_OBSERVATION

# instance_storage.py (a batch of events stored with one transaction per file, as
# ``store_event`` would store each): the event types Dagster's storages mirror in the index shard
# and the ones it sends in batches are not exported.
# event_batches.py (a step's per-document events stored as one batch): Dagster batches the
# materialisations it derives from a partitioned output with this metadata, but exports neither
# it nor a way for a body to log its own events in a batch.
from dagster._core.events import (
    ASSET_CHECK_EVENTS,
    ASSET_EVENTS,
    BATCH_WRITABLE_EVENTS,
    DagsterEventBatchMetadata,
)
from dagster._core.events import generate_event_batch_id as new_event_batch_id

# launch.py: see ``ReconstructableRepository``.
from dagster._core.execution.api import execute_run

# run_forkserver.py: the instance reference a run worker opens its instance from is not exported.
from dagster._core.instance import InstanceRef

# run_launcher.py (a health check of the local run worker): ``RunLauncher.
# check_run_worker_health`` may be overridden, but the result type it returns and its status
# values are not exported.
from dagster._core.launcher.base import CheckRunHealthResult, WorkerStatus

# run_forkserver.py and run_launcher.py: the Python origin of a run's code (interpreter, code
# pointer, image), which says whether a local process can load it, is not exported.
from dagster._core.origin import JobPythonOrigin, RepositoryPythonOrigin

# launch.py: see ``ReconstructableRepository``. run_launcher.py: whether a run's code location is
# loaded on this machine is told by the class of its origin, and none is exported.
from dagster._core.remote_origin import (
    GrpcServerCodeLocationOrigin,
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)

# instance_storage.py (a batch of check evaluations stored in one transaction): the table of
# check executions and its status values are not exported; the rows are Dagster's own.
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

# postgres_storage.py: dagster-postgres declares its storages' config with this function (it
# lives in Dagster itself); a subclass that adds fields has no public schema to extend.
from dagster._core.storage.config import pg_config

# assets.py (the partitions a run materialised, from the event log's columns instead of every
# event of the run deserialised) and instance_storage.py: the SQL event log's class and table
# are not exported.
# partitions.py (the changed documents moved to the end of the partitions' order, in one
# transaction): Dagster orders dynamic partitions by their row's id and offers no way to
# reorder them; delete then add would leave a moment in which the documents do not exist.
from dagster._core.storage.event_log import SqlEventLogStorage, SqlEventLogStorageTable
from dagster._core.storage.event_log.schema import (
    AssetCheckExecutionsTable,
    DynamicPartitionsTable,
)

# instance_storage.py (SQLite storages that keep their engines): storages are chosen publicly
# only by name (``storage: sqlite:``); the classes, the folder layout of a SQLite instance
# (``_runs_directory``...), the index shard's name and the busy timeout are private, and there
# is no hook to keep an engine between calls, so the classes are subclassed.
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)

# backfill_tags.py (tags of a backfill launched from the UI): no hook at a backfill's creation
# and no API to add tags to it afterwards; the rows Dagster filters backfills by are written
# directly, in run storages that have them (``SqlRunStorage``).
from dagster._core.storage.runs.schema import BackfillTagsTable
from dagster._core.storage.runs.sql_run_storage import SqlRunStorage

# instance_storage.py: see ``SqliteEventLogStorage``.
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import get_alembic_config
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS, create_db_conn_string
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)

# assets.py: no public name for the run tag that names a run's backfill. sensors.py and
# run_launcher.py: none for the prefix of run tags the UI hides (tags only the pipeline reads).
# run_launcher.py: no public name for the tag of a run launched through a code server (it
# says the run is terminated through that server).
from dagster._core.storage.tags import BACKFILL_ID_TAG, GRPC_INFO_TAG, HIDDEN_TAG_PREFIX

# launch.py: see ``ReconstructableRepository``.
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

# instance_storage.py, postgres_storage.py: the type of the ``inst_data`` a ``ConfigurableClass``
# storage receives is not exported (``ConfigurableClass`` itself is public).
from dagster._serdes import ConfigurableClassData

# run_forkserver.py (run workers forked from a loaded code location): the code a run's origin
# points at is loaded with this; the context that turns the SIGINT of a termination into an
# interrupted (canceled) run is not exported either. See ``execute_run_command_body``.
from dagster._utils.hosted_user_process import recon_repository_from_origin
from dagster._utils.interrupts import capture_interrupts

#: What a run worker imports as it runs (found by listing the modules a forked worker's run
#: added): the run worker command's module, which ``execute_run_command_body`` imports, the
#: in-process executor and its plan, and the compute log manager with the file watcher it
#: tails a step's output with.
RUN_WORKER_MODULES = (
    "dagster._cli.api",
    "dagster._core.executor.in_process",
    "dagster._core.execution.plan.active",
    "dagster._core.storage.local_compute_log_manager",
    "watchdog.observers.polling",
)


def execute_run_command_body(run_id: str, instance: Any, *, set_exit_code_on_failure: bool) -> int:
    """Execute a run in this process as ``dagster api execute_run`` does (run_forkserver.py).

    That command is Dagster's own run worker (its container launchers start it); its body has
    no public form. Imported here on first use: Dagster's CLI costs every other process 40 ms.
    """
    from dagster._cli.api import _execute_run_command_body

    return _execute_run_command_body(
        run_id, instance, lambda _event: None, set_exit_code_on_failure=set_exit_code_on_failure
    )


def event_log_alembic_config() -> Any:
    """The alembic configuration of the SQLite event log's schema (instance_storage.py copies
    a run's event file from a template made at its head revision; Dagster exports no way to
    read that revision)."""
    return get_alembic_config(str(sqlite_event_log.__file__))


__all__ = [
    "ASSET_CHECK_EVENTS",
    "ASSET_EVENTS",
    "BACKFILL_ID_TAG",
    "BATCH_WRITABLE_EVENTS",
    "CODE_VERSION_TAG",
    "DATA_VERSION_IS_USER_PROVIDED_TAG",
    "DATA_VERSION_TAG",
    "DEFAULT_DATA_VERSION",
    "GRPC_INFO_TAG",
    "HIDDEN_TAG_PREFIX",
    "INDEX_SHARD_NAME",
    "NULL_EVENT_POINTER",
    "RUN_WORKER_MODULES",
    "SINGLETON_REPOSITORY_NAME",
    "SQLITE_BUSY_TIMEOUT_SECONDS",
    "SYSTEM_METADATA_KEY_SOURCE_ASSET_OBSERVATION",
    "AssetCheckEvaluationTargetMaterializationData",
    "AssetCheckExecutionRecordStatus",
    "AssetCheckExecutionsTable",
    "AssetGraphSubset",
    "AssetKeyPartitionKey",
    "BackfillTagsTable",
    "CheckRunHealthResult",
    "ConfigurableClassData",
    "DagsterEventBatchMetadata",
    "DagsterSqliteStorage",
    "DynamicPartitionsTable",
    "GrpcServerCodeLocationOrigin",
    "InstanceRef",
    "JobPythonOrigin",
    "LoadableTargetOrigin",
    "ManagedGrpcPythonEnvCodeLocationOrigin",
    "ReconstructableJob",
    "ReconstructableRepository",
    "RemoteJobOrigin",
    "RemoteRepositoryOrigin",
    "RepositoryPythonOrigin",
    "SqlEventLogStorage",
    "SqlEventLogStorageTable",
    "SqlRunStorage",
    "SqliteEventLogStorage",
    "SqliteRunStorage",
    "SqliteScheduleStorage",
    "WorkerStatus",
    "_event_logs_directory",
    "_runs_directory",
    "_schedule_directory",
    "capture_interrupts",
    "create_db_conn_string",
    "event_log_alembic_config",
    "execute_run",
    "execute_run_command_body",
    "get_input_data_version_tag",
    "get_input_event_pointer_tag",
    "new_event_batch_id",
    "pg_config",
    "recon_repository_from_origin",
]
