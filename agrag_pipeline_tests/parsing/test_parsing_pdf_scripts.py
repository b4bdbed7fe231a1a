"""PDF text in scripts with their own typography: Arabic justified with tatweel (kashida)
strokes, and Japanese written vertically.

Fixtures (``fixtures/README.md``): ``arabic_tatweel.pdf`` is LibreOffice's PDF export of
``arabic_tatweel.html`` (the Universal Declaration of Human Rights' Arabic title and first
article, lengthened with tatweel as Arabic titles are typeset, and a Hijri year "1368هـ"), and a
justified second article; ``arabic_justified.pdf`` the same export of ``arabic_justified.html``,
the first two articles justified with no tatweel typed;
``vertical_ja.pdf`` is LibreOffice's PDF export of ``vertical_ja.fodt``, a page set in vertical
writing (``style:writing-mode="tb-rl"``, Noto Serif CJK JP): the opening of Natsume Soseki's
"I Am a Cat" (1905, in the public domain).
"""

from __future__ import annotations

from pathlib import Path

from parsed_support import parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TATWEEL = "\u0640"
SOSEKI = (
    "吾輩は猫である。名前はまだ無い。"
    "どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは"
    "記憶している。吾輩はここで始めて人間というものを見た。しかもあとで聞くとそれは書生という"
    "人間中で一番獰悪な種族であったそうだ。"
)


def test_arabic_tatweel_strokes_are_dropped_and_keep_the_spaces_between_words() -> None:
    parsed = parse_checked((FIXTURES / "arabic_tatweel.pdf").read_bytes(), "udhr_ar.pdf")
    text = parsed.text_layer
    assert TATWEEL not in text
    words = [w.strip("،.:") for w in text.split()]
    # The lengthened title reads as its words, as a search for them finds them.
    assert words[:4] == ["الإعلان", "العالمي", "لحقوق", "الإنسان"]
    for word in ("المادة", "يولد", "جميع", "الناس", "متساوين", "في", "الكرامة", "والحقوق"):
        assert word in words, word
    # A stroke that ends a word ("1368هـ", the Hijri year) leaves the space after it.
    assert "ه بقرار" in text
    # Article 2, justified: LibreOffice lengthens words with kashida (U+0640) to fill lines.
    for word in ("والحريات", "الواردة", "هذا", "تمييز", "الدين", "السياسي", "الأصل", "الوطني"):
        assert word in words, word
    assert parsed.document.metadata.get("language") == "ar"


def test_kashida_glyphs_without_a_unicode_map_are_not_read_as_exclamation_marks() -> None:
    # Justified Arabic with no tatweel typed anywhere: LibreOffice's kashida glyph has no
    # ToUnicode entry and PDFium reads its code as "!" ("يعام!ل" for "يعامل").
    parsed = parse_checked((FIXTURES / "arabic_justified.pdf").read_bytes(), "udhr_ar.pdf")
    text = parsed.text_layer
    assert "!" not in text and TATWEEL not in text
    words = [w.strip("،.:") for w in text.split()]
    for word in ("يعامل", "بعضهم", "والحريات", "الواردة", "هذا", "تمييز", "بسبب", "العنصر"):
        assert word in words, word


def test_vertical_japanese_reads_down_each_column_and_columns_right_to_left() -> None:
    raw = (FIXTURES / "vertical_ja.pdf").read_bytes()
    parsed = parse_checked(raw, "neko.pdf")
    text = parsed.text_layer
    # Each column is a line; the lines in the order the columns are read.
    assert "".join(text.split()) == SOSEKI
    assert text.split("\n")[0] == "吾輩は猫である。名前はまだ無い。"
    # Boxes on the page: a column is a tall narrow strip, the first one at the right.
    boxes = [box for section in parsed.sections for box in section.boxes]
    assert boxes
    first = boxes[0]
    assert first.y1 - first.y0 > 5 * (first.x1 - first.x0)
    page_width = 419.56  # A6 landscape, 14.8 cm
    assert first.x0 > 0.8 * page_width
    assert all(0 <= b.x0 < b.x1 <= page_width and b.y0 >= 0 for b in boxes)
