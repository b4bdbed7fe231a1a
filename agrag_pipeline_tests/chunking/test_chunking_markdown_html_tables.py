"""An HTML table inside Markdown (as converters and OCR models write them) is a table: its
rows are the section's rows, each embedded as a pipe row with merged cells repeated, and a long
one is cut between rows with its header repeated."""

from __future__ import annotations

from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline_tests.chunking.test_chunking_rules import chunks_of


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_an_html_table_in_markdown_is_a_table_whose_rows_read_under_its_header(
    counter: TokenCounter,
) -> None:
    # As DeepSeek-OCR and MinerU write a table: one line of HTML, cells spanning rows and
    # columns. Every cell was a line of its own and no row was a row.
    table = (
        "<table><tr><th rowspan='2'>Layers</th><th colspan='2'>TEDs</th></tr>"
        "<tr><th>simple</th><th>complex</th></tr>"
        '<tr><td rowspan="2">6</td><td>0.965</td><td>0.934</td></tr>'
        "<tr><td>0.969</td><td><b>0.927</b> &amp; <a href='x.html'>more</a></td></tr>"
        '<tr><td colspan="3">all &lt;best&gt;</td></tr></table>'
    )
    parsed, chunks = chunks_of(f"# Results\n\nTable 1. HPO.\n\n{table}\n\nAfter.\n", counter)
    (section,) = [s for s in parsed.sections if s.table_rows]
    assert len(section.table_rows) == 3 and section.table_header is not None
    (chunk,) = [c for c in chunks if c.content_kind == "table"]
    assert _lines(chunk.contextual_text) == [
        "Results",
        "| Layers | TEDs | TEDs |",
        "| Layers | simple | complex |",
        "| - | - | - |",
        "| 6 | 0.965 | 0.934 |",
        "| 6 | 0.969 | 0.927 & more |",
        "| all <best> | all <best> | all <best> |",
    ]
    # The text layer is the source, as for every Markdown table (the tags at its edges are
    # markup, trimmed off like any chunk's).
    assert chunk.text == table.removeprefix("<table>").removesuffix("</table>")
    assert "<" not in chunk.contextual_text.replace("<best>", "")  # no tag, in a cell either


def test_a_long_html_table_is_cut_between_rows_with_its_header_repeated(
    counter: TokenCounter,
) -> None:
    rows = "\n".join(
        f"  <tr>\n    <td>crate{i}</td>\n    <td>1.{i}.0</td>\n  </tr>" for i in range(80)
    )
    source = (
        "# Deps\n\n<table>\n<thead>\n  <tr><th>Crate</th><th>Version</th></tr>\n</thead>\n"
        f"<tbody>\n{rows}\n</tbody>\n</table>\n"
    )
    _, chunks = chunks_of(source, counter, target_tokens=128, max_tokens=160)
    tables = [c for c in chunks if c.content_kind == "table"]
    assert len(tables) > 2
    seen: list[str] = []
    for chunk in tables:
        lines = _lines(chunk.contextual_text)
        assert lines[:3] == ["Deps", "| Crate | Version |", "| - | - |"]
        assert all(line.startswith("| crate") and line.endswith(" |") for line in lines[3:])
        assert "<" not in chunk.contextual_text
        seen.extend(lines[3:])
    assert seen == [f"| crate{i} | 1.{i}.0 |" for i in range(80)]  # each row once, in order


def test_nested_or_unclosed_html_tables_stay_text(counter: TokenCounter) -> None:
    nested = "<table><tr><td>outer<table><tr><td>inner</td></tr></table></td></tr></table>"
    unclosed = "<table><tr><td>left open</td></tr>"
    for source in (nested, unclosed):
        parsed, chunks = chunks_of(f"# T\n\n{source}\n", counter)
        assert not any(s.table_rows for s in parsed.sections)
        assert "<" not in chunks[-1].contextual_text


def test_a_row_too_long_for_a_chunk_is_cut_without_letting_a_tag_into_the_embedded_text(
    counter: TokenCounter,
) -> None:
    # A cell of a long paragraph: its row is cut at spaces like running text, and a cut can
    # fall among the tags between cells. An entity reference before the table (its
    # replacement found after the table's in the walk) had put them out of order, so none of
    # the table's replacements was found.
    long_cell = "every word of a long description " * 12
    source = (
        "# Terms\n\nSalt &amp; pepper.\n\n<table>\n  <tr><th>Term</th><th>Meaning</th></tr>\n"
        f"  <tr>\n    <td>Spice</td>\n    <td>{long_cell}</td>\n  </tr>\n"
        "  <tr><td>Herb</td><td>leaves &amp; stems</td></tr>\n</table>\n"
    )
    _, chunks = chunks_of(source, counter, target_tokens=40, max_tokens=56, min_tokens=8)
    tables = [c for c in chunks if c.content_kind == "table"]
    assert len(tables) > 2
    for chunk in chunks:
        assert "<t" not in chunk.contextual_text and "</t" not in chunk.contextual_text
    assert "| Herb | leaves & stems |" in tables[-1].contextual_text
