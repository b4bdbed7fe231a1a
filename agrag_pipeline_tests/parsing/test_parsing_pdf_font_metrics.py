"""A font's own ascent and descent stand in where PDFium invented them (``pdf_font_metrics``)."""

from __future__ import annotations

import ctypes
import io
from pathlib import Path

import pypdf
import pypdfium2
import pypdfium2.raw as pdfium_c
import pytest
from pypdf.generic import NameObject, NumberObject

from agrag_pipeline.parsing import pdf_font_metrics
from agrag_pipeline.parsing.pdf_font_metrics import FontMetrics

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _replaced(raw: bytes) -> dict[str, tuple[float, float] | None]:
    """Per font of the first page: what ``FontMetrics`` measures its characters by."""
    metrics = FontMetrics(raw)
    pdf = pypdfium2.PdfDocument(raw)
    found: dict[str, tuple[float, float] | None] = {}
    try:
        page = pdf[0]
        for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_TEXT]):
            font = pdfium_c.FPDFTextObj_GetFont(obj.raw)
            size = pdfium_c.FPDFFont_GetBaseFontName(font, None, 0)
            buffer = ctypes.create_string_buffer(size)
            pdfium_c.FPDFFont_GetBaseFontName(font, buffer, size)
            name = buffer.value.decode("latin-1")
            found[name] = metrics.replaced(font, name)
    finally:
        pdf.close()
    return found


def _with_descriptors(raw: bytes, ascent: int, descent: int) -> bytes:
    reader = pypdf.PdfReader(io.BytesIO(raw))
    writer = pypdf.PdfWriter(clone_from=reader)
    for page in writer.pages:
        for font in page["/Resources"]["/Font"].values():
            descriptor = font.get_object()["/FontDescriptor"].get_object()
            descriptor[NameObject("/Ascent")] = NumberObject(ascent)
            descriptor[NameObject("/Descent")] = NumberObject(descent)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_fonts_whose_descriptor_states_no_metrics_are_measured_by_their_own() -> None:
    # LibreOffice 7.4 writes /Ascent 0 /Descent 0: PDFium took Liberation Sans Bold's ascent
    # from whatever glyph its subset numbers 65 (0.69 em) and Liberation Serif's from its box
    # (1.28 em). The fonts' own horizontal headers say 0.905/-0.212 and 0.891/-0.216.
    found = _replaced((_FIXTURES / "sans_heads_serif_body.pdf").read_bytes())
    sans = next(v for k, v in found.items() if k.endswith("LiberationSans-Bold"))
    serif = next(v for k, v in found.items() if k.endswith("LiberationSerif"))
    assert sans == pytest.approx((0.905, -0.212), abs=0.001)
    assert serif == pytest.approx((0.891, -0.216), abs=0.001)


def test_a_descriptor_that_states_metrics_is_trusted_even_where_the_program_differs() -> None:
    # A subset may lose or recompute the tables a writer copied its descriptor from, so a
    # descriptor's own figures stand (PDFium measures by them), whatever the program says.
    raw = _with_descriptors((_FIXTURES / "sans_heads_serif_body.pdf").read_bytes(), 800, -200)
    assert set(_replaced(raw).values()) == {None}


@pytest.mark.parametrize("name", ["latex_book.pdf", "unicode_cid_pl_zh.pdf"])
def test_fonts_of_a_pdf_with_true_metrics_keep_pdfiums(name: str) -> None:
    # pdfTeX's Type 1 fonts (no tables to read), a TrueType CID font with a full descriptor.
    found = _replaced((_FIXTURES / name).read_bytes())
    assert found and set(found.values()) == {None}


@pytest.mark.parametrize("name", ["sans_heads_serif_body.pdf", "word_equations.pdf"])
def test_descriptors_read_from_the_bytes_agree_with_pdfminers_reading(name: str) -> None:
    # A file of plain objects is read by a look at its descriptors; one with object streams
    # by pdfminer. Both name the same fonts (with and without their subset prefix).
    raw = (_FIXTURES / name).read_bytes()
    assert b"/ObjStm" not in raw
    from_bytes = pdf_font_metrics._fonts_stating_no_metrics(raw)
    assert from_bytes == pdf_font_metrics._fonts_stating_no_metrics_by_pdfminer(raw)
    assert "LiberationSerif" in from_bytes
