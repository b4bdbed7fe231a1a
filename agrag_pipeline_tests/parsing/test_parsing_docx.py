"""DOCX: headings with their numbers, lists, tables, notes, comments, equations, alt text, and
hostile packages (truncated, zip bombs, entity bombs, external entities), on docling's corpus
files and on packages built here from their XML parts."""

from __future__ import annotations

import io
import shutil
import time
import zipfile
from pathlib import Path

import docx
import pytest
from parsed_support import headings as _headings
from parsed_support import parse_checked, parse_corpus
from parsed_support import table_cells as _rows
from parsed_support import tables as _tables

from agrag_pipeline.parsing import ParsedDocument, parse_document, word
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    ParseTimeoutError,
)

CORPUS_NAMES = sorted(
    p.name
    for p in (Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "docx").glob(
        "*.docx"
    )
)

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
NAMESPACES = (
    f'xmlns:w="{W_NS}" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _parse(raw: bytes, key: str = "doc.docx") -> ParsedDocument:
    return parse_checked(raw, key)


def _corpus(corpus_dir: Path, name: str) -> ParsedDocument:
    return parse_corpus(corpus_dir, "docx", name)


def _lines(parsed: ParsedDocument) -> list[str]:
    return [line for line in parsed.text_layer.split("\n") if line.strip()]


def _package(
    body: str,
    parts: dict[str, str] | None = None,
    rels: dict[str, str] | None = None,
    *,
    strict: bool = False,
) -> bytes:
    """A DOCX package from a ``w:body``'s XML, extra parts and the document's relationships
    (``{"footnotes": "footnotes.xml"}``: type suffix -> target under ``word/``)."""
    rel_lines = "".join(
        f'<Relationship Id="rId{i}" Type="{REL}/{kind}" Target="{target}"/>'
        for i, (kind, target) in enumerate((rels or {}).items(), start=1)
    )
    files = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
        ),
        "_rels/.rels": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/>'
            "</Relationships>"
        ),
        "word/_rels/document.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f"{rel_lines}</Relationships>"
        ),
        "word/document.xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            f"<w:document {NAMESPACES}><w:body>{body}</w:body></w:document>"
        ),
    }
    for name, xml in (parts or {}).items():
        files[f"word/{name}"] = xml
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, _strict(text) if strict else text)
    return out.getvalue()


def _strict(xml: str) -> str:
    """The same part in Strict OOXML's namespaces and relationship types."""
    return xml.replace(
        "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
        "http://purl.oclc.org/ooxml/wordprocessingml/main",
    ).replace(
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
        "http://purl.oclc.org/ooxml/officeDocument/relationships",
    )


def _p(text: str, style: str | None = None, extra_ppr: str = "") -> str:
    ppr = f'<w:pStyle w:val="{style}"/>' if style else ""
    return f"<w:p><w:pPr>{ppr}{extra_ppr}</w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"


def _part(root: str, inner: str) -> str:
    return f'<?xml version="1.0" encoding="UTF-8"?><w:{root} {NAMESPACES}>{inner}</w:{root}>'


def _replace_member(raw: bytes, name: str, data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, data if info.filename == name else source.read(info))
    return out.getvalue()


# --- the corpus -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_corpus_docx_keeps_the_section_contract(corpus_dir: Path, name: str) -> None:
    parsed = _corpus(corpus_dir, name)
    assert parsed.text_layer.strip()
    assert not parsed.paged, "a DOCX has no page layout: no page spans"
    for section in parsed.sections:
        own = section.text_in(parsed.text_layer)
        assert own and own == own.strip()


