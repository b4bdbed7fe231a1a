"""PPTX: a section per slide titled by its title, shapes in reading order, tables, charts, notes,
comments, groups and unrecognised shapes, and hostile packages; on docling's corpus files and
on decks built here with python-pptx."""

from __future__ import annotations

import io
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from lxml import etree
from parsed_support import headings as _headings
from parsed_support import parse_checked, parse_corpus
from parsed_support import table_cells as _rows
from PIL import Image
from pptx import Presentation
from pptx.chart.data import CategoryChartData, XyChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.enum.shapes import MSO_SHAPE
from pptx.util import Inches

from agrag_pipeline.parsing import ParsedDocument, parse_document, powerpoint
from agrag_pipeline.parsing.charts import read_chart
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    ParseTimeoutError,
)
from agrag_pipeline.settings import OcrSettings, ParsingSettings

CORPUS_NAMES = sorted(
    p.name
    for p in (Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "pptx").glob(
        "*.pptx"
    )
)


def _parse(raw: bytes, key: str = "deck.pptx") -> ParsedDocument:
    return parse_checked(raw, key)


def _corpus(corpus_dir: Path, name: str) -> ParsedDocument:
    return parse_corpus(corpus_dir, "pptx", name)


def _section(parsed: ParsedDocument, *path: str) -> str:
    """The text under a heading path: its own section and its continuations."""
    return "\n\n".join(
        s.text_in(parsed.text_layer) for s in parsed.sections if s.heading_path == list(path)
    )


def _save(presentation: object) -> bytes:
    out = io.BytesIO()
    presentation.save(out)  # type: ignore[attr-defined]
    return out.getvalue()


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def deck() -> bytes:
    """Four slides: bullets and notes; a table with a merge and a chart; two columns, a group,
    a picture; an untitled slide of two text boxes side by side. Plus a blank slide."""
    prs = Presentation()
    first = prs.slides.add_slide(prs.slide_layouts[1])  # title and content
    first.shapes.title.text = "Quarterly Review"
    body = first.placeholders[1].text_frame
    body.text = "Revenue up"
    sub = body.add_paragraph()
    sub.text = "Costs flat"
    sub.level = 1
    first.notes_slide.notes_text_frame.text = "Mention the new office."

    second = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    second.shapes.title.text = "Numbers"
    table = second.shapes.add_table(4, 3, Inches(1), Inches(1.5), Inches(6), Inches(2)).table
    cells = [["Region", "Q1", "Q2"], ["EMEA", "10", "12"], ["APAC", "7", "9"], ["Total", "", ""]]
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(3, 1).merge(table.cell(3, 2))
    table.cell(3, 1).text = "38"
    data = CategoryChartData()
    data.categories = ["Jan", "Feb"]
    data.add_series("Sales", (1.5, 2.0))
    data.add_series("Costs", (1, 3))
    frame = second.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(4), Inches(6), Inches(3), data
    )
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Monthly sales"

    third = prs.slides.add_slide(prs.slide_layouts[5])
    third.shapes.title.text = "Layout"
    right = third.shapes.add_textbox(Inches(5), Inches(2), Inches(3), Inches(1))
    right.text_frame.text = "Right column"
    left = third.shapes.add_textbox(Inches(0.5), Inches(2.05), Inches(3), Inches(1))
    left.text_frame.text = "Left column"
    group = third.shapes.add_group_shape()
    for x, label in ((3, "Grouped B"), (1, "Grouped A")):
        shape = group.shapes.add_shape(
            MSO_SHAPE.RECTANGLE, Inches(x), Inches(4), Inches(1), Inches(1)
        )
        shape.text_frame.text = label
    picture = third.shapes.add_picture(io.BytesIO(_png()), Inches(1), Inches(6))
    picture._element.nvPicPr.cNvPr.set("descr", "Team photo at the offsite")

    fourth = prs.slides.add_slide(prs.slide_layouts[6])  # blank: no title placeholder
    a = fourth.shapes.add_textbox(Inches(0.5), Inches(1), Inches(3), Inches(1))
    a.text_frame.text = "Untitled left"
    b = fourth.shapes.add_textbox(Inches(5), Inches(1), Inches(3), Inches(1))
    b.text_frame.text = "Untitled right"
    prs.slides.add_slide(prs.slide_layouts[6])  # nothing at all: left out
    return _save(prs)


