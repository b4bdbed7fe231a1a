"""The asset graph in process: materialise, report, check, isolate failures, version."""

from __future__ import annotations

import math
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster_support import (
    SAMPLE_RAW_ROOT,
    check_evaluations,
    make_project,
    materialization_metadata,
    partition_statuses,
    sections_of_a_good_and_a_mojibake_text,
    shipped_instance,
)

from agrag_pipeline.models import Document
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import chunks_from_table, column_descriptions, read_metadata

#: Every per-document asset, in pipeline order.
PER_DOCUMENT_ASSETS = (
    "raw_documents",
    "sections",
    "chunks",
    "embeddings",
    "graph",
    "search_index",
    "extractions",
    "entity_graph",
)
#: The per-document assets after ``raw_documents``.
DOWNSTREAM = ("sections", "chunks", "embeddings", "graph", "search_index")

SAMPLE_KEYS = sorted(
    p.relative_to(SAMPLE_RAW_ROOT).as_posix()
    for p in SAMPLE_RAW_ROOT.rglob("*")
    if p.is_file()
    and not any(part.startswith(".") for part in p.relative_to(SAMPLE_RAW_ROOT).parts)
)


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The whole graph materialised once over all the sample data, in one run."""
    tmp = tmp_path_factory.mktemp("sample")
    with dg.instance_for_test() as instance:
        project = make_project(tmp, instance, {k: SAMPLE_RAW_ROOT / k for k in SAMPLE_KEYS})
        project.register(SAMPLE_KEYS)
        result = project.materialize(SAMPLE_KEYS)
        yield project, result


def test_the_whole_graph_materialises_over_the_sample_data(sample_run) -> None:  # type: ignore[no-untyped-def]
    project, result = sample_run
    assert result.success
    warehouse = Warehouse(str(project.warehouse))
    for key in SAMPLE_KEYS:
        document_id = Document.node_id_for(key)
        document = warehouse.get_document(document_id)
        assert document is not None and document.source_key == key
        chunks_table = warehouse.read_table("chunks", document_id)
        embeddings = warehouse.read_table("embeddings", document_id)
        assert chunks_table.num_rows > 0, key
        assert embeddings.column("chunk_id").to_pylist() == chunks_table.column("id").to_pylist()
        layer = warehouse.get_text_layer(document_id, document.content_hash)
        for chunk in chunks_from_table(chunks_table):
            assert chunk.provenance.extract(layer) == chunk.text
        vectors = np.asarray(embeddings.column("vector").to_pylist())
        assert vectors.shape[1] == 384
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def test_every_partition_gets_metadata_a_user_reads(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, result = sample_run
    chunks_meta = materialization_metadata(result, "chunks")
    assert set(chunks_meta) == set(SAMPLE_KEYS)
    meta = chunks_meta["rust-book/ch03-05-control-flow.md"]
    assert meta["dagster/row_count"] > 5
    assert "| # | kind | heading path |" in meta["preview"]
    assert {"min", "median", "mean", "max"} <= set(meta["token_count"])
    assert meta["token_count"]["max"] <= 256
    assert len(meta["chunker_hash"]) == 64 and len(meta["schema_fingerprint"]) == 64
    # The file it wrote, and a named link to the sections materialisation it was made from.
    assert meta["dagster/uri"].endswith(".parquet")
    # The link opens the sections asset's Partitions tab on this document (the URL form
    # Dagster's own UI uses for a partition: AssetEventDetail.tsx, assetDetailsPathForKey).
    assert meta["input/sections"] == (
        "/assets/sections?view=partitions&partition=rust-book%2Fch03-05-control-flow.md"
    )
    assert meta["input/sections run"].startswith("/runs/")
    # Nothing of the run (its document count) and nothing of the definition per partition.
    for partition_meta in chunks_meta.values():
        assert not {"documents", "failed_documents", "dagster/column_schema"} & set(partition_meta)
    raw_meta = materialization_metadata(result, "raw_documents")["docling-pdf/multi_page.pdf"]
    assert len(raw_meta["content_hash"]) == 64 and raw_meta["media_type"] == "application/pdf"


def test_materialisations_carry_shortened_fingerprint_tags(sample_run) -> None:  # type: ignore[no-untyped-def]
    project, result = sample_run
    runtime = project.resource.runtime()
    tags = None
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            mat = event.event_specific_data.materialization
            if mat.asset_key.to_user_string() == "chunks":
                tags = mat.tags
    assert tags is not None
    assert tags["agrag/chunker_hash"] == runtime.chunker_hash[:16]
    for value in runtime.fingerprint_tags().values():
        assert len(value) <= 63 and value.replace("-", "").isalnum()


def test_the_runs_list_shows_only_the_tags_a_user_filters_by(sample_run) -> None:  # type: ignore[no-untyped-def]
    """The UI's runs list shows what GraphQL's ``Run.tags`` returns: of ours, the fingerprints
    and the trigger; the worker's pid and host (run monitoring's) are kept, hidden."""
    from dagster_graphql.schema.pipelines.pipeline import GrapheneRun

    from agrag_pipeline.defs.run_launcher import HOST_TAG, PID_TAG

    project, result = sample_run
    record = project.instance.get_run_record_by_id(result.run_id)
    shown = {tag.key for tag in GrapheneRun(record).resolve_tags(None)}
    ours = {key for key in shown if not key.startswith("dagster/")}
    assert ours <= {*project.resource.runtime().fingerprint_tags(), "agrag/trigger"}, ours
    assert set(project.resource.runtime().fingerprint_tags()) <= shown
    assert {PID_TAG, HOST_TAG} <= set(record.dagster_run.tags) and not {PID_TAG, HOST_TAG} & shown


def test_full_fingerprints_are_in_the_parquet_metadata(sample_run) -> None:  # type: ignore[no-untyped-def]
    project, _ = sample_run
    runtime = project.resource.runtime()
    document_id = Document.node_id_for(SAMPLE_KEYS[0])
    meta = read_metadata(pq.read_schema(project.warehouse / "chunks" / f"{document_id}.parquet"))
    assert meta["chunker_hash"] == runtime.chunker_hash
    assert meta["schema_fingerprint"] == runtime.schema_fingerprint
    assert meta["extraction_fingerprint"] == runtime.extraction_fingerprint
    emb = read_metadata(pq.read_schema(project.warehouse / "embeddings" / f"{document_id}.parquet"))
    assert emb["embedding_fingerprint"] == runtime.embedder.fingerprint


def test_every_column_of_the_written_parquet_files_is_described(sample_run) -> None:  # type: ignore[no-untyped-def]
    """A loader reading the files alone (DuckDB, Polars, pyarrow) finds what each column means."""
    project, _ = sample_run
    warehouse = Warehouse(str(project.warehouse))
    document_id = Document.node_id_for(SAMPLE_KEYS[0])
    for table in ("sections", "chunks", "embeddings", "graph_nodes", "graph_edges"):
        schema = pq.read_schema(warehouse.table_path(table, document_id))
        described = column_descriptions(schema)
        assert set(described) == set(schema.names), (table, set(schema.names) - set(described))
        assert all(described.values()), table


def test_asset_checks_pass_per_partition_on_good_outputs(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, result = sample_run
    evaluations = check_evaluations(result)
    names = {(asset, name) for asset, name, _ in evaluations}
    assert ("chunks", "chunk_offsets_reproduce_text") in names
    assert ("embeddings", "embedding_finite_unit_norm") in names
    assert ("graph", "graph_matches_tables") in names
    for (asset, name, partition), passed in evaluations.items():
        assert partition in SAMPLE_KEYS
        assert passed, f"{asset}.{name} failed for {partition}"
    assert ("sections", "reading_quality") in names
    assert ("search_index", "index_matches_embeddings") in names
    assert ("extractions", "mentions_name_current_chunks") in names
    # 2 sections, 3 chunks, 3 embeddings, 1 graph, 1 index, 1 extractions, 1 entity graph
    assert len(evaluations) == 12 * len(SAMPLE_KEYS)


def test_the_graph_asset_reports_each_documents_nodes_and_edges(sample_run) -> None:  # type: ignore[no-untyped-def]
    _, result = sample_run
    graph_materializations = {
        event.event_specific_data.materialization.partition: (
            event.event_specific_data.materialization.metadata
        )
        for event in result.all_events
        if event.event_type_value == "ASSET_MATERIALIZATION"
        and event.event_specific_data.materialization.asset_key.to_user_string() == "graph"
    }
    assert set(graph_materializations) == set(SAMPLE_KEYS)
    for key, meta in graph_materializations.items():
        nodes = meta["nodes"].value
        edges = meta["edges"].value
        assert nodes["Document"] == 1, key
        assert nodes["Chunk"] >= 1 and edges["HAS_CHUNK"] == nodes["Chunk"], key
        assert edges["NEXT_CHUNK"] == nodes["Chunk"] - 1, key
        assert meta["graph_store"].value.startswith("ladybug:"), key


def test_asset_checks_fail_on_deliberately_broken_outputs(tmp_path: Path) -> None:
    from agrag_pipeline.storage.tables import (
        chunks_to_table,
        sections_from_table,
        sections_to_table,
        with_metadata,
    )
    from agrag_pipeline.validation import check_chunks, check_embeddings, check_sections

    source = SAMPLE_RAW_ROOT / "docling-md" / "wiki.md"
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, {"wiki.md": source})
        project.register(["wiki.md"])
        assert project.materialize(["wiki.md"]).success
    warehouse = Warehouse(str(project.warehouse))
    document_id = Document.node_id_for("wiki.md")
    assert [o.passed for o in check_sections(warehouse, "wiki.md")] == [True, True]
    sections_table = warehouse.read_table("sections", document_id)
    sections = sections_from_table(sections_table)
    sections[-1] = sections[-1].model_copy(update={"end": sections[-1].end + 10_000})
    warehouse.write_table(
        "sections",
        document_id,
        with_metadata(sections_to_table(sections), read_metadata(sections_table)),
    )
    outcomes_after = {o.name: o.passed for o in check_sections(warehouse, "wiki.md")}
    assert outcomes_after == {"section_spans_reproduce_text": False, "reading_quality": True}
    table = warehouse.read_table("chunks", document_id)
    chunks = chunks_from_table(table)
    broken = [
        chunks[0].model_copy(update={"text": chunks[0].text + " (edited)"}),
        *[c.model_copy(update={"index": c.index + 1}) for c in chunks[1:]],
    ]
    broken[-1] = broken[-1].model_copy(update={"chunker_hash": "not-a-fingerprint"})
    warehouse.write_table(
        "chunks", document_id, with_metadata(chunks_to_table(broken), read_metadata(table))
    )
    outcomes = {o.name: o.passed for o in check_chunks(warehouse, "wiki.md")}
    assert outcomes == {
        "chunk_offsets_reproduce_text": False,
        "chunk_indices_contiguous": len(chunks) == 1,
        "chunk_fingerprints_well_formed": False,
    }
    embeddings = warehouse.read_table("embeddings", document_id)
    vectors = embeddings.column("vector").to_pylist()
    vectors[0] = [v * 2 for v in vectors[0]]
    vectors[-1] = [math.nan] * len(vectors[-1])
    field = embeddings.schema.field("vector")
    bad = embeddings.set_column(
        embeddings.schema.get_field_index("vector"), field, pa.array(vectors, type=field.type)
    )
    warehouse.write_table("embeddings", document_id, bad.slice(0, max(bad.num_rows - 1, 1)))
    by_name = {o.name: o for o in check_embeddings(warehouse, "wiki.md", dimension=384)}
    assert not by_name["embedding_finite_unit_norm"].passed
    assert by_name["embedding_dimension"].passed
    if len(chunks) > 1:
        assert not by_name["embedding_per_chunk"].passed
    assert not check_embeddings(warehouse, "wiki.md", dimension=768)[1].passed


def test_a_failed_document_is_failed_on_every_asset_it_did_not_reach_and_the_others_are_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dagster's own partition status, on the shipped instance storage: a document that fails
    inside a batched run is "Failed" on every asset it did not reach, and only it; the others
    are materialised and checked; the run fails, naming it once (one ERROR line where it
    failed, one step failure that names it)."""
    files: dict[str, Path | bytes] = {
        "a-good.md": b"# Good\n\nSome text that chunks fine.\n",
        "b-bad.md": b"\x00\x01\x02 binary bytes behind a text extension",
        "c-good.html": b"<h1>Title</h1><p>Paragraph.</p>",
    }
    keys = sorted(files)
    with shipped_instance(tmp_path, monkeypatch) as instance:
        project = make_project(tmp_path, instance, files)
        project.register(keys)
        result = project.materialize(keys, raise_on_error=False)
        assert not result.success

        statuses = partition_statuses(instance)
        assert statuses["raw_documents"] == (set(keys), set())
        for asset in DOWNSTREAM:
            assert statuses[asset] == ({"a-good.md", "c-good.html"}, {"b-bad.md"}), asset
        made = {
            asset: set(materialization_metadata(result, asset))
            for asset in ("raw_documents", *DOWNSTREAM)
        }
        assert made == {"raw_documents": set(keys)} | {
            a: {"a-good.md", "c-good.html"} for a in DOWNSTREAM
        }

        # The run says how many failed and which: one step failure at the end of each branch of
        # the graph (the search index and the entity graph), naming it with its error.
        failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        assert sorted(e.step_key for e in failures) == ["entity_graph", "search_index"]
        for failure in failures:
            error = failure.event_specific_data.error.message
            assert "1 of 3 documents failed" in error and "b-bad.md: sections failed" in error
            # Readable where the UI shows it: a short first line, one short line per
            # document after it, each naming its document once.
            lines = error.strip().splitlines()
            assert len(lines[0]) <= 120 and all(len(line) <= 200 for line in lines), error
            assert error.count("b-bad.md") == 1, error
            user_failure = failure.event_specific_data.user_failure_data
            assert user_failure.metadata["failed_documents"].value == 1
            assert set(user_failure.metadata["failed"].value) == {"b-bad.md"}
        # Its error is logged once, at the step where it failed.
        errors = [
            e.user_message
            for e in instance.all_logs(result.run_id)
            if e.level >= 40 and e.dagster_event is None and "b-bad.md" in e.user_message
        ]
        assert len(errors) == 1 and errors[0].startswith("sections: b-bad.md"), errors

        warehouse = Warehouse(str(project.warehouse))
        assert warehouse.has_table("embeddings", Document.node_id_for("c-good.html"))
        failure_records = warehouse.read_failures(Document.node_id_for("b-bad.md"))
        assert set(failure_records) == {"sections"}
        evaluations = check_evaluations(result)
        assert {k for _, _, k in evaluations} == {"a-good.md", "c-good.html"}
        assert all(evaluations.values())

        # Alone, as the Materialize dialog's "Failed" preset retries it: failed again, and only it.
        alone = project.materialize(["b-bad.md"], raise_on_error=False)
        assert not alone.success
        assert partition_statuses(instance) == statuses


