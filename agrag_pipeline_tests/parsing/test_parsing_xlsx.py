"""XLSX/XLSM: sheets as sections, tables with cells in the right rows, and hostile workbooks."""

from __future__ import annotations

import io
import re
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl.chart import BarChart, Reference
from openpyxl.comments import Comment
from parsed_support import parse_checked, parse_corpus
from parsed_support import table_cells as _cells
from parsed_support import tables as _tables

from agrag_pipeline.parsing import ParsedDocument, parse_document, spreadsheet
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentTooLargeError,
)


def _parse(raw: bytes, key: str = "book.xlsx") -> ParsedDocument:
    return parse_checked(raw, key)


def _corpus(corpus_dir: Path, name: str) -> ParsedDocument:
    return parse_corpus(corpus_dir, "xlsx", name)


def _workbook_bytes(workbook: openpyxl.Workbook) -> bytes:
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def _replace_member(raw: bytes, name: str, change: Callable[[bytes], bytes]) -> bytes:
    """The package ``raw`` with member ``name`` rewritten by ``change``."""
    source = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info)
            archive.writestr(info, change(data) if info.filename == name else data)
    return out.getvalue()


def test_each_sheet_is_a_heading_with_its_table_cells_in_the_right_rows(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "xlsx_03_chartsheet.xlsx")
    headings = [(s.level, s.heading) for s in parsed.sections if s.heading]
    assert headings[:2] == [(1, "Duck Observations"), (1, "Duck Chart")]
    first = _tables(parsed)[0]
    assert first.heading_path == ["Duck Observations"]
    rows = _cells(parsed, first)
    assert rows[0] == ["Year", "Freshwater Ducks", "Saltwater Ducks", "Ducks"]
    assert rows[1] == ["2019", "120", "80", "200"]
    assert rows[-1] == ["2024", "180", "130", "310"]
    assert len(first.table_rows) == 6


def test_chart_is_its_title_kind_and_data_table(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "xlsx_03_chartsheet.xlsx")
    chart = next(s for s in parsed.sections if s.heading == "Wild Duck Observations by Year")
    assert chart.heading_path == ["Duck Chart", "Wild Duck Observations by Year"]
    assert "Bar chart" in chart.text_in(parsed.text_layer)
    table = _tables(parsed)[1]
    assert table.parent_id == chart.id
    assert _cells(parsed, table)[:2] == [
        ["", "Freshwater Ducks", "Saltwater Ducks"],
        ["2019", "120", "80"],
    ]


def test_a_damaged_chart_part_is_left_out_with_a_warning_and_the_sheets_are_read(
    corpus_dir: Path,
) -> None:
    # What LibreOffice 7.4 wrote when it saved two Excel 97 workbooks with charts as .xlsx (the
    # Open Preservation Foundation's MonteCarlo.xls and valid.xls): a chart part whose root
    # element ends before the last of its text.
    raw = (corpus_dir / "xlsx" / "xlsx_03_chartsheet.xlsx").read_bytes()
    damaged = _replace_member(
        raw, "xl/charts/chart1.xml", lambda data: data + b'tCount val="92"/><c:pt idx="0">'
    )
    parsed = parse_document(damaged, "ducks.xlsx")
    # The chart sheet holds nothing else, so it is left out like an empty sheet.
    assert [s.heading for s in parsed.sections if s.heading] == ["Duck Observations"]
    assert _cells(parsed, _tables(parsed)[0])[1] == ["2019", "120", "80", "200"]
    assert "Wild Duck Observations by Year" not in parsed.text_layer
    assert len(parsed.warnings) == 1
    assert "chart xl/charts/chart1.xml on sheet 'Duck Chart' left out" in parsed.warnings[0]
    assert "not well-formed" in parsed.warnings[0]


def test_inflated_sheet_costs_its_filled_cells_not_its_declared_range(corpus_dir: Path) -> None:
    # Sheet1 declares A1:C1048496 (a styled cell a million rows down).
    started = time.perf_counter()
    parsed = _corpus(corpus_dir, "xlsx_04_inflated.xlsx")
    assert time.perf_counter() - started < 10
    sheet1 = _tables(parsed)[0]
    assert sheet1.heading_path == ["Sheet1"]
    assert _cells(parsed, sheet1)[0] == ["first", "second", "third"]
    assert _cells(parsed, sheet1)[-1] == ["6", "0", "-6"]
    assert len(sheet1.table_rows) == 6
    assert len(parsed.text_layer) < 5_000


