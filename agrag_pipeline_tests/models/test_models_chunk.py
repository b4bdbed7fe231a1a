"""Every documented behaviour of ``Chunk`` (shared/spec/chunk-api-reference.txt), errors too."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from agrag_pipeline.models import (
    PROJECT_NAMESPACE,
    Chunk,
    Document,
    NodeRecord,
    PageProvenance,
    TextProvenance,
)

TEXT_LAYER = "# Intro\n\nHello world.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n"
CONTENT_HASH = hashlib.sha256(TEXT_LAYER.encode("utf-8")).hexdigest()
DOCUMENT_ID = Document.node_id_for("guide/intro.md")
HELLO = TEXT_LAYER.index("Hello world.")
HELLO_SPAN = {"kind": "text", "start": HELLO, "end": HELLO + len("Hello world.")}


def make_chunk(**overrides: Any) -> Chunk:
    fields: dict[str, Any] = {
        "document_id": DOCUMENT_ID,
        "content_hash": CONTENT_HASH,
        "text": "Hello world.",
        "provenance": HELLO_SPAN,
    }
    fields.update(overrides)
    return Chunk(**fields)


def full_chunk() -> Chunk:
    """A chunk with every attribute set away from its default."""
    return make_chunk(
        id=Chunk.id_for(DOCUMENT_ID, CONTENT_HASH, "c" * 64, 3),
        created_at=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        metadata={"source": "guide/intro.md", "tokens": 12, "nested": {"ok": [1, 2.5, None]}},
        index=3,
        heading_path=["Intro", "Details"],
        content_kind="table",
        provenance={
            "kind": "page",
            "start": HELLO,
            "end": HELLO + 12,
            "pages": [1, 2],
            "boxes": [{"page": 2, "x0": 1.0, "y0": 2.0, "x1": 3.5, "y1": 4.0}],
        },
        chunker="markdown-sections",
        chunker_hash="c" * 64,
        schema_fingerprint="d" * 64,
        extraction_fingerprint="e" * 64,
        section_ids=[uuid.uuid4(), uuid.uuid4()],
        embedding=[0.25, -1.5, 3.0],
    )


# --- attributes, defaults and validation -----------------------------------------------------


def test_defaults_follow_the_reference() -> None:
    chunk = make_chunk()
    assert chunk.id is None
    assert chunk.index == 0
    assert chunk.content_kind == "text"
    assert chunk.heading_path == []
    assert chunk.section_ids == []
    assert chunk.metadata == {}
    assert chunk.chunker is None
    assert chunk.chunker_hash is None
    assert chunk.schema_fingerprint is None
    assert chunk.extraction_fingerprint is None
    assert chunk.embedding is None


def test_list_and_dict_defaults_are_not_shared_between_chunks() -> None:
    first, second = make_chunk(), make_chunk()
    first.heading_path.append("Intro")
    first.metadata["k"] = 1
    assert second.heading_path == []
    assert second.metadata == {}


def test_created_at_defaults_to_an_aware_utc_now() -> None:
    before = datetime.now(UTC)
    chunk = make_chunk()
    after = datetime.now(UTC)
    assert chunk.created_at.utcoffset() == timedelta(0)
    assert before <= chunk.created_at <= after


def test_aware_non_utc_created_at_is_converted_to_the_same_instant_in_utc() -> None:
    paris_summer = timezone(timedelta(hours=2))
    given = datetime(2024, 7, 1, 12, 0, tzinfo=paris_summer)
    chunk = make_chunk(created_at=given)
    assert chunk.created_at.utcoffset() == timedelta(0)
    assert chunk.created_at == given
    assert chunk.created_at.hour == 10


def test_created_at_that_cannot_be_expressed_in_utc_is_a_value_error() -> None:
    late = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))
    with pytest.raises(ValueError, match="UTC"):
        make_chunk(created_at=late)


@pytest.mark.parametrize("field", ["document_id", "content_hash", "text", "provenance"])
def test_required_attribute_missing_is_refused(field: str) -> None:
    fields: dict[str, Any] = {
        "document_id": DOCUMENT_ID,
        "content_hash": CONTENT_HASH,
        "text": "Hello world.",
        "provenance": HELLO_SPAN,
    }
    del fields[field]
    with pytest.raises(ValidationError, match=field):
        Chunk(**fields)


def test_a_64_char_lowercase_hex_content_hash_is_accepted() -> None:
    assert make_chunk(content_hash="0123456789abcdef" * 4).content_hash == "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "bad_hash",
    [
        "a" * 63,
        "a" * 65,
        "",
        CONTENT_HASH.upper(),
        "g" * 64,
        "z" + "a" * 63,
        " " + "a" * 63,
    ],
    ids=["63-chars", "65-chars", "empty", "uppercase", "non-hex-g", "non-hex-z", "space"],
)
def test_content_hash_that_is_not_64_lowercase_hex_is_refused(bad_hash: str) -> None:
    with pytest.raises(ValidationError, match="content_hash"):
        make_chunk(content_hash=bad_hash)


@pytest.mark.parametrize("kind", ["text", "table"])
def test_content_kind_accepts_text_and_table(kind: str) -> None:
    assert make_chunk(content_kind=kind).content_kind == kind


@pytest.mark.parametrize("kind", ["image", "TEXT", "", "code"])
def test_content_kind_outside_the_literal_is_refused(kind: str) -> None:
    with pytest.raises(ValidationError, match="content_kind"):
        make_chunk(content_kind=kind)


def test_unknown_attribute_is_refused_not_dropped() -> None:
    with pytest.raises(ValidationError, match="headings"):
        make_chunk(headings=["Intro"])


def test_section_ids_are_uuids_in_the_given_order() -> None:
    ids = [uuid.uuid4() for _ in range(3)]
    chunk = make_chunk(section_ids=[str(i) for i in ids])
    assert chunk.section_ids == ids
    with pytest.raises(ValidationError, match="section_ids"):
        make_chunk(section_ids=["not-a-uuid"])


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_embedding_with_a_non_finite_value_is_refused(value: float) -> None:
    with pytest.raises(ValidationError, match="embedding"):
        make_chunk(embedding=[0.1, value])


# --- provenance: discriminated by kind -------------------------------------------------------


def test_text_kind_gives_text_provenance() -> None:
    chunk = make_chunk(provenance={"kind": "text", "start": 1, "end": 5})
    assert isinstance(chunk.provenance, TextProvenance)
    assert not hasattr(chunk.provenance, "pages")


def test_page_kind_gives_page_provenance_with_pages_and_boxes() -> None:
    chunk = make_chunk(
        provenance={
            "kind": "page",
            "start": 0,
            "end": 5,
            "pages": [3],
            "boxes": [{"page": 3, "x0": 0, "y0": 0, "x1": 10, "y1": 10, "origin": "bottom-left"}],
        }
    )
    assert isinstance(chunk.provenance, PageProvenance)
    assert chunk.provenance.pages == [3]
    assert chunk.provenance.boxes[0].origin == "bottom-left"


def test_provenance_with_unknown_kind_is_refused() -> None:
    with pytest.raises(ValidationError, match="provenance"):
        make_chunk(provenance={"kind": "audio", "start": 0, "end": 1})


def test_provenance_without_kind_is_refused() -> None:
    with pytest.raises(ValidationError, match="provenance"):
        make_chunk(provenance={"start": 0, "end": 1})


def test_page_provenance_without_pages_is_refused() -> None:
    with pytest.raises(ValidationError, match="pages"):
        make_chunk(provenance={"kind": "page", "start": 0, "end": 1})
    with pytest.raises(ValidationError, match="pages"):
        make_chunk(provenance={"kind": "page", "start": 0, "end": 1, "pages": []})


def test_box_on_a_page_not_listed_is_refused() -> None:
    box = {"page": 4, "x0": 0, "y0": 0, "x1": 1, "y1": 1}
    with pytest.raises(ValidationError, match="not in pages"):
        make_chunk(
            provenance={"kind": "page", "start": 0, "end": 1, "pages": [1, 2], "boxes": [box]}
        )


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_box_with_a_non_finite_coordinate_is_refused(value: float) -> None:
    box = {"page": 1, "x0": 0, "y0": 0, "x1": value, "y1": 1}
    with pytest.raises(ValidationError, match="x1"):
        make_chunk(provenance={"kind": "page", "start": 0, "end": 1, "pages": [1], "boxes": [box]})


def test_text_provenance_has_no_page_spans() -> None:
    with pytest.raises(ValidationError, match="pages"):
        make_chunk(provenance={"kind": "text", "start": 0, "end": 1, "pages": [1]})


def test_provenance_end_before_start_is_refused() -> None:
    with pytest.raises(ValidationError, match="before its start"):
        make_chunk(provenance={"kind": "text", "start": 5, "end": 2})


def test_provenance_extract_reproduces_the_chunk_text() -> None:
    chunk = make_chunk()
    assert chunk.provenance.extract(TEXT_LAYER) == chunk.text


def test_provenance_extract_puts_the_repeated_table_header_above_the_rows() -> None:
    header = "| a | b |"
    rows = "| 3 | 4 |"
    header_start = TEXT_LAYER.index(header)
    rows_start = TEXT_LAYER.index(rows)
    provenance = {
        "kind": "text",
        "start": rows_start,
        "end": rows_start + len(rows),
        "repeated_header": {"start": header_start, "end": header_start + len(header)},
    }
    chunk = make_chunk(text=f"{header}\n{rows}", content_kind="table", provenance=provenance)
    assert chunk.provenance.extract(TEXT_LAYER) == chunk.text


# --- contextual_text and section_label -------------------------------------------------------


def test_contextual_text_puts_the_heading_path_above_the_text() -> None:
    chunk = make_chunk(heading_path=["Guide", "Intro"])
    contextual = chunk.contextual_text
    first_line, _, rest = contextual.partition("\n")
    assert first_line == chunk.section_label()
    assert "Guide" in first_line and first_line.index("Guide") < first_line.index("Intro")
    assert rest.strip("\n") == "Hello world."
    assert contextual.endswith(chunk.text)


def test_contextual_text_without_heading_path_is_the_text_itself() -> None:
    chunk = make_chunk()
    assert chunk.contextual_text == "Hello world."


def test_contextual_text_leaves_the_stored_text_and_offsets_unchanged() -> None:
    chunk = make_chunk(heading_path=["Intro"])
    _ = chunk.contextual_text
    assert chunk.text == "Hello world."
    assert chunk.provenance.extract(TEXT_LAYER) == chunk.text


def test_section_label_is_none_for_an_empty_heading_path() -> None:
    assert make_chunk().section_label() is None


def test_section_label_keeps_every_heading_in_order_on_one_line() -> None:
    label = make_chunk(heading_path=["Guide", "Install", "Linux"]).section_label()
    assert label is not None
    assert "\n" not in label
    assert label.index("Guide") < label.index("Install") < label.index("Linux")


def test_section_label_turns_whitespace_runs_into_one_space() -> None:
    label = make_chunk(heading_path=["Getting \t\n  started\u2028now"]).section_label()
    assert label == "Getting started now"


def test_section_label_turns_runs_of_three_or_more_dashes_into_one_dash() -> None:
    assert make_chunk(heading_path=["a---b"]).section_label() == "a-b"
    assert make_chunk(heading_path=["a-------b"]).section_label() == "a-b"
    assert make_chunk(heading_path=["---"]).section_label() == "-"


def test_section_label_keeps_two_dashes() -> None:
    assert make_chunk(heading_path=["--verbose flag"]).section_label() == "--verbose flag"


def test_section_label_dashes_split_by_whitespace_cannot_rejoin_into_a_run() -> None:
    label = make_chunk(heading_path=["--\n-"]).section_label()
    assert label is not None
    assert "---" not in label


# --- to_node_record --------------------------------------------------------------------------


def test_to_node_record_labels_the_node_chunk_and_carries_the_id_as_text() -> None:
    chunk = full_chunk()
    record = chunk.to_node_record()
    assert isinstance(record, NodeRecord)
    assert record.label == "Chunk"
    assert record.id == str(chunk.id)
    assert uuid.UUID(record.id) == chunk.id


def test_to_node_record_properties_omit_the_id() -> None:
    assert "id" not in full_chunk().to_node_record().properties


def test_to_node_record_properties_hold_every_other_attribute() -> None:
    properties = full_chunk().to_node_record().properties
    expected = set(Chunk.model_fields) - {"id"}
    assert set(properties) == expected


def test_to_node_record_writes_provenance_as_json_text_of_its_model_dump() -> None:
    chunk = full_chunk()
    provenance = chunk.to_node_record().properties["provenance"]
    assert isinstance(provenance, str)
    assert json.loads(provenance) == chunk.provenance.model_dump(mode="json")


def test_to_node_record_properties_are_json_safe() -> None:
    properties = full_chunk().to_node_record().properties
    text = json.dumps(properties, allow_nan=False)
    assert json.loads(text) == properties
    assert properties["document_id"] == str(DOCUMENT_ID)
    assert all(isinstance(s, str) for s in properties["section_ids"])
    assert isinstance(properties["created_at"], str)


def test_to_node_record_without_id_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="id"):
        make_chunk().to_node_record()


# --- from_node -------------------------------------------------------------------------------


def stored_properties(chunk: Chunk) -> dict[str, Any]:
    record = chunk.to_node_record()
    return {**record.properties, "id": record.id}


def test_round_trip_through_a_node_record_gives_an_equal_chunk() -> None:
    chunk = full_chunk()
    assert Chunk.from_node(stored_properties(chunk)) == chunk


def test_round_trip_of_a_minimal_chunk_gives_an_equal_chunk() -> None:
    chunk = make_chunk(id=uuid.uuid4())
    assert Chunk.from_node(stored_properties(chunk)) == chunk


def test_round_trip_survives_serialising_the_properties_as_json() -> None:
    chunk = full_chunk()
    properties = json.loads(json.dumps(stored_properties(chunk)))
    assert Chunk.from_node(properties) == chunk


def test_from_node_accepts_provenance_as_a_decoded_mapping() -> None:
    chunk = full_chunk()
    properties = stored_properties(chunk)
    properties["provenance"] = json.loads(properties["provenance"])
    assert Chunk.from_node(properties) == chunk


def test_from_node_accepts_provenance_as_a_model_dump() -> None:
    chunk = full_chunk()
    properties = {**stored_properties(chunk), "provenance": chunk.provenance.model_dump()}
    assert Chunk.from_node(properties) == chunk


@pytest.mark.parametrize("missing", ["id", "document_id", "content_hash", "text", "provenance"])
def test_from_node_with_a_missing_property_is_a_value_error(missing: str) -> None:
    properties = stored_properties(full_chunk())
    del properties[missing]
    with pytest.raises(ValueError, match=missing):
        Chunk.from_node(properties)


def test_from_node_with_provenance_that_is_not_json_is_a_value_error() -> None:
    properties = {**stored_properties(full_chunk()), "provenance": "{kind: text"}
    with pytest.raises(ValueError, match="provenance"):
        Chunk.from_node(properties)


def test_from_node_that_fails_validation_raises_pydantic_validation_error_a_value_error() -> None:
    properties = {**stored_properties(full_chunk()), "content_hash": "A" * 64}
    with pytest.raises(ValidationError) as caught:
        Chunk.from_node(properties)
    assert isinstance(caught.value, ValueError)
    assert "content_hash" in str(caught.value)


def test_from_node_with_an_id_that_is_not_a_uuid_is_a_value_error() -> None:
    properties = {**stored_properties(full_chunk()), "id": "chunk-1"}
    with pytest.raises(ValueError, match="id"):
        Chunk.from_node(properties)


def test_from_node_of_something_that_is_not_a_mapping_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Chunk.from_node(["id", "text"])  # type: ignore[arg-type]


OLD_ID = "0b7d3c0e-9a51-5d8e-8f5a-1c2d3e4f5a6b"


def test_record_written_before_chunkers_were_recorded_loads_with_them_none() -> None:
    # What an older writer stored: no chunker, chunker_hash, schema_fingerprint,
    # extraction_fingerprint keys at all (not even as null).
    old_record = {
        "id": OLD_ID,
        "document_id": str(DOCUMENT_ID),
        "content_hash": CONTENT_HASH,
        "index": 2,
        "text": "Hello world.",
        "provenance": json.dumps(HELLO_SPAN),
        "heading_path": ["Intro"],
        "content_kind": "text",
        "section_ids": [],
        "created_at": "2023-01-02T03:04:05+00:00",
        "metadata": "{}",
        "embedding": None,
    }
    chunk = Chunk.from_node(old_record)
    assert chunk.chunker is None
    assert chunk.chunker_hash is None
    assert chunk.schema_fingerprint is None
    assert chunk.extraction_fingerprint is None
    assert chunk.id == uuid.UUID(OLD_ID)
    assert chunk.index == 2
    assert chunk.created_at == datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert chunk.provenance.extract(TEXT_LAYER) == chunk.text


def test_oldest_record_with_only_the_required_properties_loads_with_defaults() -> None:
    chunk = Chunk.from_node(
        {
            "id": OLD_ID,
            "document_id": str(DOCUMENT_ID),
            "content_hash": CONTENT_HASH,
            "text": "Hello world.",
            "provenance": json.dumps(HELLO_SPAN),
        }
    )
    assert chunk.chunker is None and chunk.chunker_hash is None
    assert chunk.heading_path == [] and chunk.section_ids == [] and chunk.index == 0


# --- identity --------------------------------------------------------------------------------


def test_chunk_id_for_is_the_uuid5_of_document_version_chunker_and_index() -> None:
    chunker_hash = hashlib.sha256(b"chunker settings").hexdigest()
    # The recipe, written out independently of the implementation.
    name = f"chunk:{DOCUMENT_ID}:{CONTENT_HASH}:{chunker_hash}:7"
    expected = uuid.uuid5(PROJECT_NAMESPACE, name)
    assert Chunk.id_for(DOCUMENT_ID, CONTENT_HASH, chunker_hash, 7) == expected
    assert Chunk.id_for(DOCUMENT_ID, CONTENT_HASH, chunker_hash, 7).version == 5


def test_chunk_id_for_is_the_same_for_the_same_inputs() -> None:
    args = (DOCUMENT_ID, CONTENT_HASH, "c" * 64, 0)
    assert Chunk.id_for(*args) == Chunk.id_for(*args)


@pytest.mark.parametrize(
    "changed",
    [
        (Document.node_id_for("guide/other.md"), CONTENT_HASH, "c" * 64, 0),
        (DOCUMENT_ID, "b" * 64, "c" * 64, 0),
        (DOCUMENT_ID, CONTENT_HASH, "d" * 64, 0),
        (DOCUMENT_ID, CONTENT_HASH, "c" * 64, 1),
    ],
    ids=["document", "content-hash", "chunker-hash", "index"],
)
def test_chunk_id_for_changes_when_any_input_changes(changed: tuple[Any, ...]) -> None:
    assert Chunk.id_for(*changed) != Chunk.id_for(DOCUMENT_ID, CONTENT_HASH, "c" * 64, 0)
