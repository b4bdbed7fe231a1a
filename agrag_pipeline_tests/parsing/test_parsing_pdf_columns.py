"""The PDF column-gutter search and ruled-table cell lookup: the same answers as their
definitions, in work near-linear in a page's segments and characters (a dense form's page no
longer costs seconds).

The definition (``_reference_gutter``) is the search as first written, every run of rows tested
afresh: the strips every row leaves free (pairwise interval intersection), then, widest first,
the first with column-wide, mostly wide text on both sides.
"""

from __future__ import annotations

import itertools
import random
import statistics
from typing import Any

from agrag_pipeline.parsing import pdf_layout
from agrag_pipeline.parsing.pdf_layout import (
    MIN_COLUMN_EMS,
    MIN_GUTTER,
    _CellIndex,
    _order,
    _Run,
    _Seg,
)


def _reference_gutter(rows: list[list[_Seg]]) -> float | None:
    segs = [s for row in rows for s in row]
    lo, hi = min(s.x0 for s in segs), max(s.x1 for s in segs)
    free = [(lo, hi)]
    for row in rows:
        row_free, x = [], lo
        for a, b in sorted((s.x0, s.x1) for s in row):
            if a > x:
                row_free.append((x, a))
            x = max(x, b)
        if hi > x:
            row_free.append((x, hi))
        free = [
            (max(x0, y0), min(x1, y1))
            for x0, x1 in free
            for y0, y1 in row_free
            if min(x1, y1) - max(x0, y0) >= MIN_GUTTER
        ]
        if not free:
            return -1.0
    size = statistics.median(s.size for s in segs)
    column = MIN_COLUMN_EMS * size

    def text(side: list[_Seg], share: float = 0.5, lines: int = 1) -> bool:
        counted = [s for s in side if not _bullet(s)] if lines > 1 else side
        if len(counted) < lines:
            return False
        width = max(s.x1 for s in side) - min(s.x0 for s in side)
        wide = sum(1 for s in side if s.x1 - s.x0 > 0.5 * width)
        return width >= column and wide >= share * len(counted)

    holes = sorted(free, key=lambda f: f[0] - f[1])
    for g0, g1 in holes:
        if text([s for s in segs if s.x1 <= g0]) and text([s for s in segs if s.x0 >= g1]):
            return (g0 + g1) / 2
    # Columns on both sides of the gutter, a side columns itself: every way of cutting each
    # side at its free strips into parts that are column text (four lines at least, not
    # counting bullets, 70% of them wide), over at most 8 blocks.
    if not 2 <= len(free) < pdf_layout._MAX_SPLIT_BLOCKS:
        return None

    def columns(side: list[_Seg]) -> bool:
        lo, hi = min(s.x0 for s in side), max(s.x1 for s in side)
        inside = [f for f in free if lo < f[0] and f[1] < hi]
        return any(
            all(text(part, 0.7, 4) for part in _parts(side, cuts))
            for r in range(len(inside) + 1)
            for cuts in itertools.combinations(inside, r)
        )

    between = [
        (k, g0, g1)
        for k, (g0, g1) in enumerate(free)
        if columns([s for s in segs if s.x1 <= g0]) and columns([s for s in segs if s.x0 >= g1])
    ]
    if not between:
        return None
    # The widest; of those about as wide (within a point), the one nearest the middle.
    widest = max(g1 - g0 for _, g0, g1 in between)
    _, g0, g1 = min(
        (h for h in between if h[2] - h[1] >= widest - 1.0),
        key=lambda h: (abs(2 * h[0] + 2 - (len(free) + 1)), h[1] - h[2]),
    )
    return (g0 + g1) / 2


def _bullet(seg: _Seg) -> bool:
    """A bullet set apart from its item's text: no line of a column."""
    return len(seg.chars) == 1 and seg.chars[0].text in pdf_layout.BULLETS


def _parts(side: list[_Seg], cuts: tuple[tuple[float, float], ...]) -> list[list[_Seg]]:
    """``side``'s segments between consecutive free strips of ``cuts`` (sorted by x)."""
    edges = [-1e9, *(f[0] for f in cuts), 1e9]
    return [[s for s in side if a <= s.x0 and s.x1 <= b] for a, b in itertools.pairwise(edges)]


