"""OCR reads a page in its own script and language where Tesseract has it installed
(``OcrSettings.auto_languages``, issue 20): real scans of Chinese, Japanese, Arabic and Polish
text, read with the default settings (``languages: [eng]``), come out in their script.

The scans: ``fixtures/scan_zh.png`` and ``scan_ja.png`` (``fixtures/make_cjk_scans.py``: CPython's
Chinese and Japanese test texts in Noto Sans CJK), the corpus's Arabic PDF page rendered as a
scan, and the Polish invoice whose codes are glyph ids (only OCR can read it). bin/setup installs
the languages (Debian's tesseract-ocr-chi-sim, -jpn, -ara, -pol, ...).
"""

from __future__ import annotations

import io
import unicodedata
from pathlib import Path

import pypdfium2

from agrag_pipeline.parsing import ParsedDocument, ocr, parse_document
from agrag_pipeline.settings import OcrSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _share(text: str, script: str) -> float:
    """The share of ``text``'s letters whose Unicode name starts with ``script``."""
    letters = [c for c in text if c.isalpha()]
    return sum(unicodedata.name(c, "").startswith(script) for c in letters) / max(len(letters), 1)


def _languages(parsed: ParsedDocument) -> str:
    return str(parsed.document.metadata.get("ocr_languages", ""))


def test_a_chinese_scan_is_read_in_chinese() -> None:
    parsed = parse_document((FIXTURES / "scan_zh.png").read_bytes(), "scan_zh.png")
    text = parsed.text_layer.replace("\n", "")
    assert _share(text, "CJK") >= 0.8, text
    assert "这种语言具有非常简捷而清晰的语法特点" in text
    assert " 语言 " not in parsed.text_layer  # no spaces between Chinese words
    assert _languages(parsed).startswith("chi_sim")


def test_a_japanese_scan_is_read_in_japanese() -> None:
    parsed = parse_document((FIXTURES / "scan_ja.png").read_bytes(), "scan_ja.png")
    text = parsed.text_layer.replace("\n", "")
    assert _share(text, "HIRAGANA") + _share(text, "KATAKANA") >= 0.3, text
    assert "プログラミング言語" in text and "開発" in text
    assert _languages(parsed).startswith("jpn")


def _arabic_scan(corpus_dir: Path) -> bytes:
    """The top third of the corpus's Arabic page as a 200-dpi scan."""
    pdf = pypdfium2.PdfDocument(corpus_dir / "pdf" / "right_to_left_01.pdf")
    try:
        image = pdf[0].render(scale=200 / 72, grayscale=True).to_pil()
    finally:
        pdf.close()
    out = io.BytesIO()
    image.crop((0, 0, image.width, image.height // 3)).save(out, "PNG", dpi=(200, 200))
    return out.getvalue()


def test_an_arabic_scan_is_read_in_arabic(corpus_dir: Path) -> None:
    parsed = parse_document(_arabic_scan(corpus_dir), "arabic.png")
    assert _share(parsed.text_layer, "ARABIC") >= 0.8, parsed.text_layer
    assert "البرمجة" in parsed.text_layer  # "programming", in the title and the text
    assert _languages(parsed).startswith("ara")
    assert not any("script" in w for w in parsed.warnings), parsed.warnings


def test_a_latin_page_in_another_installed_language_is_read_in_that_language() -> None:
    # English OCR reads the Polish invoice as "Wartosé ptatnosci t6dz": its words tell Polish,
    # and the page is read again with pol.
    raw = (FIXTURES / "glyph_id_cid_pl.pdf").read_bytes()
    parsed = parse_document(raw, "faktura.pdf")
    assert "Wartość płatności" in parsed.text_layer and "Łódź" in parsed.text_layer
    assert _languages(parsed).startswith("pol")
    assert parsed.document.metadata["language"] == "pl"


def test_an_english_page_is_read_once_in_english(corpus_dir: Path) -> None:
    parsed = parse_document((corpus_dir / "ocr" / "ocr_test.pdf").read_bytes(), "scan.pdf")
    assert parsed.text_layer.startswith("Docling bundles PDF document conversion")
    assert _languages(parsed) == "eng"


def test_auto_languages_off_reads_only_the_configured_languages(corpus_dir: Path) -> None:
    from agrag_pipeline.settings import ParsingSettings

    settings = ParsingSettings(ocr=OcrSettings(auto_languages=False))
    parsed = parse_document(_arabic_scan(corpus_dir), "arabic.png", parsing=settings)
    assert _share(parsed.text_layer, "ARABIC") < 0.2
    assert _languages(parsed) == "eng"
    assert any("Arabic script" in w and "tesseract-ocr-ara" in w for w in parsed.warnings)


def test_the_ocr_fingerprint_names_auto_languages_and_the_installed_data_it_may_use() -> None:
    auto = ocr.engine_fingerprint(OcrSettings())
    fixed = ocr.engine_fingerprint(OcrSettings(auto_languages=False))
    assert auto["auto_languages"] == "true" and fixed["auto_languages"] == "false"
    assert auto != fixed
    for code in ("chi_sim", "jpn", "ara", "pol"):
        assert len(auto[f"traineddata.{code}"]) == 64  # hashed: new data, new fingerprint
        assert f"traineddata.{code}" not in fixed