def test_a_run_whose_only_document_fails_is_a_failed_run_and_its_partition_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with shipped_instance(tmp_path, monkeypatch) as instance:
        project = make_project(tmp_path, instance, {"bad.md": b"\xff\xfe\x00\x00garbage\x00"})
        project.register(["bad.md"])
        result = project.materialize(["bad.md"], raise_on_error=False)
        assert not result.success
        statuses = partition_statuses(instance)
        assert statuses["raw_documents"] == ({"bad.md"}, set())
        assert {a: statuses[a] for a in DOWNSTREAM} == {a: (set(), {"bad.md"}) for a in DOWNSTREAM}


def test_a_backfill_launched_without_tags_is_found_by_the_fingerprints_of_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Runs page lists a backfill as one row filtered by the backfill's own tags: one
    launched from the UI (no tags) gets its runs' fingerprint tags."""
    from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
    from dagster._core.definitions.events import AssetKeyPartitionKey
    from dagster._core.execution.backfill import BulkActionsFilter, PartitionBackfill

    key = "doc.md"
    with shipped_instance(tmp_path, monkeypatch) as instance:
        project = make_project(tmp_path, instance, {key: b"# Doc\n\nText.\n"})
        project.register([key])
        defs = project.definitions()
        subset = AssetGraphSubset.from_asset_partition_set(
            {AssetKeyPartitionKey(dg.AssetKey(a), key) for a in DOWNSTREAM},
            defs.resolve_asset_graph(),
        )
        instance.add_backfill(
            PartitionBackfill.from_asset_graph_subset(
                backfill_id="uibackfill",
                asset_graph_subset=subset,
                dynamic_partitions_store=instance,
                backfill_timestamp=0.0,
                tags={},
                title=None,
                description=None,
                run_config=None,
            )
        )
        fingerprints = project.resource.runtime().fingerprint_tags()
        assert instance.get_backfills(filters=BulkActionsFilter(tags=fingerprints)) == []
        tags = {"dagster/partition": key, "dagster/backfill": "uibackfill"}
        with project.current():
            job = defs.resolve_job_def("ingest_documents")
            assert job.execute_in_process(instance=instance, tags=tags).success
        [found] = instance.get_backfills(filters=BulkActionsFilter(tags=fingerprints))
        assert found.backfill_id == "uibackfill"