def _random_rows(rnd: random.Random) -> list[list[_Seg]]:
    """Two or three text columns, a table, scattered words, or a mix, with holes of exactly
    ``MIN_GUTTER`` and segments that touch."""
    kind = rnd.choice(["columns", "table", "scattered", "mixed"])
    count = rnd.choice([2, 3])
    rows = []
    for _ in range(rnd.randint(2, 60)):
        spans: list[tuple[float, float]] = []
        if kind == "columns" or (kind == "mixed" and rnd.random() < 0.8):
            for c in range(count):
                if rnd.random() < 0.9:
                    a = 50 + c * 500 / count + rnd.uniform(0, 5)
                    spans.append((a, a + 500 / count - rnd.uniform(6, 90)))
        elif kind == "table":
            x = 20.0
            for _ in range(rnd.randint(2, 20)):
                width = rnd.choice([10.0, 24.5, rnd.uniform(3, 40)])
                spans.append((x, x + width))
                x += width + rnd.choice([MIN_GUTTER, 0.0, 3.0, rnd.uniform(0, 14)])
        else:
            for _ in range(rnd.randint(1, 8)):
                a = rnd.uniform(0, 600)
                spans.append((a, a + rnd.uniform(1, 200)))
        size = rnd.choice([8.0, 10.0, 12.5])
        row = []
        for a, b in sorted(spans):
            if kind == "columns" and b - a > 40 and rnd.random() < 0.3:  # a list item's bullet
                box = (a, 0.0, a + 4, 8.0)
                bullet = pdf_layout.Char("•", a, 0.0, a + 4, 8.0, box, size, False, False, 0)
                row.append(_Seg([bullet], a, a + 4, 0.0, 0.0, size))
                a += 12
            row.append(_Seg([], a, b, 0.0, 0.0, size))
        rows.append(row)
    return [row for row in rows if row]


def test_the_gutter_of_each_run_is_the_one_the_definition_gives() -> None:
    rnd = random.Random(20)
    found = 0
    for _ in range(150):
        rows = _random_rows(rnd)
        run = _Run()
        run.add(rows[0])
        for j in range(2, len(rows) + 1):
            run.add(rows[j - 1])
            expected = _reference_gutter(rows[:j])
            assert run.gutter() == expected
            found += expected is not None and expected >= 0
            if expected == -1.0:
                break  # the search never goes past a run without a free strip
    assert found > 300  # the cases hold real gutters, not only their absence


#: The slots that hold a segment's extent (read and written past the counting properties).
_X0: Any = vars(_Seg)["x0"]
_X1: Any = vars(_Seg)["x1"]


class _CountingSeg(_Seg):
    """A segment that counts how often its extent is read."""

    __slots__ = ()
    reads = 0

    @property
    def x0(self) -> float:
        _CountingSeg.reads += 1
        return float(_X0.__get__(self))

    @x0.setter
    def x0(self, value: float) -> None:
        _X0.__set__(self, value)

    @property
    def x1(self) -> float:
        _CountingSeg.reads += 1
        return float(_X1.__get__(self))

    @x1.setter
    def x1(self, value: float) -> None:
        _X1.__set__(self, value)


def _reads_per_segment(rows: int, columns: int) -> float:
    """A dense form's page: short entries in a grid, strips free between them everywhere and
    no text columns, so the search runs from every row to its bound."""
    grid: list[list[Any]] = [
        [
            _CountingSeg([], 20.0 + 45 * c, 32.0 + 45 * c + (r * 7 + c * 3) % 9, 0.0, 0.0, 6.0)
            for c in range(columns)
        ]
        for r in range(rows)
    ]
    _CountingSeg.reads = 0
    assert len(_order(grid)) == 1
    return _CountingSeg.reads / (rows * columns)


def test_the_gutter_search_looks_at_each_segment_a_bounded_number_of_times() -> None:
    # Each segment joins the runs of the rows above it within the search's bound, once each;
    # testing every run afresh read it once per run and per free strip (44,000 reads each
    # on this page, twice that with twice the columns).
    bound = 2 * (pdf_layout._MAX_WEAK_RUN + 2)
    base = _reads_per_segment(120, 12)
    assert base <= bound
    assert _reads_per_segment(240, 12) <= bound
    assert _reads_per_segment(120, 24) <= 1.1 * base


