"""Which of a PDF page's characters are its text: a Type 3 font's glyphs read by their glyph
names, a letter beyond the BMP read whole, and nothing drawn outside the page's visible box.

Fixtures (``fixtures/README.md``, made by ``fixtures/make_pdf_text_fixtures.py``):
``matplotlib_type3_figure.pdf`` is a bar chart written by matplotlib 3.9.2 (Type 3 fonts with
glyph names and no ToUnicode map, as the figures of real papers are: BENCHMARKS.md, "Outside
documents"); ``spread_drawn_whole_on_each_page.pdf`` is a two-page spread drawn whole on each of
its pages by reportlab, the half of the other page off the page, as a real annual report is;
``math_letters.pdf`` is LibreOffice's PDF export of ``math_letters.html`` (math italic letters,
as Cambria Math sets them in real papers' figures).
"""

from __future__ import annotations

from pathlib import Path

from parsed_support import parse_checked

from agrag_pipeline.parsing import quality

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_type3_figure_text_without_tounicode_is_read_by_its_glyph_names() -> None:
    parsed = parse_checked((FIXTURES / "matplotlib_type3_figure.pdf").read_bytes(), "fig.pdf")
    text = parsed.text_layer
    # The bar values, in a font of digits only (they were all dropped as unmapped) ...
    assert "75.9" in text and "59.1" in text
    # ... and TeX's alpha at code 174, which PDFium alone reads as "®".
    assert "log([NII]/Hα)" in text and "®" not in text
    assert "Accuracy (%)" in text and "MMLU GPQA" in text
    assert parsed.document.metadata[quality.UNMAPPED_KEY] == 0
    assert not any("Unicode mapping" in w for w in parsed.warnings)


def test_a_letter_beyond_the_bmp_is_read_whole_not_dropped_as_two_surrogates() -> None:
    parsed = parse_checked((FIXTURES / "math_letters.pdf").read_bytes(), "math.pdf")
    text = parsed.text_layer
    assert "weight \U0001d44e of head \U0001d461 scales the value \U0001d421" in text
    assert "Each token \U0001d461 attends" in text
    assert parsed.document.metadata[quality.UNMAPPED_KEY] == 0


def test_text_drawn_outside_the_page_is_not_read() -> None:
    parsed = parse_checked(
        (FIXTURES / "spread_drawn_whole_on_each_page.pdf").read_bytes(), "report.pdf"
    )
    text = parsed.text_layer
    for line in ("Annual report 2024", "Revenue grew by twelve percent.", "Outlook"):
        assert text.count(line) == 1, line  # every line once, not once per page
    on_page: dict[int, str] = {}
    for span in parsed.layout:
        on_page[span.box.page] = on_page.get(span.box.page, "") + text[span.start : span.end]
    assert "Annual report" in on_page[1] and "Outlook" in on_page[2]
    assert "Outlook" not in on_page[1] and "Annual report" not in on_page[2]
    assert any("outside the page's visible box" in w for w in parsed.warnings)


def test_a_symbol_fonts_private_use_bullet_is_read_as_a_bullet() -> None:
    # Word and LibreOffice write a list's bullet as U+F0B7 in (Open)Symbol: read as nothing, a
    # bold item stood alone as a line and was taken for a heading.
    parsed = parse_checked((FIXTURES / "libreoffice_symbol_bullets.pdf").read_bytes(), "b.pdf")
    assert "• Italic bullet 1\n• Bold bullet 2\n• Underline bullet 3" in parsed.text_layer
    assert "Bold bullet 2" not in [s.heading for s in parsed.sections]
    assert not [w for w in parsed.warnings if "without a Unicode mapping" in w]


def test_a_latex_accent_drawn_over_its_letter_is_read_as_the_accented_letter() -> None:
    # LaTeX's default encoding (OT1) has no accented letters: "\'e" is "´" drawn over "e", which
    # read as two characters gave "Poincar´e" and "Cˇ ech", words no search or name matches;
    # "\l" is a stroke (a space to PDFium) drawn over "l", read "Micha l".
    parsed = parse_checked((FIXTURES / "latex_ot1_accents.pdf").read_bytes(), "accents.pdf")
    text = parsed.text_layer
    for word in (
        "Poincaré", "Gödel", "Kähler", "Erdős", "Čech", "Pašić", "Kraków", "crème", "brûlée",
        "à la", "España", "naïve", "garçon", "Português", "São", "Tomé",
        "Éric", "Ångström", "Östersund", "Álvaro", "Ávila", "Žižek", "Michał", "Wałbrzych",
    ):  # fmt: skip
        assert word in text, word
    assert not any(accent in text for accent in "´¨˝ˇ¸˚"), text
    # A caret, a backtick and a tilde in code stand beside their letters, on none of them.
    assert "x^2" in text and "‘ls‘" in text and "a~b" in text
    # Accents of mathematics stay on their letters (composed where Unicode has the letter).
    assert "C\u0303" in text and "x\u0302" in text and "\u0233" in text  # C̃, x̂, ȳ
