"""Spans of a text layer that a reader never sees: markup, left out of what is embedded.

A Markdown text layer is the source itself, so it holds markup that renders to nothing:
HTML comments (``<!-- Old headings. Do not remove... -->``), empty anchors
(``<a id="..."></a>``), inline and block HTML tags, link reference definitions and YAML front
matter. They stay in the text layer (offsets index the source) and in a chunk's ``text`` where
they sit between visible text, but they never make a chunk on their own and are cut out of
``Chunk.contextual_text``, so they neither take retrieval slots nor dilute a vector.

Found with the same parser as the sections (pyromark), so a ``<!--`` inside a code span or a
fenced block is text, never markup. Other formats' text layers hold extracted text only
(the HTML parser already skips comments and tags), so they have no such spans.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Sequence
from pathlib import PurePosixPath

from agrag_pipeline.models import Section
from agrag_pipeline.parsing import notebook
from agrag_pipeline.parsing.markdown import MEDIA_TYPE as MARKDOWN
from agrag_pipeline.parsing.markdown import Span, markup_spans, merged, merged_touching, scan
from agrag_pipeline.parsing.parsed import ParsedDocument

__all__ = [
    "Span",
    "document_title",
    "has_visible_text",
    "heading_line",
    "inline_spans",
    "invisible_spans",
    "markdown_invisible_spans",
    "merged",
    "merged_touching",
    "replaced_spans",
    "trim_span",
    "visible_blocks",
    "within",
]

_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*['\"]?(.+?)['\"]?[ \t]*$", re.MULTILINE)
_SETEXT_UNDERLINE = re.compile(r"[ \t]*(=+|-+)[ \t]*")
_ALNUM = re.compile(r"\w+")


#: Media types whose text layer is Markdown: a Markdown file, and a notebook (its cells
#: written as Markdown, ``notebook.markdown_of``), whose markdown cells hold links and HTML too.
MARKDOWN_TEXT_LAYERS = frozenset({MARKDOWN, notebook.MEDIA_TYPE})


def invisible_spans(parsed: ParsedDocument) -> list[Span]:
    """Sorted, disjoint spans of ``parsed.text_layer`` that render to no reader-visible text."""
    if parsed.document.media_type not in MARKDOWN_TEXT_LAYERS:
        return []
    return markdown_invisible_spans(parsed.text_layer)


def inline_spans(parsed: ParsedDocument) -> list[Span]:
    """Spans of ``parsed.text_layer`` left out of what is embedded but never trimmed off a
    chunk's text: a Markdown text layer's link syntax and escapes' backslashes
    (``markdown.MarkdownScan.inline_markup``)."""
    if parsed.document.media_type not in MARKDOWN_TEXT_LAYERS:
        return []
    return list(scan(parsed.text_layer).inline_markup())


def replaced_spans(parsed: ParsedDocument) -> list[tuple[int, int, str]]:
    """``(start, end, shown)`` of ``parsed.text_layer`` that a reader sees otherwise than
    written: a Markdown text layer's entity references (``markdown.MarkdownScan``)."""
    if parsed.document.media_type not in MARKDOWN_TEXT_LAYERS:
        return []
    return list(scan(parsed.text_layer).replacements())


def markdown_invisible_spans(text: str) -> list[Span]:
    """``invisible_spans`` of a Markdown source (string indices): ``markdown.markup_spans``.

    Found in the parser's own walk over the source's events, kept for the last source: a
    document parsed and then chunked is walked once.
    """
    return markup_spans(text)


def has_visible_text(text: str, start: int, end: int, spans: Sequence[Span]) -> bool:
    """True when ``text[start:end]`` holds a non-whitespace character outside ``spans``."""
    i = max(bisect.bisect_right(spans, (start, sys.maxsize)) - 1, 0)
    at = start
    n = len(spans)
    while i < n:
        a, b = spans[i]
        i += 1
        if b <= at:
            continue
        if a >= end:
            break
        if a > at and not text[at:a].isspace():
            return True
        at = b
        if at >= end:
            return False
    return at < end and not text[at:end].isspace()


