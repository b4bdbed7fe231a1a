"""Helpers for the in-process Dagster tests: a project wired to temporary folders."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.storage.defs_state.base import set_defs_state_storage

from agrag_pipeline.definitions import build_definitions
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_RAW_ROOT = REPO_ROOT / "data" / "raw"
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"
#: The instance configuration ``bin/setup`` and ``dagster dev`` use.
SHIPPED_INSTANCE = REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml"
PER_DOCUMENT_ASSETS = ("raw_documents", "sections", "chunks", "embeddings", "graph", "search_index")


@dataclass
class Project:
    raw_root: Path
    warehouse: Path
    settings: Path
    instance: dg.DagsterInstance

    @property
    def resource(self) -> PipelineResource:
        return PipelineResource(
            raw_root=str(self.raw_root),
            warehouse_root=str(self.warehouse),
            settings_path=str(self.settings),
            cache_dir=str(self.warehouse / "_cache"),
        )

    def definitions(self) -> dg.Definitions:
        return build_definitions(self.resource)

    def register(self, keys: list[str]) -> None:
        self.instance.add_dynamic_partitions("documents", keys)

    def current(self) -> Any:
        """A context in which this project's instance is Dagster's current one, for resolving
        definitions (see ``materialize``)."""
        return set_defs_state_storage(self.instance.defs_state_storage)

    def sensor_tick(
        self,
        sensor: dg.SensorDefinition,
        cursor: str | None = None,
        definitions: dg.Definitions | None = None,
    ) -> Any:
        """One evaluation of ``sensor`` with this project's definitions (or ``definitions``)
        and resources, its repository resolved with this project's instance current."""
        with self.current():
            context = dg.build_sensor_context(
                instance=self.instance,
                cursor=cursor,
                definitions=definitions or self.definitions(),
                resources={"pipeline": self.resource},
            )
            return sensor(context)

    def materialize(
        self, keys: list[str], *, raise_on_error: bool = True
    ) -> dg.ExecuteInProcessResult:
        """One run over ``keys`` (which must be contiguous in partition order).

        Resolving the job reads Dagster's "current" defs-state storage, a context variable that
        any DagsterInstance made and dropped earlier in the process (by another test) can leave
        pointing at a dead instance ("Attempted to resolve undefined DagsterInstance weakref",
        seen once in a full run, never alone): this project's instance is made current here.
        """
        with self.current():
            job = self.definitions().resolve_job_def("ingest_documents")
            return job.execute_in_process(
                instance=self.instance,
                tags={RANGE_START: keys[0], RANGE_END: keys[-1]},
                raise_on_error=raise_on_error,
            )


def make_project(
    tmp_path: Path, instance: dg.DagsterInstance, files: dict[str, Path | bytes]
) -> Project:
    raw_root = tmp_path / "raw"
    for key, source in files.items():
        target = raw_root / key
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, Path):
            shutil.copyfile(source, target)
        else:
            target.write_bytes(source)
    settings = tmp_path / "pipeline.yaml"
    shutil.copyfile(DEFAULT_SETTINGS_PATH, settings)
    return Project(raw_root, tmp_path / "warehouse", settings, instance)


def sections_of_a_good_and_a_mojibake_text(
    tmp_path: Path, instance: dg.DagsterInstance
) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    """One run of ``raw_documents`` and ``sections`` over two versions of a Polish invoice:
    ``faktura.txt`` as written (both checks pass) and ``mojibake.txt``, decoded with the wrong
    code page before it reached us ("Wartoœæ p³atnoœci": ``reading_quality`` warns); the
    run's result and the two source keys, sorted."""
    text = (REPO_ROOT / "agrag_pipeline_tests" / "fixtures" / "invoice_pl.txt").read_text("utf-8")
    files: dict[str, Path | bytes] = {
        "faktura.txt": text.encode(),
        "mojibake.txt": text.encode("cp1250").decode("cp1252").encode(),
    }
    keys = sorted(files)
    project = make_project(tmp_path, instance, files)
    project.register(keys)
    job = project.definitions().resolve_job_def("ingest_documents")
    result = job.execute_in_process(
        instance=instance,
        tags={RANGE_START: keys[0], RANGE_END: keys[-1]},
        asset_selection=[dg.AssetKey("raw_documents"), dg.AssetKey("sections")],
    )
    return result, keys


def check_evaluations(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str, str], bool]:
    """(asset, check name, partition) -> passed, for every check evaluation of the run."""
    found = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            found[(data.asset_key.to_user_string(), data.check_name, data.partition)] = data.passed
    return found


def materialization_metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, dict]:
    """partition -> metadata of the asset's materialisation in this run."""
    out = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            mat = event.event_specific_data.materialization
            if mat.asset_key.to_user_string() == asset:
                out[mat.partition] = {k: v.value for k, v in mat.metadata.items()}
    return out


@contextmanager
def shipped_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dg.DagsterInstance]:
    """An instance configured by the shipped ``dagster.yaml`` (its storage reads DAGSTER_HOME)."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(SHIPPED_INSTANCE, home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        yield instance


def partition_statuses(instance: dg.DagsterInstance) -> dict[str, tuple[set[str], set[str]]]:
    """asset -> (materialised, failed) partitions, as Dagster computes them for the UI (a
    partition both materialised once and failed since counts as failed, as the UI shows it)."""
    from dagster._core.storage.partition_status_cache import (
        get_and_update_asset_status_cache_value,
    )

    from agrag_pipeline.defs.partitions import documents_partitions

    out = {}
    for asset in PER_DOCUMENT_ASSETS:
        value = get_and_update_asset_status_cache_value(
            instance, dg.AssetKey(asset), documents_partitions
        )
        if value is None:
            out[asset] = (set(), set())
            continue
        materialized = set(
            value.deserialize_materialized_partition_subsets(
                documents_partitions
            ).get_partition_keys()
        )
        failed = set(
            value.deserialize_failed_partition_subsets(documents_partitions).get_partition_keys()
        )
        out[asset] = (materialized - failed, failed)
    return out
