"""Reading a ``ParsedDocument`` back in the parser tests: the contract checked on every parse,
headings as (level, path), table sections and their cells (header first)."""

from __future__ import annotations

from pathlib import Path

from agrag_pipeline.models import Section
from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations


def parse_checked(raw: bytes, key: str) -> ParsedDocument:
    """Parse ``raw`` as ``key`` and assert it keeps the ParsedDocument contract."""
    parsed = parse_document(raw, key)
    assert contract_violations(parsed) == []
    return parsed


def parse_corpus(corpus_dir: Path, folder: str, name: str) -> ParsedDocument:
    """A corpus file, parsed under its corpus path as key."""
    return parse_checked((corpus_dir / folder / name).read_bytes(), f"{folder}/{name}")


def headings(parsed: ParsedDocument) -> list[tuple[int, list[str]]]:
    return [(s.level, s.heading_path) for s in parsed.sections if s.heading is not None]


def tables(parsed: ParsedDocument) -> list[Section]:
    return [s for s in parsed.sections if s.kind == "table"]


def table_cells(parsed: ParsedDocument, table: Section) -> list[list[str]]:
    """A table section's rows as cell lists: the header (if any) first, the Markdown delimiter
    row left out (each span's first line is its row)."""
    spans = ([table.table_header] if table.table_header else []) + table.table_rows
    rows = []
    for span in spans:
        line = parsed.text_layer[span.start : span.end].split("\n")[0]
        rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows
