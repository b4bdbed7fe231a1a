"""DrawingML charts (in DOCX and PPTX) as their data: a title and a table of categories by series.

python-pptx's chart model reads any chart part (``c:chartSpace``): plots, categories, series
names and their cached values, which is what the document shows. A chart becomes what a reader
of its data needs: one row per category, one column per series. python-pptx models the 2-D
plot kinds but refuses the others (``bar3DChart``, ``line3DChart``, ``pie3DChart``,
``surface3DChart``, ``surfaceChart``, ``ofPieChart``, ``stockChart``: "unsupported plot type";
``area3DChart``: no series class); their series are the same ``c:ser`` elements, read here with
python-pptx's series model, so a chart of every kind gives its data.
"""

from __future__ import annotations

from typing import Any

from pptx.chart.chart import Chart
from pptx.chart.plot import PlotFactory
from pptx.chart.series import _BaseCategorySeries
from pptx.oxml import parse_xml as pptx_parse_xml
from pptx.oxml.ns import qn

from agrag_pipeline.parsing.archive import refuse_dtd


def _clean(text: str) -> str:
    return " ".join(text.split())


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}" if value != int(value) or abs(value) >= 1e15 else str(int(value))
    return str(value)


_C = "http://schemas.openxmlformats.org/drawingml/2006/chart"


def _x_values(series: Any) -> list[str] | None:
    """The x values of an XY or bubble series (``c:xVal``), in point order; None for others."""
    x_val = series._element.find(f"{{{_C}}}xVal")
    if x_val is None:
        return None
    points = sorted(
        (int(pt.get("idx", "0")), pt.findtext(f"{{{_C}}}v") or "")
        for pt in x_val.iter(f"{{{_C}}}pt")
    )
    return [_number(_float(v)) for _, v in points]


def _float(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def _categories(x_chart: Any) -> list[str]:
    """The category labels of a plot python-pptx does not model: its first series' ``c:cat``
    points in index order (the leaf level of multi-level categories), as python-pptx reads them
    for the plots it models."""
    cat = x_chart.find(f"{qn('c:ser')}/{qn('c:cat')}")
    if cat is None:
        return []
    level = cat.find(f".//{qn('c:lvl')}")
    points = {
        int(pt.get("idx", "0")): _clean(pt.findtext(qn("c:v")) or "")
        for pt in (level if level is not None else cat).iter(qn("c:pt"))
    }
    count_element = cat.find(f".//{qn('c:ptCount')}")
    count = int(count_element.get("val", "0")) if count_element is not None else 0
    count = min(max(count, max(points, default=-1) + 1), 100_000)
    return [points.get(index, "") for index in range(count)]


def _plots(chart: Chart) -> list[tuple[list[str], list[Any]]]:
    """(categories, series) of each plot of the chart, in document order, of every kind."""
    plots: list[tuple[list[str], list[Any]]] = []
    for x_chart in chart._chartSpace.chart.plotArea.iter_xCharts():
        try:
            plot = PlotFactory(x_chart, chart)
            plots.append(([_clean(str(c)) for c in plot.categories], list(plot.series)))
        except (ValueError, NotImplementedError):  # a kind python-pptx does not model (area
            # 3-D has a plot but "series class … not yet implemented"): its series read the same
            series = sorted(x_chart.findall(qn("c:ser")), key=lambda s: s.order.val)
            plots.append((_categories(x_chart), [_BaseCategorySeries(s) for s in series]))
    return plots


def chart_table(chart: Chart) -> tuple[str, list[list[str]]]:
    """The chart's title and its rows: header ``["", series…]`` and a row per category, or
    for XY/bubble charts ``["Series", "X", "Y"]`` and a row per point; none without series."""
    title = _clean(chart.chart_title.text_frame.text) if chart.has_title else ""
    plots = _plots(chart)
    scatter = [
        (s, _x_values(s)) for _, series_ in plots for s in series_ if _x_values(s) is not None
    ]
    if scatter:  # XY and bubble charts: a row per point, its series, x and y
        rows = [["Series", "X", "Y"]]
        for series_, xs in scatter:
            ys = list(series_.values)
            for x, y in zip(xs or [], ys, strict=False):
                rows.append([_clean(series_.name or ""), x, _number(y)])
        return title, rows
    categories: list[str] = []
    series: list[tuple[str, list[Any]]] = []
    for plot_categories, plot_series in plots:
        if not categories:
            categories = plot_categories
        for s in plot_series:  # an unnamed series is named by its place, as Office shows it
            series.append((_clean(s.name or "") or f"Series {len(series) + 1}", list(s.values)))
    if not series:
        return title, []
    length = max([len(categories)] + [len(v) for _, v in series])
    rows = [["", *(name for name, _ in series)]]
    for index in range(length):
        label = categories[index] if index < len(categories) else str(index + 1)
        rows.append([label, *(_number(v[index]) if index < len(v) else "" for _, v in series)])
    return title, rows


def read_chart(blob: bytes, source_key: str, part: str) -> tuple[str, list[list[str]]]:
    """``chart_table`` of a chart part's bytes (refused if it declares a DTD)."""
    refuse_dtd(blob, source_key, part)
    return chart_table(Chart(pptx_parse_xml(blob), None))