def test_indexing_a_document_that_failed_upstream_fails_instead_of_reading_as_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """search_index run alone for a document that failed at sections: a failure naming why (its
    partition "Failed"), not a materialisation saying "removed" as for a deleted document; and
    its check compares the index with the document's embeddings."""
    files: dict[str, Path | bytes] = {"bad.md": b"\x00\x01 binary", "good.md": b"# G\n\nText.\n"}
    with shipped_instance(tmp_path, monkeypatch) as instance:
        project = make_project(tmp_path, instance, files)
        keys = sorted(files)
        project.register(keys)
        project.materialize(keys, raise_on_error=False)
        with project.current():
            job = project.definitions().resolve_job_def("ingest_documents")
            alone = job.execute_in_process(
                instance=instance,
                asset_selection=[dg.AssetKey("search_index")],
                tags={"dagster/partition": "bad.md"},
                raise_on_error=False,
            )
        assert not alone.success
        assert materialization_metadata(alone, "search_index") == {}
        [failure] = [e for e in alone.all_events if e.event_type_value == "STEP_FAILURE"]
        message = failure.event_specific_data.error.message
        assert "no embeddings are stored" in message and "sections failed" in message
        assert partition_statuses(instance)["search_index"] == ({"good.md"}, {"bad.md"})

        from agrag_pipeline.sinks.index_step import check_index_document

        runtime = project.resource.runtime()
        index = runtime.search_index
        [passed] = check_index_document(runtime.warehouse, index, "good.md")
        assert passed.passed, passed.description
        index.delete_document(str(Document.node_id_for("good.md")))
        [failed] = check_index_document(runtime.warehouse, index, "good.md")
        assert not failed.passed and failed.metadata["missing"] == failed.metadata["expected_rows"]


