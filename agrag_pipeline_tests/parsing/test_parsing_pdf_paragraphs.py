"""Paragraphs and definition lines of typeset manuals (issue 24): texinfo and many LaTeX classes
part paragraphs by a small extra space (``\\parskip``, a third of a line) or a first-line indent
only, and set an API's definition lines apart in a larger type. Read from real pdfTeX output
(``fixtures/texinfo_manual.pdf``, ``fixtures/texinfo_reference.pdf``, a page of the libffi
manual): a paragraph of the page is a paragraph of the text layer (so a chunk is never cut
inside a sentence where the page has no break), and a definition line is text, not a heading
that would label everything after it."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _parse(name: str) -> ParsedDocument:
    parsed = parse_document((FIXTURES / name).read_bytes(), f"pdf/{name}")
    assert contract_violations(parsed) == []
    return parsed


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]


def _opens_paragraph(paragraphs: list[str], words: str) -> bool:
    return any(p.startswith(words) for p in paragraphs)


def test_pdf_paragraphs_parted_by_a_small_space_or_an_indent_stay_apart() -> None:
    reference = _paragraphs(_parse("texinfo_reference.pdf").text_layer)
    # A first-line indent with texinfo's small space; a definition's second paragraph and a
    # table item's, parted by the small space alone (no indent there).
    for opening in (
        "A count never blocks",
        "The count includes retired widgets",
        "This option slows the count down",
        "Counting in a loop is cheap",
    ):
        assert _opens_paragraph(reference, opening), (opening, reference)
    manual = _paragraphs(_parse("texinfo_manual.pdf").text_layer)
    for n in range(1, 15):  # fourteen indented paragraphs, wrapped over many lines each
        assert _opens_paragraph(manual, f"Gadget {n} needs"), n
    # Wrapped lines stay one paragraph: no paragraph ends inside a sentence.
    for paragraphs in (reference, manual):
        for a, b in itertools.pairwise(paragraphs):
            assert not (re.search(r"[a-z,]$", a) and b[:1].islower()), (a[-60:], b[:60])
    assert any(
        p.startswith("The library counts widgets for you.") and p.endswith("between them.")
        for p in reference
    )


def test_pdf_definition_lines_of_an_api_reference_are_no_headings() -> None:
    parsed = _parse("libffi_function_page.pdf")
    headings = [s.heading for s in parsed.sections if s.heading]
    assert not [h for h in headings if "[Function]" in h or "(void)" in h], headings
    # The definition lines stay in the text, each with what it defines.
    text = " ".join(parsed.text_layer.split())
    for name in ("get_version (void)", "get_default_abi (void)", "get_closure_size (void)"):
        assert re.search(re.escape(name) + r" \[Function\]", text), name


def test_pdf_short_last_line_in_typewriter_face_stays_in_its_paragraph() -> None:
    # The libffi page's "as the macro FFI_VERSION_STRING." measures smaller than the lines
    # above it (mostly typewriter face); the sentence runs on, so the paragraph does too.
    paragraphs = _paragraphs(_parse("libffi_function_page.pdf").text_layer)
    for sentence in (
        "This string is also available at build time as the macro FFI_VERSION_STRING.",
        "This number is also available at build time as the macro FFI_VERSION_NUMBER.",
    ):
        assert any(sentence in p for p in paragraphs), sentence
    for a, b in itertools.pairwise(paragraphs):
        assert not (re.search(r"[a-z,]$", a) and b[:1].islower()), (a[-60:], b[:60])
