"""The sensor sees what ``agrag core`` sees: an e-mail's attachments become partitions of their
own (keys Dagster accepts), and go with their message."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster_support import Project, make_project

from agrag_pipeline.defs.sensors import raw_documents_sensor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
CHILD = "inbox/a.eml/.attachments/1-fake-attachment.txt"


def _tick(
    instance: dg.DagsterInstance, project: Project, cursor: str | None = None
) -> dg.SensorResult:
    result = project.sensor_tick(raw_documents_sensor, cursor)
    assert isinstance(result, dg.SensorResult)
    return result


def test_attachments_are_partitions_registered_and_deleted_with_their_message(
    tmp_path: Path,
) -> None:
    message = (FIXTURES / "fake-email-attachment.eml").read_bytes()
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, {"inbox/a.eml": message})
        first = _tick(instance, project)
        assert sorted(instance.get_dynamic_partitions("documents")) == ["inbox/a.eml", CHILD]
        [request] = first.run_requests or []
        assert request.asset_graph_subset is not None
        requested = {p.partition_key for p in request.asset_graph_subset.iterate_asset_partitions()}
        assert requested == {"inbox/a.eml", CHILD}

        (project.raw_root / "inbox" / "a.eml").unlink()
        second = _tick(instance, project, first.cursor)
        [delete] = second.dynamic_partitions_requests or []
        assert isinstance(delete, dg.DeleteDynamicPartitionsRequest)
        assert sorted(delete.partition_keys) == ["inbox/a.eml", CHILD]
