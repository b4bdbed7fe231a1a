"""Manual pages (man(7) and mdoc(7) roff) are read as the page a terminal shows, under their
title and sections; a ``.so`` request never reads another file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect_media_type, parse_document
from agrag_pipeline.parsing.errors import EmptyDocumentError, UnsupportedFormatError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manpage"

#: A page written for these tests: a tagged option, an example, a subsection.
PAGE = rb""".\" A page written for the tests.
.TH WIDGETD 8 "2026-12-04" "widgets 2.0" "System Manager's Manual"
.SH NAME
widgetd \- serve widgets
.SH OPTIONS
.TP
.BR \-p ", " \-\-port " \fIport\fR"
Listen on
.I port
(default 8080).
.SH EXAMPLES
.SS Running in the foreground
.EX
widgetd \-p 9000 \e
    \-\-quiet
.EE
"""


def test_a_man_page_reads_under_its_title_and_sections() -> None:
    parsed = parse_checked((FIXTURES / "python3.11.1").read_bytes(), "share/man/man1/python3.11.1")
    assert parsed.document.media_type == "text/troff"
    headings = [(s.level, s.heading) for s in parsed.sections if s.heading]
    assert headings[:5] == [
        (1, "PYTHON(1)"),
        (2, "NAME"),
        (2, "SYNOPSIS"),
        (2, "DESCRIPTION"),
        (2, "COMMAND LINE OPTIONS"),
    ]
    assert (3, "Debug-mode variables") in headings  # an .SS under ENVIRONMENT VARIABLES
    text = parsed.text_layer
    assert "python - an interpreted, interactive, object-oriented programming language" in text
    assert "-B\nDon't write .pyc files on import." in text  # a tagged paragraph: term, text
    # mandoc's running header and footer (volume, date) are no text of the page.
    assert "General Commands Manual" not in text and text.split("\n")[0] == "PYTHON(1)"


def test_an_mdoc_page_reads_like_a_man_page() -> None:
    parsed = parse_checked((FIXTURES / "scp.1").read_bytes(), "scp.1")
    headings = [(s.level, s.heading) for s in parsed.sections if s.heading]
    assert headings[:4] == [(1, "SCP(1)"), (2, "NAME"), (2, "SYNOPSIS"), (2, "DESCRIPTION")]
    text = parsed.text_layer
    assert "scp — OpenSSH secure file copy" in text
    # The synopsis is one line, not a table of the command's name and its arguments.
    assert "\n\nscp [-346ABCOpqRrsTv] [-c cipher] [-D sftp_server_path]" in text
    assert "|" not in text.split("DESCRIPTION")[0]


def test_a_pages_example_keeps_its_lines_and_its_options_their_text() -> None:
    parsed = parse_checked(PAGE, "widgetd.8")
    assert [(s.level, s.heading) for s in parsed.sections if s.heading] == [
        (1, "WIDGETD(8)"),
        (2, "NAME"),
        (2, "OPTIONS"),
        (2, "EXAMPLES"),
        (3, "Running in the foreground"),
    ]
    text = parsed.text_layer
    assert "-p, --port port\nListen on port (default 8080)." in text
    assert text.rstrip().endswith("widgetd -p 9000 \\\n    --quiet")


def test_a_page_is_told_by_its_section_suffix_and_its_title_request() -> None:
    assert detect_media_type("man/widgetd.8", PAGE) == "text/troff"
    assert detect_media_type("man/perlfunc.3pm", PAGE) == "text/troff"
    assert detect_media_type("notes.man", b"Plain words.\n") == "text/troff"
    # A numbered file that is no roff page is not taken for one.
    assert detect_media_type("results.1", b"Run 1: 0.93 recall\n") is None


def test_a_so_request_never_reads_another_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.1"
    secret.write_text(".TH SECRET 1\n.SH NAME\nsecret \\- the launch codes\n")
    (tmp_path / "man1").mkdir()
    # A page that is only a link to another page: empty, naming the page it links to.
    link = f".so {secret}\n".encode()
    with pytest.raises(EmptyDocumentError, match=r"a link to another manual page .*secret\.1"):
        parse_document(link, str(tmp_path / "man1" / "link.1"))
    # A page that includes another: its own text only.
    page = PAGE + f".so {secret}\n.so secret.1\n".encode()
    text = parse_checked(page, str(tmp_path / "widgetd.8")).text_layer
    assert "launch codes" not in text and "serve widgets" in text


def test_without_mandoc_a_page_is_refused_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no mandoc on it
    with pytest.raises(UnsupportedFormatError, match=r"widgetd\.8: .*needs mandoc.*bin/setup"):
        parse_document(PAGE, "widgetd.8")
