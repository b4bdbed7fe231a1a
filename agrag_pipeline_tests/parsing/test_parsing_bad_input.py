"""Bad input: each gives a typed error naming the document and the problem, or the
documented empty result, in bounded time."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pypdf
import pytest

from agrag_pipeline.parsing import media_type_for, parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    EncodingError,
    ParseTimeoutError,
    UnsupportedFormatError,
)
from agrag_pipeline.parsing.pdf import parse as parse_pdf


def test_empty_file_is_an_empty_document_error() -> None:
    with pytest.raises(EmptyDocumentError, match=r"^notes/empty\.md: the file is empty"):
        parse_document(b"", "notes/empty.md")


@pytest.mark.parametrize(
    "name",
    [
        "scan.pdf",
        "scan.png",
        "photo.jpg",
        "photo.jpeg",
        "fax.tif",
        "fax.tiff",
        "scan.webp",
        "scan.bmp",
        "scan.gif",
        "report.docx",
        "report.docm",
        "slides.pptx",
        "slides.pptm",
        "sheet.xlsx",
        "sheet.xlsm",
        "table.csv",
        "table.tsv",
        "article.nxml",
        "page.html",
        "notes.txt",
    ],
)
def test_a_zero_byte_file_of_any_format_is_called_empty(name: str) -> None:
    key = f"empty/{name}"
    with pytest.raises(EmptyDocumentError) as caught:
        parse_document(b"", key)
    assert str(caught.value) == f"{key}: the file is empty (0 bytes)"


def _image_bytes(fmt: str) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 32), "white").save(out, fmt)
    return out.getvalue()


_DAMAGED_IMAGES: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("text.png", lambda raw: b"hello, not an image at all"),
    ("flipped-header.png", lambda raw: raw[:16] + bytes(b ^ 0xFF for b in raw[16:32])),
    ("sixteen-bytes.tif", lambda raw: raw[:16]),
    ("sixteen-bytes.gif", lambda raw: raw[:16]),
    ("garbage.webp", lambda raw: b"RIFF\x00\x00\x00\x00WEBPjunk"),
    ("garbage.bmp", lambda raw: b"BM" + b"\x00" * 10),
    ("half.png", lambda raw: raw[: len(raw) // 2]),
    ("half.jpg", lambda raw: raw[: len(raw) // 2]),
]


@pytest.mark.parametrize(("name", "damage"), _DAMAGED_IMAGES, ids=[n for n, _ in _DAMAGED_IMAGES])
def test_a_corrupt_image_is_named_with_what_is_wrong_and_no_object_address(
    name: str, damage: Callable[[bytes], bytes]
) -> None:
    fmt = {"png": "PNG", "tif": "TIFF", "gif": "GIF", "webp": "WEBP", "bmp": "BMP", "jpg": "JPEG"}
    raw = damage(_image_bytes(fmt[name.rsplit(".", 1)[1]]))
    key = f"scans/{name}"
    with pytest.raises(CorruptDocumentError) as caught:
        parse_document(raw, key)
    message = str(caught.value)
    assert message.startswith(f"{key}: not a readable image (truncated or corrupt?): ")
    assert " object at 0x" not in message and "<_io." not in message, message
    assert len(message) > len(f"{key}: not a readable image (truncated or corrupt?): ") + 10


def test_whitespace_only_text_is_an_empty_document_error() -> None:
    with pytest.raises(EmptyDocumentError, match=r"blank.txt: the file holds only whitespace"):
        parse_document(b" \n\t\r\n ", "blank.txt")


def test_html_without_visible_text_is_an_empty_document_error() -> None:
    with pytest.raises(EmptyDocumentError, match=r"s.html: the HTML has no visible text"):
        parse_document(b"<html><script>var x = 1;</script><p>  </p></html>", "s.html")


def test_binary_bytes_behind_markdown_extension_are_refused() -> None:
    raw = b"# Title\n\x00\x01\x02\x89PNG"
    with pytest.raises(
        EncodingError, match=r"bin\.md: binary data, not text: NUL byte at byte offset 8"
    ):
        parse_document(raw, "bin.md")


def test_a_byte_order_mark_the_bytes_do_not_honour_names_the_offset() -> None:
    raw = b"\xef\xbb\xbf# Caf\xc3\xa9\n" + "résumé".encode("latin-1")
    with pytest.raises(EncodingError) as caught:
        parse_document(raw, "latin1.md")
    assert caught.value.source_key == "latin1.md"
    assert "not valid UTF-8 despite its byte-order mark: bad data at byte offset 12" in str(
        caught.value
    )


def test_unknown_extension_and_media_type_are_unsupported() -> None:
    with pytest.raises(UnsupportedFormatError, match=r"a\.dwg: no parser for extension '\.dwg'"):
        parse_document(b"\x00\x01\x02\x03binary", "a.dwg")
    with pytest.raises(UnsupportedFormatError, match=r"no parser for media type 'audio/mpeg'"):
        parse_document(b"ID3\x04", "a.md", "audio/mpeg")
    assert media_type_for("Dir/README.MD") == "text/markdown"
    assert media_type_for("page.htm") == "text/html"


def test_size_limit_is_checked_before_parsing() -> None:
    raw = b"# x\n" + b"a" * 60
    with pytest.raises(DocumentTooLargeError, match=r"big.md: 64 bytes is over the limit of 63"):
        parse_document(raw, "big.md", max_bytes=63)


def test_fifty_megabyte_markdown_is_refused_over_the_size_limit() -> None:
    raw = (b"# Heading\n\n" + b"word " * 200 + b"\n\n") * 52_000  # ~50 MB
    assert len(raw) > 50 * 1024 * 1024
    with pytest.raises(DocumentTooLargeError, match=r"huge.md"):
        parse_document(raw, "huge.md", max_bytes=32 * 1024 * 1024)


def test_a_megabyte_of_markdown_with_dense_sections_parses_in_full() -> None:
    block = "## Part\n\nSome *text* with `code` and é.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    raw = (block * 15_000).encode()  # ~1 MB, a section every 70 bytes: the worst case
    parsed = parse_document(raw, "big.md")
    assert len(parsed.sections) == 30_000  # each block: its heading section and its table
    assert contract_violations(parsed) == []


def test_html_nested_ten_thousand_levels_parses() -> None:
    raw = ("<div>" * 10_000 + "<h2>Deep</h2><p>bottom</p>" + "</div>" * 10_000).encode()
    parsed = parse_document(raw, "deep.html")
    assert [(s.heading, s.text_in(parsed.text_layer)) for s in parsed.sections] == [
        ("Deep", "Deep\n\nbottom")
    ]


def test_html_unclosed_nesting_and_deep_table_cells_parse() -> None:
    raw = ("<table><tr><td>first</td><td>" + "<span><b>" * 5_000 + "cell").encode()
    parsed = parse_document(raw, "deep-table.html")
    assert parsed.text_layer == "first | cell"
    assert [s.kind for s in parsed.sections] == ["table"]
    # A table of one cell is a frame, read as what it holds (the walk is iterative too).
    framed = parse_document(("<table><tr><td>" + "<span><b>" * 5_000 + "cell").encode(), "f.html")
    assert framed.text_layer == "cell"


def _corpus_pdf(corpus_dir: Path, name: str) -> bytes:
    return (corpus_dir / "pdf" / name).read_bytes()


def test_truncated_pdf_is_corrupt(corpus_dir: Path) -> None:
    raw = _corpus_pdf(corpus_dir, "multi_page.pdf")
    with pytest.raises(DocumentError) as caught:
        parse_document(raw[: len(raw) // 2], "cut.pdf")
    assert isinstance(caught.value, CorruptDocumentError)
    assert str(caught.value).startswith("cut.pdf: ")


def test_not_a_pdf_at_all_is_corrupt() -> None:
    with pytest.raises(CorruptDocumentError, match=r"^junk\.pdf: not a readable PDF"):
        parse_document(b"hello, I am not a PDF", "junk.pdf")


def test_encrypted_pdf_is_corrupt_and_says_so(corpus_dir: Path) -> None:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(_corpus_pdf(corpus_dir, "bookmark_sample.pdf")))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(CorruptDocumentError, match=r"locked.pdf: the PDF is encrypted"):
        parse_document(out.getvalue(), "locked.pdf")


def test_pdf_encrypted_with_empty_user_password_opens(corpus_dir: Path) -> None:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(_corpus_pdf(corpus_dir, "bookmark_sample.pdf")))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    parsed = parse_document(out.getvalue(), "owner-only.pdf")
    assert "PART I - DEFINITIONS" in [s.heading for s in parsed.sections]


def _blank_pdf(pages: int) -> bytes:
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_pdf_without_any_text_fails_with_the_reason_and_pages() -> None:
    from agrag_pipeline.settings import OcrSettings, ParsingSettings

    off = ParsingSettings(ocr=OcrSettings(enabled=False))
    with pytest.raises(
        EmptyDocumentError, match=r"scan.pdf: no text layer on pages 1–2 and OCR is turned off"
    ):
        parse_document(_blank_pdf(2), "scan.pdf", parsing=off)


def test_invisible_ocr_text_layer_is_text(corpus_dir: Path) -> None:
    parsed = parse_document(_corpus_pdf(corpus_dir, "invisible_text_layer.pdf"), "ocr.pdf")
    assert "Invisible OCR text layer" in parsed.text_layer
    assert parsed.sections and parsed.warnings == []


def test_pdf_page_limit_and_time_budget(corpus_dir: Path) -> None:
    from agrag_pipeline.models import Document

    raw = _corpus_pdf(corpus_dir, "multi_page.pdf")
    document = Document(
        source_key="m.pdf", media_type="application/pdf", size_bytes=len(raw), content_hash="0" * 64
    )
    with pytest.raises(DocumentTooLargeError, match=r"m.pdf: 5 pages is over the limit of 3"):
        parse_pdf(raw, document, max_pages=3)
    from agrag_pipeline.parsing.budget import Deadline, deadline_scope

    with (
        deadline_scope(Deadline("m.pdf", 1e-9)),
        pytest.raises(ParseTimeoutError, match=r"m.pdf: gave up after 1e-09 s .* at page 1"),
    ):
        parse_pdf(raw, document)
