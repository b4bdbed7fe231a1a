"""PDF structure on a real manual: a texinfo manual built by pdfTeX as GNU manuals are
(``fixtures/texinfo_manual.pdf``, made by ``fixtures/make_texinfo_manual.sh``): outline headings
on their numbered lines, footnotes, code with trailing comments, box corners, a word split by a
page break; and line-end hyphens of compounds on a PDF written here."""

from __future__ import annotations

import functools
import io
from pathlib import Path

import pypdf

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline_tests.parsing.test_parsing_pdf import Page, Text, make_pdf

MANUAL = Path(__file__).resolve().parents[1] / "fixtures" / "texinfo_manual.pdf"


def _parse(raw: bytes, name: str = "manual.pdf") -> ParsedDocument:
    parsed = parse_document(raw, f"pdf/{name}")
    assert contract_violations(parsed) == []
    return parsed


@functools.cache
def _manual() -> ParsedDocument:  # parsed once for the module's tests
    return _parse(MANUAL.read_bytes())


def _page(number: int) -> bytes:
    """One page of the manual, cut out with pypdf."""
    reader = pypdf.PdfReader(MANUAL)
    writer = pypdf.PdfWriter()
    writer.add_page(reader.pages[number - 1])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_outline_headings_sit_on_their_numbered_lines_never_on_a_body_sentence() -> None:
    # The outline says "Widgets" (texinfo leaves section numbers out of it); the page shows
    # "1.1 Widgets", and before it a paragraph that opens "Widgets are small parts ...".
    parsed = _manual()
    headed = [s for s in parsed.sections if s.heading]
    assert [(s.heading, s.level) for s in headed] == [
        ("Widget Handbook", 1),  # the title page's title (the outline leaves it out)
        ("1 Overview", 2),
        ("1.1 Widgets", 3),
        ("1.2 Gadgets", 3),
        ("2 Configuration", 2),
    ]
    for section in headed:
        assert parsed.text_layer[section.start :].startswith(section.heading or "")
    overview, widgets = headed[1], headed[2]
    intro = parsed.text_layer.index("Widgets are small parts")
    assert overview.start < intro < widgets.start
    assert widgets.heading_path == ["Widget Handbook", "1 Overview", "1.1 Widgets"]


def test_a_title_page_title_the_outline_leaves_out_heads_the_document() -> None:
    """A manual's outline starts at chapter 1; its chunks carry the manual's name as the HTML
    twin's ``<h1>`` gives it, so a question that names the program finds them."""
    parsed = _manual()
    assert parsed.sections[0].heading_path == ["Widget Handbook"]
    assert all(s.heading_path[0] == "Widget Handbook" for s in parsed.sections)


def test_an_outline_without_a_title_page_keeps_its_levels() -> None:
    """A first page set in body type (a report that opens on its first section, a version line
    set large) adds no title: the outline's levels stay."""
    body = "Widgets are counted every morning and the count is written in the register."
    pages = [
        Page(
            [
                Text(72, 720, "2021-09-20 v1.9a", 16),  # a date set large is no title
                Text(72, 690, "1 Counting", 14, "F2"),
                Text(72, 670, body, 10),
                Text(72, 656, body, 10),
            ]
        ),
        Page([Text(72, 720, "2 Signing", 14, "F2"), Text(72, 700, body, 10)]),
    ]
    parsed = _parse(make_pdf(pages, [("1 Counting", 0), ("2 Signing", 1)]), "report.pdf")
    assert [(s.heading, s.level) for s in parsed.sections if s.heading] == [
        ("1 Counting", 1),
        ("2 Signing", 1),
    ]


def test_footnotes_are_kept_after_their_page_body() -> None:
    notes = [
        "1 The first widgets were carved from boxwood in a workshop near the harbour.",
        "2 A widget without a recorded purpose is returned to the store at the end of the week.",
        "3 The full table is in the file widget-units-and-conversions.conf. It lists every unit.",
    ]
    for parsed, page in ((_manual(), 3), (_parse(_page(3), "page3.pdf"), 1)):
        text = parsed.text_layer
        for note in notes:
            assert note in text
        spans = [(s.start, s.end) for s in parsed.layout if s.box.page == page]
        body_end = max(e for s, e in spans if not any(text[s:e] in note for note in notes))
        assert min(text.index(note) for note in notes) > body_end  # after the page's body


