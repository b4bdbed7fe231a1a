"""Org: headlines as headings (TODO keywords and tags gone), readable text without markup,
source blocks and tables kept; ``#+include``/``#+setupfile`` never read; a truncated file reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agrag_pipeline_tests.parsing.parsed_support import parse_checked, table_cells, tables

FIXTURES = Path(__file__).parent.parent / "fixtures" / "org"


def test_org_headlines_are_the_heading_tree_and_markup_is_gone() -> None:
    source = (FIXTURES / "doom_lang_python_README.org").read_text()
    parsed = parse_checked(source.encode(), "modules/lang/python/README.org")
    headlines = re.findall(r"^(\*+) (?:TODO )?(.+?)(?:\s+:\w+:)?$", source, re.MULTILINE)
    expected = [(1, ":lang python")] + [(len(stars) + 1, title) for stars, title in headlines]
    headings = [(s.level, s.heading) for s in parsed.sections if s.heading is not None]
    assert headings == expected  # recall and precision 1, levels under the #+title
    lsp = next(s for s in parsed.sections if s.heading == "Language Server Protocol Support")
    assert lsp.heading_path == [":lang python", "Installation", "Language Server Protocol Support"]
    text = parsed.text_layer
    assert "- Syntax checking (flycheck)" in text
    assert "- +conda: Enable python virtual environment support via Conda." in text
    assert "(set-formatter! 'ruff :modes '(python-mode python-ts-mode)))" in text  # src block
    for markup in ("[[", "]]", "#+begin_src", "#+title", ":unfold:", "TODO ", "~black~"):
        assert markup not in text
    (table,) = tables(parsed)
    cells = table_cells(parsed, table)
    assert cells[0] == ["Binding", "Description"]
    assert cells[1] == ["<localleader> c c", "Compile Cython buffer"]


def test_org_includes_are_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "secret.org").write_text("* Secret\nREAD-FROM-DISK\n")
    monkeypatch.chdir(tmp_path)
    source = b'#+SETUPFILE: secret.org\n* Notes\n#+INCLUDE: "secret.org"\nOwn text.\n'
    parsed = parse_checked(source, str(tmp_path / "notes.org"))
    assert parsed.text_layer == "Notes\n\nOwn text."


def test_truncated_org_file_still_reads() -> None:
    # unstructured's README.org cut inside its source block: the block's lines up to the cut.
    raw = (FIXTURES / "unstructured_README.org").read_bytes()
    cut = raw[: raw.index(b"https://www.sec.gov")]
    parsed = parse_checked(cut, "cut.org")
    assert [s.heading for s in parsed.sections if s.heading] == ["Example Docs", "XBRL 10-K"]
    assert parsed.text_layer.endswith("curl -O \\\n  -A '${organization} ${email}'")


def test_source_blocks_and_fixed_width_lines_keep_their_indentation() -> None:
    source = (
        b"* Usage\n"
        b"Run it:\n"
        b"#+begin_src python\n"
        b"  def run(x):\n"
        b"      return x\n"
        b"#+end_src\n"
        b"Or by hand:\n"
        b": $ run \\\n"
        b":     --quiet\n"
        b"Done.[fn:1]\n"
        b"#+begin_export html\n"
        b"<p class='note'>Shown in the browser.</p>\n"
        b"#+end_export\n"
        b"[fn:1] On two cores.\n"
    )
    text = parse_checked(source, "usage.org").text_layer
    assert text == (
        "Usage\n\nRun it:\n\ndef run(x):\n    return x\n\n"
        "Or by hand:\n\n$ run \\\n    --quiet\n\nDone.[1]\n\nShown in the browser.\n\n"
        "[1] On two cores."
    )