def test_heading_styles_give_the_outline_under_the_title(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "unit_test_headers.docx")
    doc, s1, s2 = "Test Document", "Section 1", "Section 2"
    assert _headings(parsed) == [
        (1, [doc]),
        (2, [doc, s1]),
        (3, [doc, s1, "Section 1.1"]),
        (3, [doc, s1, "Section 1.2"]),
        (4, [doc, s1, "Section 1.2", "Section 1.2.3"]),
        (2, [doc, s2]),
        (4, [doc, s2, "Section 2.1.1"]),  # a level skipped in the source stays skipped
        (3, [doc, s2, "Section 2.1"]),
    ]
    first = next(s for s in parsed.sections if s.heading == s1)
    assert first.text_in(parsed.text_layer) == "Section 1\n\nParagraph 1.1\n\nParagraph 1.2"


def _hand_formatted(*blocks: tuple[str, float | None, bool]) -> bytes:
    """A Word document written as people write one without heading styles: each block a
    paragraph of ``(text, size in points or None for the default, bold)``; a text starting
    with "- " is a bulleted list item."""
    from docx.shared import Pt

    document = docx.Document()
    for text, size, bold in blocks:
        if text.startswith("- "):
            document.add_paragraph(text[2:], style="List Bullet")
            continue
        run = document.add_paragraph().add_run(text)
        run.bold = bold
        if size is not None:
            run.font.size = Pt(size)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


PROSE = "The survey ran for six weeks and every answer was checked by two readers."


def test_headings_set_by_hand_in_larger_or_bold_type_give_the_outline() -> None:
    # No heading style anywhere: the outline is read from the type, as in a PDF.
    raw = _hand_formatted(
        ("Field Survey Report 2026", 20, True),
        ("Methods", 14, True),
        (PROSE, None, False),
        ("Sampling", None, True),
        (PROSE, None, False),
        ("- Two readers per answer", None, False),
        ("Interviews", None, True),
        ("- Forty households", None, False),
        ("Results", 14, True),
        (PROSE + " " + PROSE, None, False),
    )
    parsed = _parse(raw)
    title = "Field Survey Report 2026"
    assert _headings(parsed) == [
        (1, [title]),
        (2, [title, "Methods"]),
        (3, [title, "Methods", "Sampling"]),
        (3, [title, "Methods", "Interviews"]),
        (2, [title, "Results"]),
    ]


def test_a_real_handbooks_large_title_and_capitalised_sections_are_its_headings() -> None:
    # U.S. Trustee Program handbook (Unstructured's example): no heading style; the chapter
    # set in 25 pt bold, its sections "A.<tab>PURPOSE" in capitals at the body's size.
    parsed = _parse((FIXTURES / "word" / "handbook-1p.docx").read_bytes())
    chapter = "INTRODUCTION"
    assert _headings(parsed) == [
        (1, [chapter]),
        (2, [chapter, "A. PURPOSE"]),
        (2, [chapter, "B. ROLE OF THE UNITED STATES TRUSTEE"]),
        (2, [chapter, "C. STATUTORY DUTIES OF A STANDING TRUSTEE"]),
    ]


def test_bold_words_labels_and_a_single_bold_line_are_not_headings(corpus_dir: Path) -> None:
    # A form's bold labels with short values, a bold line inside prose, a lone bold line, and
    # a document of formatting samples ("bold", "underline", ...): no outline.
    form = _hand_formatted(
        ("Name", None, True),
        ("Ada Lovelace", None, False),
        ("Department", None, True),
        ("Analytical Engines", None, False),
        ("Start date", None, True),
        ("1843", None, False),
    )
    lone = _hand_formatted(("Summary", None, True), (PROSE, None, False), (PROSE, None, False))
    for raw in (form, lone):
        assert _headings(_parse(raw)) == []
    assert _headings(_corpus(corpus_dir, "unit_test_formatting.docx")) == []


def test_a_document_with_heading_styles_keeps_only_them() -> None:
    document = docx.Document()
    document.add_heading("Scope", level=1)
    document.add_paragraph().add_run("Bold lead-in").bold = True
    document.add_paragraph(PROSE)
    document.add_heading("Terms", level=1)
    document.add_paragraph().add_run("Another bold line").bold = True
    document.add_paragraph(PROSE)
    out = io.BytesIO()
    document.save(out)
    assert _headings(_parse(out.getvalue())) == [(1, ["Scope"]), (1, ["Terms"])]