def test_a_footnote_of_a_one_page_document_is_no_running_footer() -> None:
    # A footnote alone at the foot of a one-page memo: a number, then words, in the bottom
    # margin, like a running footer with its page number; but set smaller than the body.
    body = [
        "The widgets of the north workshop are counted every morning before the",
        "apprentices arrive, and the count is written in the register.1",
    ]
    texts = [Text(72, 700 - 14 * i, line, 11) for i, line in enumerate(body)]
    texts.append(Text(72, 60, "1 The register is kept in the office of the foreman.", 8))
    parsed = _parse(make_pdf([Page(texts)]), "memo.pdf")
    assert parsed.text_layer.endswith("1 The register is kept in the office of the foreman.")


def test_the_top_label_of_a_one_page_figure_is_no_page_number() -> None:
    # matplotlib's one-page bar chart (fixtures/make_pdf_text_fixtures.py): the tallest bar's
    # value "75.9" is the page's top line, set apart, shaped like a page number ("3.12"); a
    # one-page document has no other page for it to run on.
    figure = MANUAL.parent / "matplotlib_bar_labels_figure.pdf"
    parsed = _parse(figure.read_bytes(), "figure.pdf")
    assert parsed.text_layer.splitlines()[0] == "75.9"
    assert "59.1" in parsed.text_layer and "Accuracy (%)" in parsed.text_layer
    assert not [w for w in parsed.warnings if "running header" in w]


def test_a_page_number_of_a_one_page_excerpt_is_left_out() -> None:
    body = ["The widgets of the north workshop are counted every morning.", "Then they ship."]
    texts = [Text(72, 700 - 14 * i, line, 11) for i, line in enumerate(body)]
    texts += [Text(300, 30, "17", 10), Text(72, 760, "- 4 -", 10)]
    parsed = _parse(make_pdf([Page(texts)]), "excerpt.pdf")
    assert parsed.text_layer.splitlines() == body
    assert "2 running header/footer or page-number lines left out" in parsed.warnings


def test_an_underscore_drawn_as_a_rule_is_read_as_an_underscore() -> None:
    # Page 5 of the libffi manual (fixtures/README.md): texinfo sets a definition line's name
    # in a font without "_" and draws each underscore as a short rule at the baseline.
    page = MANUAL.parent / "libffi_function_page.pdf"
    lines = _parse(page.read_bytes(), "libffi.pdf").text_layer.splitlines()
    for definition in (
        "const char * ffi_get_version (void) [Function]",
        "unsigned long ffi_get_version_number (void) [Function]",
        "unsigned int ffi_get_default_abi (void) [Function]",
        "size_t ffi_get_closure_size (void) [Function]",
    ):
        assert definition in lines, definition
    assert "Return sizeof(ffi_closure)." in lines  # a typewriter glyph "_" is read once


def test_an_underline_or_a_short_rule_between_words_is_no_underscore() -> None:
    texts = [Text(72, 700, "Go to the shop now.", 11), Text(72, 660, "left", 11)]
    texts.append(Text(160, 660, "right", 11))
    lines = [(89.7, 698.0, 98.9, 698.0)]  # under "to" (Helvetica: "Go " is 17.7 pt wide)
    lines.append((120.0, 660.5, 125.0, 660.5))  # a short rule far from both words
    parsed = _parse(make_pdf([Page(texts, lines)]), "underlined.pdf")
    lines_read = [line for line in parsed.text_layer.splitlines() if line]
    assert lines_read == ["Go to the shop now.", "left right"]


def test_code_lines_keep_their_trailing_comments() -> None:
    lines = _manual().text_layer.splitlines()
    assert 'unit["millimetre" ] = 1 # the base unit' in lines
    assert 'unit["inch (imperial)"] = 25.4 # by definition' in lines
    assert 'unit["foot (imperial)"] = 304.8 # twelve inches' in lines
    assert not any(line.startswith("# ") for line in lines)