def test_a_new_version_replaces_outputs_and_a_failed_one_keeps_them(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, {"doc.md": b"# One\n\nFirst version.\n"})
        project.register(["doc.md"])
        assert project.materialize(["doc.md"]).success
        warehouse = Warehouse(str(project.warehouse))
        document_id = Document.node_id_for("doc.md")
        first = chunks_from_table(warehouse.read_table("chunks", document_id))
        (project.raw_root / "doc.md").write_bytes(b"\x00\x00 not text any more")
        assert not project.materialize(["doc.md"], raise_on_error=False).success
        # The bad version failed at sections: the chunks of the last good version are intact.
        assert chunks_from_table(warehouse.read_table("chunks", document_id)) == first
        (project.raw_root / "doc.md").write_bytes(b"# One\n\nSecond version.\n")
        assert project.materialize(["doc.md"]).success
        second = chunks_from_table(warehouse.read_table("chunks", document_id))
        assert second[0].text != first[0].text and second[0].id != first[0].id


def test_batched_and_single_runs_leave_every_partition_fresh_with_checks_current(
    tmp_path: Path,
) -> None:
    """The issue's false "Unsynced": a batched run, then one unchanged document again alone;
    and a true one: after a chunker setting changes, every partition of chunks and of each
    asset downstream of it reads "Unsynced" before anything runs, and those upstream do not."""
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._core.loader import LoadingContextForTest

    files: dict[str, Path | bytes] = {
        "a.md": b"# A\n\nFirst.\n",
        "b.md": b"# B\n\nSecond.\n",
        "c.md": b"# C\n\nThird.\n",
    }
    keys = sorted(files)
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, files)
        project.register(keys)
        defs = project.definitions()
        graph = defs.resolve_asset_graph()
        batched = project.materialize(keys)
        single = project.materialize(["b.md"])
        assert batched.success and single.success
        resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
        stale = {
            (asset, key): resolver.get_status(dg.AssetKey(asset), key)
            for asset in PER_DOCUMENT_ASSETS
            for key in keys
        }
        assert set(stale.values()) == {StaleStatus.FRESH}, {
            k: resolver.get_stale_causes(dg.AssetKey(k[0]), k[1])
            for k, v in stale.items()
            if v != StaleStatus.FRESH
        }
        # Every partition's data version is its asset's code version, in both kinds of run.
        for asset in ("raw_documents", "chunks"):
            code_version = graph.get(dg.AssetKey(asset)).code_version
            for record in instance.fetch_materializations(dg.AssetKey(asset), limit=10).records:
                mat = record.asset_materialization
                assert mat is not None and mat.tags["dagster/data_version"] == code_version
        # Dagster's own per-partition check status: passed and current for every document.
        check_keys = [k for k in graph.asset_check_keys]
        # 2 sections, 3 chunks, 3 embeddings, 1 graph, 1 index, 1 extractions, 1 entity graph
        assert len(check_keys) == 12
        infos = instance.event_log_storage.get_asset_check_partition_info(check_keys)
        status = {
            (i.check_key.name, i.partition_key): (i.latest_execution_status.value, i.is_current)
            for i in infos
        }
        assert status == {(k.name, key): ("SUCCEEDED", True) for k in check_keys for key in keys}
        # Both runs carry the fingerprint tags, whoever launched them.
        runtime = project.resource.runtime()
        for result in (batched, single):
            tags = instance.get_run_by_id(result.run_id).tags
            assert runtime.fingerprint_tags().items() <= tags.items()

        # A chunker setting changed (and the code location reloaded): Dagster does not pass a
        # stale upstream on, so this holds because each code version folds in those upstream.
        text = project.settings.read_text(encoding="utf-8")
        project.settings.write_text(
            text.replace("target_tokens: 200", "target_tokens: 120"), encoding="utf-8"
        )
        assert project.settings.read_text(encoding="utf-8") != text
        changed = project.definitions().resolve_asset_graph()
        resolver = CachingStaleStatusResolver(instance, changed, LoadingContextForTest(instance))
        unsynced = {
            asset
            for asset in PER_DOCUMENT_ASSETS
            for key in keys
            if resolver.get_status(dg.AssetKey(asset), key) == StaleStatus.STALE
        }
        assert unsynced == set(PER_DOCUMENT_ASSETS) - {"raw_documents", "sections"}, unsynced
        causes = resolver.get_stale_causes(dg.AssetKey("search_index"), "a.md")
        assert [c.category.name for c in causes] == ["CODE"], causes


