"""Headings a PDF declares: its structure tree's tags (``H1``-``H6``), and its outline read
through what producers do to it (titles cut short, subheadings set smaller than the body).

Fixtures: ``tagged_headings.pdf``, LibreOffice's tagged export of ``tagged_headings.fodt``
without bookmarks (its third-level headings set in 11 pt italic over 12 pt text, a bold 16 pt
callout that is no heading, a heading that wraps);
``outside/govdocs1_road_safety_audit_outline.pdf``, a real report from a .gov server
(Govdocs1), written in Word: 55 outline entries, 12 of them cut at 60 characters, its
third-level headings bold at 0.92 of the body's size.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pypdfium2
import pytest

from agrag_pipeline.parsing import ParsedDocument, parse_document, pdf_tags
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.pdf_fonts import pdf_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TAGGED = FIXTURES / "tagged_headings.pdf"
ROAD_SAFETY = FIXTURES / "outside" / "govdocs1_road_safety_audit_outline.pdf"
BROWSER_PRINTED = FIXTURES / "browser_print" / "monitoring_handbook.pdf"


@functools.cache
def _parsed(path: Path) -> ParsedDocument:
    parsed = parse_document(path.read_bytes(), f"pdf/{path.name}")
    assert contract_violations(parsed) == []
    return parsed


def _tags_of(raw: bytes) -> pdf_tags.TaggedHeadings:
    """What a PDF's structure tree declares, read page by page as the parse reads it."""
    tagged = pdf_tags.TaggedHeadings()
    pdf = pypdfium2.PdfDocument(raw)
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            tagged.read_page(page, index + 1, textpage)
            textpage.close()
            page.close()
    finally:
        pdf.close()
    return tagged


def _headings(parsed: ParsedDocument) -> list[tuple[int, str]]:
    return [(s.level, s.heading) for s in parsed.sections if s.heading]


def test_a_tagged_pdf_without_an_outline_has_the_headings_its_tags_declare() -> None:
    parsed = _parsed(TAGGED)
    assert _headings(parsed) == [
        (1, "Field Guide to Pond Surveys"),
        (2, "Before the visit"),
        (3, "Permission from the landowner"),  # 11 pt italic: smaller than the body
        (3, "Equipment checks"),
        (
            2,
            "At the pond: sweeping the net along each of the four banks, sorting the catch in "
            "the white tray and counting it",
        ),  # wrapped over two lines, one object each
        (3, "Recording water temperature"),
        # Set by hand in Heading 2's look, tagged a paragraph: a heading at Heading 2's level.
        (2, "After the visit"),
    ]
    # The bold 16 pt callout is tagged a paragraph: text of its section, no heading.
    section = next(s for s in parsed.sections if s.heading == "Permission from the landowner")
    assert "Two people at every pond" in parsed.text_layer[section.start : section.end]


def test_a_title_tagged_as_a_paragraph_heads_tags_that_declare_few_headings() -> None:
    """Govdocs1's tutorial 436840 tags one heading, its "Table of Contents"; its title and a
    part's title are paragraphs in large type, its lettered sections paragraphs in the tagged
    heading's look. The title was lost (typography is not asked where tags declare headings):
    it now heads the tags as an outline's title does, and a part title in its look on a later
    page is a heading at its level; a line in that look on the cover is not."""
    parsed = _parsed(FIXTURES / "tagged_title_by_hand.pdf")
    assert _headings(parsed) == [
        (1, "Pond Survey Handbook"),
        (2, "Contents"),  # tagged H2: level 1 stays free for the title
        (2, "A. Before the visit"),
        (2, "B. At the pond"),
        (1, "Step by Step Guide"),
        (2, "A. Permission from the landowner"),
    ]
    # "Volunteers Edition", in the title's type on the title's page: text of the cover.
    cover = parsed.sections[0]
    assert cover.heading == "Pond Survey Handbook"
    assert "Volunteers Edition" in parsed.text_layer[cover.start : cover.end]


