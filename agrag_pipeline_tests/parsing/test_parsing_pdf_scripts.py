"""PDF text in scripts with their own typography: Arabic justified with tatweel (kashida)
strokes, and Japanese written vertically.

Fixtures (``fixtures/README.md``): ``arabic_tatweel.pdf`` is LibreOffice's PDF export of
``arabic_tatweel.html`` (the Universal Declaration of Human Rights' Arabic title and first
article, lengthened with tatweel as Arabic titles are typeset, and a Hijri year "1368هـ").
"""

from __future__ import annotations

from pathlib import Path

from parsed_support import parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TATWEEL = "\u0640"


def test_arabic_tatweel_strokes_are_dropped_and_keep_the_spaces_between_words() -> None:
    parsed = parse_checked((FIXTURES / "arabic_tatweel.pdf").read_bytes(), "udhr_ar.pdf")
    text = parsed.text_layer
    assert TATWEEL not in text
    words = text.split()
    # The lengthened title reads as its words, as a search for them finds them.
    assert words[:4] == ["الإعلان", "العالمي", "لحقوق", "الإنسان"]
    for word in ("المادة", "يولد", "جميع", "الناس", "متساوين", "في", "الكرامة", "والحقوق"):
        assert word in words, word
    # A stroke that ends a word ("1368هـ", the Hijri year) leaves the space after it.
    assert "ه بقرار" in text
    assert parsed.document.metadata.get("language") == "ar"
