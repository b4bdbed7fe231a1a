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
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath
from typing import Any

import pyromark

from agrag_pipeline.models import Section
from agrag_pipeline.parsing.markdown import MEDIA_TYPE as MARKDOWN
from agrag_pipeline.parsing.markdown import _byte_to_char
from agrag_pipeline.parsing.parsed import ParsedDocument

Span = tuple[int, int]

_OPTIONS = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
    | pyromark.Options.ENABLE_YAML_STYLE_METADATA_BLOCKS
)
_MARKDOWN = pyromark.Markdown(options=_OPTIONS)
#: Comments and tags inside an HTML block (the text between tags is visible and stays).
_HTML_MARKUP = re.compile(r"<!--.*?-->|<[^<>]*>", re.DOTALL)
#: Events whose payload a reader sees.
_VISIBLE_EVENTS = frozenset(
    {"Text", "Code", "InlineMath", "DisplayMath", "FootnoteReference", "TaskListMarker"}
)
_QUOTE_BLANK = re.compile(rb"^([ \t>]*>)[ \t]*$", re.MULTILINE)
_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*['\"]?(.+?)['\"]?[ \t]*$", re.MULTILINE)
_SETEXT_UNDERLINE = re.compile(r"[ \t]*(=+|-+)[ \t]*")
_ALNUM = re.compile(r"\w+")


def invisible_spans(parsed: ParsedDocument) -> list[Span]:
    """Sorted, disjoint spans of ``parsed.text_layer`` that render to no reader-visible text."""
    if parsed.document.media_type != MARKDOWN:
        return []
    return markdown_invisible_spans(parsed.text_layer)


def markdown_invisible_spans(text: str) -> list[Span]:
    """``invisible_spans`` of a Markdown source (string indices)."""
    raw: list[Span] = []  # UTF-8 byte ranges
    top: list[Span] = []  # ranges of the top-level blocks, for the gaps between them
    depth = 0
    #: Open blocks (range, holds visible text yet), innermost last.
    open_blocks: list[list[Any]] = []
    quotes: list[Span] = []
    data = text.encode("utf-8")
    events: Iterator[tuple[Any, Any]] = _MARKDOWN.events_with_range(text)
    for event, rng in events:
        if event.__class__ is str:
            continue
        kind, value = next(iter(event.items()))
        if kind in _VISIBLE_EVENTS:
            if open_blocks and open_blocks[-1][1] is False and str(value).strip():
                for block in open_blocks:
                    block[1] = True
            continue
        if kind == "Start":
            open_blocks.append([rng, False])
            if value == "BlockQuote" or (value.__class__ is dict and "BlockQuote" in value):
                quotes.append((rng["start"], rng["end"]))
            if depth == 0:
                top.append((rng["start"], rng["end"]))
                tag = value if value.__class__ is str else next(iter(value))
                if tag == "MetadataBlock":
                    raw.append((rng["start"], rng["end"]))
            tag = value if value.__class__ is str else next(iter(value))
            if tag == "HtmlBlock":
                # The whole block at once: a comment may run over several lines (and events).
                html = data[rng["start"] : rng["end"]].decode("utf-8")
                base = rng["start"]
                for m in _HTML_MARKUP.finditer(html):
                    a = base + len(html[: m.start()].encode("utf-8"))
                    raw.append((a, a + len(m.group().encode("utf-8"))))
            depth += 1
        elif kind == "End":
            depth -= 1
            block_range, seen = open_blocks.pop()
            if not seen:
                # A block holding no text a reader sees (a quote or list item of a comment).
                raw.append((block_range["start"], block_range["end"]))
        elif kind == "InlineHtml":
            raw.append((rng["start"], rng["end"]))
    # What lies between top-level blocks is what the parser consumed without an event: link
    # reference definitions (and nothing else but whitespace).
    at = 0
    for start, end in [*top, (len(data), len(data))]:
        if start > at and data[at:start].strip():
            raw.append((at, start))
        at = max(at, end)
    # Blank lines of a block quote (nothing but ``>``) show nothing either.
    for qs, qe in quotes:
        for q in _QUOTE_BLANK.finditer(data, qs, qe):
            raw.append((q.start(1), q.end(1)))
    if not raw:
        return []
    if text.isascii():
        spans = raw
    else:
        char = _byte_to_char(text, {o for span in raw for o in span})
        spans = [(char[a], char[b]) for a, b in raw]
    return merged(text, [_with_quote_markers(text, a, b) for a, b in spans])


def _with_quote_markers(text: str, start: int, end: int) -> Span:
    """A span that starts a line inside a block quote takes the line's ``>`` markers along."""
    line_start = text.rfind("\n", 0, start) + 1
    prefix = text[line_start:start]
    if prefix and ">" in prefix and not prefix.strip(" \t>"):
        return line_start, end
    return start, end


def merged(text: str, spans: list[Span]) -> list[Span]:
    """Spans sorted, trimmed of whitespace and joined where only whitespace parts them."""
    out: list[Span] = []
    for a, b in sorted(spans):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a >= b:
            continue
        if out and (out[-1][1] >= a or not text[out[-1][1] : a].strip()):
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def has_visible_text(text: str, start: int, end: int, spans: Sequence[Span]) -> bool:
    """True when ``text[start:end]`` holds a non-whitespace character outside ``spans``."""
    i = max(bisect.bisect_right(spans, (start, sys.maxsize)) - 1, 0)
    at = start
    while at < end:
        while i < len(spans) and spans[i][1] <= at:
            i += 1
        stop = end if i >= len(spans) else min(end, max(spans[i][0], at))
        if text[at:stop].strip():
            return True
        if i >= len(spans):
            return False
        at = max(stop, spans[i][1])
    return False


def within(spans: Sequence[Span], start: int, end: int) -> list[Span]:
    """The parts of ``spans`` inside ``[start, end)``."""
    i = max(bisect.bisect_right(spans, (start, sys.maxsize)) - 1, 0)
    out: list[Span] = []
    for a, b in spans[i:]:
        if a >= end:
            break
        a, b = max(a, start), min(b, end)
        if a < b:
            out.append((a, b))
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