def test_numbered_headings_keep_their_numbers_from_numbering_xml(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "list_after_num_headers.docx")
    assert _headings(parsed) == [
        (2, ["Chính sách bảo hành"]),
        (3, ["Chính sách bảo hành", "1. ĐỐI TƯỢNG ÁP DỤNG"]),
        (2, ["1. Glosario"]),
    ]
    lines = _lines(parsed)
    assert "- Term 1: Definition 1" in lines
    assert "  - Pin điện áp cao (sau đây gọi tắt là “" in lines  # level 2 of the list


def test_multilevel_heading_numbers_follow_the_heading_styles() -> None:
    numbering = _part(
        "numbering",
        '<w:abstractNum w:abstractNumId="0">'
        '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
        '<w:pStyle w:val="Heading1"/><w:lvlText w:val="%1"/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
        '<w:pStyle w:val="Heading2"/><w:lvlText w:val="%1.%2"/></w:lvl>'
        '</w:abstractNum><w:num w:numId="5"><w:abstractNumId w:val="0"/></w:num>',
    )
    styles = _part(
        "styles",
        "".join(
            f'<w:style w:type="paragraph" w:styleId="Heading{n}"><w:name w:val="heading {n}"/>'
            f'<w:pPr><w:numPr><w:numId w:val="5"/></w:numPr><w:outlineLvl w:val="{n - 1}"/>'
            "</w:pPr></w:style>"
            for n in (1, 2)
        )
        + '<w:style w:type="paragraph" w:styleId="Chapter"><w:name w:val="Chapter"/>'
        '<w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>',
    )
    body = (
        _p("Introduction", "Heading1")
        + _p("Scope", "Heading2")
        + _p("Terms", "Heading2")
        + _p("Some text.")
        + _p("Methods", "Heading1")
        + _p("Design", "Heading2")
        + _p("Appendix", "Chapter")  # a custom style with an outline level
        + _p("Direct outline level", extra_ppr='<w:outlineLvl w:val="1"/>')
    )
    raw = _package(
        body,
        {"numbering.xml": numbering, "styles.xml": styles},
        {"numbering": "numbering.xml", "styles": "styles.xml"},
    )
    parsed = _parse(raw)
    assert _headings(parsed) == [
        (1, ["1 Introduction"]),
        (2, ["1 Introduction", "1.1 Scope"]),
        (2, ["1 Introduction", "1.2 Terms"]),
        (1, ["2 Methods"]),
        (2, ["2 Methods", "2.1 Design"]),
        (1, ["Appendix"]),
        (2, ["Appendix", "Direct outline level"]),
    ]


def test_ordered_list_resumes_after_a_bullet_list(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "docx_list_resumed_numbering.docx")
    assert _lines(parsed)[1:] == [
        "1. First ordered item",
        "2. Second ordered item",
        "- bullet one",
        "- bullet two",
        "3. Third ordered item",
    ]


def test_nested_list_items_are_indented_and_numbered_by_level(corpus_dir: Path) -> None:
    spacer = _corpus(corpus_dir, "docx_list_blank_spacer.docx").text_layer
    assert "1 First section\n  1.1 Sub one\n\nProse that belongs under Sub one." in spacer
    assert "  1.2 Sub two\n2 Second section" in spacer
    formatting = _lines(_corpus(corpus_dir, "unit_test_formatting.docx"))
    assert "- Some italic bold underline" in formatting
    assert "  - Nested italic bold" in formatting


