"""Rows built without re-validation are exactly the rows the validating constructors build."""

from __future__ import annotations

import copy
import pickle
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agrag_pipeline.models import Section
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.trusted import Uuid5Series

_NAMESPACES = st.sampled_from(
    [uuid.NAMESPACE_DNS, uuid.UUID("6f1c5a2e-4b8d-5e0f-9a47-2d3c1b8e7f60")]
)


@settings(max_examples=200, deadline=None)
@given(_NAMESPACES, st.text(max_size=120), st.lists(st.text(max_size=12), max_size=5))
def test_uuid5_series_gives_exactly_uuid5_of_prefix_and_suffix(
    namespace: uuid.UUID, prefix: str, suffixes: list[str]
) -> None:
    series = Uuid5Series(namespace, prefix)
    assert [series(s) for s in suffixes] == [uuid.uuid5(namespace, prefix + s) for s in suffixes]


def test_parsed_sections_equal_validated_sections_field_for_field(corpus_dir: Path) -> None:
    keys = [
        "markdown/rust-book/ch08-02-strings.md",
        "html/table_01.html",
        "pdf/2305.03393v1-pg9.pdf",
    ]
    for key in keys:
        parsed = parse_document((corpus_dir / key).read_bytes(), key)
        assert parsed.sections
        for section in parsed.sections:
            given_fields = {name: getattr(section, name) for name in section.model_fields_set}
            validated = Section(**given_fields)  # its own created_at: the one field to differ
            assert validated.model_fields_set == section.model_fields_set
            same_time = validated.model_copy(update={"created_at": section.created_at})
            assert same_time == section
            assert repr(same_time) == repr(section)  # same fields, same order
            assert section.created_at.tzinfo is not None


def test_contract_flags_a_section_that_is_not_a_valid_row() -> None:
    parsed = parse_document(b"# A\n\ntext\n", "doc.md")
    broken = parsed.sections[0].model_construct(
        **{**parsed.sections[0].__dict__, "end": parsed.sections[0].start - 1}
    )
    parsed.sections[0] = broken
    assert any("not a valid Section" in p for p in contract_violations(parsed))


def test_rows_share_one_frozen_fields_set_and_a_copy_gets_its_own() -> None:
    # One fields set for all of a kind's rows (a set each was a quarter of a section's memory).
    # pydantic adds to it when a field is assigned, which would change every row's: it is
    # frozen, so an assignment fails and leaves the row as it was; model_copy gives the changed
    # row a set of its own, and a pickled row comes back with one.
    parsed = parse_document(b"# A\n\ntext\n\n## B\n\nmore\n", "doc.md")
    first, second = parsed.sections[:2]
    assert first.model_fields_set is second.model_fields_set
    assert "metadata" not in first.model_fields_set  # as a validated construction gives it
    changed = first.model_copy(update={"metadata": {"k": "v"}})
    assert changed.metadata == {"k": "v"} and "metadata" in changed.model_fields_set
    assert "metadata" not in second.model_fields_set
    changed.heading = "A again"  # a plain set now: assignment works as pydantic's does
    assert changed.heading == "A again"
    with pytest.raises(TypeError):
        second.metadata = {"k": "v"}
    assert second.metadata == {} and "metadata" not in parsed.sections[-1].model_fields_set
    revived = pickle.loads(pickle.dumps(first))
    assert revived == first and type(revived.model_fields_set) is set
    assert copy.deepcopy(first) == first
