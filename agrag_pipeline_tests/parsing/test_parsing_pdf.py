"""The PDF parser on PDFs written here, one layout feature each, and on the corpus PDFs.

The generated PDFs use the 14 standard fonts (no embedding): a few lines of PDF syntax per
case make the feature under test exact (a gutter, an overprint, a turned page, leader dots).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.pdf_fonts import pdf_file

# -- a minimal PDF writer ---------------------------------------------------------------------


@dataclass
class Text:
    x: float
    y: float  # baseline, from the page's bottom
    text: str
    size: float = 11.0
    #: F1 Helvetica, F2 Helvetica-Bold, F3 Times-Roman, F4 (see LIGATURES), F5 Helvetica-Oblique,
    #: F6 Courier-Bold
    font: str = "F1"
    mode: int = 0  # text render mode (3: invisible)
    angle: int = 0  # degrees counter-clockwise
    #: TJ array instead of a string: [("word", 0), ("next", -300)] (kerning in 1/1000 em)
    pieces: list[tuple[str, int]] | None = None
    tracking: float = 0.0  # points added after each character (``Tc``)


@dataclass
class Page:
    texts: list[Text] = field(default_factory=list)
    lines: list[tuple[float, float, float, float]] = field(default_factory=list)
    rotate: int = 0
    width: float = 612
    height: float = 792


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(page: Page) -> bytes:
    ops: list[str] = []
    for x0, y0, x1, y1 in page.lines:
        ops.append(f"0.8 w {x0} {y0} m {x1} {y1} l S")
    for t in page.texts:
        c = {0: (1, 0), 90: (0, 1), 180: (-1, 0), 270: (0, -1)}[t.angle]
        matrix = f"{c[0]} {c[1]} {-c[1]} {c[0]} {t.x} {t.y} Tm"
        if t.pieces is not None:
            body = "[" + " ".join(f"({_escape(s)}) {k}" for s, k in t.pieces) + "] TJ"
        else:
            body = f"({_escape(t.text)}) Tj"
        ops.append(f"BT /{t.font} {t.size} Tf {t.mode} Tr {t.tracking} Tc {matrix} {body} ET")
    return "\n".join(ops).encode("latin-1")


#: Font F4's one-glyph codes, the text each stands for, and its width: pdfTeX's OT1 ligatures,
#: and an Arabic word drawn as one glyph (a font subset that shaped it whole, as some do).
LIGATURES = {"\x0b": ("ff", 600), "\x0c": ("fi", 556), "\x0d": ("fl", 556)}
LIGATURES |= {"\x0e": ("ffi", 834), "\x0f": ("ffl", 834), "\x10": ("حَبيبي", 1800)}


def ligatures(text: str) -> str:
    """``text`` with ff, ffi, ffl, fi, fl written as the one-glyph codes of font F4."""
    for code, (letters, _) in sorted(LIGATURES.items(), key=lambda kv: -len(kv[1][0])):
        text = text.replace(letters, code)
    return text


def _ligature_font(add: Callable[[bytes], int]) -> int:
    """Font F4 as pdfTeX writes a Computer Modern font: ligatures are single glyphs (codes
    11-15 named /ff /fi /fl /ffi /ffl) and a ToUnicode CMap maps each to its letters."""
    from pdfminer.fontmetrics import FONT_METRICS

    widths = FONT_METRICS["Times-Roman"][1]
    cmap = "\n".join(
        [
            "/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
            "/CMapName /OT1-ligatures def 1 begincodespacerange <00> <FF> endcodespacerange",
            f"{len(LIGATURES)} beginbfchar",
            *(
                f"<{ord(code):02X}> <{''.join(f'{ord(ch):04X}' for ch in letters)}>"
                for code, (letters, _) in LIGATURES.items()
            ),
            "endbfchar endcmap CMapName currentdict /CMap defineresource pop end end",
        ]
    ).encode()
    to_unicode = add(b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream")
    width_list = [LIGATURES[chr(c)][1] if chr(c) in LIGATURES else 0 for c in range(11, 32)]
    width_list += [widths.get(chr(c), 500) for c in range(32, 127)]
    return add(
        (
            "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding << /Type /Encoding"
            " /BaseEncoding /WinAnsiEncoding /Differences [11 /ff /fi /fl /ffi /ffl /habibi] >>"
            f" /FirstChar 11 /LastChar 126 /Widths [{' '.join(map(str, width_list))}]"
            f" /ToUnicode {to_unicode} 0 R >>"
        ).encode()
    )


def make_pdf(pages: list[Page], outline: list[tuple[str, int]] | None = None) -> bytes:
    """A PDF of ``pages``; ``outline``: (title, 0-based page) bookmarks."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    def font(name: str) -> int:
        return add(
            f"<< /Type /Font /Subtype /Type1 /BaseFont /{name} "
            "/Encoding /WinAnsiEncoding >>".encode()
        )

    fonts = {"F1": font("Helvetica"), "F2": font("Helvetica-Bold"), "F3": font("Times-Roman")}
    fonts["F4"] = _ligature_font(add)
    fonts["F5"] = font("Helvetica-Oblique")
    fonts["F6"] = font("Courier-Bold")
    font_dict = " ".join(f"/{k} {v} 0 R" for k, v in fonts.items())
    pages_id = len(objects) + 1 + 2 * len(pages)  # after every page and content stream
    page_ids = []
    for page in pages:
        data = _content(page)
        stream = add(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
        page_ids.append(
            add(
                (
                    f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 {page.width} "
                    f"{page.height}] /Rotate {page.rotate} /Contents {stream} 0 R "
                    f"/Resources << /Font << {font_dict} >> >> >>"
                ).encode()
            )
        )
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    assert add(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode()) == pages_id
    catalog_extra = ""
    if outline:
        outlines_id = len(objects) + 1
        first = outlines_id + 1
        last = outlines_id + len(outline)
        add(
            f"<< /Type /Outlines /First {first} 0 R /Last {last} 0 R "
            f"/Count {len(outline)} >>".encode()
        )
        for k, (title, page_index) in enumerate(outline):
            me = first + k
            links = f"/Parent {outlines_id} 0 R"
            if k:
                links += f" /Prev {me - 1} 0 R"
            if k + 1 < len(outline):
                links += f" /Next {me + 1} 0 R"
            add(
                f"<< /Title ({_escape(title)}) {links} "
                f"/Dest [{page_ids[page_index]} 0 R /Fit] >>".encode()
            )
        catalog_extra = f" /Outlines {outlines_id} 0 R"
    catalog = add(f"<< /Type /Catalog /Pages {pages_id} 0 R{catalog_extra} >>".encode())
    return pdf_file(objects, root=catalog)


def _parse(pages: list[Page], name: str = "made.pdf", **kw: object) -> ParsedDocument:
    parsed = parse_document(make_pdf(pages, **kw), name)  # type: ignore[arg-type]
    assert contract_violations(parsed) == []
    return parsed


def _paragraph(x: float, top: float, words: list[str], size: float = 11.0) -> list[Text]:
    return [Text(x, top - i * size * 1.3, w, size) for i, w in enumerate(words)]


# -- 1. words ---------------------------------------------------------------------------------


def test_words_separated_by_gaps_without_space_characters() -> None:
    # A justified line drawn as one TJ with kerning gaps and no space glyph between words.
    pieces = [("also", -280), ("we", -280), ("reported", -280), ("scores", -280), ("separately", 0)]
    parsed = _parse([Page([Text(72, 700, "", pieces=pieces)])])
    assert parsed.text_layer == "also we reported scores separately"


def test_overprinted_fake_bold_is_read_once() -> None:
    title = "Overprinted heading"
    texts = [Text(72 + dx, 700, title, 16) for dx in (0, 0.3, 0.6)]
    texts += _paragraph(72, 660, ["Body text under the heading."])
    parsed = _parse([Page(texts)])
    assert parsed.text_layer.splitlines()[0] == title
    assert parsed.text_layer.count("Overprinted") == 1


def test_every_letter_of_a_ligature_glyph_is_read() -> None:
    # pdfTeX draws ff, ffi, ffl as one glyph each, which PDFium expands to two or three
    # letters with one box: none of them is an overprinted copy.
    sentence = "A different office, effort and efficient staff baffled the affluent official."
    parsed = _parse([Page([Text(72, 700, ligatures(sentence), 11, "F4")])])
    assert parsed.text_layer == sentence


def test_a_right_to_left_word_drawn_as_one_glyph_keeps_its_letters_in_order() -> None:
    # One glyph mapped to "حَبيبي" (with a mark, and a letter pair twice): PDFium gives its
    # letters reversed, with one box; read in the order mapped, none taken for a copy.
    parsed = _parse([Page([Text(72, 700, "\x10 \x10", 14, "F4")])])
    assert parsed.text_layer == "حَبيبي حَبيبي"


def test_overprinted_ligature_text_is_read_once_with_every_letter() -> None:
    heading = "Different Effects of Staff"
    texts = [Text(72 + dx, 700, ligatures(heading), 16, "F4") for dx in (0, 0.3)]
    texts += _paragraph(72, 660, ["Body text under the heading."])
    parsed = _parse([Page(texts)])
    assert parsed.text_layer.splitlines()[0] == heading


def test_hyphenated_line_end_is_joined_with_exact_offsets() -> None:
    texts = _paragraph(72, 700, ["The compu-", "tation of offsets stays exact."])
    parsed = _parse([Page(texts)])
    assert parsed.text_layer == "The computation of offsets stays exact."
    first, second = parsed.layout
    assert parsed.text_layer[first.start : first.end] == "The compu"
    assert parsed.text_layer[second.start : second.end] == "tation of offsets stays exact."
    assert first.end == second.start


def test_a_line_end_hyphen_of_a_compound_the_document_hyphenates_elsewhere_is_kept() -> None:
    lines = ["A self-contained module is tested. The com-", "putation is one self-"]
    lines += ["contained step, which is well-known and well-", "known. COVID-19 and COVID-", "19."]
    parsed = _parse([Page(_paragraph(72, 700, lines))])
    assert parsed.text_layer == (
        "A self-contained module is tested. The computation is one self-contained step, which"
        " is well-known and well-known. COVID-19 and COVID-19."
    )


def test_a_compound_of_a_word_the_document_writes_whole_keeps_its_line_end_hyphen() -> None:
    # Pages 14 and 81 of the GNU sed manual (fixtures/README.md): "(no-" ends a line of page
    # 14 and "autoprint)" starts the next; "autoprint" is no word of the word list, but the
    # index of page 81 writes it whole ("Disabling autoprint"), and "noautoprint" nowhere.
    pdf = Path(__file__).resolve().parents[1] / "fixtures" / "sed_compound_pages.pdf"
    text = parse_document(pdf.read_bytes(), "sed.pdf").text_layer
    assert "then the -n (no-autoprint) option is forced." in text
    assert "noautoprint" not in text


def test_unmapped_glyphs_are_dropped_and_counted(corpus_dir: Path) -> None:
    key = "pdf/table_mislabeled_as_picture.pdf"
    parsed = parse_document((corpus_dir / key).read_bytes(), key)
    text = parsed.text_layer
    assert "(cid:" not in text
    assert not [c for c in text if c not in "\n" and (ord(c) < 32 or 0x7F <= ord(c) < 0xA0)]
    assert any("glyphs without a Unicode mapping were left out" in w for w in parsed.warnings)
    # The words around the dropped bullets and the soft hyphen are whole.
    assert "They coordinate appointments of private practitioners" in text
    assert "panel appointments) to legal aid cases" in text


# -- 2. reading order -------------------------------------------------------------------------


def _two_column_page() -> Page:
    texts = [Text(72, 740, "A Study in Two Columns", 20, "F2")]
    left = [f"left{n} words of the first column run on here" for n in range(8)]
    right = [f"right{n} words of the second column go on too" for n in range(8)]
    texts += _paragraph(72, 700, left, 10)
    texts += _paragraph(320, 700, right, 10)  # the same baselines: rows align across columns
    texts.append(
        Text(72, 560, "A closing line that spans the whole page width below both columns", 10)
    )
    return Page(texts)


def test_two_columns_read_one_after_the_other() -> None:
    parsed = _parse([_two_column_page()])
    words = parsed.text_layer.split()
    order = [w for w in words if w.startswith(("left", "right"))]
    assert order == [f"left{n}" for n in range(8)] + [f"right{n}" for n in range(8)]
    assert parsed.text_layer.index("A closing line") > parsed.text_layer.index("right7")


def _fixture_text(name: str) -> str:
    pdf = Path(__file__).resolve().parents[1] / "fixtures" / name
    parsed = parse_document(pdf.read_bytes(), name)
    assert contract_violations(parsed) == []
    return parsed.text_layer


def _in_order(text: str, *phrases: str) -> bool:
    at = [text.find(p) for p in phrases]
    return -1 not in at and at == sorted(at)


def test_three_text_columns_read_one_after_another() -> None:
    # LibreOffice 7.4 export of fixtures/three_columns.fodt: a newsletter's title over three
    # justified columns, three paragraphs each. No single gutter has column text on both
    # sides (the second and third column together are none), so the page read across, a
    # line of each column in turn; the narrow columns' stretched spaces also cut their lines
    # into words where another column's line set the row's usual space.
    text = _fixture_text("three_columns.pdf")
    assert "The river district opened its new\nfootbridge on Saturday" in text
    assert "Volunteers are needed for the\nreading circle" in text
    assert _in_order(
        text,
        "Riverside Community News",
        "The river district",
        "Engineers chose",
        "Residents who walked",
        "The library will",
        "Volunteers are needed",
        "A collection of maps",
        "The allotment society",
        "Seed swapping",
        "The committee reminds",
    )


def test_three_text_boxes_side_by_side_on_a_slide_read_box_by_box() -> None:
    # LibreOffice 7.4 export of fixtures/three_boxes.fodp: a slide's title over three text
    # boxes, a heading and three wrapped items each, bullets set apart from their text
    # ("Plan Build Run" was one line).
    text = _fixture_text("three_boxes.pdf")
    assert "• Agree the scope with\nthe steering group\nbefore any design\nwork starts" in text
    assert "• Write a short report\nafter every incident" in text
    assert _in_order(
        text,
        "How we deliver",
        "Plan",
        "Publish the timeline",
        "Build",
        "Keep the test suite",
        "Run",
        "Write a short report",
    )


@pytest.mark.parametrize("name", ["run_in_heads.pdf", "run_in_heads_ragged.pdf"])
def test_bold_run_in_heads_and_column_breaks_leave_paragraphs_whole(name: str) -> None:
    # LibreOffice 7.4 exports of fixtures/run_in_heads.fodt: three columns (as the IRS's
    # instructions are set), justified and ragged right, each paragraph opening with a bold head
    # that wraps onto its text's line. The head's second line (not bold throughout) parted the
    # paragraph; on so short a page the stretched word gaps of the narrow justified columns,
    # falling on one x in enough rows, passed for gutters, so lines of two columns were read as
    # one; a ragged line cut by the column break was not full enough to leave its sentence open.
    text = _fixture_text(name)
    paragraphs = text.split("\n\n")
    for opening, closing in [
        ("Unreported social security and\nMedicare tax on wages.", "report them."),
        ("Refundable credit for prior-year\nminimum tax. If you have an\nunused", "this year."),
        ("Standard mileage rates. The", "has\nexpired."),
        ("Health savings account funding\ndistributions.", "health\nsavings account."),
    ]:
        assert any(p.startswith(opening) and p.endswith(closing) for p in paragraphs), opening


def test_unruled_tables_of_three_columns_still_read_row_by_row() -> None:
    # LibreOffice 7.4 export of fixtures/unruled_tables.fodt: borderless tables, one of
    # one-line cells, one whose cells wrap. A row is what belongs together.
    text = _fixture_text("unruled_tables.pdf")
    assert "Alice Moreton Head of engineering Leeds, second floor" in text
    assert "Backfill A run that materialises many partitions" in text


def test_a_smaller_line_set_tight_under_a_larger_one_is_its_own_line() -> None:
    # An annual report's signature block: a name in 12 pt bold, the title in 9 pt, baselines
    # 10 pt apart, so the boxes overlap; marks raised or lowered in a line stay in it.
    texts = [
        Text(72, 700, "Shri Mukesh", 12, "F2"),
        Text(72, 690, "Chairman", 9),
        Text(72, 640, "Revenue rose by a third", 11),
        Text(189, 645.5, "1", 7),  # a footnote mark
        Text(72, 620, "The CO emissions fell", 11),
        Text(110.7, 617.5, "2", 7),  # a subscript
        # A limit set under a big operator (a gap in the line: drawn, not a character).
        Text(72, 590, "so their union", 11),
        Text(170, 590, "is open", 11),
        Text(146, 582, "i in I", 7),
    ]
    parsed = _parse([Page(texts)])
    lines = [line for line in parsed.text_layer.splitlines() if line]
    assert lines[:2] == ["Shri Mukesh", "Chairman"]
    assert lines[2:] == [
        "Revenue rose by a third 1",
        "The CO 2 emissions fell",
        "so their union i in I is open",
    ]


def test_small_capitals_on_the_baseline_stay_in_their_word() -> None:
    # Texinfo's @sc{url}s: "url" in a smaller face right against its "s", on the same
    # baseline; a smaller glyph is a token of its own only when raised or lowered (above).
    the_end = 72 + 4058 * 11 / 1000  # "Read the" in Helvetica, 11 pt
    small_caps = the_end + 278 * 11 / 1000
    texts = [
        Text(72, 700, "Read the", 11),
        Text(small_caps, 700, "url", 7),
        Text(small_caps + 1111 * 7 / 1000, 700, "s first.", 11),
    ]
    assert _parse([Page(texts)]).text_layer.strip() == "Read the urls first."


def test_turned_page_and_turned_label_read_in_their_direction() -> None:
    # /Rotate 90 with text drawn turned so it reads upright in a viewer.
    upright_in_viewer = [
        Text(100 + 14 * i, 72, line, 11, angle=90)
        for i, line in enumerate(["First line of a landscape page", "Second line follows it"])
    ]
    label = Text(40, 300, "Vertical axis label", 9, angle=90)
    body = _paragraph(72, 700, ["Upright body text of the second page."])
    parsed = _parse([Page(upright_in_viewer, rotate=90), Page([*body, label])])
    lines = parsed.text_layer.splitlines()
    assert lines[:2] == ["First line of a landscape page", "Second line follows it"]
    assert "Vertical axis label" in lines  # read upward, as a line of its own after the body
    assert lines.index("Vertical axis label") > lines.index("Upright body text of the second page.")


def test_running_headers_footers_and_page_numbers_are_left_out() -> None:
    pages = []
    for n in range(1, 4):
        texts = [Text(72, 760, "Annual Report 2024 - Internal", 9), Text(300, 30, f"Page {n}", 9)]
        texts += _paragraph(72, 700, [f"Body of page {n} continues the story.", "More body."])
        pages.append(Page(texts))
    parsed = _parse(pages)
    assert "Annual Report" not in parsed.text_layer and "Page " not in parsed.text_layer
    assert "Body of page 1 continues the story." in parsed.text_layer
    assert "6 running header/footer or page-number lines left out" in parsed.warnings


def _memo(date: str) -> Page:
    texts = [Text(72, 760, date, 11), Text(72, 720, "Memorandum on the move", 16, "F2")]
    body = ["To: All staff", "The office moves to the new building in stages.", "Pack up."]
    return Page([*texts, *_paragraph(72, 690, body)])


def test_the_date_at_the_top_of_a_one_page_memo_is_kept() -> None:
    parsed = _parse([_memo("May 5, 2023")])
    assert parsed.text_layer.splitlines()[0] == "May 5, 2023"
    assert not [w for w in parsed.warnings if "running header" in w]


def test_a_top_line_that_does_not_repeat_on_other_pages_is_no_running_header() -> None:
    stages = [[f"Stage {n} of the move takes {n} days.", f"Then stage {n + 1}."] for n in (2, 3)]
    following = [Page(_paragraph(72, 600, lines)) for lines in stages]
    pages = [_memo("Friday, 5 May 2023"), *following]
    for n, page in enumerate(pages, start=1):  # a running head with its page number: it runs
        page.texts.append(Text(72, 40, f"Facilities notice {n}", 9))
    parsed = _parse(pages)
    assert parsed.text_layer.splitlines()[0] == "Friday, 5 May 2023"
    assert "Facilities notice" not in parsed.text_layer
    assert "3 running header/footer or page-number lines left out" in parsed.warnings


def test_a_chapters_running_head_shown_on_one_page_only_is_left_out_by_its_page_number() -> None:
    """A manual's heads alternate, as texinfo sets them: the book's title on even pages, the
    chapter's on odd ones; a short chapter shows its head once, so only its number, this
    page's own, tells it is a running head. A top line ending in another number stays."""
    pages = [Page(_paragraph(72, 700, ["The Tool Manual", "Edition 1."]))]
    chapters = {3: "Chapter 1: Getting Started", 5: "Chapter 2: Short Chapter"}
    for n in range(2, 7):
        head = f"The Tool Manual {n}" if n % 2 == 0 else f"{chapters[n]} {n}"
        texts = [Text(72, 760, head, 9), *_paragraph(72, 700, [f"Body of page {n}.", "More."])]
        if n == 4:
            texts.append(Text(72, 735, "Trials run in round 12", 9))
        pages.append(Page(texts))
    parsed = _parse(pages)
    assert "Chapter 1" not in parsed.text_layer and "Chapter 2" not in parsed.text_layer
    assert "The Tool Manual 2" not in parsed.text_layer
    assert "Trials run in round 12" in parsed.text_layer
    assert "Body of page 5." in parsed.text_layer


def test_right_to_left_text_in_logical_order(corpus_dir: Path) -> None:
    key = "pdf/right_to_left_01.pdf"
    parsed = parse_document((corpus_dir / key).read_bytes(), key)
    # The reference's heading (docling's reading), lam-alef ligatures in logical order.
    title = "تحسين الإنتاجية وحل المشكلات من خلال البرمجة بلغة R و Python"
    assert parsed.sections[0].heading == title
    assert "اإل" not in parsed.text_layer  # the ligature reversed with the run: never


# -- 3. structure -----------------------------------------------------------------------------


def test_typographic_headings_skip_author_lists_and_join_wrapped_lines() -> None:
    texts = [
        Text(72, 740, "Measuring Reading Order in", 18, "F2"),
        Text(72, 718, "Scanned and Born-Digital Documents", 18, "F2"),
        Text(72, 690, "Ana Lima, Bo Chen, Carla Diaz, and Dan Roe", 12),
        Text(72, 650, "1 Introduction", 13, "F2"),
        *_paragraph(72, 630, [f"Body text of the introduction, line {n} of it." for n in range(5)]),
        Text(72, 540, "2 Methods", 13, "F2"),
        *_paragraph(72, 520, [f"Body text of the methods section, line {n}." for n in range(5)]),
    ]
    parsed = _parse([Page(texts)])
    headings = [(s.level, s.heading_path) for s in parsed.sections if s.heading]
    title = "Measuring Reading Order in Scanned and Born-Digital Documents"
    assert headings == [
        (1, [title]),
        (2, [title, "1 Introduction"]),
        (2, [title, "2 Methods"]),
    ]


def test_outline_gives_the_headings() -> None:
    pages = [
        Page([Text(72, 700, "Chapter One", 12), *_paragraph(72, 680, ["Text of chapter one."])]),
        Page([Text(72, 700, "Chapter Two", 12), *_paragraph(72, 680, ["Text of chapter two."])]),
    ]
    parsed = _parse(pages, outline=[("Chapter One", 0), ("Chapter Two", 1)])
    assert [(s.heading, s.pages) for s in parsed.sections if s.heading] == [
        ("Chapter One", [1]),
        ("Chapter Two", [2]),
    ]


def test_table_of_contents_loses_its_leader_dots_and_gives_no_headings() -> None:
    toc = [Text(72, 740, "Contents", 16, "F2")]
    entries = [("Introduction", 3), ("Related Work", 5), ("Method", 8), ("Results", 13)]
    for i, (title, page) in enumerate(entries):
        toc.append(Text(72, 700 - 20 * i, f"{title} {'.' * 60} {page}", 11, "F2"))
    lines = [f"Body text of the introduction, line {n} of a long paragraph." for n in range(12)]
    body = [Text(72, 740, "Introduction", 16, "F2"), *_paragraph(72, 710, lines)]
    parsed = _parse([Page(toc), Page(body)])
    assert "...." not in parsed.text_layer
    assert "Related Work 5" in parsed.text_layer.splitlines()
    assert [s.heading for s in parsed.sections if s.heading] == ["Contents", "Introduction"]
    assert "table of contents on page(s) 1" in parsed.warnings


def test_ruled_table_is_a_table_with_its_header() -> None:
    rows = [["Name", "Qty", "Price"], ["Apple", "3", "1.20"], ["Pear", "5", "0.80"]]
    xs, ys = [72, 200, 300, 400], [700, 680, 660, 640]
    lines = [(72, y, 400, y) for y in ys] + [(x, 640, x, 700) for x in xs]
    texts = [
        Text(xs[c] + 4, ys[r] - 14, value, 10)
        for r, row in enumerate(rows)
        for c, value in enumerate(row)
    ]
    texts += _paragraph(72, 740, ["Prices of fruit, by the piece."])
    parsed = _parse([Page(texts, lines=lines)])
    (table,) = [s for s in parsed.sections if s.kind == "table"]
    assert table.table_header is not None
    text = parsed.text_layer
    assert text[table.table_header.start : table.table_header.end] == (
        "| Name | Qty | Price |\n| - | - | - |"
    )
    assert [text[r.start : r.end] for r in table.table_rows] == [
        "| Apple | 3 | 1.20 |",
        "| Pear | 5 | 0.80 |",
    ]
    assert table.pages == [1]


def _fixture_table(name: str) -> tuple[str, list[str], str]:
    """The one table of a fixture PDF: its header row, its body rows, and the whole text."""
    pdf = Path(__file__).resolve().parents[1] / "fixtures" / name
    parsed = parse_document(pdf.read_bytes(), name)
    assert contract_violations(parsed) == []
    (table,) = [s for s in parsed.sections if s.kind == "table"]
    text = parsed.text_layer
    assert table.table_header is not None
    header = text[table.table_header.start : table.table_header.end].split("\n")[0]
    return header, [text[r.start : r.end] for r in table.table_rows], text


def test_a_table_ruled_across_and_between_columns_but_open_at_its_sides_is_a_table() -> None:
    # Reports rule tables across and between columns and leave the sides open (LibreOffice
    # 7.4 export, fixtures/open_sided_table.fodt): the first and last columns had no cells,
    # no table was found, and its columns' lines ran into each other ("Spread by drinking
    # water or Bioterrorism agents, or a high").
    header, rows, _ = _fixture_table("open_sided_table.pdf")
    assert header == "| Item | Before | After |"
    assert rows == [
        "| Scope | Class 1 infectious diseases | Grade 1 infectious diseases |",
        "| Criteria | Spread by drinking water or food, with a risk of outbreaks "
        "| Bioterrorism agents, or a high fatality rate needing strict isolation |",
        "| Diseases | (6) cholera, typhoid fever, paratyphoid fever, shigellosis, hepatitis A "
        "| (17) Ebola, plague and others; the six on the left are not included |",
    ]


def test_merged_cells_of_a_ruled_table_stand_in_every_row_they_span_under_their_columns() -> None:
    # A ruled table with a two-row header (groups spanning two columns, "Model" spanning both
    # rows), a model name spanning two rows, and a note row across the whole table
    # (LibreOffice 7.4 export, fixtures/merged_cells_table.fodt). Rows were read by the cells
    # whose tops lay on them: "Top-1" stood under "Model", "72.0" under "Small".
    _, rows, text = _fixture_table("merged_cells_table.pdf")
    assert (
        "| Model | Accuracy (%) | Accuracy (%) | Cost | Cost |\n"
        "| Model | Top-1 | Top-5 | Training | Serving |\n| - | - | - | - | - |\n"
    ) in text
    assert rows == [
        "| Small | 71.2 | 90.1 | 3 days | 2 ms |",
        "| Small | 72.0 | 90.5 | 4 days | 2 ms |",
        "| Large | 80.3 | 95.2 | 9 days | 7 ms |",
        "| Measured on the validation set, one run each. |  |  |  |  |",
    ]


def test_a_table_ruled_across_only_is_a_table_with_its_header_and_wrapped_cells() -> None:
    # Word's and LibreOffice's plainer table styles rule rows, not columns, and set the header
    # above a thick first rule (LibreOffice 7.4 export, fixtures/rules_across_table.fodt): no
    # cells, so the table was read as lines, a wrapped cell's second line cut off and read
    # after the table ("cranberries, fresh or dried" after "And some it should not.").
    header, rows, text = _fixture_table("rules_across_table.pdf")
    assert header == "|  | Food | Calories per portion |"
    assert rows == [
        "| Leaves | Ash, elm and maple leaves picked in the spring | 50 |",
        "| Berries | Blueberries, strawberries and cranberries, fresh or dried | 150 |",
        "| Grain | Corn, buckwheat, barley | 200 |",
    ]
    assert text.rstrip().endswith("And some it should not.")


def test_rules_every_few_lines_of_text_or_code_make_no_table() -> None:
    # Rules across with two lines of two columns between them: rows the rules do not part
    # (or a page ruled every few lines), which gutters alone cannot cut into rows.
    lines = [(72, y, 400, y) for y in (700, 660, 620)]
    texts = [Text(80, 686, "Chose 1", 10), Text(244, 686, "Truc 1", 10)]
    texts += [Text(80, 674, "Chose 2", 10), Text(244, 674, "Truc 2", 10)]
    texts += [Text(80, 646, "Chose 3", 10), Text(244, 646, "Truc 3", 10)]
    parsed = _parse([Page(texts, lines=lines)])
    assert [s for s in parsed.sections if s.kind == "table"] == []


def test_boxes_split_by_one_rule_with_open_sides_stay_lines() -> None:
    # Two rules across and one rule between them: a box split in two, not an open table
    # (closing its sides needs two column rules, three columns).
    lines = [(72, 700, 400, 700), (72, 660, 400, 660), (72, 620, 400, 620), (236, 620, 236, 700)]
    texts = [Text(80, 686, "Signed", 10), Text(244, 686, "Dated", 10)]
    texts += [Text(80, 646, "Witness", 10), Text(244, 646, "Place", 10)]
    parsed = _parse([Page(texts, lines=lines)])
    assert [s for s in parsed.sections if s.kind == "table"] == []


def test_ruled_table_on_a_page_turned_for_landscape_reads_as_on_an_upright_page() -> None:
    # /Rotate 90: a viewer shows user space turned, so the page is drawn turned: text at 90
    # degrees, a rule across the shown page runs up user space. Shown (x, y from the top) is
    # user (y, x). The table's rules must be turned with its text.
    rows = [["Name", "Qty", "Price"], ["Apple", "3", "1.20"], ["Pear", "5", "0.80"]]
    xs, tops = [72, 200, 300, 400], [92, 112, 132, 152]
    lines = [(top, 72, top, 400) for top in tops] + [(92, x, 152, x) for x in xs]
    texts = [
        Text(tops[r] + 14, xs[c] + 4, value, 10, angle=90)
        for r, row in enumerate(rows)
        for c, value in enumerate(row)
    ]
    texts.append(Text(60, 72, "Prices of fruit, by the piece.", 11, angle=90))
    parsed = _parse([Page(texts, lines=lines, rotate=90)])
    (table,) = [s for s in parsed.sections if s.kind == "table"]
    text = parsed.text_layer
    assert table.table_header is not None
    assert text[table.table_header.start : table.table_header.end] == (
        "| Name | Qty | Price |\n| - | - | - |"
    )
    assert [text[r.start : r.end] for r in table.table_rows] == [
        "| Apple | 3 | 1.20 |",
        "| Pear | 5 | 0.80 |",
    ]
    assert text.startswith("Prices of fruit, by the piece.")


def test_a_one_page_document_of_one_line_ending_in_a_number_keeps_that_line() -> None:
    # At the top of its page and ending in a number, as a running head with its page number
    # is; but it is all the document says.
    parsed = _parse([Page([Text(72, 760, "Invoice total due 123", 11)])])
    assert parsed.text_layer.strip() == "Invoice total due 123"


def test_letter_spaced_headings_and_text_read_as_words() -> None:
    # Designed documents spread headings and capitals by tracking (Tc): every two letters then
    # stand a word gap apart, and PDFium guesses a space between them ("I N S T A L L").
    page = Page(
        [
            Text(72, 740, "INSTALLATION GUIDE", 18, "F2", tracking=6),
            Text(72, 700, "Before you begin", 14, "F2", tracking=3),
            Text(72, 670, "Run the installer and follow the steps on the screen.", tracking=2),
            # Set solid, with one-letter words the page draws spaces between: they stay apart.
            Text(72, 640, "Pick one of a b c d or e and go on."),
        ]
    )
    parsed = _parse([page])
    assert parsed.text_layer.splitlines() == [
        "INSTALLATION GUIDE",
        "",
        "Before you begin",
        "",
        "Run the installer and follow the steps on the screen.",
        "Pick one of a b c d or e and go on.",
    ]
    assert [s.heading for s in parsed.sections if s.heading] == [
        "INSTALLATION GUIDE",
        "Before you begin",
    ]


def _body(top: float, n: int = 6) -> list[Text]:
    return _paragraph(
        72,
        top,
        [f"Body line {k} of this part says what it needs to say here." for k in range(n)],
        10,
    )


def test_a_cover_of_many_sizes_does_not_push_the_bodys_headings_down() -> None:
    # A cover set in four sizes, none used again: its lines took levels 1-4 and the body's
    # chapters and sections 5 and 6 (at 6, every heading deeper was their sibling).
    cover = Page(
        [
            Text(72, 700, "Field Manual", 30, "F2"),
            Text(72, 660, "Water Treatment Works", 22, "F2"),
            Text(72, 620, "Third Edition", 18, "F2"),
            Text(72, 590, "Operations Division", 15, "F2"),
        ]
    )
    chapters = [
        Page(
            [
                Text(72, top, title, 13, "F2"),
                *_body(top - 30),
                Text(72, top - 120, f"Where {title.lower()} begins", 11.5, "F2"),
                *_body(top - 150),
            ]
        )
        for top, title in ((720, "Intake and screening"), (680, "Filtration"))
    ]
    parsed = _parse([cover, *chapters])
    levels = {s.heading: s.level for s in parsed.sections if s.heading}
    assert levels["Field Manual"] == levels["Third Edition"] == 1
    assert levels["Intake and screening"] == levels["Filtration"] == 2
    assert levels["Where intake and screening begins"] == levels["Where filtration begins"] == 3


def test_section_numbers_nest_headings_that_type_sizes_make_siblings() -> None:
    # LibreOffice 7.4 export of fixtures/numbered_sections.fodt (no outline): chapters and
    # their sections in one style (14 pt bold, as Sphinx sets "CHAPTER ONE" and "1.1"),
    # subsections in 12 pt, and two bold steps numbered "1." and "2." inside section 2.1. By
    # ranks of sizes, "1.1 Scope" was a sibling of "1 Introduction" and "1.2 Terms" its child.
    name = "numbered_sections.pdf"
    pdf = Path(__file__).resolve().parents[1] / "fixtures" / name
    parsed = parse_document(pdf.read_bytes(), name)
    paths = {s.heading: s.heading_path[1:] for s in parsed.sections if s.heading}
    assert paths["1.2 Terms"] == ["1 Introduction", "1.2 Terms"]
    assert paths["2.2.1 Laboratory tests"] == [
        "2 Methods",
        "2.2 Analysis",
        "2.2.1 Laboratory tests",
    ]
    assert paths["3.2 Wildlife"] == ["3 Results", "3.2 Wildlife"]
    # A numbered list restarting inside a section is no chapter: its items stay under it.
    assert paths["2. Label the samples"] == ["2 Methods", "2.1 Sampling", "2. Label the samples"]


def test_sans_serif_headings_over_a_serif_body_are_found_where_fonts_state_no_metrics() -> None:
    # LibreOffice 7.4 export of fixtures/sans_heads_serif_body.fodt (no outline): an 18 pt
    # title and 14 and 12 pt headings in Liberation Sans Bold over an 11 pt Liberation Serif
    # body, the fonts' descriptors stating /Ascent 0 /Descent 0. PDFium's invented metrics
    # measured the headings at 8-10 and the body at 14: not one heading was found.
    name = "sans_heads_serif_body.pdf"
    pdf = Path(__file__).resolve().parents[1] / "fixtures" / name
    parsed = parse_document(pdf.read_bytes(), name)
    assert contract_violations(parsed) == []
    paths = [s.heading_path for s in parsed.sections if s.heading]
    title = "Annual River Survey"
    assert paths == [
        [title],
        [title, "Background"],
        [title, "Background", "Study area"],
        [title, "Background", "Earlier surveys"],
        [title, "Field work"],
        [title, "Field work", "Sampling stations"],
        [title, "Field work", "Measurements"],
        [title, "Findings"],
        [title, "Findings", "Water quality"],
        [title, "Findings", "Wildlife counts"],
    ]


def test_a_chapter_label_numbers_its_title_and_an_appendix_stands_beside_the_chapters() -> None:
    # Sphinx's LaTeX sets "CHAPTER" / "ONE" over a title in the very type of its sections
    # ("1.1 A Minimal Application"): the label makes the title chapter 1, its sections 1.1.
    def chapter(label: list[str], title: str, sections: list[str]) -> Page:
        texts = [Text(300, 740 - 20 * k, word, 12, "F2") for k, word in enumerate(label)]
        texts += [Text(300, 690, title, 14, "F2"), *_body(670, 3)]
        for k, heading in enumerate(sections):
            texts += [Text(72, 600 - 150 * k, heading, 14, "F2"), *_body(580 - 150 * k, 3)]
        return Page(texts)

    parsed = _parse(
        [
            chapter(["CHAPTER", "ONE"], "QUICKSTART", ["1.1 A Minimal Application", "1.2 Routing"]),
            chapter(["CHAPTER", "TWO"], "TEMPLATES", ["2.1 Jinja Setup"]),
            chapter(["APPENDIX"], "LICENSE", ["Source License"]),
        ]
    )
    levels = {s.heading: s.level for s in parsed.sections if s.heading}
    assert levels["CHAPTER ONE QUICKSTART"] == levels["CHAPTER TWO TEMPLATES"]
    assert levels["1.1 A Minimal Application"] == levels["2.1 Jinja Setup"]
    assert levels["1.1 A Minimal Application"] == levels["CHAPTER ONE QUICKSTART"] + 1
    assert levels["APPENDIX LICENSE"] == levels["CHAPTER TWO TEMPLATES"]


def test_a_number_on_the_cover_does_not_stop_the_sections_numbers_from_nesting_them() -> None:
    # "12 Months of Progress" is the first numbered heading; "1 Overview" does not follow it.
    # Chapters and sections share one size, so only their numbers can nest them.
    cover = Page([Text(72, 700, "12 Months of Progress", 22, "F2"), *_body(660, 3)])
    chapters = [
        Page(
            [
                Text(72, 720, f"{n} {title}", 14, "F2"),
                *_body(700, 3),
                Text(72, 600, f"{n}.1 {section}", 14, "F2"),
                *_body(580, 3),
                Text(72, 480, f"{n}.2 {section} in detail", 14, "F2"),
                *_body(460, 3),
            ]
        )
        for n, title, section in ((1, "Overview", "Aims"), (2, "Results", "Data"))
    ]
    levels = {s.heading: s.level for s in _parse([cover, *chapters]).sections if s.heading}
    assert levels["1.1 Aims"] == levels["2.2 Data in detail"] == levels["1 Overview"] + 1
    assert levels["2 Results"] == levels["1 Overview"]


def test_a_titles_byline_stays_apart_and_the_title_a_heading() -> None:
    # A bold title over its byline in lower case: the change of weight parts them (a bold line
    # goes on into the next only where that line opens in bold and its first word would not
    # have fit: a run-in head's wrap).
    page = Page(
        [
            Text(72, 720, "The Honey-Bee", 10, "F2"),
            Text(72, 706, "by Anonymous", 10),
            *_body(680),
        ]
    )
    parsed = _parse([page])
    assert "The Honey-Bee\n\nby Anonymous" in parsed.text_layer
    assert [s.heading for s in parsed.sections if s.heading] == ["The Honey-Bee"]


def test_letter_spaced_headings_of_a_libreoffice_export_read_as_words() -> None:
    # LibreOffice positions each glyph of letter-spaced type, and PDFium put a space between
    # every two letters: "A N N U A L R E P O R T" was the document's first heading.
    pdf = Path(__file__).resolve().parents[1] / "fixtures" / "libreoffice_letter_spaced.pdf"
    parsed = parse_document(pdf.read_bytes(), "report.pdf")
    assert contract_violations(parsed) == []
    assert [(s.heading, s.level) for s in parsed.sections if s.heading] == [
        ("ANNUAL REPORT", 1),
        ("Financial statements", 2),
    ]
    assert "open research in many countries and keeps its accounts public." in parsed.text_layer


def test_boxes_of_a_diagram_are_not_a_table() -> None:
    # A syntax diagram: labelled boxes joined by lines, mostly empty space between them.
    lines = []
    texts = []
    for i, word in enumerate(["SELECT", "column", "FROM", "table"]):
        x = 72 + 110 * i
        lines += [
            (x, 600, x + 80, 600),
            (x, 630, x + 80, 630),
            (x, 600, x, 630),
            (x + 80, 600, x + 80, 630),
        ]
        lines.append((x + 80, 615, x + 110, 615))
        texts.append(Text(x + 8, 610, word, 10))
    lines += [(60, 580, 520, 580), (60, 650, 520, 650), (60, 580, 60, 650), (520, 580, 520, 650)]
    parsed = _parse([Page(texts, lines=lines)])
    assert [s for s in parsed.sections if s.kind == "table"] == []
    assert parsed.text_layer == "SELECT column FROM table"


# -- corpus -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "headings"),
    [
        ("2305.03393v1-pg9.pdf", ["5.1 Hyper Parameter Optimization", "5.2 Quantitative Results"]),
        (
            "amt_handbook_sample.pdf",
            ["Boots Self-Locking Nut", "Stainless Steel Self-Locking Nut", "Elastic Stop Nut"],
        ),
        ("code_and_formula.pdf", ["JavaScript Code Example", "Formula"]),
    ],
)
def test_corpus_headings_are_the_references(
    name: str, headings: list[str], corpus_dir: Path
) -> None:
    key = f"pdf/{name}"
    parsed = parse_document((corpus_dir / key).read_bytes(), key)
    assert [s.heading for s in parsed.sections if s.heading] == headings


