"""A PDF whose text layer is right is read from it, never replaced by OCR (issue 20).

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
