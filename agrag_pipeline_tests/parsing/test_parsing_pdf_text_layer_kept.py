"""A PDF whose text layer is right is read from it, never replaced by OCR (issue 20): text in
Unicode codes without a map, and a scanner's invisible text layer that reads well.

PDFium flags a character "unmapped" (``FPDFText_HasUnicodeMapError``) whenever no ToUnicode
map or encoding gave it and it took the character code instead. Generators that write Unicode
text with ``Identity-H`` fonts whose codes are the code points, and no ToUnicode map (as TCPDF
does), give correct Polish and Chinese that way: counted unmapped, such a page went to English
OCR ("Wartość płatności Łódź" -> "Wartosé ptatnosci t6dz", Chinese -> "Jk#&"). Codes that are
glyph ids are still no text. Fixtures: ``fixtures/make_unicode_cid_pdf.py`` (real embedded font
subsets, DejaVu Sans and Droid Sans Fallback; the Chinese is CPython's test data).
"""

from __future__ import annotations

from pathlib import Path

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.pdf_fonts import pdf_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
POLISH = " ".join((FIXTURES / "invoice_pl.txt").read_text("utf-8").split())
CHINESE = "这种语言具有非常简捷而清晰的语法特点"


def _words(text: str) -> str:
    return " ".join(text.split())


def test_pdf_text_in_unicode_codes_without_a_map_is_read_from_the_page_not_by_ocr() -> None:
    raw = (FIXTURES / "unicode_cid_pl_zh.pdf").read_bytes()
    parsed = parse_document(raw, "faktura.pdf")
    assert contract_violations(parsed) == []
    assert not any("OCR" in w for w in parsed.warnings), parsed.warnings
    assert parsed.document.metadata["unmapped_glyphs"] == 0
    text = _words(parsed.text_layer)
    assert POLISH in text
    assert "Wartość płatności: 12 450,00 zł" in text and "Łódź" in text
    assert CHINESE in parsed.text_layer.replace("\n", "")
    assert parsed.document.metadata["language"] == "pl+zh"
    # The same invoice with codes that are the font's glyph ids: as characters they are
    # control codes and punctuation ("(01.+."), never text, and the page is OCR's to read.
    raw = (FIXTURES / "glyph_id_cid_pl.pdf").read_bytes()
    scanned = parse_document(raw, "faktura.pdf")
    assert contract_violations(scanned) == []
    assert any("text by OCR" in w for w in scanned.warnings), scanned.warnings
    assert "(01.+." not in scanned.text_layer
    assert "Faktura VAT" in scanned.text_layer


# -- an invisible text layer over a scan (a scanner's OCR) -------------------------------------


def _escape(text: str) -> bytes:
    raw = text.encode("cp1252", "replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _scan_with_invisible_text(
    corpus_dir: Path, lines: list[str] | None = None
) -> tuple[bytes, list[str]]:
    """The handbook's first page as a 100-dpi greyscale scan (JPEG) with an invisible text layer
    (render mode 3) of ``lines``, by default the words the page shows, line by line."""
    import io

    import pypdfium2

    source = corpus_dir / "pdf" / "amt_handbook_sample.pdf"
    pdf = pypdfium2.PdfDocument(source)
    try:
        page = pdf[0]
        width, height = page.get_size()
        image = page.render(scale=100 / 72, grayscale=True).to_pil()
        shown = page.get_textpage().get_text_range().splitlines()
    finally:
        pdf.close()
    lines = lines if lines is not None else [line.strip() for line in shown if line.strip()][:40]
    jpeg = io.BytesIO()
    image.save(jpeg, "JPEG", quality=80)
    text = b"BT 3 Tr /F1 9 Tf 11 TL 40 %.1f Td " % (height - 40)
    text += b" ".join(b"(" + _escape(line) + b") Tj T*" for line in lines) + b" ET"
    content = b"q %.1f 0 0 %.1f 0 0 cm /Im1 Do Q " % (width, height) + text
    image_data = jpeg.getvalue()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.1f %.1f] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> >>" % (width, height),
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n"
        % (image.width, image.height, len(image_data))
        + image_data
        + b"\nendstream",
    ]
    return pdf_file(objects), lines


def test_a_scanners_text_layer_that_reads_well_is_kept_and_one_that_does_not_is_read_again(
    corpus_dir: Path,
) -> None:
    raw, lines = _scan_with_invisible_text(corpus_dir)
    parsed = parse_document(raw, "scan.pdf")
    assert contract_violations(parsed) == []
    assert not any("OCR" in w for w in parsed.warnings), parsed.warnings
    assert _words(" ".join(lines[:5])) in _words(parsed.text_layer)
    # A layer whose letters are shifted by one, as a wrong font encoding gives ("Uif" for
    # "The"), is no reading: the page is read again by OCR.
    shifted = ["".join(chr(ord(c) + 1) if c.isalpha() else c for c in line) for line in lines]
    raw, _ = _scan_with_invisible_text(corpus_dir, shifted)
    reread = parse_document(raw, "scan.pdf")
    assert any("text by OCR" in w for w in reread.warnings), reread.warnings
    assert shifted[0] not in reread.text_layer
