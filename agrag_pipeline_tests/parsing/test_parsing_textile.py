"""Textile pages are read as python-textile renders them: headings, lists, tables, code."""

from __future__ import annotations

from agrag_pipeline.parsing import detect_media_type
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

#: A Redmine-style wiki page written for these tests.
PAGE = b"""h1. Widget server

Widgets are *small* servers for _teams_, see "the site":https://example.org.

h2. Install

# Download the package
# Run @widgetd --check@

bc. widgetd --port 8080 \\
    --quiet

h2. Ports

|_. Service |_. Port |
| widgetd | 8080 |
"""


def test_a_textile_page_reads_under_its_headings_with_lists_code_and_tables() -> None:
    parsed = parse_checked(PAGE, "wiki/Widget.textile")
    assert parsed.document.media_type == "text/x-textile"
    assert [(s.level, s.heading) for s in parsed.sections if s.heading] == [
        (1, "Widget server"),
        (2, "Install"),
        (2, "Ports"),
    ]
    text = parsed.text_layer
    assert "Widgets are small servers for teams, see the site." in text
    assert "1. Download the package\n2. Run widgetd --check" in text
    assert "widgetd --port 8080 \\\n    --quiet" in text  # a code block keeps its lines
    assert "Service | Port\nwidgetd | 8080" in text
    assert "h1." not in text and "|_." not in text


def test_textile_files_are_textile() -> None:
    assert detect_media_type("Widget.textile", PAGE) == "text/x-textile"