def test_corpus_running_header_of_a_paper_page_is_left_out(corpus_dir: Path) -> None:
    key = "pdf/2305.03393v1-pg9.pdf"
    parsed = parse_document((corpus_dir / key).read_bytes(), key)
    assert "Optimized Table Tokenization for Table Structure Recognition" not in parsed.text_layer
    assert parsed.text_layer.startswith("order to compute the TED score.")
    # Justified lines whose words pdfminer glued together are separated.
    assert "Also we report TED scores separately" in " ".join(parsed.text_layer.split())


def test_corpus_ligatures_of_a_latex_paper_keep_their_letters(corpus_dir: Path) -> None:
    key = "pdf/2305.03393v1-pg9.pdf"  # pdfLaTeX: "difficult" is d, i, one ffi glyph, c, …
    text = parse_document((corpus_dir / key).read_bytes(), key).text_layer
    assert "difficult" in text and "difcult" not in text


def test_corpus_two_column_handbook_reads_column_by_column(corpus_dir: Path) -> None:
    key = "pdf/amt_handbook_sample.pdf"
    text = " ".join(parse_document((corpus_dir / key).read_bytes(), key).text_layer.split())
    assert "Plates must be attached to the structure in a positive manner" in text
    assert text.index("only three typical kinds of self-locking nuts") < text.index(
        "Boots Self-Locking Nut"
    )


