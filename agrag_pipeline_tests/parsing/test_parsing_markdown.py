"""Markdown edge cases where splitters and converters commonly go wrong."""

from __future__ import annotations

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations


def _parse(text: str, newline: str = "\n") -> ParsedDocument:
    parsed = parse_document(text.replace("\n", newline).encode("utf-8"), "doc.md")
    assert contract_violations(parsed) == []
    return parsed


def _paths(parsed: ParsedDocument) -> list[list[str]]:
    return [s.heading_path for s in parsed.sections if s.heading is not None]


def test_heading_with_link_emphasis_and_code_keeps_their_text() -> None:
    parsed = _parse("# Use [serde](https://serde.rs) *with* `derive` and **care**\n\nbody\n")
    assert parsed.sections[0].heading == "Use serde with derive and care"


def test_hash_lines_in_code_fence_indented_code_and_comment_are_not_headings() -> None:
    parsed = _parse(
        "# Real\n\n```sh\n# not a heading\n```\n\n~~~\n## nor this\n~~~\n\n"
        "    # indented code\n\n<!--\n# commented out\n-->\n\n## Also real\n"
    )
    assert _paths(parsed) == [["Real"], ["Real", "Also real"]]
    own = parsed.sections[0].text_in(parsed.text_layer)
    assert "# not a heading" in own and "# commented out" in own


def test_consecutive_headings_are_kept_apart() -> None:
    parsed = _parse("# A\n## B\n## C\n### D\ntext\n")
    assert _paths(parsed) == [["A"], ["A", "B"], ["A", "C"], ["A", "C", "D"]]
    assert [s.text_in(parsed.text_layer) for s in parsed.sections] == [
        "# A",
        "## B",
        "## C",
        "### D\ntext",
    ]
    a, b, c, d = parsed.sections
    assert (a.parent_id, b.parent_id, c.parent_id, d.parent_id) == (None, a.id, a.id, c.id)


def test_setext_headings() -> None:
    parsed = _parse("Title\n=====\n\nintro\n\nPart *one*\n----------\n\nbody\n")
    assert [(s.level, s.heading) for s in parsed.sections] == [(1, "Title"), (2, "Part one")]
    assert parsed.sections[1].text_in(parsed.text_layer) == "Part *one*\n----------\n\nbody"


def test_yaml_front_matter_is_not_a_setext_heading() -> None:
    parsed = _parse("---\ntitle: x\n---\n\n# Real\n")
    assert _paths(parsed) == [["Real"]]
    assert parsed.sections[0].level == 0


def test_single_column_table_is_a_table_with_header_and_rows() -> None:
    parsed = _parse("# T\n\n| Name |\n|------|\n| a |\n| b |\n\nafter\n")
    heading, table, after = parsed.sections
    text = parsed.text_layer
    assert table.kind == "table"
    assert table.table_header is not None
    assert text[table.table_header.start : table.table_header.end] == "| Name |\n|------|"
    assert [text[r.start : r.end] for r in table.table_rows] == ["| a |", "| b |"]
    assert (table.heading, table.heading_path, table.parent_id) == (None, ["T"], heading.id)
    # Text after the table under the same heading: a continuation section of that heading.
    assert (after.kind, after.heading, after.heading_path) == ("text", None, ["T"])
    assert after.parent_id == heading.id and after.level == heading.level
    assert after.text_in(text) == "after"


def test_crlf_line_endings_keep_offsets_into_the_source() -> None:
    parsed = _parse("# A\n\none\n\n## B\n\n| x | y |\n|---|---|\n| 1 | 2 |\n", newline="\r\n")
    text = parsed.text_layer
    assert "\r\n" in text
    assert [s.heading for s in parsed.sections] == ["A", "B", None]
    table = parsed.sections[2]
    assert table.table_header is not None
    assert text[table.table_header.start : table.table_header.end] == "| x | y |\r\n|---|---|"
    assert [text[r.start : r.end] for r in table.table_rows] == ["| 1 | 2 |"]


def test_offsets_are_string_indices_after_emoji_and_cjk() -> None:
    source = "前言 😀 𝄞 text\n\n# 見出し 🦆\n\n本文 ✓\n\n| 列 |\n|---|\n| 値 😀 |\n"
    parsed = _parse(source)
    text = parsed.text_layer
    level0, heading, table = parsed.sections
    assert level0.text_in(text) == "前言 😀 𝄞 text"
    assert heading.heading == "見出し 🦆"
    assert heading.text_in(text) == "# 見出し 🦆\n\n本文 ✓"
    assert [text[r.start : r.end] for r in table.table_rows] == ["| 値 😀 |"]


def test_byte_order_mark_is_not_part_of_the_text_layer() -> None:
    parsed = parse_document(b"\xef\xbb\xbf# Title\n\nbody\n", "bom.md")
    assert parsed.text_layer.startswith("# Title")
    assert parsed.sections[0].start == 0


def test_utf16_with_bom_is_decoded() -> None:
    parsed = parse_document("# Überschrift\n\nText\n".encode("utf-16"), "u16.md")
    assert parsed.sections[0].heading == "Überschrift"


def test_heading_in_blockquote_or_list_is_content_not_structure() -> None:
    parsed = _parse("# Top\n\n> # quoted\n\n- # in a list\n")
    assert _paths(parsed) == [["Top"]]


def test_table_between_texts_under_level0_and_skipped_levels() -> None:
    parsed = _parse("intro\n\n|a|\n|-|\n|1|\n\nmore\n\n# H1\n\n### H3\n")
    kinds = [(s.kind, s.level, s.heading_path, s.parent_id) for s in parsed.sections]
    h1 = parsed.sections[3]
    assert kinds == [
        ("text", 0, [], None),
        ("table", 0, [], None),
        ("text", 0, [], None),
        ("text", 1, ["H1"], None),
        ("text", 3, ["H1", "H3"], h1.id),
    ]


def test_section_ids_are_deterministic_and_change_with_content() -> None:
    first = _parse("# A\n\ntext\n")
    again = _parse("# A\n\ntext\n")
    edited = _parse("# A\n\ntext!\n")
    assert [s.id for s in first.sections] == [s.id for s in again.sections]
    assert first.sections[0].id != edited.sections[0].id
    assert len({s.id for s in _parse("# A\n## B\n## C\n").sections}) == 3