# --- the corpus -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_corpus_pptx_keeps_the_section_contract(corpus_dir: Path, name: str) -> None:
    parsed = _corpus(corpus_dir, name)
    assert not parsed.paged
    for section in parsed.sections:  # slides at level 1, their notes and comments at 2
        if section.heading is not None:
            expected = 2 if section.heading in (powerpoint.NOTES, powerpoint.COMMENTS) else 1
            assert section.level == expected
    for section in parsed.sections:
        own = section.text_in(parsed.text_layer)
        assert own and own == own.strip()


def test_slides_are_sections_titled_by_their_title_with_comments_as_children(
    corpus_dir: Path,
) -> None:
    parsed = _corpus(corpus_dir, "powerpoint_comments.pptx")
    first = "Test Slide With Comments"
    assert _headings(parsed) == [
        (1, [first]),
        (2, [first, "Comments"]),
        (1, ["Start"]),
        (1, ["Features"]),
        (2, ["Features", "Comments"]),
    ]
    assert _section(parsed, first, "Comments").split("\n")[2:] == [
        "[author: John Reviewer (JR), time: 2026-01-01T00:00:00]: "
        "This is a sample reviewer comment",
        "[author: Jane Smith (JS), time: 2026-06-18T17:35:35.236]: This is a sample response",
    ]
    features = _section(parsed, "Features")
    assert features.split("\n")[2].startswith("- Import many document formats")


def test_body_placeholder_paragraphs_are_bullets_unless_bu_none(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "powerpoint_issue_2663.pptx")
    lines = _section(parsed, "Open-Source Software").split("\n")
    assert lines[2] == "Key Benefits:"  # buNone
    assert lines[3].startswith("- Open-source software is cost-effective")
    assert "Considerations When Using Open-Source Software:" in lines
    assert lines[-1].startswith("- Some open-source solutions may require")


def test_unrecognised_shape_keeps_its_text_and_untitled_slide_is_slide_n(
    corpus_dir: Path,
) -> None:
    parsed = _corpus(corpus_dir, "powerpoint_unrecognized_shape.pptx")
    assert [p for _, p in _headings(parsed)] == [
        ["Q3 Revenue Summary"],
        ["Slide 2"],
        ["Next Steps"],
    ]
    assert _section(parsed, "Slide 2") == (
        "Slide 2\n\nKey Metrics\nMonthly active users: 4.2M\nNet retention rate: 112%"
        "\n\nText in an unrecognized shape"
    )
    assert "- 1. Finalize pricing model" in _section(parsed, "Next Steps")


def test_malformed_pictures_do_not_stop_the_slides_and_a_top_line_titles_them(
    corpus_dir: Path,
) -> None:
    parsed = _corpus(corpus_dir, "powerpoint_malformed_pictures.pptx")
    assert [p for _, p in _headings(parsed)] == [
        ["Slide With Missing BlipFill"],
        ["Slide With Dangling Rel"],
        ["Slide With Wrong Content Type"],
    ]
    assert "_good_picture.png" not in parsed.text_layer  # a file name is not alt text


# --- decks built here -----------------------------------------------------------------------


def test_speaker_notes_are_a_child_section_and_bullets_keep_their_level(deck: bytes) -> None:
    parsed = _parse(deck)
    assert _headings(parsed)[:2] == [(1, ["Quarterly Review"]), (2, ["Quarterly Review", "Notes"])]
    assert (
        _section(parsed, "Quarterly Review") == "Quarterly Review\n\n- Revenue up\n  - Costs flat"
    )
    assert _section(parsed, "Quarterly Review", "Notes") == "Notes\n\nMention the new office."


