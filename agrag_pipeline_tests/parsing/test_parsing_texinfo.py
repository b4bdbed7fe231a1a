"""Texinfo sources (GNU manuals) are read as their HTML manual reads: sections as headings,
definitions, tables, examples and footnotes; menus, index entries and TeX-only text left out;
``@include`` never followed."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from agrag_pipeline.parsing import detect_media_type
from agrag_pipeline_tests.parsing.parsed_support import parse_checked
from benchmarks.fidelity import words

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_texinfo_manual_reads_with_the_words_and_headings_of_its_pdf() -> None:
    source = parse_checked((FIXTURES / "texinfo_manual.texi").read_bytes(), "texinfo_manual.texi")
    pdf = parse_checked((FIXTURES / "texinfo_manual.pdf").read_bytes(), "texinfo_manual.pdf")
    assert source.document.media_type == "application/x-texinfo"
    assert [(s.level, s.heading) for s in source.sections if s.heading] == [
        (1, "Widget Handbook"),
        (2, "Overview"),
        (3, "Widgets"),
        (3, "Gadgets"),
        (2, "Configuration"),
    ]
    numbered = [s.heading for s in pdf.sections if s.heading]
    assert [re.sub(r"^[\d.]+ ", "", h) for h in numbered] == [
        s.heading for s in source.sections if s.heading
    ]
    # Every word of the source's reading is on the PDF's pages; what only the PDF has is its
    # section and page numbers and its table of contents.
    ours, theirs = Counter(words(source.text_layer)), Counter(words(pdf.text_layer))
    assert not ours - theirs
    toc = {"table", "of", "contents", "overview", "widgets", "gadgets", "configuration"}
    assert all(w.isdigit() or w in toc for w in theirs - ours)


def test_definitions_and_table_items_read_as_the_manual_shows_them() -> None:
    text = parse_checked(
        (FIXTURES / "texinfo_reference.texi").read_bytes(), "texinfo_reference.texi"
    ).text_layer
    assert "Function: size_t widget_count (void)\n\nReturns the number of widgets" in text
    assert "Function: struct widget * widget_find (const char *name)" in text
    assert "--verbose\n\nPrint each widget as it is counted." in text
    for left_out in ("@", "Top", "* Counting::", "texinfo_reference.info"):
        assert left_out not in text, left_out


def test_inline_commands_values_cross_references_and_conditionals(tmp_path: Path) -> None:
    secret = tmp_path / "secret.texi"
    secret.write_text("The launch codes.\n")
    source = f"""\\input texinfo
@settitle Widget Notes
@set VERSION 2.1
@include {secret}

@node Setup
@chapter Setting Up

Version @value{{VERSION}} needs @code{{widgetd}}; see @ref{{Ports}}.@footnote{{Or run
it by hand.}}

@iftex
Only in print.
@end iftex
@ifnottex
Only on screen.
@end ifnottex
@cindex ports

@enumerate
@item Unpack.
@item Start.
@end enumerate

@multitable @columnfractions .5 .5
@headitem Service @tab Port
@item widgetd @tab 8080
@end multitable

@example
widgetd --port 8080 \\
    --quiet @c a comment
@end example

@node Ports
@section Choosing the Ports
R@'esum@'e: @email{{ops@@example.org, the operators}} @dots{{}}
@bye
Never read.
"""
    parsed = parse_checked(source.encode(), "notes.texi")
    text = parsed.text_layer
    assert [s.heading for s in parsed.sections if s.heading] == [
        "Widget Notes",
        "Setting Up",
        "Choosing the Ports",
    ]
    assert "Version 2.1 needs widgetd; see Choosing the Ports. (Or run it by hand.)" in text
    assert "Only on screen." in text and "Only in print." not in text
    assert "1. Unpack.\n2. Start." in text
    assert "| Service | Port |\n| - | - |\n| widgetd | 8080 |" in text
    assert "widgetd --port 8080 \\\n    --quiet" in text
    assert "Résumé: the operators ..." in text
    for left_out in ("launch codes", "Never read", "ports\n", "@", "cindex"):
        assert left_out not in text, left_out
    assert detect_media_type("manual.texinfo", b"\\input texinfo\n") == "application/x-texinfo"
