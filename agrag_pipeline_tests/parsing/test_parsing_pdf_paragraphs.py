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


def _two_column_page_with_footnotes() -> bytes:
    """A two-column page as LaTeX's ``\\thanks`` notes leave it: at the left column's foot,
    footnotes whose marks (5.8 pt, raised) stand before 7.1 pt text, each footnote's line 4 pt
    under a line of the right column (so its mark is at that line's height), and a footnote's
    last line mostly in a smaller typewriter face."""
    from agrag_pipeline_tests.parsing.test_parsing_pdf import Page, Text, make_pdf

    body = [
        "Simple measurements made by volunteers can fill the",
        "gaps between gauging stations on small rivers, if the",
        "correction from surface speed to mean speed is taken",
        "from the bed of each channel rather than fixed.",
    ]
    texts = [Text(72, 700 - 12 * k, line, size=10, font="F3") for k, line in enumerate(body)]
    notes = [
        ("*", ["Supported by the River Survey Group and the national", "hydraulics laboratory."]),
        ("+", ["Department of Geography, Alder University, who can be reached at"]),
    ]
    baselines: list[float] = []
    y = 636.0
    for mark, lines in notes:
        texts.append(Text(80, y + 2.6, mark, size=5.8, font="F3"))
        for k, line in enumerate(lines):
            texts.append(Text(84 if k == 0 else 72, y, line, size=7.1, font="F3"))
            baselines.append(y)
            y -= 9
    texts.append(Text(72, y, "(", size=7.1, font="F3"))
    texts.append(Text(75, y, "tom.idris@example.org", size=6.1, font="F6"))
    texts.append(Text(152, y, ") by mail.", size=7.1, font="F3"))
    right = [700 - 12 * k for k in range(5)] + [b + 4 for b in baselines] + [y + 4]
    texts += [
        Text(320, at, f"line {n} of the right column goes on with its text here", size=10)
        for n, at in enumerate(right, start=1)
    ]
    return make_pdf([Page(texts)])


def test_a_footnotes_mark_beside_the_other_columns_line_starts_its_footnote() -> None:
    # A page's rows are as wide as the page: a mark at the left column's foot was taken into
    # the right column's line at its height, and read as a paragraph of its own ("*").
    text = parse_document(_two_column_page_with_footnotes(), "pdf/paper.pdf").text_layer
    paragraphs = _paragraphs(text)
    assert "*" not in paragraphs and "+" not in paragraphs, paragraphs
    assert any(re.match(r"\* ?Supported by the River Survey Group", p) for p in paragraphs)
    assert any(re.match(r"\+ ?Department of Geography", p) for p in paragraphs), paragraphs
    assert not any(p.startswith("line") and ("*" in p or "+" in p) for p in paragraphs)


def test_a_footnotes_last_line_mostly_in_typewriter_face_stays_in_its_footnote() -> None:
    # "(tom.idris@example.org) by mail." measures smaller than its footnote (the address is most
    # of it) but holds letters of the footnote's size, and the sentence runs on into it.
    paragraphs = _paragraphs(
        parse_document(_two_column_page_with_footnotes(), "pdf/paper.pdf").text_layer
    )
    assert any(
        re.match(r"\+ ?Department", p) and p.endswith("reached at (tom.idris@example.org) by mail.")
        for p in paragraphs
    ), paragraphs