def test_what_a_tagged_pdf_marks_as_artifacts_is_left_out() -> None:
    # The running head and the page number LibreOffice writes inside ``/Artifact`` marked
    # content: on a one-page document no repetition could tell them from the text.
    parsed = _parsed(TAGGED)
    assert "County Pond Survey Volunteers" not in parsed.text_layer
    assert "Page 1" not in parsed.text_layer
    assert parsed.text_layer.startswith("Field Guide to Pond Surveys\n\nThis guide explains")
    assert parsed.warnings == [
        "46 characters the file tags as artifacts (running heads and feet, page numbers) left out"
    ]


def test_a_short_last_pages_header_and_footer_stay_out_with_the_other_pages() -> None:
    # Page 2 holds one line under the header and footer marked as artifacts on both pages:
    # artifacts are most of that page, not of the document.
    parsed = _parsed(FIXTURES / "tagged_short_last_page.pdf")
    assert "This is a header" not in parsed.text_layer
    assert "This is a footer" not in parsed.text_layer
    assert "artifacts" in " ".join(parsed.warnings)


def test_a_page_whose_text_its_producer_marked_as_artifacts_is_read_whole() -> None:
    # pdf.js's form sample: every field label is inside ``/Artifact`` marked content, two of
    # them in the top band where running heads stand. Artifacts are as many as half the text
    # kept, so the document is read whole.
    parsed = _parsed(FIXTURES / "outside" / "pdfjs_form_labels_as_artifacts.pdf")
    for label in ("Combo box", "Combo box, read-only", "List box, single selection"):
        assert label in parsed.text_layer.splitlines()
    assert not any("artifacts" in w for w in parsed.warnings)


def test_the_tags_text_of_a_wrapped_heading_is_joined_by_a_space() -> None:
    tagged = _tags_of(TAGGED.read_bytes())
    assert [(level, page) for level, _, page in tagged.levelled()] == [
        (1, 1),
        (2, 1),
        (3, 1),
        (3, 1),
        (2, 1),
        (3, 1),
    ]  # "After the visit" is tagged a paragraph
    assert "banks, sorting the catch in the white tray" in tagged.entries[4][1]
    assert tagged.paragraphs >= 7 and tagged.plausible()


def test_a_pdf_without_tags_declares_no_headings_by_them() -> None:
    tagged = _tags_of((ROAD_SAFETY.parent / "tracemonkey_float_pages.pdf").read_bytes())
    assert tagged.entries == [] and not tagged.plausible()


def test_a_structure_tree_past_the_budget_is_not_followed_and_the_parse_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pdf_tags, "MAX_ELEMENTS", 6)
    parsed = parse_document(TAGGED.read_bytes(), "pdf/tagged_budget.pdf")
    assert contract_violations(parsed) == []
    assert "the structure tree is larger than 6 elements: its headings were not followed" in (
        parsed.warnings
    )
    # Read by typography instead: the third-level headings in italic 11 pt are missed.
    declared = [heading for _, heading in _headings(parsed)]
    assert declared[0] == "Field Guide to Pond Surveys"
    assert "Permission from the landowner" not in declared


def _tagged_pdf_with_a_looping_tree() -> bytes:
    """One page, its heading tagged ``H1`` in a structure tree whose elements hold themselves
    and their parent again."""
    content = (
        b"/H1 <</MCID 0>> BDC BT /F1 18 Tf 72 700 Td (Looping tree) Tj ET EMC\n"
        b"/P <</MCID 1>> BDC BT /F1 12 Tf 72 670 Td "
        b"(A paragraph under the heading, long enough to be body text.) Tj ET EMC\n"
    )
    return _one_tagged_page(
        content,
        # The document element holds the heading, the paragraph and itself, twice.
        document_kids=b"[7 0 R 10 0 R 6 0 R 6 0 R]",
        # The heading holds its text and loops back to the document.
        heading_kids=b"[0 6 0 R 7 0 R]",
        parent_tree=b"[7 0 R 10 0 R]",
        paragraph_kids=b"1",
    )