def test_a_document_read_badly_materialises_with_a_reading_quality_warning(tmp_path: Path) -> None:
    # Polish decoded with the wrong code page before it reached us ("Wartoœæ p³atnoœci"): the
    # run succeeds, and the sections check warns (severity WARN, not a failure) with the reasons.
    with dg.instance_for_test() as instance:
        result, keys = sections_of_a_good_and_a_mojibake_text(tmp_path, instance)
    assert result.success
    found = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            if data.check_name == "reading_quality":
                found[data.partition] = data
    assert set(found) == set(keys)
    assert found["faktura.txt"].passed
    warned = found["mojibake.txt"]
    assert not warned.passed and warned.severity == dg.AssetCheckSeverity.WARN
    assert "wrong code page" in (warned.description or "")
    assert warned.metadata["score"].value < 0.8
    # The partition shows the score as a number (the UI plots it) and its reasons.
    shown = materialization_metadata(result, "sections")["mojibake.txt"]
    assert isinstance(shown["reading_quality"], float) and shown["reading_quality"] < 0.8
    assert "wrong code page" in shown["reading_quality_reasons"]
    assert shown["language"] == "pl"


def test_check_evaluations_name_their_document_once(sample_run) -> None:  # type: ignore[no-untyped-def]
    """The UI lists an evaluation beside its partition key: its description and metadata say
    what was found, without the document's path again."""
    project, result = sample_run
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            assert data.partition in SAMPLE_KEYS
            assert data.partition not in data.description, data.description
            assert "source_key" not in data.metadata
    # A quiet log: no line that reads like a fault, one summary line per step.
    messages = [e.message for e in project.instance.all_logs(result.run_id)]
    assert not [m for m in messages if "did not yield" in m]
    steps = [e for e in result.all_events if e.event_type_value == "STEP_SUCCESS"]
    assert len(steps) >= 4
    assert sum("documents done" in m for m in messages) == len(steps)


