"""Typst documents are read as the Typst compiler shows them (HTML export, then our HTML
reader): headings, code, tables, formulas, notes; layout elements keep their text; a missing
image or include is a blank stand-in named in a warning; no outside file, no network."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect_media_type, parse_document
from agrag_pipeline.parsing.errors import CorruptDocumentError, ParseTimeoutError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

#: A document written for these tests in the shape of a real report.
REPORT = b"""#set document(title: "Widget Report")
#let version = "2.1"

= Installing
Widgets are *small* servers for _teams_; this is version #version.

```python
def run(x):
    return x  # kept
```

== Options
#table(columns: 2, [*Flag*], [*Meaning*], [`-p`], [the port])

The cost is $a^2 + b^2$ per widget#footnote[Measured on two cores.].

#for name in ("alpha", "beta") [- #name release]
"""


def test_a_typst_document_reads_as_its_compiler_shows_it() -> None:
    parsed = parse_checked(REPORT, "reports/widgets.typ")
    assert parsed.document.media_type == "text/x-typst"
    assert [(s.level, s.heading) for s in parsed.sections if s.heading] == [
        (1, "Widget Report"),
        (2, "Installing"),
        (3, "Options"),
    ]
    text = parsed.text_layer
    assert "Widgets are small servers for teams; this is version 2.1." in text  # code ran
    assert "def run(x):\n    return x  # kept" in text  # a code block keeps its lines
    assert "Flag | Meaning\n-p | the port" in text
    assert "a^{2}+b^{2}" in text  # a formula as linear LaTeX, its letters plain letters
    assert "1. Measured on two cores." in text  # the footnote, as an endnote
    assert "- alpha release\n- beta release" in text  # a loop's output
    assert "#set" not in text and "#let" not in text


def test_layout_elements_keep_the_text_they_hold() -> None:
    source = b"""#align(center)[*A Title Page*]
#grid(columns: 2, [Ada Example], [Bo Sample])
#stack(dir: ttb, [Stacked line], 4pt, [Another])
#place(bottom)[Placed note]
#rect[Boxed remark]
= Body
Text.
"""
    text = parse_checked(source, "title.typ").text_layer
    for shown in ("A Title Page", "Ada Example", "Bo Sample", "Stacked line", "Another"):
        assert shown in text, shown
    assert "Placed note" in text and "Boxed remark" in text


def test_a_missing_image_or_include_is_a_blank_stand_in_named_in_a_warning() -> None:
    source = b"""= Results
#figure(image("plots/speed.png"), caption: [Speed per core.])
#include "appendix.typ"
After the figure.
"""
    parsed = parse_checked(source, "paper/main.typ")
    assert "Figure\xa01: Speed per core." in parsed.text_layer  # Typst's no-break space
    assert "After the figure." in parsed.text_layer
    (warning,) = [w for w in parsed.warnings if "stand-ins" in w]
    assert warning.endswith("plots/speed.png, appendix.typ")


def test_typst_reads_no_outside_file_and_downloads_no_package(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch codes")
    source = f'= Notes\n#read("{secret}")\n#read("../secret.txt")\n'.encode()
    with pytest.raises(CorruptDocumentError, match=r"notes\.typ: the Typst compiler could not"):
        parse_document(source, str(tmp_path / "notes.typ"))
    started = time.monotonic()
    source = b'#import "@preview/cetz:0.3.4": canvas\n= Drawing\nText.\n'
    with pytest.raises(CorruptDocumentError, match=r"imports @preview/cetz-0\.3\.4, which is"):
        parse_document(source, "drawing.typ")
    assert time.monotonic() - started < 30  # refused offline, not after a download attempt


@pytest.mark.timeout(120)
def test_a_typst_document_that_computes_for_ever_stops_at_the_time_budget() -> None:
    # Ten billion steps (Typst refuses a ``while`` that looks endless, not nested ranges).
    source = b"= Loop\n#for i in range(100000) { for j in range(100000) { } }\n"
    started = time.monotonic()
    with pytest.raises(ParseTimeoutError, match=r"^loop\.typ: the Typst compiler did not finish"):
        parse_document(source, "loop.typ", time_budget_s=3)
    assert time.monotonic() - started < 20


def test_typ_files_are_typst() -> None:
    assert detect_media_type("report.typ", REPORT) == "text/x-typst"
