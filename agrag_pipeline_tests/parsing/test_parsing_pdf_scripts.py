"""PDF text in scripts with their own typography: Arabic justified with tatweel (kashida)
strokes, and Japanese written vertically.

Fixtures (``fixtures/README.md``): ``arabic_tatweel.pdf`` is LibreOffice's PDF export of
``arabic_tatweel.html`` (the Universal Declaration of Human Rights' Arabic title and first
article, lengthened with tatweel as Arabic titles are typeset, and a Hijri year "1368هـ"), and a
justified second article; ``arabic_justified.pdf`` the same export of ``arabic_justified.html``,
the first two articles justified with no tatweel typed;
``vertical_ja.pdf`` is LibreOffice's PDF export of ``vertical_ja.fodt``, a page set in vertical
writing (``style:writing-mode="tb-rl"``, Noto Serif CJK JP): the opening of Natsume Soseki's
"I Am a Cat" (1905, in the public domain); ``vertical_cell_ja.pdf`` the same export of
``vertical_cell_ja.fodt``, that text written across with a table whose first cell is set
vertically. The CJK samples in fonts the file does not embed are
written by ``pdf_fonts.cjk_sample_pdf`` (the way pTeX and older Acrobat wrote them; real files of
the kind, measured in BENCHMARKS.md, are not ours to commit).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from parsed_support import parse_checked

from agrag_pipeline.parsing import pdf_fonts, quality

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


def test_a_space_drawn_after_a_mark_over_its_letter_parts_the_words() -> None:
    # "عقلاً وضميرا": the tanween is drawn back over the alef, then a space glyph. Measured by
    # Noto Naskh Arabic's own line height (1.7 em: its fonts state no metrics, so the font's
    # own stand in), the justified gap after the alef is narrower than a word gap; the space
    # glyph the page draws parts the words.
    parsed = parse_checked((FIXTURES / "arabic_justified.pdf").read_bytes(), "udhr_ar.pdf")
    assert "عقلاً وضميرا" in parsed.text_layer


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


def test_japanese_set_vertically_on_a_page_written_across_reads_down_its_columns() -> None:
    # A Japanese page written across, with a cell set vertically (tb-rl) beside a cell of text
    # and a form whose header cells are set so: read across, each character of a vertical cell
    # was a line of its own, put into the lines beside it ("夏吾輩は猫である。名前はま", "目"),
    # and a header cell of two columns read "欄 備 考".
    parsed = parse_checked((FIXTURES / "vertical_cell_ja.pdf").read_bytes(), "form.pdf")
    title = "夏目漱石「吾輩は猫である」冒頭の一節と著者の住所録"
    lines = [line for line in parsed.text_layer.split("\n") if line.strip()]
    assert "夏目漱石の小説より" in lines
    across = "".join(line for line in lines if line != "夏目漱石の小説より" and "|" not in line)
    assert not set("漱") & set(across.removeprefix(title[:4]))
    opening = "吾輩は猫である。名前はまだ無い。"
    assert "".join(across.split()) == title + opening + SOSEKI + SOSEKI[len(opening) :] + "住所録"
    # The title, wrapped over two lines, is one heading with no space where it wrapped.
    assert [s.heading for s in parsed.sections if s.heading] == [title]
    # The form: each header cell read down its columns, right to left; a cell's lines joined
    # with no space where the text wrapped ("漱石", "代表作に").
    (table,) = [section for section in parsed.sections if section.kind == "table"]
    rows = parsed.text_layer[table.start : table.end].split("\n")
    assert rows == [
        "| 氏名 | 夏目金之助（筆名 漱石）、一八六七年生まれ。 |",
        "| - | - |",
        "| 備考欄 | 小説家、英文学者。代表作に吾輩は猫であるがある。 |",
        "| 住所 | 東京都新宿区早稲田南町七番地。 |",
    ]


# -- CJK fonts the file does not embed ----------------------------------------------------------

LATIN_LINE = "Minutes of the meeting"
#: A process that hides this machine's fonts from PDFium (a mount namespace with an empty folder
#: over /usr/share/fonts, where PDFium looks for them), parses the sample PDFs and prints what
#: the parse said: the machine a user runs without CJK fonts, made for real.
_WITHOUT_FONTS = """
import json, re, sys
from agrag_pipeline.parsing import parse_document, pdf_fonts
from agrag_pipeline.parsing.errors import EmptyDocumentError


def with_unreadable_font(raw):
    # One more run, in a Type0 font whose /DescendantFonts is a reference where the format
    # wants an array: PDFium reads past it, pdfminer stops at an assertion.
    objects = [body for body in re.findall(rb"\\d+ 0 obj\\n(.*?)\\nendobj", raw, re.S)]
    stream = re.search(rb"stream\\n(.*)\\nendstream", objects[4], re.S).group(1)
    stream += b" BT /F3 12 Tf 72 600 Td <0041> Tj ET"
    objects[4] = b"<< /Length %d >>\\nstream\\n%s\\nendstream" % (len(stream), stream)
    objects[2] = objects[2].replace(b"/F2 8 0 R", b"/F2 8 0 R /F3 9 0 R")
    objects.append(objects[3].replace(b"[6 0 R]", b"6 0 R"))
    return pdf_fonts.pdf_file(objects)


out = {"sets": pdf_fonts.sets_vertical_cjk()}
mixed = parse_document(pdf_fonts.cjk_sample_pdf(*pdf_fonts.SAMPLES[0], latin=sys.argv[1]), "m.pdf")
out["text"] = mixed.text_layer
out["warnings"] = mixed.warnings
out["metadata"] = {
    k: v for k, v in mixed.document.metadata.items() if isinstance(v, (str, int, float))
}
try:
    parse_document(pdf_fonts.cjk_sample_pdf(*pdf_fonts.SAMPLES[2]), "v.pdf")
    out["error"] = None