def test_a_table_cell_is_found_as_by_scanning_every_cell() -> None:
    # The first cell in the table's order that holds the point, rules shared between cells
    # and points on them included.
    rnd = random.Random(7)
    for _ in range(40):
        xs = sorted(
            {
                rnd.choice([30.0, 72.5, 100.0, 0.1 + 0.2]) + rnd.randint(0, 40) * 12.5
                for _ in range(rnd.randint(2, 14))
            }
        )
        ys = sorted({40.0 + rnd.randint(0, 60) * 11.3 for _ in range(rnd.randint(2, 30))})
        if len(xs) < 2 or len(ys) < 2:
            continue
        cells = [
            (
                xs[c],
                ys[r],
                xs[c + 1 + (rnd.random() < 0.1)] if c + 2 < len(xs) else xs[c + 1],
                ys[r + 1],
            )
            for r in range(len(ys) - 1)
            for c in range(len(xs) - 1)
            if rnd.random() < 0.9
        ]
        if not cells:
            continue
        bbox = (
            min(c[0] for c in cells),
            min(c[1] for c in cells),
            max(c[2] for c in cells),
            max(c[3] for c in cells),
        )
        index = _CellIndex(cells, bbox)
        points = [
            (rnd.uniform(bbox[0], bbox[2]), rnd.uniform(bbox[1], bbox[3])) for _ in range(200)
        ]
        points += [(rnd.choice(xs), rnd.choice(ys)) for _ in range(100)]
        for x, y in points:
            scanned = next((c for c in cells if c[0] <= x <= c[2] and c[1] <= y <= c[3]), None)
            assert index.find(x, y) == scanned


