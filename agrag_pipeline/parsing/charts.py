"""DrawingML charts (in DOCX and PPTX) as their data: a title and a table of categories by series.

python-pptx's chart model reads any chart part (``c:chartSpace``): plots, categories, series
names and their cached values, which is what the document shows. A chart becomes what a reader
of its data needs: one row per category, one column per series.
"""

from __future__ import annotations

from typing import Any

from pptx.chart.chart import Chart
from pptx.oxml import parse_xml as pptx_parse_xml

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


def chart_table(chart: Chart) -> tuple[str, list[list[str]]]:
    """The chart's title and its rows: header ``["", series…]`` and a row per category, or
    for XY/bubble charts ``["Series", "X", "Y"]`` and a row per point; none without series."""
    title = _clean(chart.chart_title.text_frame.text) if chart.has_title else ""
    scatter = [
        (s, _x_values(s)) for plot in chart.plots for s in plot.series if _x_values(s) is not None
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
    for plot in chart.plots:
        if not categories:
            categories = [_clean(str(c)) for c in plot.categories]
        series.extend((_clean(s.name or ""), list(s.values)) for s in plot.series)
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
