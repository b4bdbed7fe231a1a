"""CSV/TSV: delimiter sniffing, header detection, unequal rows, quoted newlines, budgets."""

from __future__ import annotations

from pathlib import Path

import pytest
from parsed_support import parse_checked, table_cells

from agrag_pipeline.models import Section
from agrag_pipeline.parsing import ParsedDocument, delimited, parse_document
from agrag_pipeline.parsing.errors import (
    DocumentTooLargeError,
    EmptyDocumentError,
    EncodingError,
    ParseTimeoutError,
)


def _parse(raw: bytes, key: str = "data.csv") -> ParsedDocument:
    return parse_checked(raw, key)


def _table(parsed: ParsedDocument) -> Section:
    tables = [s for s in parsed.sections if s.kind == "table"]
    assert len(tables) == 1
    return tables[0]


def _rows(parsed: ParsedDocument) -> list[list[str]]:
    return table_cells(parsed, _table(parsed))


@pytest.mark.parametrize(
    ("name", "company"),
    [
        ("csv-comma.csv", "Dominguez, Mcmillan and Donovan"),
        ("csv-semicolon.csv", "Dominguez;Mcmillan and Donovan"),
        ("csv-tab.csv", "Dominguez Mcmillan and Donovan"),
    ],
)
def test_delimiter_is_sniffed_and_quoted_delimiters_stay_in_their_cell(
    corpus_dir: Path, name: str, company: str
) -> None:
    parsed = _parse((corpus_dir / "csv" / name).read_bytes(), f"csv/{name}")
    rows = _rows(parsed)
    assert rows[0][:4] == ["Index", "Customer Id", "First Name", "Last Name"]
    assert len(rows[0]) == 12
    assert rows[4][0] == "4" and rows[4][4] == company
    assert all(len(row) == 12 for row in rows)


def test_sniffer_picks_each_delimiter() -> None:
    assert delimited.sniff_delimiter("a,b,c\n1,2,3\n") == ","
    assert delimited.sniff_delimiter("a;b;c\n1,5;2;3\n") == ";"
    assert delimited.sniff_delimiter("a\tb\n1\t2\n") == "\t"
    assert delimited.sniff_delimiter("a|b|c\n1|2|3\n") == "|"
    assert delimited.sniff_delimiter("just one column\nsecond line\n") == ","


def test_rows_of_unequal_length_are_kept_padded(corpus_dir: Path) -> None:
    parsed = _parse((corpus_dir / "csv" / "csv-too-few-columns.csv").read_bytes())
    rows = _rows(parsed)
    assert rows[0] == ["1", "2", "3", "4"]
    assert rows[2] == ["a", "b", "c", ""]
    inconsistent = _rows(_parse((corpus_dir / "csv" / "csv-inconsistent-header.csv").read_bytes()))
    assert inconsistent[0] == ["1", "2", "3", ""]
    assert inconsistent[1] == ["a", "b", "c", "d"]


def test_header_is_detected_and_a_numeric_first_row_over_numbers_is_data() -> None:
    with_header = _parse(b"name,score\nada,3\nbob,4\n")
    assert _table(with_header).table_header is not None
    assert _rows(with_header)[0] == ["name", "score"]
    numbers = _parse(b"1,2\n3,4\n5,6\n")
    table = _table(numbers)
    assert table.table_header is None
    assert len(table.table_rows) == 3


def test_quoted_newlines_and_pipes_stay_in_one_cell_on_one_line() -> None:
    parsed = _parse(b'id,note\n1,"first line\nsecond | line"\n2,plain\n')
    assert _rows(parsed)[1] == ["1", "first line second \\| line"]
    assert len(_table(parsed).table_rows) == 2


def test_tsv_is_tab_separated_and_utf8_bom_is_dropped() -> None:
    parsed = _parse("\ufeffStadt\tEinwohner\nMünchen\t1,5 Mio\n".encode(), "cities.tsv")
    assert parsed.document.media_type == delimited.TSV_MEDIA_TYPE
    assert _rows(parsed) == [["Stadt", "Einwohner"], ["München", "1,5 Mio"]]


def test_binary_and_empty_files_are_clear_errors() -> None:
    with pytest.raises(EncodingError, match=r"bin\.csv: binary data, not text: NUL byte"):
        parse_document(b"caf\xe9,1\n\x00\x01", "bin.csv")
    with pytest.raises(EmptyDocumentError, match=r"blank\.csv: "):
        parse_document(b" , ,\n,,\n", "blank.csv")


def test_csv_past_the_size_limit_is_refused_before_parsing() -> None:
    raw = b"a,b,c\n" * (11 * 1024 * 1024 // 6 + 1)  # about 11 MB of real CSV
    with pytest.raises(DocumentTooLargeError, match=r"big\.csv: .* over the limit of"):
        parse_document(raw, "big.csv", max_bytes=10 * 1024 * 1024)


def test_cell_budget_and_time_budget_end_in_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = b"".join(b"%d,x,y\n" % i for i in range(200_000))
    with pytest.raises(ParseTimeoutError, match=r"slow\.csv: gave up after .* at row"):
        parse_document(raw, "slow.csv", time_budget_s=0.001)
    monkeypatch.setattr(delimited, "MAX_CELLS", 10_000)
    with pytest.raises(DocumentTooLargeError, match=r"wide\.csv: .* filled cells is over"):
        parse_document(raw, "wide.csv")


def test_excel_sep_line_names_the_delimiter_and_a_tsv_without_tabs_is_sniffed() -> None:
    parsed = _parse(b"sep=;\r\nname;amount\r\nx;1,5\r\n")
    assert _rows(parsed) == [["name", "amount"], ["x", "1,5"]]
    assert "sep=" not in parsed.text_layer
    commas = _parse(b"a,b\n1,2\n", "mislabelled.tsv")
    assert _rows(commas) == [["a", "b"], ["1", "2"]]


_CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


@pytest.mark.parametrize("name", sorted(p.name for p in (_CORPUS / "csv").glob("*.csv")))
def test_every_corpus_csv_is_one_table_with_a_header(corpus_dir: Path, name: str) -> None:
    parsed = _parse((corpus_dir / "csv" / name).read_bytes(), f"csv/{name}")
    assert _table(parsed).table_header is not None
    assert len(_table(parsed).table_rows) >= 4