def visible_blocks(
    text: str, blocks: Sequence[tuple[int, int, str]], spans: Sequence[Span]
) -> list[int]:
    """Indices of the ``blocks`` (ascending, disjoint) that ``has_visible_text`` outside
    ``spans``, in one sweep: a block that no span reaches needs no look."""
    keep: list[int] = []
    j, n = 0, len(spans)
    for i, (start, end, _) in enumerate(blocks):
        while j < n and spans[j][1] <= start:
            j += 1
        if j >= n or spans[j][0] >= end:
            if end > start and not text[start:end].isspace():
                keep.append(i)
        elif has_visible_text(text, start, end, spans):
            keep.append(i)
    return keep


def within(spans: Sequence[Span], start: int, end: int) -> list[Span]:
    """The parts of ``spans`` inside ``[start, end)``."""
    i = max(bisect.bisect_right(spans, (start, sys.maxsize)) - 1, 0)
    out: list[Span] = []
    n = len(spans)
    while i < n:
        a, b = spans[i]
        i += 1
        if a >= end:
            break
        if b > start:
            out.append((a if a > start else start, b if b < end else end))
    return out


def trim_span(text: str, start: int, end: int, spans: Sequence[Span]) -> Span:
    """``[start, end)`` moved inwards past whitespace and the ``spans`` at either end."""
    inside = within(spans, start, end)
    i, j = 0, len(inside)
    moved = True
    while moved and start < end:
        moved = False
        while start < end and text[start].isspace():
            start += 1
        while i < j and inside[i][1] <= start:
            i += 1
        if i < j and inside[i][0] <= start:
            start, moved = inside[i][1], True
    moved = True
    while moved and end > start:
        moved = False
        while end > start and text[end - 1].isspace():
            end -= 1
        while j > i and inside[j - 1][0] >= end:
            j -= 1
        if j > i and inside[j - 1][1] >= end:
            end, moved = inside[j - 1][0], True
    return (start, end) if start < end else (start, start)


def heading_line(text: str, section: Section) -> Span | None:
    """The span of a heading section's heading (its first line, or lines), or None.

    Every parser starts a heading's section at its heading line; a Setext underline and a
    heading wrapped over several lines (PDF) are included.
    """
    if section.heading is None or section.kind != "text":
        return None
    start, stop = section.start, section.end
    want = "".join(_ALNUM.findall(section.heading.lower()))
    end = text.find("\n", start, stop)
    end = stop if end < 0 else end
    seen = "".join(_ALNUM.findall(text[start:end].lower()))
    while end < stop and want.startswith(seen) and len(seen) < len(want):
        nxt = text.find("\n", end + 1, stop)
        nxt = stop if nxt < 0 else nxt
        line = "".join(_ALNUM.findall(text[end:nxt].lower()))
        if not line or not want.startswith(seen + line):
            break
        seen += line
        end = nxt
    nxt = text.find("\n", end + 1, stop)
    nxt = stop if nxt < 0 else nxt
    if end < stop and _SETEXT_UNDERLINE.fullmatch(text[end + 1 : nxt]):
        end = nxt
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def document_title(parsed: ParsedDocument, spans: Sequence[Span]) -> str:
    """The heading for text before a document's first heading.

    Front matter's ``title``, else the document's only level-1 heading, else the file name.
    """
    text = parsed.text_layer
    if spans and spans[0][0] == 0 and text.startswith("---"):
        m = _FRONT_MATTER_TITLE.search(text, 0, spans[0][1])
        if m and m.group(1).strip():
            return m.group(1).strip()
    tops = [s.heading for s in parsed.sections if s.heading is not None and s.level == 1]
    if len(tops) == 1 and tops[0] and tops[0].strip():
        return tops[0]
    return PurePosixPath(parsed.document.source_key).name
