"""Textile pages are read as python-textile renders them: headings, lists, tables, code."""

from __future__ import annotations

import time

import psutil
import pytest

from agrag_pipeline.parsing import detect_media_type, parse_document
from agrag_pipeline.parsing.errors import ParseTimeoutError
from agrag_pipeline.parsing.textiledoc import _RENDER as _RENDERER
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


def test_the_textile_renderer_is_stopped_at_the_documents_time_budget() -> None:
    # Its regular expressions cannot be interrupted in this process, so it runs in another,
    # which is killed when the budget runs out (here before it has even imported itself).
    started = time.monotonic()
    with pytest.raises(ParseTimeoutError, match=r"^wiki/Widget\.textile: .*python-textile"):
        parse_document(PAGE * 50, "wiki/Widget.textile", time_budget_s=0.05)
    assert time.monotonic() - started < 10
    children = psutil.Process().children(recursive=True)
    left = [p for p in children if p.is_running() and _RENDERER in p.cmdline()]
    assert left == []  # nothing this test started is left running