def test_merged_cells_repeat_their_text_in_every_row_and_column(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "word_tables.docx")
    tables = _tables(parsed)
    assert len(tables) == 7
    assert all(t.heading_path == ["Test with tables"] for t in tables)
    assert _rows(parsed, tables[0]) == [
        ["Header 0.0", "Header 0.1", "Header 0.2"],
        ["Cell 1.0", "Cell 1.1", "Cell 1.2"],
        ["Cell 2.0", "Cell 2.1", "Cell 2.2"],
    ]
    assert _rows(parsed, tables[1])[1] == ["Cell 1.0", "Merged Cell 1.1 1.2", "Merged Cell 1.1 1.2"]
    vertical = _rows(parsed, tables[3])
    assert [row[1] for row in vertical[1:]] == [
        "Merged Cell 1.1 2.1",
        "Merged Cell 1.1 2.1",
        "Merged Cell 3.1 4.1",
        "Merged Cell 3.1 4.1",
    ]
    late = _rows(parsed, tables[5])
    assert late == [["Header 0.0", "Header 0.1"], ["", "Cell 1.1"]]  # the row starts late
    header = tables[0].table_header
    assert header is not None
    assert parsed.text_layer[header.start : header.end].endswith("| - | - | - |")


def test_a_table_of_one_cell_is_a_frame_whose_lists_and_tables_read_as_the_bodys() -> None:
    # Word's boxed notes are tables of one cell: a list in one, a table in another. As tables
    # the list was one cell "- Hello world1 - Hello2" and the inner table "Tab1, Tab2, Tab3;
    # A, B, C" on one line.
    bullet = '<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>'

    def row(*cells: str) -> str:
        return "<w:tr>" + "".join(f"<w:tc>{c}</w:tc>" for c in cells) + "</w:tr>"

    inner = "<w:tbl>" + row(_p("Tab1"), _p("Tab2")) + row(_p("A"), _p("B")) + "</w:tbl>"
    body = (
        "<w:tbl>"
        + row(_p("Check the seal.", extra_ppr=bullet) + _p("Sign here."))
        + "</w:tbl>"
        + _p("Between the frames.")
        + "<w:tbl>"
        + row(_p("Prices") + inner)
        + "</w:tbl>"
    )
    parsed = _parse(_package(body))
    tables = _tables(parsed)
    assert len(tables) == 1 and _rows(parsed, tables[0]) == [["Tab1", "Tab2"], ["A", "B"]]
    assert _lines(parsed)[:4] == ["Check the seal.", "Sign here.", "Between the frames.", "Prices"]


def test_rich_cells_keep_lists_formatting_and_nested_tables_in_their_row(
    corpus_dir: Path,
) -> None:
    parsed = _corpus(corpus_dir, "docx_rich_cells.docx")
    tables = _tables(parsed)
    rich = _rows(parsed, tables[0])
    assert rich[0] == ["Column A", "Column B"]
    assert rich[1][0] == "This is a list: - A First - A Second - A Third"
    assert "1. Number one 2. Number two 3. Number three" in rich[2][0]
    nested = _rows(parsed, tables[1])
    assert nested[2] == [
        "A, B, C; Cell 1, Cell 2, Cell 3",
        "Rich cell A nested table A, B, C; Cell 1, Cell 2, Cell 3",
    ]
    pictures = _rows(parsed, tables[2])
    assert pictures[1] == ["Only text", "[Image: Owner avatar]"]
    assert tables[1].heading_path == ["Table with nested table"]


def test_checkbox_content_controls_read_as_checked_or_not(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "docx_checkboxes.docx")
    lines = _lines(parsed)
    assert "[x] Design" in lines
    assert any(line.startswith("[ ] Documentation of the task") for line in lines)
    cells = _rows(parsed, _tables(parsed)[0])
    assert cells[2] == [
        "Choose as many as you like: [x] Orange juice [ ] Tea [x] Coffee [ ] Milk [x] Water"
    ]