def test_islands_on_one_sheet_are_separate_tables(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "xlsx_06_edge_cases_.xlsx")
    diagonal = [t for t in _tables(parsed) if t.heading_path == ["Diagonal"]]
    assert len(diagonal) == 2  # touching only at a corner: two tables
    assert _cells(parsed, diagonal[1]) == [
        ["G1", "H1", "I3"],
        ["Overview 1", "Purpose 1", "Extra 1"],
        ["Overview 2", "Purpose 2", "Extra 2"],
    ]
    # A header with an empty first cell keeps its column.
    missing = next(t for t in _tables(parsed) if t.heading_path == ["missing_header_head"])
    assert _cells(parsed, missing)[0] == ["", "Sub-category", "ID", "Question", "Answer", "Extra"]


def test_merged_cells_repeat_their_value_and_a_label_row_is_text(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "xlsx_04_inflated.xlsx")
    sheet3 = [t for t in _tables(parsed) if t.heading_path == ["Sheet3"]]
    rows = _cells(parsed, sheet3[0])
    assert rows[0] == ["first", "header", "header"]  # B1:C1 merged
    assert rows[1] == ["first", "second", "third"]  # A1:A2 merged
    labelled = _corpus(corpus_dir, "xlsx_09_section_label_header.xlsx")
    table = _tables(labelled)[0]
    assert _cells(labelled, table)[0][:3] == ["#", "Genre", "Sub-Genre"]
    before = labelled.text_layer[: table.start]
    assert "Reading List" in before


def test_dates_follow_the_number_format_and_xlsm_reads_like_xlsx(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "xlsx_02_sample_sales_data.xlsm")
    assert parsed.document.media_type == spreadsheet.XLSM_MEDIA_TYPE.lower()
    rows = _cells(parsed, _tables(parsed)[0])
    assert rows[0] == ["Product", "Date", "Quantity", "Revenue"]
    assert rows[1] == ["Widget A", "2024-01-01 00:00:00", "5", "5000"]


def test_comments_and_threaded_replies_are_kept_with_author(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "xlsx_comments.xlsx")
    comments = next(s for s in parsed.sections if s.heading == "Comments")
    text = comments.text_in(parsed.text_layer)
    assert "A1 [author: John Reviewer]: Why Python specifically?" in text
    assert "Marcus Sterling (MS), time: 2026-06-18T17:15:52" in text
    assert "I never thought it would be so low" in text
    assert "tc={" not in parsed.text_layer  # legacy copies of threads are not repeated


