"""CSV and TSV with the standard library's ``csv`` reader: the file is one table section.

- Text is decoded like every text format (``encoding.decode``: a byte-order mark, UTF-8, else
  the detected legacy encoding, recorded in the document's metadata).
- The delimiter of a ``.csv`` is sniffed among comma, semicolon, tab and pipe: the one that splits
  the first lines (quotes respected) into the most consistent number of fields, more than one,
  wins; a ``.tsv`` is tab-separated (sniffed too if its first line has no tab); Excel's
  ``sep=;`` first line names it. Quoted fields may hold delimiters and line breaks.
- Rows of unequal length are kept, padded with empty cells to the widest row.
- Header: the first row, unless it looks like data (its filled cells are all numbers, as the
  same columns are below it). A file of one row is a header-less table.
- Text layer: pipe rows, ``| a | b |`` (``textlayer``), a cell's line breaks become spaces.
- Budgets: ``MAX_CELLS`` filled cells, ``MAX_FIELD_CHARS`` per field; past either a
  ``DocumentTooLargeError``; rows are read under the parse's ``Deadline``.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import check_size, current_deadline
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

CSV_MEDIA_TYPE = "text/csv"
TSV_MEDIA_TYPE = "text/tab-separated-values"

#: The delimiters a CSV is sniffed for, in order of preference on a tie.
DELIMITERS = (",", ";", "\t", "|")
#: How much of the file the sniffer reads.
_SNIFF_CHARS = 64 * 1024
_SNIFF_ROWS = 50
#: Filled cells a file may hold.
MAX_CELLS = 5_000_000
#: Characters one field may hold (the csv module's own limit, stated).
MAX_FIELD_CHARS = csv.field_size_limit()

_SEP_HINT = re.compile(r"sep=([^\r\n])\r?\n")
_NUMBER = re.compile(r"[-+]?(\d[\d,. ]*|\.\d+)([eE][-+]?\d+)?%?")


def sniff_delimiter(text: str) -> str:
    """The delimiter among ``DELIMITERS`` that splits the start of ``text`` most consistently."""
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS:  # drop a cut last line
        cut = sample.rfind("\n")
        if cut > 0:
            sample = sample[:cut]
    best = DELIMITERS[0]
    best_score: tuple[float, int] = (-1.0, 0)
    for delimiter in DELIMITERS:
        counts: list[int] = []
        try:
            for row in csv.reader(io.StringIO(sample), delimiter=delimiter):
                if row:
                    counts.append(len(row))
                if len(counts) >= _SNIFF_ROWS:
                    break
        except csv.Error:
            continue
        if not counts:
            continue
        width, rows = Counter(counts).most_common(1)[0]
        if width < 2:
            continue
        score = (rows / len(counts), width)
        if score > best_score:
            best, best_score = delimiter, score
    return best


def _is_number(cell: str) -> bool:
    return bool(_NUMBER.fullmatch(cell.strip()))


def has_header(rows: list[list[str]]) -> bool:
    """Whether the first row is a header: not when its filled cells are all numbers like the
    cells of the same columns below it (then it is a data row)."""
    if len(rows) < 2:
        return False
    first = rows[0]
    filled = [i for i, cell in enumerate(first) if cell.strip()]
    if not filled or not all(_is_number(first[i]) for i in filled):
        return True
    body = rows[1 : 1 + _SNIFF_ROWS]
    for i in filled:
        column = [row[i] for row in body if i < len(row) and row[i].strip()]
        if column and not all(_is_number(c) for c in column):
            return True  # a number above text: a numbered header
    return False


def parse(raw: bytes, document: Document, *, delimiter: str | None = None) -> ParsedDocument:
    """The one-table document of CSV/TSV bytes (``delimiter`` None: by media type or sniffed)."""
    key = document.source_key
    decoded = decode(raw, key)
    document.metadata.update(decoded.metadata())
    text = decoded.text
    if not text.strip():
        raise EmptyDocumentError(key, "the file holds only whitespace")
    hint = _SEP_HINT.match(text)
    if hint is not None:  # Excel's "sep=;" first line names the delimiter and is not data
        delimiter = delimiter or hint.group(1)
        text = text[hint.end() :]
    if delimiter is None:
        first_line = text.split("\n", 1)[0]
        tab = document.media_type == TSV_MEDIA_TYPE and "\t" in first_line
        delimiter = "\t" if tab else sniff_delimiter(text)
    deadline = current_deadline(key)
    rows: list[list[str]] = []
    cells = 0
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for row in reader:
            deadline.tick(f"row {reader.line_num:,}")
            if not "".join(row).strip():
                continue
            cells += len(row) - row.count("")
            check_size(key, "filled cells", cells, MAX_CELLS)
            rows.append(row)
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise DocumentTooLargeError(
                key,
                f"a field near line {reader.line_num:,} is over {MAX_FIELD_CHARS:,} characters",
            ) from exc
        raise CorruptDocumentError(
            key, f"not readable as CSV near line {reader.line_num:,}: {exc}"
        ) from exc
    layer = TextLayer()
    layer.table(rows, header_rows=1 if has_header(rows) else 0)
    return layer.parsed(document, "the file holds no cell with text")


__all__ = [
    "CSV_MEDIA_TYPE",
    "DELIMITERS",
    "MAX_CELLS",
    "TSV_MEDIA_TYPE",
    "has_header",
    "parse",
    "sniff_delimiter",
]
