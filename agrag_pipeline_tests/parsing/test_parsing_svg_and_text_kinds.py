"""SVG drawings read as their words, and the text files of a real folder that have no format
of their own (logs, calendars, address cards, configuration, patches, R Markdown) read, not
skipped."""

from __future__ import annotations

from pathlib import Path

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.detect import detect_media_type
from agrag_pipeline.sources import scan_raw_root

SVG = Path(__file__).resolve().parents[1] / "fixtures" / "svg"


def test_an_svg_diagram_reads_as_its_labels_not_its_geometry() -> None:
    parsed = parse_document((SVG / "trpl17-03.svg").read_bytes(), "book/trpl17-03.svg")
    assert parsed.document.media_type == "image/svg+xml"
    lines = parsed.text_layer.splitlines()
    assert lines[:2] == ["Task A", "Task B"]  # the clusters' labels, in document order
    assert {"A1", "A2", "A3", "B1", "B2", "B3", "B4"} <= set(lines)
    # Neither geometry nor Graphviz's tooltips (the clusters' ids) are text.
    assert "cluster_ColleagueB" not in parsed.text_layer
    assert "polygon" not in parsed.text_layer and "points" not in parsed.text_layer


def test_an_svg_without_words_is_a_document_with_a_note_not_a_failure() -> None:
    parsed = parse_document((SVG / "rust-logo.svg").read_bytes(), "static/rust-logo.svg")
    assert parsed.text_layer == "" and parsed.sections == []
    assert parsed.warnings and parsed.warnings[0].startswith("no text:")


def test_an_svg_title_heads_it_and_a_switch_is_read_once() -> None:
    # draw.io writes a label twice under <switch>: as HTML, then a plain fallback.
    raw = (
        b'<svg xmlns="http://www.w3.org/2000/svg"><title>Order flow</title>'
        b"<desc>How an order moves.</desc><g><title>cell-7</title>"
        b'<switch><foreignObject><div xmlns="http://www.w3.org/1999/xhtml"><div>Payment '
        b"service</div></div></foreignObject><text>Payment service</text></switch>"
        b'<text x="1" y="2">Stock <tspan x="1" dy="1.2em">reserved</tspan></text></g></svg>'
    )
    parsed = parse_document(raw, "flow.svg")
    lines = ["Order flow", "", "How an order moves.", "Payment service", "Stock", "reserved"]
    assert parsed.text_layer == "\n".join(lines)
    assert parsed.sections[0].heading == "Order flow"


def test_text_files_without_a_format_of_their_own_are_read_not_skipped(tmp_path: Path) -> None:
    files = {
        "logs/deploy.log": "2026-11-02 09:00:01 INFO deploy started\n",
        "calendar/board.ics": "BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:Board meeting\nEND:VEVENT\n",
        "people/ann.vcf": "BEGIN:VCARD\nFN:Ann Lee\nTITLE:Treasurer\nEND:VCARD\n",
        "config/app.ini": "[database]\nhost = db.internal\n",
        "config/server.conf": "listen 8080\n",
        "config/app.properties": "greeting=Hello\n",
        "fixes/retry.patch": "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n",
        "analysis/report.Rmd": "# Results\n\nThe model fits.\n",
        "analysis/slides.qmd": "# Findings\n\nCosts fell.\n",
        "web/page.shtml": "<html><body><h1>Intranet</h1><p>Welcome.</p></body></html>\n",
    }
    raw = tmp_path / "raw"
    for name, text in files.items():
        (raw / name).parent.mkdir(parents=True, exist_ok=True)
        (raw / name).write_text(text, encoding="utf-8")
    scan = scan_raw_root(raw)
    assert sorted(scan.keys) == sorted(files)
    assert not scan.skipped
    types = {name: detect_media_type(name, text.encode()) for name, text in files.items()}
    assert types["logs/deploy.log"] == "text/plain"
    assert types["calendar/board.ics"] == "text/plain"
    assert types["config/app.ini"] == "text/x-ini"
    assert types["fixes/retry.patch"] == "text/x-diff"
    assert types["analysis/report.Rmd"] == "text/markdown"
    assert types["web/page.shtml"] == "text/html"
    card = parse_document(files["people/ann.vcf"].encode(), "people/ann.vcf")
    assert "FN:Ann Lee" in card.text_layer
    rmd = parse_document(files["analysis/report.Rmd"].encode(), "analysis/report.Rmd")
    assert rmd.sections[0].heading == "Results"
