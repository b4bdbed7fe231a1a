"""``Document`` and ``Section`` identity, ``DataPoint`` defaults and ``NodeRecord``."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from agrag_pipeline.models import PROJECT_NAMESPACE, DataPoint, Document, NodeRecord, Section

CONTENT_HASH = hashlib.sha256(b"# Title\n\nBody.\n").hexdigest()


def test_document_node_id_for_is_uuid5_of_the_source_key_under_the_project_namespace() -> None:
    expected = uuid.uuid5(PROJECT_NAMESPACE, "document:guide/intro.md")
    assert Document.node_id_for("guide/intro.md") == expected
    assert Document.node_id_for("guide/intro.md").version == 5


def test_document_node_id_for_is_stable_and_differs_per_source_key() -> None:
    assert Document.node_id_for("a.md") == Document.node_id_for("a.md")
    assert Document.node_id_for("a.md") != Document.node_id_for("b.md")
    assert Document.node_id_for("a.md") != Document.node_id_for("A.md")


def test_document_id_is_derived_from_the_source_key_and_not_the_content() -> None:
    v1 = Document(
        source_key="a.md", media_type="text/markdown", size_bytes=3, content_hash="a" * 64
    )
    v2 = Document(
        source_key="a.md", media_type="text/markdown", size_bytes=9, content_hash="b" * 64
    )
    assert v1.id == Document.node_id_for("a.md")
    assert v1.id == v2.id


def test_document_with_an_id_that_does_not_match_its_source_key_is_refused() -> None:
    with pytest.raises(ValidationError, match="node_id_for"):
        Document(
            id=Document.node_id_for("b.md"),
            source_key="a.md",
            media_type="text/markdown",
            size_bytes=3,
            content_hash=CONTENT_HASH,
        )


def test_document_content_hash_must_be_64_lowercase_hex() -> None:
    with pytest.raises(ValidationError, match="content_hash"):
        Document(source_key="a.md", media_type="text/markdown", size_bytes=3, content_hash="A" * 64)


def test_section_node_id_for_is_uuid5_of_document_version_and_tree_position() -> None:
    document_id = Document.node_id_for("a.md")
    expected = uuid.uuid5(PROJECT_NAMESPACE, f"section:{document_id}:{CONTENT_HASH}:0.2.1")
    assert Section.node_id_for(document_id, CONTENT_HASH, "0.2.1") == expected


def test_section_node_id_for_changes_with_document_version_and_position() -> None:
    document_id = Document.node_id_for("a.md")
    base = Section.node_id_for(document_id, CONTENT_HASH, "0.1")
    assert base == Section.node_id_for(document_id, CONTENT_HASH, "0.1")
    assert base != Section.node_id_for(Document.node_id_for("b.md"), CONTENT_HASH, "0.1")
    assert base != Section.node_id_for(document_id, "f" * 64, "0.1")
    assert base != Section.node_id_for(document_id, CONTENT_HASH, "0.2")


def test_only_a_table_section_has_a_table_header() -> None:
    with pytest.raises(ValidationError, match="table"):
        Section(
            document_id=Document.node_id_for("a.md"),
            content_hash=CONTENT_HASH,
            ordinal=0,
            level=1,
            start=0,
            end=10,
            kind="text",
            table_header={"start": 0, "end": 3},
        )


def test_data_point_treats_a_naive_created_at_as_utc() -> None:
    point = DataPoint(created_at=datetime(2024, 1, 1, 12, 0))
    assert point.created_at == datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def test_data_point_converts_created_at_on_assignment_too() -> None:
    point = DataPoint()
    point.created_at = datetime(2024, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=-3)))
    assert point.created_at.utcoffset() == timedelta(0)
    assert point.created_at.hour == 15


def test_node_record_is_immutable_and_needs_a_label_and_an_id() -> None:
    record = NodeRecord(label="Chunk", id="x", properties={"a": 1})
    with pytest.raises(ValidationError):
        record.label = "Other"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="label"):
        NodeRecord(label="", id="x")
    with pytest.raises(ValidationError, match="id"):
        NodeRecord(label="Chunk", id="")