def test_box_corners_drawn_around_a_note_stay_out_of_the_text() -> None:
    text = _manual().text_layer
    assert not set(text) & set("☛✟✡✠")
    assert (
        "The format of the configuration file is described in the next chapter; keep\n"
        "a copy of it beside every machine." in text
    )


def test_a_word_split_by_a_page_break_is_joined() -> None:
    text = _manual().text_layer
    assert "interna-" not in text and "\ntionalization" not in text
    assert "thermoregulation and internationalization with recommendations" in text


def test_a_line_end_hyphen_is_kept_in_a_compound_and_dropped_in_a_split_word() -> None:
    lines = [
        "The parser is a self-",
        "contained module and the first",
        "computa-",
        "tion is cheap; a well-",
        "known case.",
    ]
    page = Page([Text(72, 700 - 14 * i, line, 11) for i, line in enumerate(lines)])
    text = _parse(make_pdf([page]), "hyphens.pdf").text_layer
    assert "self-contained module" in text
    assert "first\ncomputation is" in text
    assert "well-known case." in text


def test_a_justified_line_with_a_wide_sentence_space_is_read_as_one_line() -> None:
    # A footnote under a code line (as gawkinet's ELIZA example): its first line is stretched
    # to the margin, so the space after "abbreviated." grew wider than a column break; with
    # the lines above and below it leaves a free strip that looked like a column gutter.
    def stretched(words: list[str], space: int) -> list[tuple[str, int]]:
        return [(w, -space if n + 1 < len(words) else 0) for n, w in enumerate(words)]

    first = stretched(["The", "version", "shown", "here", "is", "abbreviated."], 450)
    first[-1] = (first[-1][0], -1000)  # the sentence's end: a space twice as wide
    first += stretched(["The", "full", "version", "comes", "with", "the"], 450)
    texts = [
        Text(100, 700, "# fit to a certain keyword", 10),
        Text(72, 686, "", 10, pieces=first),
        Text(72, 672, "distribution.", 10),
    ]
    lines = _parse(make_pdf([Page(texts)]), "justified.pdf").text_layer.splitlines()
    assert lines[1:] == [
        "The version shown here is abbreviated. The full version comes with the",
        "distribution.",
    ]


def test_without_an_outline_an_italic_sentence_or_a_line_of_code_is_no_heading() -> None:
    body = [
        "Widgets are counted every morning and the count is written down in the",
        "register of the workshop, which the foreman signs before the shift starts.",
    ]
    texts: list[Text] = []
    y = 720.0
    for line, font in [
        ("Counting Widgets", "F2"),  # bold at body size: a heading
        *[(b, "F1") for b in body],
        ("Boots Self-Locking Nut", "F5"),  # italic in Title Case: a heading
        *[(b, "F1") for b in body],
        ("renaming a branch that was pushed", "F5"),  # an italic sentence: emphasis
        *[(b, "F1") for b in body],
        ("BEGIN { count = 0 }", "F6"),  # bold code: code
        *[(b, "F1") for b in body],
    ]:
        gap = 22 if font != "F1" or line == body[0] else 14
        y -= gap
        texts.append(Text(72, y, line, 11, font))
    parsed = _parse(make_pdf([Page(texts)]), "no-outline.pdf")
    assert [s.heading for s in parsed.sections if s.heading] == [
        "Counting Widgets",
        "Boots Self-Locking Nut",
    ]


def test_a_footnote_waits_for_the_sentence_its_page_break_cuts_and_keeps_its_words_whole() -> None:
    body = [
        "The widgets of the north workshop are counted every morning, and the",
        "count of the widgets that were counted on the evening before is checked by the",
    ]
    first = [Text(72, 700 - 14 * i, line, 11) for i, line in enumerate(body)]
    first += [
        Text(72, 90, "1 The register is kept in the office of the foreman, who checks", 8),
        Text(72, 80, "its interna-", 8),
        Text(72, 70, "tionalization every week.", 8),
    ]
    second = [Text(72, 700, "foreman before the apprentices arrive.", 11)]
    second.append(Text(72, 670, "Then the widgets are shipped.", 11))  # a paragraph apart
    second.append(Text(72, 656, "They leave the workshop at noon.", 11))
    parsed = _parse(make_pdf([Page(first), Page(second)]), "register.pdf")
    assert parsed.text_layer == (
        f"{body[0]}\n{body[1]}\nforeman before the apprentices arrive.\n\n"
        "1 The register is kept in the office of the foreman, who checks\nits "
        "internationalization every week.\n\nThen the widgets are shipped.\n"
        "They leave the workshop at noon."
    )