def test_retrieval_score_materialises_recall_and_mrr_over_the_sample_index(  # type: ignore[no-untyped-def]
    sample_run, tmp_path: Path
) -> None:
    """The evaluation asset as a user materialises it from the UI, after the ingestion run has
    indexed the sample data: recall and MRR per mode, as numeric metadata the UI plots."""
    project, _ = sample_run
    questions = tmp_path / "questions.tsv"
    questions.write_text(
        "query\tsource_key\theading\n"
        "How do I return a value out of a loop with break?\t"
        "rust-book/ch03-05-control-flow.md\tReturning Values from Loops\n"
        "How do I break out of an outer loop from inside a nested loop?\t"
        "rust-book/ch03-05-control-flow.md\tDisambiguating with Loop Labels\n"
        "What are the reserved keywords that cannot be used as identifiers?\t"
        "rust-book/appendix-01-keywords.md\tKeywords Currently in Use\n",
        encoding="utf-8",
    )
    defs = project.definitions()
    result = dg.materialize(
        [defs.resolve_assets_def("retrieval_score")],
        instance=project.instance,
        run_config={"ops": {"retrieval_score": {"config": {"questions": str(questions)}}}},
    )
    assert result.success
    metadata = materialization_metadata(result, "retrieval_score")[None]
    assert metadata["questions"] == 3
    for mode in ("dense", "bm25", "hybrid"):
        assert 0.0 <= metadata[f"{mode}/recall@1"] <= metadata[f"{mode}/recall@5"] <= 1.0
        assert 0.0 <= metadata[f"{mode}/mrr@10"] <= 1.0
    # Three exact questions over 18 short documents: hybrid finds every answer in its top 5.
    assert metadata["hybrid/recall@5"] == 1.0
    assert "hybrid" in metadata["scores"]


