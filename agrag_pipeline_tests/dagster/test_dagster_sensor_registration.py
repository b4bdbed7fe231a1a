"""The sensor registers new documents' partitions itself, in one statement.

The sensor daemon checks each key of an ``AddDynamicPartitionsRequest`` with a query of its own
(at 100,000 new documents: about 19 minutes on PostgreSQL, BENCHMARKS.md "Scale"), so the sensor
must not hand its new keys to the daemon that way.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster_support import make_project

from agrag_pipeline.defs.sensors import raw_documents_sensor

DOCS: dict[str, Path | bytes] = {
    "alpha.md": b"# Alpha\n\nFirst document.\n",
    "notes/beta.md": b"# Beta\n\nSecond document.\n",
    "notes/gamma.md": b"# Gamma\n\nThird document.\n",
}


def test_new_documents_are_registered_by_the_tick_itself_not_by_an_add_request(
    tmp_path: Path,
) -> None:
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, DOCS)
        result = project.sensor_tick(raw_documents_sensor)
        assert isinstance(result, dg.SensorResult)

        # Registered before the daemon sees the result; nothing left for it to add key by key.
        assert sorted(instance.get_dynamic_partitions("documents")) == sorted(DOCS)
        assert not any(
            isinstance(request, dg.AddDynamicPartitionsRequest)
            for request in result.dynamic_partitions_requests or []
        )
        # The same tick still asks for the work on exactly those documents.
        [request] = result.run_requests or []
        assert request.asset_graph_subset is not None
        requested = {p.partition_key for p in request.asset_graph_subset.iterate_asset_partitions()}
        assert requested == set(DOCS)

        # A second tick over the same files registers nothing twice and asks for nothing.
        again = project.sensor_tick(raw_documents_sensor, result.cursor)
        assert isinstance(again, dg.SensorResult)
        assert again.run_requests == []
        assert sorted(instance.get_dynamic_partitions("documents")) == sorted(DOCS)