_REPORT = Path(__file__).resolve().parents[1] / "fixtures" / "latex_report_chapters.pdf"


def test_a_chapters_label_line_reads_as_part_of_its_heading_with_or_without_an_outline() -> None:
    # LaTeX's report class sets "Chapter 1" on a line of its own over the title; it was read as
    # the last line of the section before, and without an outline as a heading of its own.
    for path in (_REPORT, _REPORT.with_name("latex_report_chapters_no_outline.pdf")):
        parsed = _parse(path.read_bytes(), path.name)
        sections = {s.heading: s for s in parsed.sections}
        chapter = sections["Chapter 1 Where Rivers Begin"]
        assert parsed.text_layer[chapter.start :].startswith("Chapter 1\n\nWhere Rivers Begin")
        assert "Appendix A Measuring Flow" in sections
        assert not {"Chapter 1", "Chapter 2", "Appendix A"} & set(sections)
        for section in parsed.sections:
            own = parsed.text_layer[section.start : section.end].rstrip()
            assert not own.endswith(("Chapter 2", "Appendix A")), section.heading
        springs = sections["1.1 Springs"]
        assert springs.heading_path == [*chapter.heading_path, "1.1 Springs"]


_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_table_floated_to_a_pages_foot_comes_after_the_sentence_it_cut() -> None:
    # LaTeX set the table at the foot of the page, between "find the" and, on the next page,
    # "mean speed": the sentence is read whole, then the page's footnote, then the table,
    # whose lines keep the page they are printed on.
    parsed = _parse((_FIXTURES / "latex_book.pdf").read_bytes(), "latex_book.pdf")
    text = parsed.text_layer
    assert "simplest way to find the\nmean speed: drop an orange" in text
    sentence_end = text.index("moves more slowly than water at the surface.")
    table = text.index("Alder Brook 3.2 0.4 0.9")
    assert sentence_end < text.index("1 Glaciers cut valleys too") < table
    pages = {parsed.text_layer[s.start : s.end][:11]: s.box.page for s in parsed.layout}
    assert pages["Alder Brook"] == pages["Table 2.1: "] == pages["on three ri"]
    assert pages["mean speed:"] == pages["Alder Brook"] + 1


def test_a_float_atop_a_column_comes_after_the_sentence_the_column_break_cut() -> None:
    # Two pages of the TraceMonkey paper (pdf.js's test file): a figure set at the top of the
    # right column between a sentence's halves; the sentence reads whole, in one paragraph.
    path = _FIXTURES / "outside" / "tracemonkey_float_pages.pdf"
    text = _parse(path.read_bytes(), path.name).text_layer
    assert "our dynamic compiler based on\na set of industry benchmarks." in text
    assert "blacklisting traces that\nhave been tried and failed." in text
    assert text.index("in Section 10.") < text.index("Figure 2. State machine")


def test_a_front_matters_running_heads_with_roman_page_numbers_are_left_out() -> None:
    # A two-sided book leaves a blank page after its contents and its preface, headed
    # "iv CONTENTS" and "vi PREFACE": once each, so only their page numbers tell them.
    parsed = _parse((_FIXTURES / "latex_book.pdf").read_bytes(), "latex_book.pdf")
    assert "CONTENTS" not in parsed.text_layer and "PREFACE" not in parsed.text_layer
    assert "\n\nPreface\n\nThis guide grew out of ten summers" in parsed.text_layer