def test_a_run_removes_what_a_killed_writer_left_and_keeps_a_live_writers(tmp_path: Path) -> None:
    """As ``agrag core`` does: a run from the UI cleans the temporary files of writers that were
    killed mid-write (a real process, SIGKILLed) and leaves a live writer's alone."""
    import os
    import signal
    import subprocess
    import sys
    import uuid

    from agrag_pipeline.storage.atomic import temporary_name

    key = "rust-book/ch03-05-control-flow.md"
    with dg.instance_for_test() as instance:
        project = make_project(tmp_path, instance, {key: SAMPLE_RAW_ROOT / key})
        chunks_dir = project.warehouse / "chunks"
        chunks_dir.mkdir(parents=True)
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        killed, live = subprocess.Popen(sleeper), subprocess.Popen(sleeper)
        try:
            os.kill(killed.pid, signal.SIGKILL)
            killed.wait(timeout=30)
            left = []
            for writer in (killed, live):
                name = temporary_name(str(chunks_dir / f"{uuid.uuid4()}.parquet"))
                name = name.replace(f"-{os.getpid()}-", f"-{writer.pid}-")
                Path(name).write_bytes(b"half a parquet file")
                left.append(Path(name))
            project.register([key])
            assert project.materialize([key]).success
            assert not left[0].exists()  # the killed writer's
            assert left[1].exists()  # the live writer's
        finally:
            live.kill()
            live.wait(timeout=30)


def test_a_backfills_runs_share_the_cores_for_embedding_and_a_lone_run_keeps_them(
    tmp_path: Path,
) -> None:
    """Two runs at once each starting one torch thread per core thrash two cores (measured:
    BENCHMARKS.md "With embeddings"): a backfill's run embeds with its share of the cores
    (cores // max_concurrent_runs), a run on its own with torch's default."""
    import torch

    from agrag_pipeline.embedding.threads import share_of_cores

    key = "rust-book/ch03-05-control-flow.md"
    default = torch.get_num_threads()
    overrides = {"concurrency": {"runs": {"max_concurrent_runs": 2}}}
    try:
        with dg.instance_for_test(overrides=overrides) as instance:
            project = make_project(tmp_path, instance, {key: SAMPLE_RAW_ROOT / key})
            project.register([key])
            with project.current():
                job = project.definitions().resolve_job_def("ingest_documents")
            torch.set_num_threads(7)  # what a lone run must leave alone
            lone = job.execute_in_process(instance=instance, tags={"dagster/partition": key})
            assert lone.success and torch.get_num_threads() == 7
            backfill_tags = {"dagster/partition": key, "dagster/backfill": "abcdefgh"}
            ranged = job.execute_in_process(instance=instance, tags=backfill_tags)
            assert ranged.success
            assert torch.get_num_threads() == share_of_cores(2)
    finally:
        torch.set_num_threads(default)