class _CountingBisect:
    """The ``bisect`` module as ``pdf_layout`` sees it, counting every search and insertion."""

    def __init__(self) -> None:
        import bisect

        self.calls = 0
        self._bisect = bisect

    def __getattr__(self, name: str) -> Any:
        function = getattr(self._bisect, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return function(*args, **kwargs)

        return counted


def _bisections_per_segment(monkeypatch: Any, rows: int, columns: int) -> float:
    """A wide spreadsheet's page: ``columns`` narrow cells a row, free strips between them
    everywhere and no text columns, so every run is tested to the search's bound."""
    grid = [
        [
            _Seg([], 20.0 + 40 * c, 34.0 + 40 * c + (r * 7 + c * 3) % 9, 0.0, 0.0, 4.0)
            for c in range(columns)
        ]
        for r in range(rows)
    ]
    counter = _CountingBisect()
    monkeypatch.setattr(pdf_layout, "bisect", counter)
    assert len(_order(grid)) == 1
    monkeypatch.undo()
    return counter.calls / (rows * columns)


def test_the_gutter_search_costs_each_segment_the_same_however_many_columns_a_row_has(
    monkeypatch: Any,
) -> None:
    # Each candidate gutter is tested in the widest block of each side, one bisection each;
    # testing it in every block cost a row of n cells n bisections per hole (n^2 per run):
    # 4x the work per cell for 4x the columns.
    narrow = _bisections_per_segment(monkeypatch, 60, 24)
    wide = _bisections_per_segment(monkeypatch, 60, 96)
    assert narrow <= 4 * (pdf_layout._MAX_WEAK_RUN + 2)
    assert wide <= 1.2 * narrow


_BOX: Any = vars(pdf_layout.Char)["box"]


class _CountingChar(pdf_layout.Char):
    """A character that counts how often its box is read."""

    __slots__ = ()
    reads = 0

    @property  # type: ignore[override]
    def box(self) -> tuple[float, float, float, float]:
        _CountingChar.reads += 1
        return _BOX.__get__(self)  # type: ignore[no-any-return]

    @box.setter
    def box(self, value: tuple[float, float, float, float]) -> None:
        _BOX.__set__(self, value)


def _box_reads_per_char(tables: int) -> float:
    """A form of ``tables`` separate ruled boxes (3 x 3 cells, one short entry in each),
    stacked down the page."""
    edges: list[dict[str, Any]] = []
    chars: list[pdf_layout.Char] = []
    xs = [50.0, 150.0, 250.0, 350.0]
    for t in range(tables):
        ys = [40.0 + 60 * t + 12 * r for r in range(4)]
        edges += [pdf_layout._edge("h", xs[0], y, xs[-1], y) for y in ys]
        edges += [pdf_layout._edge("v", x, ys[0], x, ys[-1]) for x in xs]
        for r in range(3):
            for c in range(3):
                x, y = xs[c] + 10, ys[r] + 2
                chars.append(
                    _CountingChar(
                        "7", x, y, x + 5, y + 8, (x, y, x + 5, y + 8), 8.0, False, False, len(chars)
                    )
                )
    _CountingChar.reads = 0
    found = pdf_layout._tables(edges, chars)
    assert len(found) == tables  # every box is read as its own table
    return _CountingChar.reads / len(chars)


def test_each_ruled_table_reads_only_the_characters_at_its_height() -> None:
    # One pass sorts the characters by height, then each table takes its own by bisection;
    # a pass over the whole page per table read each character once per table (10x the
    # work per character for 10x the boxes).
    few = _box_reads_per_char(8)
    many = _box_reads_per_char(80)
    assert many <= 1.2 * few


_CHAR_X1: Any = vars(pdf_layout.Char)["x1"]


class _CountingRight(pdf_layout.Char):
    """A character that counts how often its right edge is read."""

    __slots__ = ()
    reads = 0

    @property  # type: ignore[override]
    def x1(self) -> float:
        _CountingRight.reads += 1
        return float(_CHAR_X1.__get__(self))

    @x1.setter
    def x1(self, value: float) -> None:
        _CHAR_X1.__set__(self, value)


def _right_edge_reads_per_char(fields: int) -> float:
    """One row of ``fields`` typewriter fields of four characters, two characters apart on
    the character grid: one line of code (aligned values), read as one."""
    segments = []
    for f in range(fields):
        x = 20.0 + 6.0 * 6 * f
        segments.append(
            [
                _CountingRight(
                    "a",
                    x + 6 * k,
                    0.0,
                    x + 6 * k + 6,
                    10.0,
                    (0, 0, 0, 0),
                    10.0,
                    False,
                    False,
                    0,
                    mono=True,
                )
                for k in range(4)
            ]
        )
    _CountingRight.reads = 0
    assert len(pdf_layout._code_line(pdf_layout._justified(segments))) == 1
    return _CountingRight.reads / (4 * fields)


def test_a_long_line_of_code_is_joined_in_work_linear_in_its_characters() -> None:
    # The line so far keeps its right edge and its sorted advances; measuring them over the
    # whole line at each field read every character once per field after it.
    assert _right_edge_reads_per_char(160) <= 1.2 * _right_edge_reads_per_char(20)


def _random_grid_edges(rnd: random.Random) -> list[dict[str, Any]]:
    """Ruling lines of a grid with rules missing, cut short or doubled, and stray rules."""
    xs = sorted({20.0 + 15 * rnd.randint(0, 30) for _ in range(rnd.randint(2, 9))})
    ys = sorted({30.0 + 12 * rnd.randint(0, 40) for _ in range(rnd.randint(2, 12))})
    edges = []
    for y in ys:
        for a, b in itertools.pairwise(xs):
            if rnd.random() < 0.85:
                edges.append(pdf_layout._edge("h", a, y, b, y))
    for x in xs:
        for a, b in itertools.pairwise(ys):
            if rnd.random() < 0.85:
                edges.append(pdf_layout._edge("v", x, a, x, b))
    for _ in range(rnd.randint(0, 4)):
        x, y = rnd.choice(xs), rnd.choice(ys)
        edges.append(pdf_layout._edge("h", x, y, x + rnd.uniform(5, 90), y))
    return edges


def test_ruled_crossings_and_cells_are_those_pdfplumber_finds() -> None:
    from pdfplumber import table as plumb

    rnd = random.Random(11)
    found = 0
    for _ in range(300):
        edges = plumb.merge_edges(_random_grid_edges(rnd), 3, 3, 3, 3)
        intersections = plumb.edges_to_intersections(edges, 3, 3)
        ours = pdf_layout._edges_to_intersections(edges, 3.0)
        assert list(ours.items()) == list(intersections.items())  # in the same order too
        expected = plumb.intersections_to_cells(intersections)
        assert pdf_layout._intersections_to_cells(intersections) == expected
        found += len(expected)
    assert found > 3000  # the grids hold real cells


class _CountedFloat(float):
    """A coordinate that counts how often it is compared for equality."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _CountedFloat.compared += 1
        return float(self) == other

    __hash__ = float.__hash__


def _comparisons_per_crossing(n: int) -> float:
    """A chart's full grid of ``n`` x ``n`` rules: every crossing a corner of its cells."""
    xs = [_CountedFloat(20.0 + 10 * k) for k in range(n)]
    ys = [_CountedFloat(30.0 + 8 * k) for k in range(n)]
    v = {x: pdf_layout._edge("v", x, ys[0], x, ys[-1]) for x in xs}
    h = {y: pdf_layout._edge("h", xs[0], y, xs[-1], y) for y in ys}
    intersections = {(x, y): {"v": [v[x]], "h": [h[y]]} for x in xs for y in ys}
    _CountedFloat.compared = 0
    assert len(pdf_layout._intersections_to_cells(intersections)) == (n - 1) ** 2
    return _CountedFloat.compared / n**2


def test_a_charts_grid_is_cut_into_cells_in_work_linear_in_its_crossings() -> None:
    # Each crossing finds the crossings below and to its right in its own column and row: a
    # few comparisons each (12 and 14 here). pdfplumber scanned every later crossing for
    # them: 138 a crossing on the 8 x 8 grid, 2,060 on the 32 x 32.
    assert _comparisons_per_crossing(8) <= 20
    assert _comparisons_per_crossing(32) <= 20


class _CountedEdge(dict):  # type: ignore[type-arg]
    """A ruling edge that counts how often its values are read."""

    reads = 0

    def __getitem__(self, key: str) -> Any:
        _CountedEdge.reads += 1
        return super().__getitem__(key)


def _edge_reads_per_edge(boxes: int) -> float:
    """A form of ``boxes`` separate ruled boxes (3 x 3 cells) stacked down the page."""
    edges = []
    for t in range(boxes):
        ys = [40.0 + 60 * t + 12 * r for r in range(4)]
        xs = [50.0, 150.0, 250.0, 350.0]
        edges += [_CountedEdge(pdf_layout._edge("h", xs[0], y, xs[-1], y)) for y in ys]
        edges += [_CountedEdge(pdf_layout._edge("v", x, ys[0], x, ys[-1])) for x in xs]
    _CountedEdge.reads = 0
    assert len(pdf_layout._edges_to_intersections(edges, 3.0)) == 16 * boxes
    return _CountedEdge.reads / len(edges)


def test_ruled_crossings_are_found_in_work_linear_in_the_rules() -> None:
    # Each vertical rule meets only the horizontal rules at its height, found by bisection;
    # pdfplumber tested it against every horizontal rule of the page.
    assert _edge_reads_per_edge(80) <= 1.2 * _edge_reads_per_edge(8)


def test_eight_text_columns_read_one_after_another_however_deep_they_split() -> None:
    # Every gutter has columns on both sides; the middle one of equal gutters is taken first,
    # so eight columns split three levels deep, under the depth bound (taken one a level, as
    # the widest first, the last three were read across).
    rows = [
        [
            _Seg([], 20.0 + 95 * c, 100.0 + 95 * c - (r % 3) * 9, 10.0 * r, 10.0 * r + 8, 8.0)
            for c in range(8)
        ]
        for r in range(30)
    ]
    blocks = _order(rows)
    assert len(blocks) == 8
    assert [round(block[0][0].x0) for block in blocks] == [20 + 95 * c for c in range(8)]
    assert all(len(block) == 30 and all(len(row) == 1 for row in block) for block in blocks)


def _gutter_looks_per_row(monkeypatch: Any, rows: int) -> float:
    """A page of eight text columns whose gutters all qualify: how often runs are tested."""
    page = [
        [
            _Seg([], 20.0 + 95 * c, 100.0 + 95 * c - (r % 3) * 9, 10.0 * r, 10.0 * r + 8, 8.0)
            for c in range(8)
        ]
        for r in range(rows)
    ]
    looks = 0
    gutter = _Run.gutter

    def counted(run: _Run) -> float | None:
        nonlocal looks
        looks += 1
        return gutter(run)

    monkeypatch.setattr(_Run, "gutter", counted)
    _order(page)
    monkeypatch.undo()
    return looks / rows


def test_the_column_search_of_a_page_of_many_columns_is_linear_in_its_rows(
    monkeypatch: Any,
) -> None:
    # Each split's sides are searched once, a bounded number of levels deep; a side past the
    # depth bound used to be searched on from every one of its rows, its gutters found and not
    # usable (quadratic in the rows: 4.5 s for a page of 300 rows of eight columns).
    short = _gutter_looks_per_row(monkeypatch, 60)
    long = _gutter_looks_per_row(monkeypatch, 240)
    assert short <= 4 * pdf_layout._MAX_DEPTH
    assert long <= 1.2 * short