def test_corpus_footnote_marks_stay_in_the_line_whose_baseline_they_are_raised_from(
    corpus_dir: Path,
) -> None:
    key = "pdf/normal_4pages.pdf"  # two columns; each mark's box also overlaps the other's line
    lines = parse_document((corpus_dir / key).read_bytes(), key).text_layer.splitlines()
    assert "2020.1.1. 시행된 3) 「감염병의 예방 및 관리에 관" in lines
    assert "Insurance)보험 10) , 인덱스(Index)보험 등과 같이" in lines


def test_corpus_subheadings_nest_alike_on_every_page(corpus_dir: Path) -> None:
    key = "pdf/normal_4pages.pdf"
    parsed = parse_document((corpus_dir / key).read_bytes(), key)
    title = "코로나-19 관련 보험약관상 재해보험금 지급문제 및 개선과제"
    under = {
        s.heading: (s.level, s.heading_path[:-1])
        for s in parsed.sections
        if s.heading and s.heading.startswith("(")
    }
    # Set slightly larger than the body on pages 2 to 4: one level, under their numbered parent.
    assert under["(1) 상위법에 반하는 보험약관의 해석"][1] == [title, "3 문제점"]
    assert under["(3) 신종위험에 대비하는 보험상품 개발 필요"][1] == [title, "4 개선과제"]
    assert len(under) == 11 and len({level for level, _ in under.values()}) == 1


def test_a_syntax_diagrams_lines_are_no_headings_and_an_agendas_numbered_items_each_are_one() -> (
    None
):
    # LibreOffice 7.4 export of fixtures/label_runs.fodt, no outline: a syntax diagram's
    # clauses set a size above the body, each followed by a smaller call-out only, were four
    # headings; three numbered agenda items set bold, one under the other, were one heading.
    pdf = Path(__file__).resolve().parents[1] / "fixtures" / "label_runs.pdf"
    parsed = parse_document(pdf.read_bytes(), "label_runs.pdf")
    assert contract_violations(parsed) == []
    assert [s.heading for s in parsed.sections if s.heading] == [
        "Row permissions",
        "Meeting agenda",
        "4. REPORT FROM CLOSED SESSION",
        "5. DISCUSSION",
        "6. ADJOURNMENT",
    ]
    assert "CREATE PERMISSION permission-name" in parsed.text_layer
