"""Web pages saved with a browser's "Save as PDF" (Chrome's Skia backend): no outline, the
browser's running header and footer on every page, list bullets drawn as dots, headings in a
code face, line breaks only at spaces and hyphens. The fixtures are pages written for these
tests and printed by Chromium with its defaults (``fixtures/README.md``); the fourth labelled
retrieval set (``data/eval/pdf-manuals-printed``) is two real manuals printed the same way.
Each test names a defect the first parse of that set had."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "browser_print"
PRINTED_SET = Path(__file__).resolve().parents[2] / "data" / "eval" / "pdf-manuals-printed"
HANDBOOK = "monitoring_handbook"  # four pages
#: What Chrome prints in its header and footer: the date and time, the page's address, "2/4".
PRINTED_AT = re.compile(r"\d{1,2}/\d{1,2}/\d{2}, \d{1,2}:\d{2}\s*[AP]M")


@functools.cache
def _parsed(path: Path) -> ParsedDocument:
    parsed = parse_document(path.read_bytes(), f"pdf/{path.name}")
    assert contract_violations(parsed) == []
    return parsed


def _page_html(name: str) -> str:
    return (FIXTURES / f"{name}.html").read_text(encoding="utf-8")


def test_a_browsers_header_and_footer_are_left_out_of_every_page() -> None:
    # The header (date, time, title) sits half a line above the page's text in smaller type:
    # too close to be taken as set apart, it runs on every page.
    text = _parsed(FIXTURES / f"{HANDBOOK}.pdf").text_layer
    assert PRINTED_AT.search(text) is None
    assert "file://" not in text
    assert re.search(r"\b[1-4]/4\b", text) is None
    assert text.count("Monitoring handbook") == 1  # the page's own title, not the header's


def test_a_one_page_print_loses_its_header_and_footer_too() -> None:
    # Nothing repeats on one page: the footer is known by its "1/1", the header by the date
    # and time a browser prints.
    parsed = _parsed(FIXTURES / "one_page_note.pdf")
    assert parsed.text_layer.startswith("Release note 4.2\n\n")
    assert parsed.text_layer.rstrip().endswith("refused with a clear error.")
    assert "file://" not in parsed.text_layer and PRINTED_AT.search(parsed.text_layer) is None


def test_list_bullets_drawn_as_dots_are_read_as_bullets() -> None:
    # Chrome draws each item's disc, ring or square as a path, no glyph.
    text = _parsed(FIXTURES / f"{HANDBOOK}.pdf").text_layer
    items = _page_html(HANDBOOK).count("<li>")
    bulleted = [line for line in text.splitlines() if line.startswith("\u2022 ")]
    assert len(bulleted) == items == 36
    assert "\u2022 Even for a one-line change." in bulleted  # a third-level square
    # A sublist, indented under its item, goes on in the list: no paragraph break.
    assert "in the on-call log.\n\u2022 Link the pull request or the ticket.\n" in text


def test_headings_set_in_a_code_face_are_headings() -> None:
    # ``<h2><code>check_retention()</code></h2>``: larger than the body, standing alone, so
    # no line of code.
    parsed = _parsed(FIXTURES / f"{HANDBOOK}.pdf")
    headings = [s.heading for s in parsed.sections if s.heading]
    for topic in ("retention", "federation", "alerting", "service_discovery"):
        assert f"check_{topic}()" in headings
    section = next(s for s in parsed.sections if s.heading == "check_alerting()")
    assert "returns the services whose alerting" in parsed.text_layer[section.start : section.end]


def test_a_bold_phrase_that_wraps_onto_a_bold_line_stays_in_its_paragraph() -> None:
    # "... which **long-standing, well-known conventions the" / "team follows ... first**" /
    # "dashboards are drawn**.": the bold phrase begins inside a line of plain text.
    text = _parsed(FIXTURES / f"{HANDBOOK}.pdf").text_layer
    paragraph = next(p for p in text.split("\n\n") if "long-standing" in p)
    assert paragraph.startswith("This page was written for the parser's tests.")
    assert paragraph.endswith("Everything else is in the runbooks.")


def test_a_hyphen_at_a_browsers_line_end_is_the_words_own() -> None:
    # A browser breaks lines at spaces and after hyphens, and does not hyphenate: "right-" at
    # a line end and "hand" on the next are "right-hand", and "--storage.tsdb." + ... one flag.
    text = _parsed(FIXTURES / f"{HANDBOOK}.pdf").text_layer
    visible = re.sub(r"<[^>]+>", " ", _page_html(HANDBOOK).split("<body>", 1)[1])
    compounds = set(re.findall(r"\w+(?:-\w+)+", visible))
    assert {"right-hand", "left-hand", "day-to-day", "post-incident", "one-line"} <= compounds
    assert {c for c in compounds if c not in text} == set()
    assert text.count("--storage.tsdb.retention.time=15d") == 6
    for joined in ("righthand", "lefthand", "daytoday", "postincident", "crossteam"):
        assert joined not in text


def test_the_printed_manuals_read_as_their_html() -> None:
    # The set's two manuals: the Prometheus function reference's headings (``## `rate()` ``)
    # and the handbook's lists, which the first parse lost, and no header left in a sentence.
    prometheus = _parsed(PRINTED_SET / "prometheus.pdf")
    headings = {s.heading for s in prometheus.sections}
    assert {"rate()", "irate()", "histogram_quantile()", "label_replace()"} <= headings
    handbook = _parsed(PRINTED_SET / "handbook.pdf").text_layer
    assert handbook.count("\n\u2022 ") >= 290  # 297 list items in the pages' Markdown
    for text in (prometheus.text_layer, handbook):
        assert PRINTED_AT.search(text) is None and "file://" not in text


def test_a_code_listing_keeps_its_indentation() -> None:
    # A PDF draws indentation as a position: YAML (Prometheus's, printed by Chrome) and a shell
    # loop (grep's texinfo manual) read flush left, their nesting lost.
    prometheus = _parsed(PRINTED_SET / "prometheus.pdf").text_layer
    assert "global:\n  scrape_interval: 15s # By default" in prometheus
    assert "    static_configs:\n      - targets: ['localhost:9090']" in prometheus
    grep = _parsed(PRINTED_SET.parent / "pdf-manuals" / "grep.pdf").text_layer
    assert "while grep -m 1 'PATTERN'\ndo\n  echo xxxx\ndone < FILE" in grep