def _one_tagged_page(
    content: bytes,
    *,
    document_kids: bytes,
    heading_kids: bytes,
    parent_tree: bytes,
    paragraph_kids: bytes,
) -> bytes:
    """One Helvetica page of ``content`` and its structure tree: a ``Document`` element (object
    6), an ``H1`` (7) and a ``P`` (10) with the kids given, the page's marked-content ids
    mapped to elements by ``parent_tree``."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /StructTreeRoot 5 0 R /MarkInfo << /Marked true >> >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 8 0 R >> >> /StructParents 0 >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"endstream",
        b"<< /Type /StructTreeRoot /K 6 0 R /ParentTree 9 0 R >>",
        b"<< /Type /StructElem /S /Document /P 5 0 R /K %s >>" % document_kids,
        b"<< /Type /StructElem /S /H1 /P 6 0 R /Pg 3 0 R /K %s >>" % heading_kids,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Nums [0 %s] >>" % parent_tree,
        b"<< /Type /StructElem /S /P /P 6 0 R /Pg 3 0 R /K %s >>" % paragraph_kids,
    ]
    return pdf_file(objects)


def test_a_structure_tree_that_loops_back_on_itself_is_read_once() -> None:
    raw = _tagged_pdf_with_a_looping_tree()
    tagged = _tags_of(raw)
    assert tagged.entries == [(1, "Looping tree", 1)]
    parsed = parse_document(raw, "pdf/looping_tree.pdf")
    assert _headings(parsed) == [(1, "Looping tree")]
    assert "A paragraph under the heading" in parsed.text_layer


def test_a_heading_whose_lines_have_ids_of_their_own_keeps_the_space_between_them() -> None:
    # A wrapped heading tagged ``H1`` whose two lines are two marked-content sequences (ids 0
    # and 1), no space written at the break: its text is "Field notes from the", "upper pond".
    content = (
        b"/H1 <</MCID 0>> BDC BT /F1 18 Tf 72 700 Td (Field notes from the) Tj ET EMC\n"
        b"/H1 <</MCID 1>> BDC BT /F1 18 Tf 72 678 Td (upper pond) Tj ET EMC\n"
        b"/P <</MCID 2>> BDC BT /F1 12 Tf 72 640 Td "
        b"(A paragraph under the heading, long enough to be body text.) Tj ET EMC\n"
    )
    raw = _one_tagged_page(
        content,
        document_kids=b"[7 0 R 10 0 R]",
        heading_kids=b"[0 1]",
        parent_tree=b"[7 0 R 7 0 R 10 0 R]",
        paragraph_kids=b"2",
    )
    assert _tags_of(raw).entries == [(1, "Field notes from the upper pond", 1)]


def test_a_browsers_tagged_headings_keep_the_levels_of_the_page() -> None:
    # Chrome tags ``<h2><code>check_retention()</code></h2>`` H2, as the HTML has it; by
    # typography alone it read one level under the page's other ``h2`` headings.
    headings = _headings(_parsed(BROWSER_PRINTED))
    assert headings[0] == (1, "Monitoring handbook for the on-call team")
    assert (2, "check_retention()") in headings and (2, "About retention") in headings
    assert {level for level, _ in headings[1:]} == {2}


def test_outline_titles_cut_short_and_subheadings_smaller_than_the_body_are_headings() -> None:
    parsed = _parsed(ROAD_SAFETY)
    headings = _headings(parsed)
    assert not any("outline entries" in w for w in parsed.warnings)  # all 55 found
    # Its last page holds a figure and the running head, an artifact: no scan to OCR.
    assert not any("OCR" in w for w in parsed.warnings)
    assert len(headings) == 55
    # Bold 12.3 pt over 13.3 pt text, declared at the outline's third level.
    assert (3, "Sampling") in headings
    assert (3, "Should I drive at normal speed during safety reviews?") in headings
    # The outline keeps "... Road Safety Forum in Melbou": the heading is the line, whole.
    assert (3, "Proceedings of the International Road Safety Forum in Melbourne 1998") in headings
    assert (
        1,
        "Appendix B: Review of selected safety audit guides and reports for information on the "
        "safety audit of existing roads.",
    ) in headings
    # A list item that reads as a heading's title, in the body's type, stays a list item.
    assert "\u2022 Numbering of stages of audit\n" in parsed.text_layer
