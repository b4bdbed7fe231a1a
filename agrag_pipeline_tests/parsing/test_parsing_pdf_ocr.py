"""Scanned PDFs: pages without a text layer are read by OCR and keep pages and boxes.

Needs Tesseract (Debian ``tesseract-ocr``, installed by ``bin/setup``); about a second a page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.errors import EmptyDocumentError
from agrag_pipeline.settings import OcrSettings, ParsingSettings

REFERENCE = "Docling bundles PDF document conversion to JSON and Markdown in an easy self contained"


@pytest.mark.parametrize("name", ["ocr_test.pdf", "ocr_test_rotated_90.pdf"])
def test_scanned_page_is_read_by_ocr_with_page_boxes(name: str, corpus_dir: Path) -> None:
    key = f"ocr/{name}"
    parsed = parse_document((corpus_dir / key).read_bytes(), key)
    assert contract_violations(parsed) == []
    assert REFERENCE in " ".join(parsed.text_layer.split())
    assert "text by OCR (tesseract) on page 1" in parsed.warnings
    (section,) = parsed.sections
    assert section.pages == [1] and section.boxes
    for span in parsed.layout:  # every line has a box on the page, in points
        assert span.box.page == 1 and 0 <= span.box.x0 < span.box.x1 <= 612


def test_scan_with_ocr_turned_off_fails_with_the_reason(corpus_dir: Path) -> None:
    key = "ocr/ocr_test.pdf"
    off = ParsingSettings(ocr=OcrSettings(enabled=False))
    with pytest.raises(
        EmptyDocumentError, match=r"ocr/ocr_test.pdf: no text layer on page 1 and OCR is turned off"
    ):
        parse_document((corpus_dir / key).read_bytes(), key, parsing=off)


def test_invisible_text_without_an_image_is_kept_as_text(corpus_dir: Path) -> None:
    key = "pdf/invisible_text_layer.pdf"
    parsed = parse_document((corpus_dir / key).read_bytes(), key)
    lines = [line for line in parsed.text_layer.splitlines() if line]
    assert lines == ["Visible heading line", "Invisible OCR text layer"]
