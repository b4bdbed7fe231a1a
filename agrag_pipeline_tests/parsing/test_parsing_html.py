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


def test_merged_cells_repeat_in_every_cell_they_span_so_rows_stay_under_their_headers() -> None:
    # A cell spanning two rows took no column of the row below it, which then stood shifted
    # under the wrong headers ("Ostrich | 3.0" under "Bird | Region"); a heading spanning two
    # columns left the third without one.
    parsed = _parse(
        "<table><tr><th>Bird</th><th colspan='2'>Size (length, weight)</th></tr>"
        "<tr><td rowspan='2'>Ostrich</td><td>2.7 m</td><td>104 kg</td></tr>"
        "<tr><td colspan='2'>the largest living bird</td></tr>"
        "<tr><td>Wren</td><td>10 cm</td><td>9 g</td></tr></table>"
    )
    (table,) = parsed.sections
    text = parsed.text_layer
    assert table.table_header is not None
    header = text[table.table_header.start : table.table_header.end]
    assert header == "Bird | Size (length, weight) | Size (length, weight)"
    assert [text[r.start : r.end] for r in table.table_rows] == [
        "Ostrich | 2.7 m | 104 kg",
        "Ostrich | the largest living bird | the largest living bird",
        "Wren | 10 cm | 9 g",
    ]


def test_a_pivot_tables_group_row_is_not_a_row_of_its_own() -> None:
    # "2025" and "Q1" alone in a row, spanning the months below: each month's row repeats
    # them, so the group row adds no text and is left out.
    parsed = _parse(
        "<table><tr><th>Year</th><th>Quarter</th><th>Month</th><th>Revenue</th></tr>"
        "<tr><th rowspan='4'>2025</th><th rowspan='3'>Q1</th></tr>"
        "<tr><td>January</td><td>$134</td></tr><tr><td>February</td><td>$150</td></tr>"
        "<tr><th>Q2</th><td>April</td><td>$210</td></tr></table>"
    )
    (table,) = parsed.sections
    text = parsed.text_layer
    assert [text[r.start : r.end] for r in table.table_rows] == [
        "2025 | Q1 | January | $134",
        "2025 | Q1 | February | $150",
        "2025 | Q2 | April | $210",
    ]


def test_a_table_of_huge_spans_is_read_within_bounds() -> None:
    # Spans are capped (1,000) and so are the copies one table fills in (100,000): ten cells
    # each spanning 1,000 rows and columns are not ten million cells.
    cells = "".join("<td rowspan='1000' colspan='1000'>x</td>" for _ in range(10))
    parsed = _parse(f"<table><tr>{cells}</tr>" + "<tr><td>y</td></tr>" * 200 + "</table>")
    assert len(parsed.text_layer) < 2_000_000
    assert parsed.text_layer.count("y") == 200


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


def test_a_table_of_one_cell_is_a_frame_whose_lists_and_tables_read_as_the_pages() -> None:
    # A boxed note or a page laid out in a one-cell table: as a table, all it held was one
    # cell on one line ("one two Para A B 1 2").
    parsed = _parse(
        "<h1>Notes</h1><table><tr><td><ul><li>one</li><li>two</li></ul><p>Para</p>"
        "<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>"
        "</td></tr></table><p>after</p>"
    )
    assert parsed.text_layer == "Notes\n\n- one\n- two\n\nPara\n\nA | B\n1 | 2\n\nafter"
    (table,) = [s for s in parsed.sections if s.kind == "table"]
    assert table.table_header is not None


def test_a_spacer_of_no_break_spaces_is_space_not_a_block_or_a_cell() -> None:
    parsed = _parse(
        "<html><body><p>First.</p><p>&nbsp;</p><p style='margin:0'>&#160;&#160;</p>"
        "<p>Second&nbsp;one, <a href='a'>ISBN</a>&nbsp;<a href='b'>978-0</a>.</p>"
        "<table><tr><th>Item</th><th>&nbsp;</th><th>2025</th></tr>"
        "<tr><td>Cash</td><td>&nbsp;</td><td>1,121</td></tr></table><pre>a\n&nbsp;\nb</pre>"
        "</body></html>"
    )
    assert parsed.text_layer == (
        "First.\n\nSecond\xa0one, ISBN 978-0.\n\nItem | 2025\nCash | 1,121\n\na\n\xa0\nb"
    )
    assert contract_violations(parsed) == []


def test_a_spacer_column_blank_in_every_row_is_no_column() -> None:
    # As every EDGAR filing and Word's HTML set their financial tables: a narrow empty cell
    # between a label and its "$", and between two years; each was written as "|  |".
    parsed = _parse(
        "<html><body><table>"
        "<tr><td></td><td></td><th colspan='2'>2025</th><td></td><th colspan='2'>2024</th></tr>"
        "<tr><td>Cash</td><td>&nbsp;</td><td>$</td><td>1,121</td><td> </td><td>$</td>"
        "<td>987</td></tr>"
        "<tr><td>Total assets</td><td></td><td>$</td><td>241,787,868</td><td></td><td>$</td>"
        "<td>233,231,190</td></tr></table></body></html>"
    )
    assert parsed.text_layer == (
        " | 2025 | 2025 | 2024 | 2024\n"
        "Cash | $ | 1,121 | $ | 987\n"
        "Total assets | $ | 241,787,868 | $ | 233,231,190"
    )
    assert contract_violations(parsed) == []


def test_a_list_item_that_shows_nothing_before_its_sublist_gets_no_marker() -> None:
    """An item holding only a sublist, an icon-only share link or a spacer wrote a line of a
    bare "-" (docling writes none); an ordered list keeps the numbers the page shows."""
    page = (
        "<ul><li>Europe<ul><li>Switzerland</li><li><ul><li>Bern</li><li>Aargau</li></ul></li>"
        '</ul></li><li><a href="/share"><svg><path d="M0"/></svg></a></li><li>&nbsp;</li></ul>'
        '<ol><li>One</li><li><img src="two.png"></li><li>Three</li></ol>'
    )
    assert parse_document(page.encode(), "lists.html").text_layer == (
        "- Europe\n\n- Switzerland\n\n- Bern\n- Aargau\n\n1. One\n3. Three"
    )
    # An item whose only block is navigation, left out when it closes, takes its marker along.
    navigation_item = (
        "<h1>Ducks</h1><p>They paddle.</p><ul><li><div><a href='b.html' rel='next'>Next</a> "
        "<a href='a.html' rel='prev'>Previous</a></div></li><li>Mallard</li></ul>"
    )
    assert parse_document(navigation_item.encode(), "nav.html").text_layer == (
        "Ducks\n\nThey paddle.\n\n- Mallard"
    )
