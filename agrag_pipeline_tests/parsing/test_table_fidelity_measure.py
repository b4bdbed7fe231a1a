"""The table measure of ``benchmarks.fidelity``: cells and rows against a reference's tables."""

from __future__ import annotations

from benchmarks.fidelity import markdown_tables, table_cells, table_f1

REFERENCE = """Prices

| Fruit | Qty | Price |
| - | - | - |
| Apple | 3 | 1.20 |
| Pear \\| Nashi | 5 | 0.80 |

After.
"""


def test_reference_tables_are_read_from_markdown_rows_without_their_rules() -> None:
    assert markdown_tables(REFERENCE) == [
        [["Fruit", "Qty", "Price"], ["Apple", "3", "1.20"], ["Pear | Nashi", "5", "0.80"]]
    ]
    assert table_cells("Apple | 3 | 1.20") == ["Apple", "3", "1.20"]  # ours from HTML


def test_a_row_shifted_a_column_loses_its_row_and_a_split_cell_loses_cells() -> None:
    reference = markdown_tables(REFERENCE)
    same = [[["Fruit", "Qty", "Price"], ["Apple", "3", "1.20"], ["Pear | Nashi", "5", "0.80"]]]
    assert table_f1(same, reference) == (1.0, 1.0)
    shifted = [[["Fruit", "Qty", "Price"], ["Apple", "3", "1.20"], ["", "Pear | Nashi", "5"]]]
    cell, row = table_f1(shifted, reference)
    assert row == 2 / 3 and cell < 1.0  # "0.80" fell out of the row
    split = [[["Fruit", "Qty", "Price"], ["Apple", "3", "1.20"], ["Pear", "Nashi", "5", "0.80"]]]
    cell, row = table_f1(split, reference)
    assert cell == 2 * 8 / (10 + 9) and row == 2 / 3