def test_tables_and_charts_are_table_sections_with_cells_in_the_right_rows(deck: bytes) -> None:
    parsed = _parse(deck)
    tables = [s for s in parsed.sections if s.kind == "table"]
    assert [t.heading_path for t in tables] == [["Numbers"], ["Numbers"]]
    assert _rows(parsed, tables[0]) == [
        ["Region", "Q1", "Q2"],
        ["EMEA", "10", "12"],
        ["APAC", "7", "9"],
        ["Total", "38", "38"],  # a merged cell repeats its text in every cell it covers
    ]
    assert "Monthly sales\n\n| " in parsed.text_layer  # the chart's title, then its data
    assert _rows(parsed, tables[1]) == [
        ["", "Sales", "Costs"],
        ["Jan", "1.5", "1"],
        ["Feb", "2", "3"],
    ]


def test_placeholders_whose_layout_says_bu_none_are_not_bullets() -> None:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[4])  # "Comparison": two headed columns
    texts = {1: "Option A", 2: "Cheap", 3: "Option B", 4: "Fast"}
    for ph in slide.placeholders:
        if ph.placeholder_format.idx in texts:
            ph.text = texts[ph.placeholder_format.idx]
        elif ph.placeholder_format.idx == 0:
            ph.text = "Choices"
    parsed = _parse(_save(prs))
    assert _section(parsed, "Choices") == "Choices\n\nOption A\n\nOption B\n\n- Cheap\n\n- Fast"


def test_scatter_chart_is_a_row_per_point_with_its_x_and_y() -> None:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = "Dose response"
    data = XyChartData()
    series = data.add_series("Trial A")
    series.add_data_point(0.5, 10)
    series.add_data_point(2, 35.5)
    slide.shapes.add_chart(XL_CHART_TYPE.XY_SCATTER, 0, Inches(2), Inches(4), Inches(3), data)
    parsed = _parse(_save(prs))
    table = next(s for s in parsed.sections if s.kind == "table")
    assert table.heading_path == ["Dose response"]
    assert _rows(parsed, table) == [
        ["Series", "X", "Y"],
        ["Trial A", "0.5", "10"],
        ["Trial A", "2", "35.5"],
    ]


def test_shapes_read_top_to_bottom_left_to_right_and_groups_in_place(deck: bytes) -> None:
    parsed = _parse(deck)
    assert _section(parsed, "Layout") == (
        "Layout\n\nLeft column\n\nRight column\n\nGrouped A\n\nGrouped B"
        "\n\n[Image: Team photo at the offsite]"
    )


def test_untitled_slide_with_a_row_of_boxes_is_slide_n_and_empty_slides_are_left_out(
    deck: bytes,
) -> None:
    parsed = _parse(deck)
    assert [p for _, p in _headings(parsed) if len(p) == 1][-1] == ["Slide 4"]
    assert _section(parsed, "Slide 4") == "Slide 4\n\nUntitled left\n\nUntitled right"
    assert "Slide 5" not in parsed.text_layer


def _add_parts(raw: bytes, parts: dict[str, str], rels: dict[str, tuple[str, str]]) -> bytes:
    """``raw`` with new parts, and a relationship (type, target) added to each named rels part."""
    source = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename in rels:
                kind, target = rels[info.filename]
                extra = f'<Relationship Id="rIdX9" Type="{kind}" Target="{target}"/>'
                data = data.replace(b"</Relationships>", extra.encode() + b"</Relationships>")
            archive.writestr(info.filename, data)
        for name, text in parts.items():
            archive.writestr(name, text)
    return out.getvalue()