def test_a_loose_line_beside_the_next_columns_heading_is_no_justified_line() -> None:
    # LaTeX's two columns stand 10 pt apart, about two and a half stretched word spaces: a
    # loose line of the left column ("... On every visit two") beside the right column's
    # "3 Method" was read as one justified line, and the page's columns fell apart there.
    path = _FIXTURES / "latex_two_column_paper.pdf"
    parsed = _parse(path.read_bytes(), path.name)
    text = parsed.text_layer
    assert "On every visit two\nvolunteers measured the width of the channel" in text
    assert "3 Method" in [s.heading for s in parsed.sections]
    related = text.index("2 Related work\n\nThe float method has been known")
    assert text.index("twelve sites over two summers.") < related < text.index("3 Method")


def test_a_float_atop_a_page_under_its_running_head_comes_after_the_sentence_it_cut() -> None:
    # The running head is read first on the page; the table under it still stands between
    # the two halves of the sentence the page break cut.
    words = "the water of a small river moves over stones and sand and gravel every day"
    body = [f"{words} and {n} more" for n in range(1, 40)]

    def page(texts: list[Text]) -> Page:
        return Page([Text(72, 750, "Notes on small rivers", 9), *texts])

    first = [Text(72, 700 - 14 * n, line) for n, line in enumerate(body)]
    first.append(Text(72, 700 - 14 * len(body), f"{words}, so the float method finds the"))
    second = [
        Text(160, 700, "Table 1: Flows measured in July."),
        Text(160, 684, "Alder Brook 3.2 0.4 0.9"),
        Text(160, 670, "Grey Water 11.5 0.8 6.1"),
        Text(72, 640, f"mean speed of the water from its surface speed and {words}"),
        Text(72, 626, "so that the flow is known."),
        Text(72, 600, f"Another paragraph begins here and {words} and more"),
    ]
    text = _parse(make_pdf([page(first), page(second)])).text_layer
    assert "float method finds the\nmean speed of the water" in text
    assert text.index("the flow is known.") < text.index("Table 1: Flows") < text.index("Another")
    assert text.count("Notes on small rivers") == 0


def test_two_authors_side_by_side_above_the_columns_are_read_with_the_title() -> None:
    # The second author's name stands right of the page's middle, above the right column; the
    # gap between the two names lies on the gutter, so the row was the columns' first and the
    # name was read at the top of the right column, after the whole left one.
    path = _FIXTURES / "latex_two_column_paper.pdf"
    text = _parse(path.read_bytes(), path.name).text_layer
    assert text.startswith(
        "Measuring Small Rivers with Volunteers and Oranges\n\nMara Quell Tom Idris\n\nAbstract"
    ), text[:200]
    assert text.count("Tom Idris") == 1


def test_displayed_equations_set_larger_than_the_text_are_no_headings() -> None:
    # A Word document with equations and no heading, as LibreOffice exports it: its displayed
    # equations are set larger than the text, so each line of one ("a 2 +b 2=c 2 ×23", a
    # fraction's "dx") was taken for a heading by typography (15 of them).
    path = _FIXTURES / "word_equations.pdf"
    parsed = _parse(path.read_bytes(), path.name)
    assert [s.heading for s in parsed.sections if s.heading] == []
    # Measured by its fonts' own metrics (they state none), a subscript stays by its letter.
    assert "f ( x )=a 0 +∑ n=1 ( a n cos +b n sin )" in parsed.text_layer


def test_a_slides_bullets_set_as_large_as_a_heading_are_no_headings() -> None:
    # Slides exported as PDF: the bullets are set larger than the notes' text, so each bullet
    # line stood out as a heading by typography ("• With foo").
    slide = Page(
        [
            Text(72, 560, "Lets introduce a list", 28),
            Text(90, 510, "\x95 With foo and its friends", 20),
            Text(90, 480, "\x95 Bar and baz things", 20),
            *(
                Text(72, 400 - 14 * n, f"Speaker notes line {n} about the foo and the bar here")
                for n in range(12)
            ),
        ],
        width=792,
        height=612,
    )
    parsed = _parse(make_pdf([slide]), "slides.pdf")
    assert [s.heading for s in parsed.sections if s.heading] == ["Lets introduce a list"]
    assert "• With foo and its friends" in parsed.text_layer
