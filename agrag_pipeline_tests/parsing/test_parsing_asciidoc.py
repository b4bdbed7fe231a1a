"""AsciiDoc: section titles as headings (not inside literal blocks), attribute references and
link macros read as their text, literal blocks kept; ``include::`` never read; a truncated file
reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import lightmarkup
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).parent.parent / "fixtures" / "asciidoc"
#: The section titles of asciidoctor's mdbasics.adoc, read from its source (lines 2, 18, 34, 99,
#: 121, 198, 265, 287); "### Header 3" on line 66 sits in a literal block and is no title.
TITLES = [
    (1, "Markdown: Basics"),
    (2, "Getting the Gist of Markdown's Formatting Syntax"),
    (3, "Paragraphs, Headers, Blockquotes"),
    (3, "Phrase Emphasis"),
    (3, "Lists"),
    (3, "Links"),
    (3, "Images"),
    (3, "Code"),
]


def test_asciidoc_titles_are_headings_and_markup_is_gone() -> None:
    raw = (FIXTURES / "asciidoctor_mdbasics.adoc").read_bytes()
    parsed = parse_checked(raw, "mdbasics.adoc")
    assert parsed.document.media_type == lightmarkup.ASCIIDOC_MEDIA_TYPE
    assert [(s.level, s.heading) for s in parsed.sections if s.heading is not None] == TITLES
    text = parsed.text_layer
    # "{s}[syntax page]" with ":s: link:/projects/markdown/syntax" reads as its link text.
    assert "The syntax page provides complete, detailed documentation for every feature" in text
    assert "Markdown offers two styles of headers: Setext and atx." in text
    # A literal block keeps its lines, its empty lines included, as written.
    assert "### Header 3\n\n> This is a blockquote.\n>\n> This is the second" in text
    for markup in ("{s}", "link:", ":src:", "[listing]", "....", "++++", "// converted"):
        assert markup not in text


def test_asciidoc_include_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "secret.adoc").write_text("== Secret\nREAD-FROM-DISK\n")
    monkeypatch.chdir(tmp_path)
    source = b"= Guide\n\ninclude::secret.adoc[]\n\n== Setup\nOwn *text*.\n"
    parsed = parse_checked(source, str(tmp_path / "guide.adoc"))
    assert parsed.text_layer == "Guide\n\nSetup\n\nOwn text."


def test_truncated_asciidoc_still_reads() -> None:
    raw = (FIXTURES / "asciidoctor_mdbasics.adoc").read_bytes()
    cut = raw[: raw.index(b"The quick brown fox")]  # inside a literal block never closed
    parsed = parse_checked(cut, "cut.adoc")
    assert [h for _, h in TITLES[:3]] == [s.heading for s in parsed.sections if s.heading]
    assert parsed.text_layer.endswith("regular paragraph.")


def test_an_asciidoc_table_with_one_cell_per_line_and_cell_styles_keeps_its_rows() -> None:
    # Asciidoctor's API options page: [cols="~,~,15%,15%"], a header line of four cells, then
    # one cell per line, some styled ("a|"), one spanning several lines with a comment line.
    raw = (FIXTURES / "asciidoctor_api_options.adoc").read_bytes()
    text = parse_checked(raw, "options.adoc").text_layer
    assert "| Name | Description | Default value | Allowed values |" in text
    assert (
        "| :backend | Selects converter to use. | html5 | html5, docbook5, manpage, or a backend"
        " mapped to an available converter |" in text
    )
    assert "| not set | Document attributes in the following formats:" in text  # the a| cell
    assert "//NOTE" not in text  # a comment line inside a cell is no text


def test_asciidoc_cells_span_columns_and_rows_and_repeat() -> None:
    raw = (
        b'= T\n\n[cols="3*",options="header"]\n|===\n|Name|Kind|Note\n|alpha\n|one\n|first\n'
        b"2+|spans two|x\n.2+|tall|a|b\n|c|d\n3*|rep\n|===\n"
    )
    lines = parse_checked(raw, "t.adoc").text_layer.splitlines()
    assert lines[2:9] == [
        "| Name | Kind | Note |",
        "| - | - | - |",
        "| alpha | one | first |",
        "| spans two |  | x |",
        "| tall | a | b |",
        "|  | c | d |",
        "| rep | rep | rep |",
    ]


def test_listings_and_literal_paragraphs_keep_their_indentation() -> None:
    source = (
        b"= Usage\n\n"
        b"Run it:\n\n"
        b"----\n"
        b"def run(x):\n"
        b"    return x\n"
        b"----\n\n"
        b"Or by hand:\n\n"
        b"  $ run \\\n"
        b"      --quiet\n\n"
        b"* an item\n"
        b"  continued on an indented line\n"
    )
    text = parse_checked(source, "usage.adoc").text_layer
    assert text == (
        "Usage\n\nRun it:\n\ndef run(x):\n    return x\n\n"
        "Or by hand:\n\n$ run \\\n    --quiet\n\n"
        "- an item continued on an indented line"
    )


def test_ordered_items_are_numbered_per_level_and_formulas_keep_their_source() -> None:
    source = (
        b"= Steps\n\n"
        b". Unpack\n"
        b". Configure\n"
        b".. Set the port\n"
        b".. Set the user\n"
        b". Start\n\n"
        b"Then the check:\n\n"
        b". Ping it\n\n"
        b"The load is latexmath:[\\rho = \\lambda / \\mu \\in [0,1\\]] at most.\n"
    )
    text = parse_checked(source, "steps.adoc").text_layer
    assert "1. Unpack\n2. Configure\n1. Set the port\n2. Set the user\n3. Start" in text
    assert "Then the check:\n\n1. Ping it" in text  # a new list counts from 1
    assert "The load is \\rho = \\lambda / \\mu \\in [0,1] at most." in text
    assert "latexmath" not in text
