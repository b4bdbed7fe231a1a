"""Box Notes (``.boxnote``), in both of Box's formats, are read as the notes people wrote:
headings, lists with their nesting and check marks, tables, code; never the JSON around them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect_media_type, parse_document
from agrag_pipeline.parsing.boxnote import MAX_DEPTH, MEDIA_TYPE
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "boxnote"


def _parse(name: str) -> ParsedDocument:
    return parse_document((FIXTURES / name).read_bytes(), f"Box/Notes/{name}")


def test_a_box_note_of_todays_format_reads_headings_lists_tables_and_code() -> None:
    parsed = _parse("feature_tour_2023.boxnote")
    assert parsed.document.media_type == MEDIA_TYPE
    headed = [(s.heading, s.level) for s in parsed.sections if s.heading]
    assert headed == [("Heading 1", 1), ("Heading 2", 2), ("Heading 3", 3)]
    text = parsed.text_layer
    assert text.startswith("Some plain text (Size 12)\n\nText With Bold\n\nItalic Text")
    assert "1. numbered list with underline\n2. numbered list 2 with delete\n3. " in text
    assert "- Bullet list 1\n- Bullet list 2 with bold\n" in text
    assert "[x] CheckList 1\n[ ] CheckList 2 bold\n[ ] CheckList 3 bold and italic" in text
    assert (
        "| Table (1, 1) | Table(1, 2) | Table(1, 3) |\n"
        "|  | Table(2, 2) underline and delete |  |\n"
        "| Table(3, 1) Bold | Table(3, 2) Bold and Italic | Table(3, 3) small and Bold |"
    ) in text
    assert [s.kind for s in parsed.sections].count("table") == 1
    assert 'codeblock\n\nimport json\nprint("Hello")\n\nCallout!' in text
    assert "BlockQuote\n\nmulti-line" in text
    assert "Annotation" in text  # a comment's mark splits the word; the word is whole
    for left_out in ("19004409648", "Xiaowei", "savepoint", "Drawing1.png", "#ed3757", "{"):
        assert left_out not in text, left_out


def test_a_box_note_of_the_etherpad_format_reads_lists_tables_and_title_sizes() -> None:
    parsed = _parse("etherpad_normal_note.boxnote")
    assert [(s.heading, s.level) for s in parsed.sections] == [("HEADER", 2), ("TO DO", 2)]
    text = parsed.text_layer
    # Numbered items at two depths, each with its own number; check marks as written.
    assert "\n1. ex maximus tortor" in text
    assert "\n  1. eleifend. Vivamus" in text
    assert "\n  3. metus, eu faucibus" in text
    assert "\n4. viverra. Praesent" in text
    assert "TO DO\n\n[ ] lorem\n[x] ipsum\n[ ] lorem2\n[ ] impsum2" in text
    assert "consectetur adipiscing elit." in text  # a link's text inside its sentence
    assert "*" not in text  # the lines' marker characters are no text

    table = _parse("etherpad_table-multiline.boxnote")
    assert table.text_layer == (
        "| Title 1 Multiple lines Look like this | Title 2 | Title 3 |\n"
        "| - | - | - |\n"
        "| 1:1 | 1:2 | 1:3 |"
    )
    assert [s.kind for s in table.sections] == ["table"]


def test_etherpad_offsets_count_utf16_units_so_text_after_an_emoji_stays_whole() -> None:
    text = _parse("etherpad_complex_note.boxnote").text_layer
    assert "- Unordered list 2\n  - Subitem\n    - Subsubitem\n    [ ] sub checkbox" in text
    assert (
        "| left top | center top |  | right top |\n"  # not bold: no header
        "| left bottom | center bottom list in table: - 1 - 2 | empty cell above this one "
        "| right bottom |"
    ) in text
    assert "Lorem Ipsum" in text  # a comment's two marks over "psu" do not cut the word
    assert text.endswith("just a star: *\nUnicode characters: ❦,😍")


def _note(*content: dict) -> bytes:
    return json.dumps(
        {"version": 3, "schema_version": 1, "doc": {"type": "doc", "content": list(content)}}
    ).encode()


def _cell(text: str, kind: str = "table_cell", colspan: int = 1, rowspan: int = 1) -> dict:
    paragraph = {"type": "paragraph", "content": [{"type": "text", "text": text}]}
    return {"type": kind, "attrs": {"colspan": colspan, "rowspan": rowspan}, "content": [paragraph]}


def test_a_box_note_tables_merged_cells_stand_in_every_cell_they_cover() -> None:
    table = {
        "type": "table",
        "content": [
            {
                "type": "table_row",
                "content": [
                    _cell("Team", "table_header", rowspan=2),
                    _cell("2025", "table_header", colspan=2),
                ],
            },
            {
                "type": "table_row",
                "content": [_cell("H1", "table_header"), _cell("H2", "table_header")],
            },
            {"type": "table_row", "content": [_cell("Search"), _cell("4"), _cell("6")]},
        ],
    }
    parsed = parse_document(_note(table), "plan.boxnote")
    assert parsed.text_layer == (
        "| Team | 2025 | 2025 |\n| Team | H1 | H2 |\n| - | - | - |\n| Search | 4 | 6 |"
    )
    (section,) = parsed.sections
    assert section.kind == "table"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"doc": {"type": "doc", "content": [', "invalid JSON"),
        (b'{"title": "x", "entries": []}', "neither a 'doc' nor an 'atext'"),
        (b'["a", "list"]', "neither a 'doc' nor an 'atext'"),
        (b"\xff\xfe{\x00", "not UTF-8"),
        (
            json.dumps({"atext": {"text": "ab\n", "attribs": "+9"}, "pool": {}}).encode(),
            "run past the end of its text",
        ),
        (
            json.dumps({"atext": {"text": "ab\n", "attribs": "+1?+2"}, "pool": {}}).encode(),
            "unreadable attribute op",
        ),
    ],
)
def test_a_file_named_boxnote_that_is_no_box_note_is_refused_with_its_name_and_why(
    raw: bytes, problem: str
) -> None:
    with pytest.raises(CorruptDocumentError, match=problem) as error:
        parse_document(raw, "Box/odd.boxnote")
    assert str(error.value).startswith("Box/odd.boxnote: ")


def test_a_box_note_nested_past_any_real_note_is_refused_not_a_recursion_error() -> None:
    node: dict = {"type": "paragraph", "content": [{"type": "text", "text": "deep"}]}
    for _ in range(MAX_DEPTH + 5):
        node = {"type": "blockquote", "content": [node]}
    with pytest.raises(CorruptDocumentError, match="nested over"):
        parse_document(_note(node), "deep.boxnote")
    with pytest.raises(EmptyDocumentError, match="no text"):
        parse_document(_note({"type": "paragraph"}, {"type": "horizontal_rule"}), "blank.boxnote")


def test_a_boxnote_file_is_detected_by_its_extension() -> None:
    head = (FIXTURES / "feature_tour_2023.boxnote").read_bytes()[:8192]
    assert detect_media_type("Shared/Team/Weekly sync.boxnote", head) == MEDIA_TYPE


def test_blocks_inside_a_box_note_table_cell_stay_apart_as_words() -> None:
    list_cell = _cell("Owners:")
    list_cell["content"].append(
        {
            "type": "bullet_list",
            "content": [
                {"type": "list_item", "content": [_cell("Ana")["content"][0]]},
                {"type": "list_item", "content": [_cell("Bo")["content"][0]]},
            ],
        }
    )
    quote_cell = _cell("")
    quote_cell["content"] = [
        {"type": "blockquote", "content": [_cell("one")["content"][0], _cell("two")["content"][0]]}
    ]
    table = {
        "type": "table",
        "content": [{"type": "table_row", "content": [list_cell, quote_cell]}],
    }
    assert (
        parse_document(_note(table), "cells.boxnote").text_layer == "| Owners: Ana Bo | one two |"
    )
