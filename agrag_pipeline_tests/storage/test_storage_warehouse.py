"""The warehouse layout, atomic writes and Parquet round trips."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Chunk, Document, PageBox, Section
from agrag_pipeline.models.provenance import CharSpan
from agrag_pipeline.parsing.parsed import LayoutSpan
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import (
    chunks_from_table,
    chunks_to_table,
    layout_from_table,
    layout_to_table,
    read_metadata,
    sections_from_table,
    sections_to_table,
    with_metadata,
)

HASH = "ab" * 32


def _chunks(document_id: uuid.UUID) -> list[Chunk]:
    return [
        Chunk(
            id=Chunk.id_for(document_id, HASH, "cd" * 32, 0),
            document_id=document_id,
            content_hash=HASH,
            index=0,
            text="Intro text",
            provenance={"kind": "text", "start": 0, "end": 10},
            heading_path=["Intro"],
            chunker="agrag-structure",
            chunker_hash="cd" * 32,
            schema_fingerprint="ef" * 32,
            extraction_fingerprint="01" * 32,
            section_ids=[uuid.uuid5(uuid.NAMESPACE_URL, "s")],
            metadata={"token_count": 3},
        ),
        Chunk(
            id=Chunk.id_for(document_id, HASH, "cd" * 32, 1),
            document_id=document_id,
            content_hash=HASH,
            index=1,
            text="| a |\n| 1 |",
            content_kind="table",
            provenance={
                "kind": "page",
                "start": 20,
                "end": 25,
                "repeated_header": {"start": 11, "end": 16},
                "pages": [2],
                "boxes": [{"page": 2, "x0": 1, "y0": 2, "x1": 3, "y1": 4}],
            },
        ),
    ]


def test_chunks_table_round_trips_to_equal_chunks() -> None:
    document_id = Document.node_id_for("a.md")
    chunks = _chunks(document_id)
    table = chunks_to_table(chunks)
    assert table.column("char_start").to_pylist() == [0, 20]
    assert table.column("pages").to_pylist() == [[], [2]]
    assert chunks_from_table(table) == chunks


def test_sections_and_layout_tables_round_trip() -> None:
    document_id = Document.node_id_for("a.pdf")
    section = Section(
        id=Section.node_id_for(document_id, HASH, "0"),
        document_id=document_id,
        content_hash=HASH,
        ordinal=0,
        heading=None,
        level=0,
        kind="table",
        start=0,
        end=30,
        table_header=CharSpan(start=0, end=10),
        table_rows=[CharSpan(start=11, end=20), CharSpan(start=21, end=30)],
        pages=[1],
        boxes=[PageBox(page=1, x0=0, y0=0, x1=10, y1=10)],
    )
    assert sections_from_table(sections_to_table([section])) == [section]
    layout = [LayoutSpan(start=0, end=5, box=PageBox(page=1, x0=0, y0=1, x1=2, y1=3))]
    assert layout_from_table(layout_to_table(layout)) == layout


def test_fingerprints_travel_in_parquet_key_value_metadata(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path))
    document_id = Document.node_id_for("a.md")
    table = with_metadata(
        chunks_to_table(_chunks(document_id)), {"chunker_hash": "cd" * 32, "unset": None}
    )
    path = warehouse.write_table("chunks", document_id, table)
    schema = pq.read_schema(path)
    assert schema.metadata[b"agrag.chunker_hash"] == b"cd" * 32
    assert read_metadata(schema) == {"chunker_hash": "cd" * 32}
    assert warehouse.table_metadata("chunks", document_id) == {"chunker_hash": "cd" * 32}


def test_layout_is_by_document_id_never_by_user_supplied_name(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path))
    document_id = Document.node_id_for("../../etc/passwd name.md")
    path = warehouse.write_table("chunks", document_id, chunks_to_table([]))
    assert path == f"{tmp_path}/chunks/{document_id}.parquet"
    assert warehouse.put_raw(document_id, HASH, b"x") == f"{tmp_path}/raw/{document_id}/{HASH}"


def test_documents_holding_every_named_table_are_found_from_those_tables_folders(
    tmp_path: Path,
) -> None:
    warehouse = Warehouse(str(tmp_path))
    both, nodes_only = Document.node_id_for("both.md"), Document.node_id_for("nodes-only.md")
    for document_id in (both, nodes_only):
        warehouse.write_table("graph_nodes", document_id, chunks_to_table([]))
    warehouse.write_table("graph_edges", both, chunks_to_table([]))
    (tmp_path / "graph_edges" / "notes.txt").write_text("not a document's table\n")
    warehouse.write_table("chunks", nodes_only, chunks_to_table([]))
    assert warehouse.ids_with_tables("graph_nodes", "graph_edges") == {both}
    assert warehouse.ids_with_tables("graph_nodes") == {both, nodes_only}
    assert warehouse.ids_with_tables("entity_graph") == set()
    with pytest.raises(ValueError, match="unknown table 'graph'"):
        warehouse.ids_with_tables("graph")


def test_a_failed_write_leaves_the_previous_file_whole_and_no_temporary(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path))
    document_id = Document.node_id_for("a.md")
    good = chunks_to_table(_chunks(document_id))
    warehouse.write_table("chunks", document_id, good)

    class Exploding(Exception):
        pass

    bad = pa.table({"x": pa.array([1, 2, 3])})
    original = pq.write_table

    def write_then_explode(table: pa.Table, where: object, **kwargs: object) -> None:
        original(table, where, **kwargs)  # bytes reach the temporary file...
        raise Exploding  # ...then the process "crashes" before the rename

    pq.write_table = write_then_explode  # type: ignore[assignment]
    try:
        with pytest.raises(Exploding):
            warehouse.write_table("chunks", document_id, bad)
    finally:
        pq.write_table = original
    assert warehouse.read_table("chunks", document_id).equals(good)
    assert os.listdir(tmp_path / "chunks") == [f"{document_id}.parquet"]


def test_raw_snapshots_are_written_once_and_kept_per_version(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path))
    document_id = Document.node_id_for("a.md")
    v1, v2 = content_hash(b"v1"), content_hash(b"v2")
    path = warehouse.put_raw(document_id, v1, b"v1")
    warehouse.put_raw(document_id, v2, b"v2")
    written = os.stat(path).st_mtime_ns
    warehouse.put_raw(document_id, v1, b"v1")  # the same version again: not rewritten
    assert os.stat(path).st_mtime_ns == written
    assert warehouse.get_raw(document_id, v1) == b"v1"
    assert warehouse.get_raw(document_id, v2) == b"v2"
    assert sorted(os.listdir(tmp_path / "raw" / str(document_id))) == sorted([v1, v2])


def test_remove_outputs_keeps_raw_history(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path))
    document_id = Document.node_id_for("a.md")
    v1 = content_hash(b"v1")
    warehouse.put_raw(document_id, v1, b"v1")
    warehouse.put_text_layer(document_id, v1, "v1")
    warehouse.write_table("chunks", document_id, chunks_to_table([]))
    warehouse.record_failure(document_id, "chunks", {"error": "x"})
    removed = warehouse.remove_outputs(document_id)
    assert len(removed) == 2
    assert not warehouse.has_table("chunks", document_id)
    assert warehouse.read_failures(document_id) == {}
    assert warehouse.get_raw(document_id, v1) == b"v1"
    assert warehouse.get_text_layer(document_id, v1) == "v1"


def test_the_same_layout_works_under_an_object_store_uri() -> None:
    # fsspec's in-memory filesystem stands for s3:// and gs://: a remote, non-local store.
    root = f"memory://agrag-{uuid.uuid4().hex}"
    warehouse = Warehouse(root)
    document_id = Document.node_id_for("a.md")
    chunks = _chunks(document_id)
    path = warehouse.write_table("chunks", document_id, chunks_to_table(chunks))
    assert warehouse.uri(path).startswith("memory://")
    assert chunks_from_table(warehouse.read_table("chunks", document_id)) == chunks
    warehouse.put_text_layer(document_id, HASH, "héllo")
    assert warehouse.get_text_layer(document_id, HASH) == "héllo"


def test_failures_are_kept_per_step_and_cleared_on_success(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path))
    document_id = Document.node_id_for("a.md")
    warehouse.record_failure(document_id, "sections", {"error": "bad bytes"})
    warehouse.record_failure(document_id, "chunks", {"error": "no sections"})
    assert set(warehouse.read_failures(document_id)) == {"sections", "chunks"}
    warehouse.clear_failure(document_id, "sections")
    assert set(warehouse.read_failures(document_id)) == {"chunks"}
    warehouse.clear_failure(document_id, "chunks")
    assert not (tmp_path / "failures" / f"{document_id}.json").exists()