def test_modern_comments_and_replies_are_kept_with_their_authors(deck: bytes) -> None:
    p188 = powerpoint.P188
    comments = (
        f'<p188:cmLst xmlns:p188="{p188}" xmlns:a="{powerpoint.A}">'
        '<p188:cm id="{C1}" authorId="{A1}" created="2024-05-01T10:00:00.000">'
        '<p188:replyLst><p188:reply id="{R1}" authorId="{A2}" created="2024-05-02T09:00:00.000">'
        "<p188:txBody><a:bodyPr/><a:p><a:r><a:t>Agreed, updated.</a:t></a:r></a:p>"
        "</p188:txBody></p188:reply></p188:replyLst>"
        "<p188:txBody><a:bodyPr/><a:p><a:r><a:t>Check these numbers</a:t></a:r></a:p>"
        "</p188:txBody></p188:cm></p188:cmLst>"
    )
    authors = (
        f'<p188:authorLst xmlns:p188="{p188}">'
        '<p188:author id="{A1}" name="Ann Lee" initials="AL" userId="ann" providerId="None"/>'
        '<p188:author id="{A2}" name="Bo Chen" initials="BC" userId="bo" providerId="None"/>'
        "</p188:authorLst>"
    )
    raw = _add_parts(
        deck,
        {"ppt/comments/modernComment_1.xml": comments, "ppt/authors.xml": authors},
        {
            "ppt/slides/_rels/slide1.xml.rels": (
                powerpoint.MODERN_COMMENTS,
                "../comments/modernComment_1.xml",
            ),
            "ppt/_rels/presentation.xml.rels": (powerpoint.AUTHORS, "authors.xml"),
        },
    )
    parsed = _parse(raw)
    assert _section(parsed, "Quarterly Review", "Comments").split("\n")[2:] == [
        "[author: Ann Lee (AL), time: 2024-05-01T10:00:00.000]: Check these numbers",
        "[author: Bo Chen (BC), time: 2024-05-02T09:00:00.000]: Agreed, updated.",
    ]


def test_strict_ooxml_deck_reads_like_its_transitional_twin(deck: bytes) -> None:
    uris = {
        "http://schemas.openxmlformats.org/presentationml/2006/main": (
            "http://purl.oclc.org/ooxml/presentationml/main"
        ),
        "http://schemas.openxmlformats.org/drawingml/2006/main": (
            "http://purl.oclc.org/ooxml/drawingml/main"
        ),
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships": (
            "http://purl.oclc.org/ooxml/officeDocument/relationships"
        ),
    }
    source = zipfile.ZipFile(io.BytesIO(deck))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith((".xml", ".rels")):
                text = data.decode("utf-8")
                for old, new in uris.items():
                    text = text.replace(old, new)
                data = text.encode("utf-8")
            archive.writestr(info.filename, data)
    assert _parse(out.getvalue()).text_layer == _parse(deck).text_layer


def test_chunks_of_a_pptx_pass_the_asset_checks(tmp_path: Path, deck: bytes) -> None:
    from agrag_pipeline.pipeline import run_document
    from agrag_pipeline.runtime import Runtime
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
    from agrag_pipeline.validation import check_chunks, check_sections

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "deck.pptx").write_bytes(deck)
    shutil.copy(
        Path(__file__).resolve().parents[2]
        / ".."
        / "shared"
        / "corpus"
        / "pptx"
        / "powerpoint_comments.pptx",
        raw / "comments.pptx",
    )
    runtime = Runtime.from_files(DEFAULT_SETTINGS_PATH, raw, str(tmp_path / "warehouse"))
    for name in ("deck.pptx", "comments.pptx"):
        result = run_document(runtime, name, embed=False)
        assert result.chunks
        outcomes = check_sections(runtime.warehouse, name) + check_chunks(runtime.warehouse, name)
        assert [o.name for o in outcomes if not o.passed] == []
    notes = [c for c in result.chunks if c.heading_path[-1:] == ["Comments"]]
    assert notes, "comment sections become their own chunks"


# --- hostile files --------------------------------------------------------------------------


def _replace_member(raw: bytes, name: str, data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, data if info.filename == name else source.read(info))
    return out.getvalue()


