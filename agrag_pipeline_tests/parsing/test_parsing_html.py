"""HTML text-layer extraction: headings, tables, lists, code, skipped elements."""

from __future__ import annotations

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations


def _parse(html: str) -> ParsedDocument:
    parsed = parse_document(html.encode(), "page.html")
    assert contract_violations(parsed) == []
    return parsed


def test_heading_with_inline_markup_keeps_its_text() -> None:
    parsed = _parse('<h1>Use <a href="x">serde</a> <em>with</em> <code>derive</code></h1><p>b</p>')
    assert parsed.sections[0].heading == "Use serde with derive"


def test_table_header_from_th_and_text_after_table_is_a_continuation() -> None:
    parsed = _parse(
        "<h2>Ducks</h2><p>intro</p><table><thead><tr><th>Name</th><th>Sound</th></tr></thead>"
        "<tbody><tr><td>Mallard</td><td>quack</td></tr><tr><td>Teal</td><td>peep</td></tr>"
        "</tbody></table><p>after</p>"
    )
    text = parsed.text_layer
    heading, table, after = parsed.sections
    assert heading.text_in(text) == "Ducks\n\nintro"
    assert table.table_header is not None
    assert text[table.table_header.start : table.table_header.end] == "Name | Sound"
    assert [text[r.start : r.end] for r in table.table_rows] == ["Mallard | quack", "Teal | peep"]
    assert (table.heading_path, table.parent_id) == (["Ducks"], heading.id)
    assert (after.heading, after.heading_path, after.parent_id) == (None, ["Ducks"], heading.id)
    assert after.text_in(text) == "after"


def test_single_column_table_is_a_table() -> None:
    parsed = _parse(
        "<table><tr><th>Only</th></tr><tr><td>one</td></tr><tr><td>two</td></tr></table>"
    )
    (table,) = parsed.sections
    assert table.kind == "table" and len(table.table_rows) == 2


def test_script_style_template_and_comments_are_skipped() -> None:
    parsed = _parse(
        "<p>a</p><style>p{}</style><script>alert(1)</script><template><p>t</p></template>"
        "<noscript>ns</noscript><!-- hidden --><p>seen</p>"
    )
    assert parsed.text_layer == "a\n\nseen"


def test_pre_keeps_whitespace_and_description_lists_get_lines() -> None:
    parsed = _parse(
        "<pre>fn main() {\n    println!();\n}</pre><dl><dt>Term</dt><dd>Meaning</dd></dl>"
    )
    assert parsed.text_layer == "fn main() {\n    println!();\n}\n\nTerm\nMeaning"


def test_consecutive_headings_nest_and_stay_apart() -> None:
    parsed = _parse("<h1>A</h1><h2>B</h2><h2>C</h2><h3>D</h3><p>x</p>")
    assert [s.heading_path for s in parsed.sections] == [
        ["A"],
        ["A", "B"],
        ["A", "C"],
        ["A", "C", "D"],
    ]


def test_non_ascii_offsets_are_string_indices() -> None:
    parsed = _parse("<p>前言 😀 𝄞</p><h1>見出し 🦆</h1><p>本文</p>")
    text = parsed.text_layer
    assert [s.text_in(text) for s in parsed.sections] == ["前言 😀 𝄞", "見出し 🦆\n\n本文"]
