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


def chart_table(chart: Chart) -> tuple[str, list[list[str]]]:
    """The chart's title and its rows (header ``["", series…]``; none without series)."""
    title = _clean(chart.chart_title.text_frame.text) if chart.has_title else ""
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