def test_truncated_pptx_is_a_corrupt_document_error(corpus_dir: Path) -> None:
    raw = (corpus_dir / "pptx" / "powerpoint_comments.pptx").read_bytes()
    with pytest.raises(CorruptDocumentError, match=r"^cut\.pptx: not a readable ZIP package"):
        parse_document(raw[: len(raw) * 2 // 3], "cut.pptx")


def test_zip_bomb_deck_is_refused_before_inflating(deck: bytes) -> None:
    out = io.BytesIO(deck)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ppt/slides/slide9.xml", b" " * (48 * 1024 * 1024))
    started = time.perf_counter()
    with pytest.raises(DocumentTooLargeError, match=r"slide9\.xml' inflates"):
        parse_document(out.getvalue(), "bomb.pptx")
    assert time.perf_counter() - started < 2.0


def test_billion_laughs_in_a_slide_is_refused_quickly(deck: bytes) -> None:
    lol = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    bomb = (
        f'<?xml version="1.0"?><!DOCTYPE p:sld [<!ENTITY l0 "lol">{lol}]>'
        f'<p:sld xmlns:p="{powerpoint.P}" xmlns:a="{powerpoint.A}"><p:cSld><p:spTree>'
        "<p:sp><p:txBody><a:p><a:r><a:t>&l9;</a:t></a:r></a:p></p:txBody></p:sp>"
        "</p:spTree></p:cSld></p:sld>"
    ).encode()
    raw = _replace_member(deck, "ppt/slides/slide1.xml", bomb)
    started = time.perf_counter()
    with pytest.raises(CorruptDocumentError, match=r"slide1\.xml' declares a DTD"):
        parse_document(raw, "laughs.pptx")
    assert time.perf_counter() - started < 2.0


def test_external_entity_in_a_relationship_part_is_refused(tmp_path: Path, deck: bytes) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE", encoding="utf-8")
    rels = (
        f'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file://{secret}">]>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="&x;" Target="x.xml"/></Relationships>'
    ).encode()
    raw = _replace_member(deck, "ppt/slides/_rels/slide1.xml.rels", rels)
    with pytest.raises(CorruptDocumentError, match="declares a DTD") as caught:
        parse_document(raw, "xxe.pptx")
    assert "TOP-SECRET" not in str(caught.value)


def test_time_budget_ends_a_parse_with_a_timeout_error_naming_where(deck: bytes) -> None:
    with pytest.raises(ParseTimeoutError, match=r"^deck\.pptx: gave up after .* at (part|slide)"):
        parse_document(deck, "deck.pptx", time_budget_s=1e-6)


def test_a_deck_without_text_is_a_document_with_no_chunks_and_a_note_unless_text_is_required() -> (
    None
):
    # A deck of pictures (as a team's folder holds them) is no failure, like a photo among scans.
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    parsed = parse_document(_save(prs), "blank.pptx")
    assert parsed.text_layer == "" and parsed.sections == []
    assert parsed.warnings == ["no text: the presentation has no text"]
    strict = ParsingSettings(ocr=OcrSettings(require_text=True))
    with pytest.raises(EmptyDocumentError, match=r"^blank\.pptx: the presentation has no text"):
        parse_document(_save(prs), "blank.pptx", parsing=strict)
    # The macro-enabled kind too: its media type ("...macroEnabled.12") is compared in lower
    # case, and an empty .pptm (an .xlsm of buttons: XlsxWriter's button07.xlsm) failed.
    macro = parse_document(_save(prs), "blank.pptm", media_type=powerpoint.MACRO_MEDIA_TYPE)
    assert macro.text_layer == "" and macro.warnings == ["no text: the presentation has no text"]


def test_zip_that_is_no_presentation_is_a_corrupt_document_error() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
    with pytest.raises(CorruptDocumentError, match=r"^fake\.pptx: not a readable PowerPoint"):
        parse_document(out.getvalue(), "fake.pptx")


def test_3d_bar_chart_on_a_real_slide_is_read_as_its_data() -> None:
    # A real deck's slide (AASCU, from Apache POI's test data) with a clustered 3-D column
    # chart (``c:bar3DChart``), which python-pptx refuses as an "unsupported plot type".
    raw = (Path(__file__).resolve().parents[1] / "fixtures" / "bar3d_chart.pptx").read_bytes()
    parsed = _parse(raw)
    assert parsed.warnings == []
    table = next(t for t in parsed.sections if t.kind == "table")
    rows = _rows(parsed, table)
    assert rows[0] == ["", "Series 1"]  # an unnamed series is named by its place
    assert rows[1] == ["100 years and over", "79.6264"]
    assert rows[-1] == ["Under 5 years", "51.7189"]
    assert len(rows) == 22  # the header and 21 age groups
    # Word reads its charts through the same reader: the chart part alone gives the same rows.
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        blob = package.read("ppt/charts/chart1.xml")
    _, chart_rows = read_chart(blob, "deck.pptx", "ppt/charts/chart1.xml")
    assert chart_rows[1:] == rows[1:]


@pytest.mark.parametrize("kind", ["line3DChart", "pie3DChart", "area3DChart", "surface3DChart"])
def test_every_3d_chart_kind_gives_its_data(kind: str) -> None:
    # The same real chart part with its plot retagged as each other 3-D kind (their series are
    # the same ``c:ser`` elements; only the plot element's name and styling differ).
    raw = (Path(__file__).resolve().parents[1] / "fixtures" / "bar3d_chart.pptx").read_bytes()
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        blob = package.read("ppt/charts/chart1.xml").replace(b"bar3DChart", kind.encode())
    _, rows = read_chart(blob, "deck.pptx", "ppt/charts/chart1.xml")
    assert rows[1] == ["100 years and over", "79.6264"]
    assert len(rows) == 22


def test_equations_side_by_side_on_a_slide_stay_apart() -> None:
    # Two equations in one paragraph of a slide read "a=bc=d" before: one formula, neither.
    a = "http://schemas.openxmlformats.org/drawingml/2006/main"
    m = "http://schemas.openxmlformats.org/officeDocument/2006/math"
    p = etree.fromstring(
        f'<a:p xmlns:a="{a}" xmlns:m="{m}"><a:r><a:t>Both hold: </a:t></a:r>'
        "<m:oMath><m:r><m:t>a=b</m:t></m:r></m:oMath><m:oMath><m:r><m:t>c=d</m:t></m:r></m:oMath>"
        "</a:p>"
    )
    assert powerpoint.paragraph_text(p) == "Both hold: a=b c=d"


_SLIDESHOW_TYPES = (
    b"application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml",
    b"application/vnd.openxmlformats-officedocument.presentationml.template.main+xml",
    b"application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml",
    b"application/vnd.ms-powerpoint.template.macroEnabled.main+xml",
)


def test_a_slide_show_and_a_template_read_as_the_presentation_they_hold(corpus_dir: Path) -> None:
    # PowerPoint's "PowerPoint Show" (.ppsx) and templates (.potx, and their macro-enabled
    # kinds) are a presentation's package under another main content type, which python-pptx
    # refuses: they failed as "not a readable PowerPoint package".
    show = Path(__file__).parent.parent / "fixtures/pptx/poi_testPPT.ppsx"  # Apache POI's
    parsed = parse_document(show.read_bytes(), "testPPT.ppsx")
    assert [s.heading for s in parsed.sections][:3] == ["Attachment Test", "Slide 2", "Slide 3"]
    assert "Black Panther" in parsed.text_layer
    source = corpus_dir / "pptx" / "powerpoint_comments.pptx"
    expected = parse_document(source.read_bytes(), "deck.pptx")
    main = b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
    for kind, ext in zip(_SLIDESHOW_TYPES, (".ppsx", ".potx", ".ppsm", ".potm"), strict=True):
        out = io.BytesIO()
        with zipfile.ZipFile(source) as zin, zipfile.ZipFile(out, "w") as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                if info.filename == "[Content_Types].xml":
                    assert main in data
                    data = data.replace(main, kind)
                zout.writestr(info, data)
        parsed = parse_document(out.getvalue(), "deck" + ext)
        assert parsed.text_layer == expected.text_layer, ext
        assert [s.heading for s in parsed.sections] == [s.heading for s in expected.sections]