def test_equations_are_linear_latex_in_text_and_cells(corpus_dir: Path) -> None:
    table = _corpus(corpus_dir, "table_with_equations.docx")
    assert _rows(table, _tables(table)[0]) == [
        ["The next cell has an equation", "A=\\pi r^{2}"],
        ["The next cell has another equation", "x=\\frac{-b\\pm\\sqrt{b^{2}-4ac}}{2a}"],
    ]
    log = _corpus(corpus_dir, "omml_func_log.docx")
    assert _lines(log)[-1] == "y = \\log\\left(x\\right)"
    frac = _corpus(corpus_dir, "omml_frac_superscript.docx")
    assert _lines(frac)[-1] == "{\\frac{(x-c)}{v}}^{2}"


def test_equations_side_by_side_in_one_paragraph_stay_apart() -> None:
    # Three m:oMath siblings in one w:p (docling's omml_multi_equation_paragraph.docx has the
    # shape) read "a=bc=de=f": one formula that is none of them.
    def math(left: str, right: str) -> str:
        return f"<m:oMath><m:r><m:t>{left}=</m:t></m:r><m:r><m:t>{right}</m:t></m:r></m:oMath>"

    raw = _package(f"<w:p>{math('a', 'b')}{math('c', 'd')}{math('e', 'f')}</w:p>")
    assert _lines(_parse(raw)) == ["a=b c=d e=f"]


def test_monospaced_paragraphs_are_code_lines_that_keep_their_indentation(
    corpus_dir: Path,
) -> None:
    parsed = _corpus(corpus_dir, "docx_code_blocks.docx")
    text = parsed.text_layer
    assert "import sys\nprint(sys.argv)" in text  # the 'Source Code' style's font
    assert (
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
        "    return a"
    ) in text
    assert "\n\nSee the original source for details.\n\n" in text  # not a code style


def test_comments_are_a_section_at_the_end_with_their_authors(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "docx_comments.docx")
    last = parsed.sections[-1]
    assert last.heading == word.COMMENTS
    assert last.heading_path == ["Document with Comments", "Comments"]
    assert last.text_in(parsed.text_layer).split("\n")[2:] == [
        "[author: John Reviewer (JR), time: 2026-01-04T05:48:07Z]: "
        "This is a sample reviewer comment on the first paragraph.",
        "[author: Jane Editor (JE), time: 2026-01-04T05:48:07Z]: "
        "Another comment by a different reviewer.",
        "[time: 2026-01-04T05:48:07Z]: Anonymous feedback on this paragraph.",
    ]
    body = parsed.sections[0].text_in(parsed.text_layer)
    assert "reviewer comment" not in body


def test_headers_and_footers_are_not_repeated_into_the_body(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "docx_page_header_footer_first_page.docx")
    assert "HEADER" not in parsed.text_layer and "FOOTER" not in parsed.text_layer
    assert "This is body text on page 2." in parsed.text_layer