def test_formulas_give_cached_values_and_chartsheets_read_their_cells(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Data"
    for row in [("Year", "Sales"), (2020, 5.5), (2021, 0.25)]:
        sheet.append(row)
    sheet["C1"] = "Total"
    sheet["C2"] = "=B2+B3"  # never computed: no cached value
    sheet["A1"].comment = Comment("units are tonnes", "Ana")
    chartsheet = workbook.create_chartsheet("Sales chart")
    chart = BarChart()
    chart.title = "Sales by year"
    chart.add_data(Reference(sheet, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    chart.set_categories(Reference(sheet, min_col=1, min_row=2, max_row=3))
    chartsheet.add_chart(chart)
    parsed = _parse(_workbook_bytes(workbook))
    data = _tables(parsed)[0]
    assert _cells(parsed, data) == [
        ["Year", "Sales", "Total"],
        ["2020", "5.5", ""],
        ["2021", "0.25", ""],
    ]
    assert "=B2+B3" not in parsed.text_layer
    assert "A1 [author: Ana]: units are tonnes" in parsed.text_layer
    headings = [s.heading for s in parsed.sections if s.heading]
    assert headings == ["Data", "Comments", "Sales chart", "Sales by year"]
    # The chart has no cached values (openpyxl writes none): read from the cells it names.
    assert _cells(parsed, _tables(parsed)[1]) == [["", "Sales"], ["2020", "5.5"], ["2021", "0.25"]]


def test_huge_sparse_merge_is_bounded_by_the_filled_area() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet["A1"] = "title"
    sheet["A2"] = "x"
    sheet["B2"] = "y"
    sheet.merge_cells("A1:B1")
    # Widen the merge in the XML to 17 billion cells (openpyxl would build them all).
    raw = _replace_member(
        _workbook_bytes(workbook),
        "xl/worksheets/sheet1.xml",
        lambda data: data.replace(b'ref="A1:B1"', b'ref="A1:XFD1048576"'),
    )
    started = time.perf_counter()
    parsed = _parse(raw)
    assert time.perf_counter() - started < 5
    assert "title" in parsed.text_layer


# --- hostile files --------------------------------------------------------------------------


def test_truncated_workbook_is_a_corrupt_document_error(corpus_dir: Path) -> None:
    raw = (corpus_dir / "xlsx" / "xlsx_03_chartsheet.xlsx").read_bytes()
    with pytest.raises(CorruptDocumentError, match=r"cut\.xlsx: .*ZIP"):
        parse_document(raw[: len(raw) // 2], "cut.xlsx")


def test_zip_bomb_workbook_is_refused_from_its_directory() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * (20 * 1024 * 1024))  # ~1000x
    started = time.perf_counter()
    with pytest.raises(DocumentTooLargeError, match=r"bomb\.xlsx: .*(bomb|limit)"):
        parse_document(out.getvalue(), "bomb.xlsx")
    assert time.perf_counter() - started < 5


def test_sheet_xml_past_the_size_budget_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # A "200 MB sheet" in miniature: the budget is lowered, the check is the same.
    workbook = openpyxl.Workbook()
    for r in range(200):
        workbook.active.append([f"cell {r}-{c}" for c in range(20)])
    raw = _workbook_bytes(workbook)
    monkeypatch.setattr(spreadsheet, "MAX_SHEET_XML_BYTES", 50_000)
    with pytest.raises(DocumentTooLargeError, match=r"big\.xlsx: .* bytes of sheet XML is over"):
        parse_document(raw, "big.xlsx")
    monkeypatch.setattr(spreadsheet, "MAX_SHEET_XML_BYTES", 10**9)
    monkeypatch.setattr(spreadsheet, "MAX_CELLS", 1_000)
    with pytest.raises(DocumentTooLargeError, match=r"big\.xlsx: .* filled cells is over"):
        parse_document(raw, "big.xlsx")


def test_sheet_xml_with_entities_is_refused(corpus_dir: Path) -> None:
    def with_entities(data: bytes) -> bytes:
        body = data.split(b"?>", 1)[-1].replace(b"Header1", b"&b;&x;")
        return (
            b'<?xml version="1.0"?><!DOCTYPE worksheet [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            b'<!ENTITY x SYSTEM "file:///etc/passwd">]>' + body
        )

    raw = (corpus_dir / "xlsx" / "xlsx_08_one_cell_anchor.xlsx").read_bytes()
    hostile = _replace_member(raw, "xl/worksheets/sheet1.xml", with_entities)
    with pytest.raises(CorruptDocumentError, match=r"xxe\.xlsx: .*DTD"):
        parse_document(hostile, "xxe.xlsx")
    # A DTD pushed past the first kilobytes by a long comment is still found.
    padded = _replace_member(
        raw,
        "xl/worksheets/sheet1.xml",
        lambda data: b"<!--" + b" " * 20_000 + b"-->" + with_entities(data),
    )
    with pytest.raises(CorruptDocumentError, match=r"pad\.xlsx: .*DTD"):
        parse_document(padded, "pad.xlsx")


def test_cells_and_rows_without_references_follow_their_neighbours() -> None:
    workbook = openpyxl.Workbook()
    for row in [("Item", "Price"), ("tea", 3), ("cake", 4)]:
        workbook.active.append(row)

    def strip_references(data: bytes) -> bytes:
        return re.sub(rb' r="[A-Z]*\d+"', b"", data)

    raw = _replace_member(_workbook_bytes(workbook), "xl/worksheets/sheet1.xml", strip_references)
    parsed = _parse(raw)
    assert _cells(parsed, _tables(parsed)[0]) == [["Item", "Price"], ["tea", "3"], ["cake", "4"]]


def test_one_stored_value_is_shown_as_each_cells_type_and_format_says() -> None:
    # A sheet's shown texts are kept by (type, value, style): 45292 is a number, a date, a
    # percentage or the text "45292" by its cell, and a formula's cached value (its <v> after
    # the <f>) reads like any other.
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(("As number", "As date", "As percent", "As text", "Formula"))
    for _ in range(3):
        sheet.append((45292, 45292, 45292, "45292", 45292))
    for row in range(2, 5):
        sheet.cell(row, 2).number_format = "yyyy-mm-dd"
        sheet.cell(row, 3).number_format = "0%"
    raw = _workbook_bytes(workbook)

    def with_formulas(data: bytes) -> bytes:  # as Excel saves them: formula, then its value
        return re.sub(rb'(<c r="E\d+"[^>]*>)', rb"\1<f>A2</f>", data)

    parsed = _parse(_replace_member(raw, "xl/worksheets/sheet1.xml", with_formulas))
    assert (
        _cells(parsed, _tables(parsed)[0])[1:]
        == [["45292", "2024-01-01", "4529200%", "45292", "45292"]] * 3
    )


_CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
_SAMPLE = (_CORPUS / "xlsx" / "xlsx_comments.xlsx").read_bytes()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, len(_SAMPLE) - 1), st.integers(0, 255), st.integers(1, len(_SAMPLE)))
def test_damaged_workbooks_end_in_a_document_error_or_a_valid_parse(
    at: int, byte: int, cut: int
) -> None:
    damaged = (_SAMPLE[:at] + bytes([byte]) + _SAMPLE[at + 1 :])[:cut]
    try:
        parsed = parse_document(damaged, "damaged.xlsx")
    except DocumentError as exc:
        assert str(exc).startswith("damaged.xlsx: ")
    else:
        assert contract_violations(parsed) == []


@pytest.mark.parametrize("name", sorted(p.name for p in (_CORPUS / "xlsx").glob("*.xls*")))
def test_every_corpus_workbook_keeps_the_contract_with_a_table(corpus_dir: Path, name: str) -> None:
    parsed = _corpus(corpus_dir, name)
    assert _tables(parsed), "every corpus workbook holds a table"
    assert all(s.heading_path for s in parsed.sections), "all content sits under a sheet"


def test_a_200_mb_sheet_is_refused_from_its_declared_size_before_reading() -> None:
    # A stored (uncompressed) sheet member of 1.2 MB whose directory entry declares 200 MB: the
    # ratio (~170x) passes the zip-bomb check, the sheet-size budget refuses it unread.
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"<worksheet>" + b" " * 1_200_000)
    raw = bytearray(out.getvalue())
    entry = raw.find(b"PK\x01\x02", raw.find(b"PK\x01\x02") + 1)
    entry = raw.find(b"PK\x01\x02", entry + 1)  # the third directory entry: the sheet
    raw[entry + 24 : entry + 28] = (200 * 1024 * 1024).to_bytes(4, "little")
    started = time.perf_counter()
    with pytest.raises(DocumentTooLargeError, match=r"huge\.xlsx: 209,715,200 bytes of sheet XML"):
        parse_document(bytes(raw), "huge.xlsx")
    assert time.perf_counter() - started < 2


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _row_cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def test_spacer_rows_and_columns_keep_every_number_with_its_row_and_column_labels() -> None:
    # A real half-year segment report (Unstructured's example docs, Apache-2.0): labels in
    # column A, figures in B:D, F:H and J with blank spacer columns E and I between them, the
    # column headers a blank row above the figures, a period label over them.
    parsed = _parse((FIXTURES / "half_year_segments.xlsx").read_bytes(), "segments.xlsx")
    first = [t for t in _tables(parsed) if t.heading_path == ["OS-Rev.and results 30 06 2023"]]
    assert len(first) == 2  # 2023 and 2022: two tables, not eight islands of bare numbers
    for table, period in zip(first, ("January–June 2023", "January–June 2022"), strict=True):
        assert table.table_header is not None
        header_text = parsed.text_layer[table.table_header.start : table.table_header.end]
        header = [_row_cells(line) for line in header_text.split("\n")[:2]]
        assert header[0][0] == "In millions of CHF" and header[0][-1] == period
        assert header[1][1:4] == [
            "Sales (a)",
            "Underlying Trading operating profit (b)",
            "Trading operating profit",
        ]
        assert header[1][-1] == "Depreciation and amortization"
        body = _cells(parsed, table)[1:]
        assert [row[0] for row in body][:2] == ["Zone NA", "Zone EUR"]
        assert all(len(row) == 8 for row in [*header, *body])
    assert _cells(parsed, first[0])[1] == [
        "Zone NA", "12553", "2713", "2632", "-81", "-29", "-44", "-337"
    ]  # fmt: skip
    assert _cells(parsed, first[1])[-1] == [
        "Total", "45580", "7683", "6684", "-999", "-142", "-87", "-1756"
    ]  # fmt: skip
    # No table of the workbook is left without row labels: every table row starts with text.
    for table in _tables(parsed):
        for row in _cells(parsed, table)[1:]:
            assert not re.fullmatch(r"[-\d—]*", row[0]), row
    # A title merged across the sheet is a line of text, not a row repeating it.
    assert "| 3. Analyses by segment | 3. Analyses by segment" not in parsed.text_layer


def test_a_workbook_whose_zip_names_use_backslashes_reads_as_with_slashes(
    corpus_dir: Path,
) -> None:
    # Some Windows tools write ``xl\workbook.xml`` (Apache POI's 49609.xlsx): the ZIP format
    # asks for "/", Excel and unzip read "\" as one. It failed: "the package has no workbook".
    source = (corpus_dir / "xlsx" / "xlsx_02_sample_sales_data.xlsm").read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename.replace("/", "\\"), zin.read(info.filename))
    assert "xl\\workbook.xml" in zipfile.ZipFile(io.BytesIO(out.getvalue())).namelist()
    parsed = _parse(out.getvalue())
    expected = _parse(source)
    assert parsed.text_layer == expected.text_layer
    assert [s.heading for s in parsed.sections] == [s.heading for s in expected.sections]