except EmptyDocumentError as exc:
    out["error"] = str(exc)
raw = with_unreadable_font(pdf_fonts.cjk_sample_pdf(*pdf_fonts.SAMPLES[0], latin=sys.argv[1]))
uncounted = parse_document(raw, "u.pdf")
out["uncounted"] = {"text": uncounted.text_layer, "warnings": uncounted.warnings}
print(json.dumps(out))
"""


@pytest.mark.parametrize("sample", pdf_fonts.SAMPLES, ids=lambda s: f"{s[1]}-{s[2]}")
def test_cjk_text_in_a_font_the_file_does_not_embed_is_read_with_the_installed_fonts(
    sample: tuple[str, str, str, str, int, str],
) -> None:
    # bin/setup installs Noto CJK: PDFium sets vertical Japanese, Chinese and Korean in it.
    assert pdf_fonts.sets_vertical_cjk()
    raw = pdf_fonts.cjk_sample_pdf(*sample, latin=LATIN_LINE)
    parsed = parse_checked(raw, "gazette.pdf")
    assert "".join(parsed.text_layer.split()) == "".join(LATIN_LINE.split()) + sample[0]
    assert not any("missing" in w for w in parsed.warnings)
    assert quality.UNSET_KEY not in parsed.document.metadata


def test_cjk_text_lost_for_want_of_a_font_is_named_and_scored_or_named_uncounted(
    tmp_path: Path,
) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("hiding the fonts needs root and unshare: nothing to prove here")
    if subprocess.run([unshare, "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("this machine allows no mount namespace (unshare -m): nothing to prove")
    empty = tmp_path / "no-fonts"
    empty.mkdir()
    script = tmp_path / "parse_without_fonts.py"
    script.write_text(_WITHOUT_FONTS)
    hide_fonts = 'mount --bind "$0" /usr/share/fonts && exec "$@"'
    done = subprocess.run(
        [
            unshare,
            "-m",
            "sh",
            "-c",
            hide_fonts,
            str(empty),
            sys.executable,
            str(script),
            LATIN_LINE,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["sets"] is False  # the fonts are hidden from PDFium indeed
    # The Latin line is read; the vertical Japanese after it is not, and the parse says so,
    # naming the font and what to install, and the score counts the 8 characters lost.
    assert "".join(seen["text"].split()) == "".join(LATIN_LINE.split())
    (warning,) = [w for w in seen["warnings"] if "missing" in w]
    assert "8 CJK characters on page 1" in warning and "Ryumin-Light" in warning
    assert "fonts-noto-cjk" in warning
    assert seen["metadata"][quality.UNSET_KEY] == 8
    assert float(seen["metadata"]["reading_quality"]) < 0.8
    assert "fonts the file does not embed" in seen["metadata"]["reading_quality_reasons"]
    # A page of nothing but such text: an error that names the cause, not "no text layer".
    assert seen["error"] is not None and "MSung-Light" in seen["error"]
    # A file pdfminer cannot read (PDFium can): the text PDFium gave is kept and the loss is
    # named, uncounted, instead of the whole document failing as corrupt.
    uncounted = seen["uncounted"]
    assert "".join(uncounted["text"].split()) == "".join(LATIN_LINE.split()) + "A"
    (warning,) = [w for w in uncounted["warnings"] if "missing" in w]
    assert "page 1 may be missing" in warning and "Ryumin-Light" in warning
    assert "pdfminer could not read" in warning and "AssertionError" in warning


def _japanese(text: str, cmap: str, tracking: float, adjustment: int = 0) -> str:
    raw = pdf_fonts.cjk_sample_pdf(
        text,
        "Ryumin-Light",
        cmap,
        "Japan1",
        2,
        "utf-16-be",
        tracking=tracking,
        adjustment=adjustment,
    )
    return parse_checked(raw, "spread.pdf").text_layer.strip()


@pytest.mark.parametrize("cmap", ["UniJIS-UCS2-H", "UniJIS-UCS2-V"])
def test_japanese_spread_by_tracking_reads_without_spaces_between_its_characters(
    cmap: str,
) -> None:
    # Justified CJK text is spread by adding space after each character (a quarter em here):
    # no word breaks, as Chinese and Japanese put none between words.
    assert _japanese("日本語の文章です", cmap, tracking=3) == "日本語の文章です"
    # Brackets' glyphs sit in one half of their em; the empty half is no gap either.
    assert _japanese("法律（平成十九年）の施行", cmap, tracking=2) == "法律（平成十九年）の施行"


@pytest.mark.parametrize("adjustment", [300, 400])
def test_japanese_spread_by_tj_adjustments_reads_without_the_spaces_pdfium_puts_there(
    adjustment: int,
) -> None:
    # Word and InDesign justify a CJK line by moving each next character along in a TJ array;
    # PDFium puts a space (with no width) at each such move, which is not one the page draws.
    text = "日本語の文章です"
    assert _japanese(text, "UniJIS-UCS2-H", tracking=0, adjustment=adjustment) == text
    # Past half an em the gap is a space, drawn or not.
    spaced = _japanese(text, "UniJIS-UCS2-H", tracking=0, adjustment=600)
    assert spaced == " ".join(text)


def test_a_space_the_page_draws_between_japanese_names_is_kept() -> None:
    # Family and given name parted by a space glyph the page draws, spread or not.
    assert _japanese("新山 祐介", "UniJIS-UCS2-H", tracking=0) == "新山 祐介"
    assert _japanese("新山 祐介", "UniJIS-UCS2-H", tracking=3) == "新山 祐介"
    assert _japanese("新山 祐介", "UniJIS-UCS2-H", tracking=0, adjustment=100) == "新山 祐介"