def test_strict_ooxml_reads_like_transitional(corpus_dir: Path) -> None:
    assert _corpus(corpus_dir, "Strict.docx").text_layer == "Some text"
    body = (
        _p("Results", "Heading1") + "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>k</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>v</w:t></w:r></w:p></w:tc></w:tr>"
        "<w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>1</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    )
    strict = _package(body, strict=True)
    transitional = _package(body)
    with zipfile.ZipFile(io.BytesIO(strict)) as archive:
        assert b"purl.oclc.org/ooxml/wordprocessingml" in archive.read("word/document.xml")
    ours, theirs = _parse(strict), _parse(transitional)
    assert ours.text_layer == theirs.text_layer == "Results\n\n| k | v |\n| - | - |\n| a | 1 |"
    assert _headings(ours) == [(1, ["Results"])]


def test_footnotes_and_endnotes_are_numbered_by_reference_and_kept_at_the_end() -> None:
    notes = (
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
    )
    notes += (
        '<w:footnote w:id="7"><w:p><w:r><w:footnoteRef/></w:r>'
        '<w:r><w:t xml:space="preserve"> At sea level.</w:t></w:r></w:p></w:footnote>'
    )
    endnotes = (
        '<w:endnote w:id="3"><w:p><w:r><w:t>Source: a handbook.</w:t></w:r></w:p></w:endnote>'
    )
    body = (
        "<w:p><w:r><w:t>Water boils at 100 degrees</w:t></w:r>"
        '<w:r><w:footnoteReference w:id="7"/></w:r><w:r><w:t>.</w:t></w:r>'
        '<w:r><w:endnoteReference w:id="3"/></w:r></w:p>'
    )
    raw = _package(
        body,
        {"footnotes.xml": _part("footnotes", notes), "endnotes.xml": _part("endnotes", endnotes)},
        {"footnotes": "footnotes.xml", "endnotes": "endnotes.xml"},
    )
    parsed = _parse(raw)
    assert parsed.text_layer == (
        "Water boils at 100 degrees[1].[1]\n\nFootnotes\n\n[1] At sea level."
        "\n\nEndnotes\n\n[1] Source: a handbook."
    )
    assert _headings(parsed) == [(1, ["Footnotes"]), (1, ["Endnotes"])]


def test_text_boxes_follow_their_paragraph_once_and_images_give_alt_text() -> None:
    box = "<w:txbxContent><w:p><w:r><w:t>Boxed note</w:t></w:r></w:p></w:txbxContent>"
    drawing = (
        '<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wp:anchor>'
        '<wp:docPr id="1" name="Text Box 1"/><a:graphic><a:graphicData '
        'uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
        f"<wps:wsp><wps:txbx>{box}</wps:txbx></wps:wsp></a:graphicData></a:graphic>"
        "</wp:anchor></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>"
        f"{box}</v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>"
    )
    image = (
        '<w:r><w:drawing><wp:inline><wp:docPr id="2" name="Picture 2" '
        'descr="A red bicycle against a wall"/></wp:inline></w:drawing></w:r>'
    )
    named = (
        '<w:r><w:drawing><wp:inline><wp:docPr id="3" name="Picture 3" descr="IMG_0042.JPG"/>'
        "</wp:inline></w:drawing></w:r>"
    )
    body = (
        f"<w:p><w:r><w:t>Anchor paragraph.</w:t></w:r>{drawing}</w:p>"
        f"<w:p><w:r><w:t>See:</w:t></w:r>{image}{named}</w:p>"
        "<w:p><w:r><w:t>Kept</w:t></w:r><w:del><w:r><w:delText>deleted</w:delText></w:r>"
        '</w:del><w:ins><w:r><w:t xml:space="preserve"> inserted</w:t></w:r></w:ins></w:p>'
    )
    parsed = _parse(_package(body))
    assert parsed.text_layer == (
        "Anchor paragraph.\n\nBoxed note\n\n"
        "See: [Image: A red bicycle against a wall]\n\nKept inserted"
    )


def _chart_part() -> str:
    """A chart part as Office writes it (made with python-pptx's chart writer)."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE

    prs = Presentation()
    data = CategoryChartData()
    data.categories = ["North", "South"]
    data.add_series("2024", (12.5, 7))
    data.add_series("2025", (14, 9.25))
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    frame = slide.shapes.add_chart(XL_CHART_TYPE.BAR_CLUSTERED, 0, 0, 100, 100, data)
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Sales by region"
    out = io.BytesIO()
    prs.save(out)
    with zipfile.ZipFile(out) as archive:
        return archive.read("ppt/charts/chart1.xml").decode("utf-8")


def test_chart_is_its_title_and_data_table_after_its_paragraph() -> None:
    body = (
        "<w:p><w:r><w:t>Figure 1:</w:t></w:r><w:r><w:drawing><wp:inline>"
        '<wp:docPr id="1" name="Chart 1"/><a:graphic><a:graphicData '
        'uri="http://schemas.openxmlformats.org/drawingml/2006/chart">'
        '<c:chart xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" r:id="rId1"/>'
        "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"
    )
    raw = _package(body, {"charts/chart1.xml": _chart_part()}, {"chart": "charts/chart1.xml"})
    parsed = _parse(raw)
    assert parsed.text_layer.startswith("Figure 1:\n\nSales by region\n\n")
    assert _rows(parsed, _tables(parsed)[0]) == [
        ["", "2024", "2025"],
        ["North", "12.5", "14"],
        ["South", "7", "9.25"],
    ]


def test_smartart_diagram_is_its_node_texts_after_its_paragraph() -> None:
    dgm = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
    a = "http://schemas.openxmlformats.org/drawingml/2006/main"
    points = "".join(
        f'<dgm:pt modelId="{i}"{kind}><dgm:t><a:p><a:r><a:t>{head}</a:t></a:r>'
        f"<a:r><a:t>{tail}</a:t></a:r></a:p></dgm:t></dgm:pt>"
        for i, (kind, head, tail) in enumerate(
            [("", "Pl", "an"), (' type="parTrans"', "x", "x"), ("", "Bu", "ild"), ("", "Sh", "ip")]
        )
    )
    data = (
        f'<?xml version="1.0"?><dgm:dataModel xmlns:dgm="{dgm}" xmlns:a="{a}">'
        f"<dgm:ptLst>{points}</dgm:ptLst></dgm:dataModel>"
    )
    body = (
        "<w:p><w:r><w:t>Process:</w:t></w:r><w:r><w:drawing><wp:inline>"
        '<wp:docPr id="1" name="Diagram 1"/><a:graphic><a:graphicData '
        f'uri="{dgm}"><dgm:relIds xmlns:dgm="{dgm}" r:dm="rId1" r:lo="rId9"/>'
        "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"
    )
    raw = _package(body, {"diagrams/data1.xml": data}, {"diagramData": "diagrams/data1.xml"})
    assert _parse(raw).text_layer == "Process:\n\n- Plan\n- Build\n- Ship"


def test_chunks_of_a_docx_pass_the_asset_checks(tmp_path: Path, corpus_dir: Path) -> None:
    from agrag_pipeline.pipeline import run_document
    from agrag_pipeline.runtime import Runtime
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
    from agrag_pipeline.validation import check_chunks, check_sections

    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("word_tables.docx", "docx_rich_cells.docx"):
        shutil.copy(corpus_dir / "docx" / name, raw / name)
    runtime = Runtime.from_files(DEFAULT_SETTINGS_PATH, raw, str(tmp_path / "warehouse"))
    for name in ("word_tables.docx", "docx_rich_cells.docx"):
        result = run_document(runtime, name, embed=False)
        assert result.chunks
        outcomes = check_sections(runtime.warehouse, name) + check_chunks(runtime.warehouse, name)
        assert [(o.name, o.passed) for o in outcomes if not o.passed] == []
        tables = [c for c in result.chunks if "Merged Cell 1.1 2.1" in c.text]
        assert tables or name != "word_tables.docx"


# --- hostile files --------------------------------------------------------------------------


def test_truncated_docx_is_a_corrupt_document_error(corpus_dir: Path) -> None:
    raw = (corpus_dir / "docx" / "word_tables.docx").read_bytes()
    with pytest.raises(CorruptDocumentError, match=r"^cut\.docx: not a readable ZIP package"):
        parse_document(raw[: len(raw) // 2], "cut.docx")


def test_encrypted_word_file_is_named_password_protected() -> None:
    # Apache POI's test file (Apache-2.0): an agile-encrypted .docx is an OLE compound file.
    raw = Path(__file__).parents[1] / "fixtures" / "legacy_office" / "protected_agile.docx"
    with pytest.raises(CorruptDocumentError, match=r"^secret\.docx: a password-protected"):
        parse_document(raw.read_bytes(), "secret.docx")


def test_zip_without_a_word_document_is_a_corrupt_document_error() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "not a Word file")
    with pytest.raises(CorruptDocumentError, match="no main document part"):
        parse_document(out.getvalue(), "fake.docx")


def test_zip_bomb_is_refused_from_the_directory_before_inflating(corpus_dir: Path) -> None:
    raw = (corpus_dir / "docx" / "lorem_ipsum.docx").read_bytes()
    out = io.BytesIO(raw)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/bomb.bin", b"\0" * (64 * 1024 * 1024))
    bomb = out.getvalue()
    assert len(bomb) < 200_000
    started = time.perf_counter()
    with pytest.raises(DocumentTooLargeError, match=r"bomb\.bin' inflates"):
        parse_document(bomb, "bomb.docx")
    assert time.perf_counter() - started < 2.0


def test_overlapping_members_bomb_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"<w:document/>" * 100)
        archive.writestr("word/documenu.xml", b"<w:document/>" * 100)
    raw = bytearray(out.getvalue())
    second = raw.rfind(b"PK\x01\x02")  # the second central-directory entry
    raw[second + 42 : second + 46] = (0).to_bytes(4, "little")  # point it at the first
    with pytest.raises(DocumentTooLargeError, match="overlap"):
        parse_document(bytes(raw), "overlap.docx")


def test_xml_part_past_the_size_limit_is_refused_before_parsing(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word, "MAX_XML_PART_BYTES", 2_000)
    raw = (corpus_dir / "docx" / "word_tables.docx").read_bytes()
    with pytest.raises(DocumentTooLargeError, match=r"word/document\.xml' is .* \(limit 2,000\)"):
        parse_document(raw, "big.docx")


def test_hostile_column_spans_cost_at_most_the_column_limit() -> None:
    cell = (
        '<w:tc><w:tcPr><w:gridSpan w:val="999999999"/></w:tcPr>'
        "<w:p><w:r><w:t>x</w:t></w:r></w:p></w:tc>"
    )
    raw = _package("<w:tbl>" + ("<w:tr>" + cell * 50 + "</w:tr>") * 3 + "</w:tbl>")
    started = time.perf_counter()
    parsed = _parse(raw)
    assert time.perf_counter() - started < 2.0
    rows = _rows(parsed, _tables(parsed)[0])
    assert [len(r) for r in rows] == [word.MAX_COLUMNS] * 3


def test_billion_laughs_in_document_xml_is_refused_quickly(corpus_dir: Path) -> None:
    lol = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    bomb = (
        f'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY lol0 "lol">{lol}]>'
        f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>'
        "</w:body></w:document>"
    ).encode()
    raw = _replace_member(
        (corpus_dir / "docx" / "lorem_ipsum.docx").read_bytes(), "word/document.xml", bomb
    )
    started = time.perf_counter()
    with pytest.raises(CorruptDocumentError, match=r"word/document\.xml' declares a DTD"):
        parse_document(raw, "laughs.docx")
    assert time.perf_counter() - started < 2.0


def test_external_entity_is_never_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE", encoding="utf-8")
    xxe = (
        f'<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE w:document '
        f'[<!ENTITY xxe SYSTEM "file://{secret}">]>'
        f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>&xxe;</w:t></w:r></w:p>'
        "</w:body></w:document>"
    )
    raw = _package("").replace(b"<w:body></w:body>", b"<w:body/>")
    raw = _replace_member(raw, "word/document.xml", xxe.encode())
    with pytest.raises(CorruptDocumentError, match="declares a DTD") as caught:
        parse_document(raw, "xxe.docx")
    assert "TOP-SECRET" not in str(caught.value)


def test_time_budget_ends_a_long_parse_with_a_timeout_error() -> None:
    document = docx.Document()
    for i in range(3000):
        document.add_paragraph(f"Paragraph {i}")
    out = io.BytesIO()
    document.save(out)
    raw = out.getvalue()
    assert "Paragraph 2999" in parse_document(raw, "long.docx").text_layer
    with pytest.raises(ParseTimeoutError, match=r"^long\.docx: gave up after .* at block"):
        parse_document(raw, "long.docx", time_budget_s=1e-6)
