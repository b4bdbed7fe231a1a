"""reStructuredText: section titles as headings, readable text without markup, Sphinx roles as
their text; nothing outside the file is ever read (``include``), hostile nesting is an error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rst"
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>_:.])\1{2,}\s*$")


def _source_headings(source: str) -> list[str]:
    """Section titles read from the source: a line underlined by a run of one punctuation."""
    lines = source.splitlines()
    return [
        lines[i - 1].strip()
        for i in range(1, len(lines))
        if _UNDERLINE.match(lines[i])
        and lines[i - 1].strip()
        and not _UNDERLINE.match(lines[i - 1])
    ]


def test_rst_section_titles_are_the_headings_and_markup_is_gone() -> None:
    source = (FIXTURES / "click_quickstart.rst").read_text()
    parsed = parse_checked(source.encode(), "docs/quickstart.rst")
    headings = [s.heading for s in parsed.sections if s.heading is not None]
    expected = _source_headings(source)
    assert len(expected) == 9
    assert headings == expected  # recall and precision 1, in order
    levels = {s.heading: s.level for s in parsed.sections if s.heading is not None}
    assert levels["Quickstart"] == 1 and levels["Echoing"] == 2
    text = parsed.text_layer
    assert (
        "A function becomes a Click command line tool by decorating it through click.command."
        in text
    )
    assert "what this means is that the echo function applies some error correction" in text.lower()
    for markup in ("``", ":func:", ":class:", ".. _", ".. currentmodule", "::\n"):
        assert markup not in text
    assert "if __name__ == '__main__':\n    hello()" in text  # a literal block keeps its lines
    # Click's own ".. click:example::" directive: its code is kept as a literal block.
    assert "@click.command()\ndef hello():\n    click.echo('Hello World!')" in text


def test_include_directive_never_reads_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # unstructured's example: a README whose first line includes a file it must not import.
    raw = (FIXTURES / "unstructured_README-w-include.rst").read_bytes()
    assert raw.startswith(b".. include:: file_we_dont_want_imported")
    (tmp_path / "file_we_dont_want_imported").write_text("SECRET-FROM-DISK\n")
    monkeypatch.chdir(tmp_path)
    parsed = parse_checked(raw, str(tmp_path / "README-w-include.rst"))
    assert "SECRET-FROM-DISK" not in parsed.text_layer
    # A list item's paragraph stays on its marker's line (docutils writes <li><p>…</p></li>).
    assert "- example-10k.html - A 10-K SEC filing in HTML format" in parsed.text_layer
    assert [s.heading for s in parsed.sections if s.heading] == ["Example Docs", "XBRL 10-K"]


def test_deeply_nested_rst_is_a_clear_error() -> None:
    source = "".join("  " * i + f"- item {i}\n\n" for i in range(600))
    with pytest.raises(CorruptDocumentError, match=r"^deep\.rst: .*nested too deeply"):
        parse_document(source.encode(), "deep.rst")


def test_sphinx_directives_never_read_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret.py").write_text("READ-FROM-DISK = 1\n")
    monkeypatch.chdir(tmp_path)
    source = (
        b"Guide\n=====\n\n.. toctree::\n   :maxdepth: 2\n\n   install\n\n"
        b".. automodule:: secret\n   :members:\n\n.. literalinclude:: secret.py\n\n"
        b".. versionadded:: 2.0\n   The *guide* exists.\n\nBody text.\n"
    )
    parsed = parse_checked(source, str(tmp_path / "guide.rst"))
    assert parsed.text_layer == "Guide\n\n2.0 The guide exists.\n\nBody text."
