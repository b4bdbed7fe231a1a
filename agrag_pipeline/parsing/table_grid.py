"""Tables whose cells span rows and columns, as the grid a reader sees.

Why: HTML (``rowspan``, ``colspan``), JATS and wiki tables merge cells; written one cell per
``td``, a row after a cell spanning down from above lost a column and its cells stood under the
wrong headers ("Row 2, Col 2 & 3" under "Header 1"). As the Word, PowerPoint and spreadsheet
readers do with their merged cells, a merged cell's text is repeated in every cell it covers, so
each row reads whole under its header, alone in a chunk too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: The widest span honoured (HTML's own limit for ``colspan``).
MAX_SPAN = 1000
#: Copies of merged cells one table may fill in; past them a span is written once (a table of
#: ``rowspan="1000" colspan="1000"`` cells is not a billion cells).
MAX_FILLED = 100_000


def span(value: object) -> int:
    """A ``rowspan`` or ``colspan`` value as a count: 1 when absent or not a number, at most
    ``MAX_SPAN``."""
    if value is None:  # most cells: no attribute, and no exception to raise and catch for it
        return 1
    try:
        return max(1, min(int(str(value).strip()), MAX_SPAN))
    except ValueError:
        return 1


class SpanGrid:
    """Rows of a table filled in, one row at a time, with the cells that span into them."""

    def __init__(self) -> None:
        self._covered: dict[tuple[int, int], str] = {}  # (row, column) -> a merged cell's text
        self._left = MAX_FILLED
        self._row = 0
        #: Every cell of the row just read goes on into the next: a pivot table's group row
        #: ("2025" alone, spanning the months below it), whose text the next row repeats.
        self.continued = False

    def row(self, cells: Iterable[tuple[str, int, int]]) -> list[str]:
        """The next row's texts from its cells' (text, columns spanned, rows spanned)."""
        r, out = self._row, list[str]()
        for text, across, down in cells:
            self._fill(r, out)
            if (across - 1) + (down - 1) * across > self._left:
                across, down = 1, 1
            self._left -= (across - 1) + (down - 1) * across
            for _ in range(across):
                for below in range(1, down):
                    self._covered[(r + below, len(out))] = text
                out.append(text)
        self._fill(r, out)
        self._row += 1
        self.continued = bool(out) and all((r + 1, k) in self._covered for k in range(len(out)))
        return out

    def _fill(self, r: int, out: list[str]) -> None:
        while (r, len(out)) in self._covered:
            out.append(self._covered.pop((r, len(out))))


def filled_columns(rows: Iterable[Sequence[str]]) -> list[bool]:
    """Per column (as wide as the widest row), whether any row has text there. A column blank
    in every row is a spacer (Word's and EDGAR's narrow empty cells between a label and its
    "$", between two years): it shows nothing, and written it was "|  |" around each value."""
    filled: list[bool] = []
    for cells in rows:
        if len(cells) > len(filled):
            filled.extend([False] * (len(cells) - len(filled)))
        for index, cell in enumerate(cells):
            if cell and not filled[index]:
                filled[index] = True
    return filled
