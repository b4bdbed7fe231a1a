"""Every corpus file parses, and its sections keep the ParsedDocument contract.

Heading paths of a few documents are asserted by hand, from reading the source files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.errors import UnsupportedFormatError

CORPUS = (Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus").resolve()
CORPUS_FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for folder in ("markdown/docling", "markdown/rust-book", "html", "pdf")
    for p in (CORPUS / folder).rglob("*")
    if p.is_file() and p.suffix in (".md", ".html", ".pdf")
)


@pytest.fixture(scope="session")
def parsed_corpus(corpus_dir: Path) -> dict[str, ParsedDocument]:
    """Each corpus file parsed once per session (PDF parsing takes a few seconds)."""
    return {key: parse_document((corpus_dir / key).read_bytes(), key) for key in CORPUS_FILES}


def _headings(parsed: ParsedDocument) -> list[tuple[int, list[str]]]:
    return [(s.level, s.heading_path) for s in parsed.sections if s.heading is not None]


def test_corpus_has_every_format() -> None:
    suffixes = {Path(key).suffix for key in CORPUS_FILES}
    assert {".md", ".html", ".pdf"} <= suffixes
    assert len(CORPUS_FILES) > 150


@pytest.mark.parametrize("key", CORPUS_FILES)
def test_corpus_file_keeps_the_section_contract(
    key: str, parsed_corpus: dict[str, ParsedDocument]
) -> None:
    parsed = parsed_corpus[key]
    assert parsed.text_layer.strip(), "every corpus file has text"
    assert parsed.sections
    assert contract_violations(parsed) == []
    for section in parsed.sections:
        own = section.text_in(parsed.text_layer)
        assert own == own.strip() and own, "a section's span is its trimmed, non-empty text"
        if section.heading is not None:
            assert section.heading_path[-1] == section.heading
        if section.kind == "table":
            assert section.table_rows or section.table_header
            for row in section.table_rows:
                assert section.start <= row.start < row.end <= section.end


@pytest.mark.parametrize("key", CORPUS_FILES)
def test_corpus_file_reads_with_a_high_reading_quality(
    key: str, parsed_corpus: dict[str, ParsedDocument]
) -> None:
    from agrag_pipeline.parsing.quality import REASONS_KEY, SCORE_KEY
    from agrag_pipeline.settings import QualitySettings

    metadata = parsed_corpus[key].document.metadata
    score = float(metadata[SCORE_KEY])
    if key in _READ_WRONG:  # a reference that is itself a wrong reading is flagged
        assert score < QualitySettings().warn_below and _READ_WRONG[key] in metadata[REASONS_KEY]
    else:
        assert score >= QualitySettings().warn_below, metadata.get(REASONS_KEY)


#: Corpus files whose text is wrong: docling's conversion keeps the control character U+0084
#: for each of the PDF's unmapped bullets.
_READ_WRONG = {"pdf/groundtruth/table_mislabeled_as_picture.md": "wrong code page"}


def test_file_without_extension_is_plain_text_by_content_and_binary_is_unsupported(
    corpus_dir: Path,
) -> None:
    # Detection by content (parsing.detect): UTF-8 text without an extension is plain text
    # (a LICENSE is kept out by the documents.exclude setting at scan time, not here).
    key = "markdown/rust-book/LICENSE-MIT"
    raw = (corpus_dir / key).read_bytes()
    parsed = parse_document(raw, key)
    assert parsed.document.media_type == "text/plain"
    assert [s.level for s in parsed.sections] == [0]
    assert "Permission is hereby granted" in parsed.text_layer
    assert contract_violations(parsed) == []
    with pytest.raises(UnsupportedFormatError, match=r"blob: no parser for extension '\(none\)'"):
        parse_document(b"\x00\x01binary\xff", "blob")


def test_markdown_text_layer_is_the_source(
    corpus_dir: Path, parsed_corpus: dict[str, ParsedDocument]
) -> None:
    for key in CORPUS_FILES:
        if key.endswith(".md"):
            source = (corpus_dir / key).read_bytes().decode("utf-8-sig")
            assert parsed_corpus[key].text_layer == source


def test_pdf_sections_name_pages_and_boxes(parsed_corpus: dict[str, ParsedDocument]) -> None:
    for key in CORPUS_FILES:
        if key.endswith(".pdf"):
            parsed = parsed_corpus[key]
            assert parsed.paged
            for section in parsed.sections:
                assert section.pages and section.boxes
                assert {b.page for b in section.boxes} == set(section.pages)


def test_rust_book_ownership_outline(parsed_corpus: dict[str, ParsedDocument]) -> None:
    parsed = parsed_corpus["markdown/rust-book/ch04-01-what-is-ownership.md"]
    top = "What Is Ownership?"
    memory = "Memory and Allocation"
    assert _headings(parsed) == [
        (2, [top]),
        (3, [top, "Ownership Rules"]),
        (3, [top, "Variable Scope"]),
        (3, [top, "The String Type"]),  # `String` is a code span: kept as its text
        (3, [top, memory]),
        (4, [top, memory, "Variables and Data Interacting with Move"]),
        (4, [top, memory, "Scope and Assignment"]),
        (4, [top, memory, "Variables and Data Interacting with Clone"]),
        (4, [top, memory, "Stack-Only Data: Copy"]),
        (3, [top, "Ownership and Functions"]),
        (3, [top, "Return Values and Scope"]),
    ]


def test_docling_markdown_without_h1(parsed_corpus: dict[str, ParsedDocument]) -> None:
    parsed = parsed_corpus["markdown/docling/mixed_without_h1.md"]
    first, second = parsed.sections
    assert (first.level, first.heading, first.heading_path) == (0, None, [])
    assert first.text_in(parsed.text_layer) == "Content before first heading"
    assert (second.level, second.heading_path) == (2, ["Some heading"])
    assert second.text_in(parsed.text_layer).endswith("The end!")


def test_docling_duck_outline(parsed_corpus: dict[str, ParsedDocument]) -> None:
    parsed = parsed_corpus["markdown/docling/duck.md"]
    lake = "Swimming in the lake"
    assert [p for _, p in _headings(parsed)] == [
        [lake],
        [lake, "Let’s swim!"],
        [lake, "Let’s eat"],
    ]


def test_html_heading_inside_paragraph(parsed_corpus: dict[str, ParsedDocument]) -> None:
    # <p><h1>1</h1><div><p>1st paragraph</p><table>…</table><h1>21</h1></div></p><p>2nd …
    parsed = parsed_corpus["html/html_heading_in_p.html"]
    kinds = [(s.kind, s.heading, s.heading_path) for s in parsed.sections]
    assert kinds == [
        ("text", "1", ["1"]),
        ("table", None, ["1"]),
        ("text", "21", ["21"]),
    ]
    table = parsed.sections[1]
    assert table.parent_id == parsed.sections[0].id
    rows = [parsed.text_layer[r.start : r.end] for r in table.table_rows]
    assert rows[0] == "2 | 3 | 4"  # no <th>: every row is a body row
    assert rows[-1] == "17 | 18 | 19 20"
    assert table.table_header is None
    assert parsed.sections[2].text_in(parsed.text_layer) == "21\n\n2nd paragraph"


def test_html_heading_inside_table_cell_is_cell_text(
    parsed_corpus: dict[str, ParsedDocument],
) -> None:
    parsed = parsed_corpus["html/table_with_heading_01.html"]
    text = parsed.text_layer
    assert [(s.kind, s.heading_path, s.text_in(text)) for s in parsed.sections] == [
        ("text", [], "Before tha table"),
        ("table", [], "A | B\n1... | 2..."),
        ("text", [], "After the table"),
    ]


def test_html_example_outline_and_lists(parsed_corpus: dict[str, ParsedDocument]) -> None:
    parsed = parsed_corpus["html/example_01.html"]
    assert _headings(parsed) == [(1, ["Introduction"]), (2, ["Introduction", "Background"])]
    background = parsed.sections[-1].text_in(parsed.text_layer)
    assert "- First item in unordered list" in background
    assert "1. First item in ordered list" in background
    assert "42. First item in ordered list with start" in background
    assert "43. Second item in ordered list with start" in background


def test_bookmark_pdf_outline(parsed_corpus: dict[str, ParsedDocument]) -> None:
    parsed = parsed_corpus["pdf/bookmark_sample.pdf"]
    one, two, three = "PART I - DEFINITIONS", "PART II - OBLIGATIONS", "PART III - MISCELLANEOUS"
    assert _headings(parsed) == [
        (1, [one]),
        (2, [one, "1. Interpretation"]),
        (2, [one, "2. Construction of Terms"]),
        (1, [two]),
        (2, [two, "3. Payment Terms"]),
        (3, [two, "3. Payment Terms", "3.1 Payment Schedule"]),
        (2, [two, "4. Termination"]),
        (1, [three]),
    ]
    pages = {s.heading: s.pages[0] for s in parsed.sections if s.heading}
    assert (pages[one], pages[two], pages["4. Termination"], pages[three]) == (1, 2, 3, 3)
    # The running header ("Sample Agreement — page 1", on every page) is left out of the text.
    assert "Sample Agreement" not in parsed.text_layer
    assert parsed.sections[0].heading == one
    assert "3 running header/footer or page-number lines left out" in parsed.warnings


def test_korean_report_numbered_headings(parsed_corpus: dict[str, ParsedDocument]) -> None:
    parsed = parsed_corpus["pdf/normal_4pages.pdf"]
    title = "코로나-19 관련 보험약관상 재해보험금 지급문제 및 개선과제"
    numbered = [s.heading_path for s in parsed.sections if s.heading and s.heading[0].isdigit()]
    assert numbered == [
        [title, "1 들어가며"],
        [title, "2 코로나-19 관련 보험 현황"],
        [title, "3 문제점"],
        [title, "4 개선과제"],
        [title, "5 맺으며"],
    ]
    tables = [s for s in parsed.sections if s.kind == "table"]
    assert len(tables) == 1 and tables[0].pages == [2]
    assert tables[0].table_header is not None
    header = parsed.text_layer[tables[0].table_header.start : tables[0].table_header.end]
    assert header == "| 구분 | 개정전 | 개정후 |\n| - | - | - |"  # pipe rows, as for every table


def test_pdf_table_text_is_not_duplicated(parsed_corpus: dict[str, ParsedDocument]) -> None:
    parsed = parsed_corpus["pdf/normal_4pages.pdf"]
    # Page 2 draws the table cell "1군 감염병" once; the words of the header row are not left
    # behind as a plain text line beside the table's own rows.
    assert parsed.text_layer.count("1군 감염병") == 1
    assert "구분 개정전 개정후" not in parsed.text_layer
