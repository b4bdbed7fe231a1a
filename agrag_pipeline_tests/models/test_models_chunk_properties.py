"""Property-based tests: ``section_label`` is always one safe line, and ``from_node`` only ever
fails with ``ValueError`` whatever a graph store hands it."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agrag_pipeline.models import Chunk, Document

#: Every character str.splitlines() breaks on.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

PROPERTY_NAMES = sorted(Chunk.model_fields)

# Headings biased towards what could break a label: line breaks, dashes and other whitespace.
heading_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(LINE_BREAKS + "-- \t\u00a0\u3000\x1f"),
        st.characters(codec="utf-8"),
    ),
    max_size=30,
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["text", "page", "table", str(uuid.uuid4()), "a" * 64, "2024-01-01T00:00:00Z"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(PROPERTY_NAMES), st.text(max_size=8)), children, max_size=4
        ),
    ),
    max_leaves=12,
)
# Values a property might hold, including JSON text (which from_node decodes) and raw bytes.
property_values = st.one_of(
    json_values,
    json_values.map(lambda v: json.dumps(v)),
    st.binary(max_size=16),
)


def valid_properties() -> dict[str, Any]:
    content_hash = hashlib.sha256(b"body").hexdigest()
    document_id = Document.node_id_for("a.md")
    chunk = Chunk(
        id=Chunk.id_for(document_id, content_hash, "c" * 64, 1),
        document_id=document_id,
        content_hash=content_hash,
        index=1,
        text="body",
        provenance={
            "kind": "page",
            "start": 0,
            "end": 4,
            "pages": [1],
            "boxes": [{"page": 1, "x0": 0, "y0": 0, "x1": 1, "y1": 1}],
            "repeated_header": {"start": 0, "end": 1},
        },
        heading_path=["H"],
        section_ids=[uuid.uuid4()],
        embedding=[0.5],
        metadata={"k": [1, "v"]},
        chunker="c",
        chunker_hash="c" * 64,
    )
    record = chunk.to_node_record()
    return {**record.properties, "id": record.id}


def assert_only_value_error(properties: Any) -> None:
    try:
        chunk = Chunk.from_node(properties)
    except ValueError:
        return
    # Whatever loaded must be a chunk that validates again and can be written back as strict
    # JSON (no NaN or Infinity, not even inside the JSON text of provenance).
    assert Chunk.model_validate(chunk.model_dump()) == chunk
    properties = chunk.to_node_record().properties
    json.dumps(properties, allow_nan=False)
    json.loads(properties["provenance"], parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"{name} written into JSON text")


@settings(max_examples=300, deadline=None)
@given(st.lists(heading_text, max_size=5))
def test_section_label_is_one_line_without_a_run_of_three_dashes(headings: list[str]) -> None:
    chunk = Chunk(
        document_id=uuid.uuid4(),
        content_hash="a" * 64,
        text="t",
        provenance={"kind": "text", "start": 0, "end": 1},
        heading_path=headings,
    )
    label = chunk.section_label()
    if not headings:
        assert label is None
        return
    assert label is not None
    # One line: nothing splitlines() breaks on (an all-blank path gives the empty line).
    assert not any(ch in label for ch in LINE_BREAKS)
    assert label.splitlines() in ([label], [])
    assert "---" not in label
    assert chunk.contextual_text.endswith(chunk.text)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.one_of(st.sampled_from(PROPERTY_NAMES), st.text(max_size=10)),
        property_values,
        max_size=16,
    )
)
def test_from_node_on_arbitrary_mappings_gives_a_chunk_or_a_value_error(
    properties: dict[str, Any],
) -> None:
    assert_only_value_error(properties)


@settings(max_examples=300, deadline=None)
@given(
    drop=st.lists(st.sampled_from([*PROPERTY_NAMES, "id"]), max_size=3),
    replace=st.dictionaries(st.sampled_from([*PROPERTY_NAMES, "id"]), property_values, max_size=3),
    provenance_patch=st.dictionaries(
        st.sampled_from(["kind", "start", "end", "pages", "boxes", "repeated_header", "x"]),
        json_values,
        max_size=3,
    ),
)
def test_from_node_on_mutated_valid_records_gives_a_chunk_or_a_value_error(
    drop: list[str], replace: dict[str, Any], provenance_patch: dict[str, Any]
) -> None:
    properties = valid_properties()
    provenance = json.loads(properties["provenance"])
    provenance.update(provenance_patch)
    properties["provenance"] = provenance
    for name in drop:
        properties.pop(name, None)
    properties.update(replace)
    assert_only_value_error(properties)


def test_unmutated_valid_record_loads() -> None:
    properties = valid_properties()
    chunk = Chunk.from_node(properties)
    assert str(chunk.id) == properties["id"]
