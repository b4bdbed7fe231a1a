"""Real variants of formats we read, found by the second sweep of outside documents (Apache
Tika's test documents; BENCHMARKS.md, "Outside documents, second sweep"): ZIP archives written
on non-Western systems, with an encrypted member or split in parts; OLE files whose stream names
are upper-case; Word and Excel documents saved as XML; text boxes on a spreadsheet.

Fixtures: ``fixtures/outside`` (copied from Apache Tika's test documents, Apache-2.0; sources
in ``fixtures/README.md``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect, parse_document
from agrag_pipeline.parsing.detect import detect_media_type
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.libreoffice import _converter_output
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline_tests.parsing.parsed_support import parse_checked, table_cells, tables

FIXTURES = Path(__file__).parents[1] / "fixtures" / "outside"
HEAD = 8 * 1024  # what the raw-root scan reads


def _raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _rows(parsed) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return [row for table in tables(parsed) for row in table_cells(parsed, table)]


# --- ZIP archives ------------------------------------------------------------------------------


def test_a_zip_with_names_in_a_chinese_code_page_is_read_not_refused_as_a_bomb() -> None:
    # Written on Chinese Windows: GBK names without the UTF-8 flag. Their UTF-8 length was
    # taken for the stored length, so the members "overlapped" and the file was a "zip bomb".
    parsed = parse_document(_raw("gbk.zip"), "mail/gbk.zip")
    assert "审计压缩包文件检索测试/集团邮件审计系统2021年自动巡检需求文档_V4.0.doc (0 bytes)" in (
        parsed.text_layer
    )


def test_zip_member_names_in_shift_jis_are_read_in_their_code_page() -> None:
    parsed = parse_document(_raw("testZipEntryNameCharsetShiftSJIS.zip"), "ja.zip")
    assert "文章1.txt (24 bytes)" in parsed.text_layer
    assert "文章2.txt (24 bytes)" in parsed.text_layer


def test_an_encrypted_member_is_left_out_alone_and_the_other_members_are_read(
    tmp_path: Path,
) -> None:
    parsed = parse_document(_raw("testZipEncrypted.zip"), "box/enc.zip")
    lines = parsed.text_layer.splitlines()
    assert "unencrypted.txt (13 bytes)" in lines
    assert "encrypted.txt (22 bytes): not read, it is encrypted (password-protected)" in lines
    # As the scan reads a user's folder: the readable member is a document, the other named.
    shutil.copy(FIXTURES / "testZipEncrypted.zip", tmp_path / "enc.zip")
    scan = scan_raw_root(tmp_path)
    assert scan.keys == ["enc.zip", "enc.zip/.members/unencrypted.txt"]
    assert [(p.name, p.reason) for p in scan.skipped] == [
        (
            "enc.zip/.members/encrypted.txt",
            "ZIP member 'encrypted.txt' is encrypted (password-protected)",
        )
    ]


def test_one_part_of_a_split_zip_is_refused_saying_it_needs_the_other_parts() -> None:
    with pytest.raises(CorruptDocumentError, match=r"docs\.zip: one part of a split"):
        parse_document(_raw("test-documents-spanned.zip"), "docs.zip")


# --- legacy Office -----------------------------------------------------------------------------


def test_a_word_file_whose_stream_names_are_upper_case_is_read() -> None:
    # [MS-CFB]: names compare case-insensitively; this file names its stream "WORDDOCUMENT".
    parsed = parse_checked(_raw("simple_upper_case.doc"), "upper.doc")
    assert parsed.text_layer.strip() == "This is a sample Word document"


def test_converter_noise_is_not_quoted_as_the_reason_a_file_was_not_read() -> None:
    log = (
        "Warning: failed to launch javaldx - java may not function correctly\n"
        "Error: source file could not be loaded\n"
    )
    assert _converter_output(log) == "Error: source file could not be loaded"


# --- Office documents saved as XML ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key", "expected"),
    [
        ("testWORDML_tableInsideParagraph.doc", "a.doc", detect.WORD_2003_XML),
        ("testWORDML_tableInsideParagraph.doc", "a.xml", detect.WORD_2003_XML),
        ("testEXCEL2003.xml", "b.xml", detect.EXCEL_2003_XML),
        ("testEXCEL2003.xml", "b.xls", detect.EXCEL_2003_XML),
        ("testWORD_2006ml_reduced.xml", "c.xml", detect.FLAT_OPC),
    ],
)
def test_office_documents_saved_as_xml_are_detected_as_such(
    name: str, key: str, expected: str
) -> None:
    assert detect_media_type(key, _raw(name)[:HEAD]) == expected


def test_a_word_2003_xml_document_behind_doc_is_read_as_a_word_document() -> None:
    parsed = parse_checked(_raw("testWORDML_tableInsideParagraph.doc"), "t.doc")
    assert ["Some Data", "Second column", "Third"] in _rows(parsed)
    assert "tic-tac-toe" in parsed.text_layer
    assert "w:wordDocument" not in parsed.text_layer and "@" not in parsed.text_layer


def test_an_excel_2003_xml_spreadsheet_is_read_as_a_workbook_not_as_its_markup() -> None:
    parsed = parse_checked(_raw("testEXCEL2003.xml"), "sheet.xml")
    assert ["Col1", "Col2", "Col3", "Col4"] in _rows(parsed)
    assert ["string", "1", "1.1", "2016-04-27"] in _rows(parsed)
    assert "DocumentProperties" not in parsed.text_layer  # no metadata or styles as text
    assert "Styles" not in parsed.text_layer


def test_a_word_document_saved_as_flat_xml_reads_as_the_same_document_as_docx() -> None:
    parsed = parse_checked(_raw("testWORD_2006ml_reduced.xml"), "flat.xml")
    text = parsed.text_layer
    for expected in (
        "The quick brown fox jumped over the lazy brown dog.",
        "This is a text box",
        "This is a hyperlink: tika",
        "1. this is a basic list 1.",
    ):
        assert expected in text
    assert "pkg:" not in text and "@contentType" not in text
    assert parsed.document.metadata["flat_opc"] == "a Word package saved as one XML file"


# --- spreadsheets --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["testEXCEL_textbox.xlsx", "testEXCEL_textbox.xls"])
def test_a_text_box_on_a_sheet_is_read(name: str) -> None:
    # The sheet holds no cell, only a text box: it read as a workbook without text.
    parsed = parse_checked(_raw(name), name)
    assert "this is some autoshape text" in parsed.text_layer


def test_a_web_page_saved_as_doc_or_xls_is_read_as_html() -> None:
    # Report exporters and "Save as Web Page" write HTML behind .doc and .xls; Word and Excel
    # open them. It was refused: "not a Word 97-2003 document (no OLE compound file signature)".
    page = (FIXTURES.parent / "html_docs" / "javadoc_pond.html").read_bytes()
    assert detect_media_type("report.doc", page[:HEAD]) == detect.HTML
    assert detect_media_type("report.xls", page[:HEAD]) == detect.HTML
    parsed = parse_checked(page, "report.doc")
    assert parsed.document.media_type == detect.HTML
    assert "Pond" in parsed.text_layer


def test_a_converted_file_without_text_is_named_as_what_it_is_not_as_a_word_document() -> None:
    with pytest.raises(
        EmptyDocumentError, match=r"blank\.rtf: An RTF document in which no text was found \(after"
    ):
        parse_document(b"{\\rtf1\\ansi }", "blank.rtf")


def test_an_epub_zipped_by_a_general_tool_is_still_an_epub() -> None:
    # Zipped as a folder is ("zip -r"): chapters first, META-INF/ and mimetype last, past the
    # bytes the scan reads (Tika's testEPUB_multi-metadata-vals.epub is so): it was skipped as
    # "a zip archive with extension '.epub', which no parser reads".
    import io
    import zipfile

    original = (FIXTURES.parent / "epub" / "winter-sports.epub").read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(original)) as source, zipfile.ZipFile(buffer, "w") as out:
        for info in reversed(source.infolist()):
            out.writestr(info.filename, source.read(info), zipfile.ZIP_DEFLATED)
    rezipped = buffer.getvalue()
    assert b"META-INF/container.xml" not in rezipped[:HEAD]
    assert detect_media_type("book.epub", rezipped[:HEAD]) == detect.EPUB
    same = parse_document(original, "book.epub").text_layer
    assert parse_checked(rezipped, "book.epub").text_layer == same


# --- PDF ---------------------------------------------------------------------------------------


def test_thai_vowel_and_tone_marks_stay_in_their_word() -> None:
    # A Thai exam page (pdf.js's issue13211.pdf): marks drawn back over their letter had a
    # space put before or after them ("ต ั้ ง", "ข ้อ"), splitting the words they belong to.
    import re

    text = parse_checked(_raw("thai_marks_pdfjs_issue13211.pdf"), "thai.pdf").text_layer
    assert "ตั้งฉาก" in text and "ข้อใด" in text and "ที่มีค่า" in text
    marks = "\u0e31\u0e34-\u0e3a\u0e47-\u0e4e"
    assert not re.search(f" [{marks}]|[{marks}] (?=[\u0e00-\u0e7f])", text)


def test_a_heading_deeper_than_six_levels_nests_as_level_six_not_a_crash() -> None:
    # Word has nine heading levels: Tika's testWORD_2003ml.xml, read as Word since this sweep,
    # parsed into a level-9 section, and the run failed it with a pydantic ValidationError
    # (Section.level <= 6) when the sections were stored.
    from agrag_pipeline.parsing.tree import HeadingMark, build_sections

    document = parse_document(b"placeholder\n", "deep.txt").document
    text = "Chapter\n\nDeep heading\n\nbody"
    sections = build_sections(
        text, document, [HeadingMark(0, 7, 1, "Chapter"), HeadingMark(9, 21, 9, "Deep heading")], []
    )
    assert [(s.level, s.heading) for s in sections if s.heading] == [
        (1, "Chapter"),
        (6, "Deep heading"),
    ]
    assert sections[-1].heading_path == ["Chapter", "Deep heading"]


# --- PDFs with damaged pages (the format corpus's hand-built PDFs, third sweep) -----------------


@pytest.mark.parametrize(
    ("name", "said"),
    [
        # The page tree counts 9 pages and holds 1; it lists 3 kids, the third no page.
        ("page_tree_wrong_count.pdf", "pages 2–9 could not be read and are left out"),
        ("page_tree_different_kids.pdf", "page 3 could not be read and is left out"),
    ],
)
def test_a_pdf_page_that_cannot_be_read_costs_that_page_not_the_document(
    name: str, said: str
) -> None:
    parsed = parse_checked(_raw(name), f"scans/{name}")
    assert parsed.text_layer.startswith("Hello PDF-world!")
    assert any(warning.startswith(said) for warning in parsed.warnings), parsed.warnings


def test_pdf_pages_whose_boxes_show_nothing_are_read_by_the_boxes_a_viewer_uses() -> None:
    """pdf.js's ``boundingBox_invalid.pdf``: a media box ``[0 0 0 0]``, a crop box ``[0 0 0 0]``
    and one outside the media box. PDFium measured each page as showing nothing, every
    character was left out as off the page, and OCR's rendering failed the whole document
    ("Crop exceeds page dimensions"). Each page now reads as pdf.js shows it."""
    parsed = parse_checked((FIXTURES / "pdfjs_empty_page_boxes.pdf").read_bytes(), "boxes.pdf")
    assert parsed.text_layer.split("\n\n") == [
        "Empty /MediaBox",
        "Empty /CropBox",
        "Empty /CropBox and /MediaBox intersection",
    ]
    assert parsed.warnings[:3] == [
        "page 1: its media box is empty: read as US Letter; its crop box shows nothing of it: "
        "read by its media box",
        "page 2: its crop box shows nothing of it: read by its media box",
        "page 3: its crop box shows nothing of it: read by its media box",
    ]
