"""Markdown (CommonMark + GFM tables) with pyromark, the Python binding of pulldown-cmark.

Why pyromark: a real CommonMark parser (so ``#`` lines in code fences, indented code or HTML
comments are never headings), with source ranges, at ~80 MB/s (DESIGN.md). Its ranges are UTF-8
*byte* offsets; they are converted to Python string indices before anything is stored.

Conventions:
- The text layer is the decoded source itself (BOM stripped, line endings kept as they are).
- Headings: ATX and Setext, at the top level of the document only. A heading quoted in a block
  quote or inside a list item is content of the section it sits in, not document structure.
- Heading text is the plain text of the heading: links, emphasis and code spans keep their
  text, inline HTML tags are dropped (their inner text is kept), line breaks become spaces.
- Tables: GFM tables (at any depth). ``table_header`` spans the header line *and* the delimiter
  row, so a repeated header still renders as a table; ``table_rows`` are the body rows.
- YAML front matter (``---`` … ``---`` at the very top) is content of the level-0 section, never
  mistaken for a Setext heading.

Markup no reader sees (``markup_spans``: HTML comments and tags, link reference definitions,
front matter, blocks of nothing else; and ``inline_markup``: a link's syntax around its text,
an escape's backslash) is found in the same walk over the parser's events as the headings and
tables, and the walk of the last source is kept: the chunker asks for the markup of the text
it was just given to chunk, and one walk is most of a parse (issue 25: a second walk made
parse + chunk 1.6x slower).
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import pyromark

from agrag_pipeline.models import Document, Section
from agrag_pipeline.parsing import markdown_html_tables
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections, trim

MEDIA_TYPE = "text/markdown"

Span = tuple[int, int]

_OPTIONS = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
    | pyromark.Options.ENABLE_YAML_STYLE_METADATA_BLOCKS
)
#: Block containers: a heading inside one of these is not a document heading.
_CONTAINERS = frozenset(
    {
        "BlockQuote",
        "List",
        "Item",
        "FootnoteDefinition",
        "DefinitionList",
        "DefinitionListDefinition",
    }
)
#: Inline events whose payload is heading text ("Text" is handled apart, first).
_TEXT_EVENTS = frozenset({"Code", "InlineMath", "DisplayMath", "FootnoteReference"})
#: Inline events whose payload a reader sees ("Text" is handled apart, first).
_VISIBLE_EVENTS = frozenset(
    {"Code", "InlineMath", "DisplayMath", "FootnoteReference", "TaskListMarker"}
)
#: Inline elements whose syntax around their text is markup (``_link_markup``).
_LINKS = frozenset({"Link", "Image"})
_LEVELS = {"H1": 1, "H2": 2, "H3": 3, "H4": 4, "H5": 5, "H6": 6}
#: A tag inside an HTML block, as CommonMark defines raw HTML: an attribute's quoted value may
#: hold ``<`` and ``>`` (the Rust book's ``<Listing caption="... `Box<T>` ...">``), up to a
#: bound, so that no tag is looked for across a whole block from every ``<`` in it.
_ATTRIBUTE = (
    rb"""\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:"[^"<]*"|"[^"]{0,2000}"|'[^'<]*'|'[^']{0,2000}'"""
    rb"""|[^\s"'=<>`]+))?"""
)
_TAG = re.compile(
    rb"</[A-Za-z][A-Za-z0-9-]*\s*>|<[A-Za-z][A-Za-z0-9-]*(?:" + _ATTRIBUTE + rb")*\s*/?>"
)
#: What opens markup that runs to its own closer (the block's end if there is none): a
#: comment, CDATA, a processing instruction, a declaration, a script or style element (code no
#: reader sees).
_RUNS_TO = (
    (b"<!--", b"-->"),
    (b"<![cdata[", b"]]>"),
    (b"<?", b"?>"),
    (b"<script", b"</script"),
    (b"<style", b"</style"),
    (b"<!", b">"),
)


def _html_markup(data: bytes, start: int, end: int) -> list[Span]:
    """Spans of comments, tags and scripts in an HTML block's bytes ``data[start:end]``; the
    text between them is what the block shows. One pass: each closer is looked for once, from
    its opener (a regex of lazy alternatives restarted at every ``<`` of an unclosed comment
    took seconds on a 100 KB block)."""
    spans: list[Span] = []
    lower = data[start:end].lower()
    at = start
    while True:
        lt = data.find(b"<", at, end)
        if lt < 0:
            return spans
        for opener, closer in _RUNS_TO:
            if lower.startswith(opener, lt - start):
                if opener in (b"<script", b"<style"):
                    after = lt + len(opener)
                    if after < end and (data[after : after + 1].isalnum()):
                        continue  # <scripts>: another tag
                close = lower.find(closer, lt - start + len(opener))
                if close < 0:
                    spans.append((lt, end))
                    return spans
                stop = close + start + len(closer)
                if closer.startswith(b"</"):
                    gt = data.find(b">", stop, end)
                    stop = end if gt < 0 else gt + 1
                spans.append((lt, stop))
                at = stop
                break
        else:
            tag = _TAG.match(data, lt, end)
            if tag is not None:
                spans.append(tag.span())
                at = tag.end()
            else:
                at = lt + 1


#: A line that starts with ``>`` markers (after blanks): a block quote's, or one in HTML. A
#: pattern that starts with a newline is searched fast (``^`` in multi-line mode is not).
_QUOTE_LINE = re.compile(r"\n[ \t]*>")
_QUOTE_FIRST_LINE = re.compile(r"[ \t]*>")
#: A block quote's line of nothing but ``>`` markers.
_QUOTE_BLANK = re.compile(rb"^([ \t>]*>)[ \t]*$", re.MULTILINE)
#: DeepSeek-OCR's grounding tags before each block it reads from a page image: the block's kind
#: and its box (``<|ref|>text<|/ref|><|det|>[[217, 230, 785, 321]]<|/det|>``), and the prompt's
#: ``<|grounding|>``: no reader's text, each box's numbers were embedded with every chunk.
_GROUNDING = re.compile(
    rb"<\|ref\|>[^<\n]{0,200}<\|/ref\|>(?:<\|det\|>[^<\n]{0,4000}<\|/det\|>)?"
    rb"|<\|det\|>[^<\n]{0,4000}<\|/det\|>|<\|grounding\|>"
)


def _tag(value: Any) -> str:
    return value if value.__class__ is str else next(iter(value))


#: One parser with our options, built once.
_MARKDOWN = pyromark.Markdown(options=_OPTIONS)
_BREAKS = frozenset({"SoftBreak", "HardBreak"})


def _byte_to_char(data: bytes, offsets: set[int]) -> dict[int, int]:
    """String index of each offset into UTF-8 ``data``, in one pass over the wanted offsets.

    Decoding runs of mostly-ASCII bytes is fast in C; only the bytes up to the last wanted
    offset are decoded, each once.
    """
    mapping: dict[int, int] = {}
    previous_byte = previous_char = 0
    for offset in sorted(offsets):
        previous_char += len(data[previous_byte:offset].decode("utf-8"))
        previous_byte = offset
        mapping[offset] = previous_char
    return mapping


class MarkdownScan:
    """What one walk over a Markdown source's events finds, in string indices.

    The markup spans are made ready when first asked for (a parse alone never asks).
    """

    __slots__ = (
        "_char",
        "_data",
        "_inline",
        "_inline_raw",
        "_markup",
        "_raw_markup",
        "_replaced",
        "_replacements",
        "_text",
        "headings",
        "tables",
    )

    def __init__(
        self,
        text: str,
        data: bytes | None,
        headings: tuple[HeadingMark, ...],
        tables: tuple[TableMark, ...],
        raw_markup: list[Span],
        inline_markup: list[Span],
        replaced: list[tuple[int, int, str]],
    ) -> None:
        self.headings = headings
        self.tables = tables
        self._text = text
        #: The source's UTF-8 bytes, for ``_byte_to_char``; None for ASCII.
        self._data = data
        self._raw_markup = raw_markup
        self._inline_raw = inline_markup
        self._markup: tuple[Span, ...] | None = None
        self._inline: tuple[Span, ...] | None = None
        self._replaced = replaced
        self._replacements: tuple[tuple[int, int, str], ...] | None = None
        self._char: dict[int, int] | None = None

    def replacements(self) -> tuple[tuple[int, int, str], ...]:
        """``(start, end, shown)`` of each entity or numeric character reference outside code
        (``&amp;``, ``&#8217;``): a reader sees its character, not what is written."""
        if self._replacements is None:
            found = self._replaced
            if found and self._data is not None:
                char = self._chars()
                found = [(char[a], char[b], shown) for a, b, shown in found]
            self._replacements = tuple(found)
        return self._replacements

    def _chars(self) -> dict[int, int]:
        """The string index of every byte offset the spans hold (markup, inline markup,
        replacements), in one decoding pass: the chunker asks for all three."""
        if self._char is None:
            assert self._data is not None
            offsets = set(itertools.chain.from_iterable(self._raw_markup))
            offsets.update(itertools.chain.from_iterable(self._inline_raw))
            offsets.update(o for a, b, _ in self._replaced for o in (a, b))
            self._char = _byte_to_char(self._data, offsets)
        return self._char

    def markup(self) -> tuple[Span, ...]:
        """``markup_spans``: sorted, disjoint, each trimmed of whitespace."""
        if self._markup is None:
            text, raw = self._text, self._raw_markup
            if raw and self._data is not None:
                char = self._chars()
                raw = [(char[a], char[b]) for a, b in raw]
            if raw and (_QUOTE_FIRST_LINE.match(text) or _QUOTE_LINE.search(text)):
                raw = [_with_quote_markers(text, a, b) for a, b in raw]
            # Two threads may both get here: each computes the same spans from fields that
            # stay as they are (clearing them would race with the other's reading).
            self._markup = tuple(merged(text, raw))
        return self._markup

    def inline_markup(self) -> tuple[Span, ...]:
        """A link's or image's syntax around its text (``[``, ``](destination "title")``,
        ``][label]``, an autolink's ``<>``; a link of no text whole) and an escape's backslash:
        sorted, joined only where they touch (the space between two of them is a word break
        a reader sees). Unlike ``markup``, what stands at a chunk's edge is never trimmed off
        its text: a chunk keeps a link whole and leaves these out of what it embeds."""
        if self._inline is None:
            found = self._inline_raw
            if found and self._data is not None:
                char = self._chars()
                found = [(char[a], char[b]) for a, b in found]
            self._inline = tuple(merged_touching(found))
        return self._inline


def parse(text: str, document: Document) -> list[Section]:
    """Sections of decoded Markdown ``text``."""
    found = scan(text)
    return build_sections(text, document, found.headings, found.tables)


def markup_spans(text: str) -> list[Span]:
    """Sorted, disjoint spans of a Markdown source that render to no reader-visible text.

    HTML comments and tags (inline, or inside an HTML block: the text between tags stays),
    YAML front matter, link reference definitions (what the parser consumes between top-level
    blocks without an event), blocks holding no visible text (a list item or quote of a
    comment), and the blank lines of a block quote. Each is trimmed of whitespace; spans
    parted by whitespace only are joined. A ``<!--`` in a code span or fence is text. Links'
    syntax and escapes: ``MarkdownScan.inline_markup``; references: ``replacements``.
    """
    return list(scan(text).markup())


@lru_cache(maxsize=1)
def scan(text: str) -> MarkdownScan:
    """Headings, tables and markup of ``text``, from one walk over the parser's events.

    The last source's result is kept (a pure function of the text): parse then chunk of one
    document, even from a text layer read back from storage, walk it once.
    """
    raw_headings: list[tuple[int, int, int, str]] = []  # byte start, byte end, level, text
    raw_tables: list[tuple[int, int, int, list[tuple[int, int]]]] = []
    html_tables: list[tuple[int, int, int, list[tuple[int, int]]]] = []
    raw_markup: list[Span] = []  # UTF-8 byte ranges
    inline_markup: list[Span] = []  # UTF-8 byte ranges of links' syntax, escapes' backslashes
    replaced: list[tuple[int, int, str]] = []  # UTF-8 byte ranges of entity references
    top: list[Span] = []  # ranges of the top-level blocks, for the gaps between them
    quotes: list[Span] = []
    data = text.encode("utf-8")
    depth = 0  # open block containers (a heading inside one is no document heading)
    nest = 0  # open elements of any kind (Start without its End yet)
    #: How many of the open elements, outermost first, hold visible text yet. The ones that do
    #: are always the outermost ones: visible text marks every open element at once.
    seen = 0
    heading: list[str] | None = None  # the open document heading's text parts
    heading_at: tuple[int, int, int] = (0, 0, 0)  # its byte start, byte end, level
    table: list[Any] | None = None  # byte start, byte end, head end, rows
    #: Open links and images, innermost last: byte start, byte end, and the first and last
    #: byte of what they hold (-1 before anything), for ``_link_markup``.
    links: list[list[int]] = []
    #: Where a text event of a reference or an escaped character would start (most files have
    #: none, so the walk looks at no text event's bytes).
    unescapes = {m.start() for m in _REFERENCE.finditer(data)}
    unescapes.update(m.start() + 1 for m in _ESCAPE.finditer(data))

    # ~50 events per KB of source: text and breaks (most of them) are dismissed with as few
    # operations as possible. Typed loosely: the class checks below are what narrow an event
    # (isinstance is slower). An End event's range is its element's (as its Start's).
    events: Iterator[tuple[Any, Any]] = _MARKDOWN.events_with_range(text)
    for event, rng in events:
        if event.__class__ is str:
            if heading is not None and event in _BREAKS:
                heading.append(" ")
            continue
        if "Text" in event:
            if seen < nest and event["Text"].strip():
                seen = nest
            if heading is not None:
                heading.append(event["Text"])
            if links:
                _holds(links[-1], rng)
            if unescapes and rng["start"] in unescapes:
                _unescaped(data, rng["start"], rng["end"], event["Text"], replaced, inline_markup)
            continue
        if "Start" in event:
            value = event["Start"]
            tag = value if value.__class__ is str else next(iter(value))
            if links:
                _holds(links[-1], rng)
            if tag in _LINKS:
                links.append([rng["start"], rng["end"], -1, -1])
            if nest == 0:
                top.append((rng["start"], rng["end"]))
                if tag == "MetadataBlock":
                    raw_markup.append((rng["start"], rng["end"]))
            nest += 1
            if tag in _CONTAINERS:
                depth += 1
                if tag == "BlockQuote":
                    quotes.append((rng["start"], rng["end"]))
            elif tag == "HtmlBlock":
                # The whole block at once: a comment may run over several lines (and events).
                # On the UTF-8 bytes: the pattern's characters are ASCII, which no other
                # character's bytes hold, so it matches the same text.
                at = rng["start"]
                tags = _html_markup(data, at, rng["end"])
                taken: set[Span] = set()
                if markdown_html_tables.holds_table(data, at, rng["end"]):
                    found = markdown_html_tables.read(data, at, rng["end"], tags)
                    if found is not None:
                        replaced.extend(found.replaced)
                        taken = found.taken
                        html_tables.append((at, rng["end"], found.header_end, found.rows))
                for a, b in tags:
                    if seen < nest and data[at:a].strip():
                        seen = nest
                    if unescapes:
                        _html_references(data, at, a, replaced)
                    if (a, b) not in taken:
                        raw_markup.append((a, b))
                    at = b
                # The text between tags is what the block shows (pyromark's ``Html`` events
                # carry it with the tags, so no event marks it visible): without this mark the
                # block was taken for one holding no visible text, and a raw HTML table's
                # cells went out of what is embedded.
                if seen < nest and data[at : rng["end"]].strip():
                    seen = nest
                if unescapes:
                    _html_references(data, at, rng["end"], replaced)
            elif tag == "Heading":
                if depth == 0:
                    heading = []
                    heading_at = (rng["start"], rng["end"], _LEVELS[value["Heading"]["level"]])
            elif tag == "TableRow":
                if table is not None:
                    table[3].append((rng["start"], rng["end"]))
            elif tag == "Table" and table is None:
                table = [rng["start"], rng["end"], -1, []]
            continue
        if "End" in event:
            if seen == nest:
                seen -= 1
            else:
                # An element holding no text a reader sees (a quote or list item of a comment).
                raw_markup.append((rng["start"], rng["end"]))
            nest -= 1
            value = event["End"]
            tag = value if value.__class__ is str else next(iter(value))
            if links:
                if tag in _LINKS:
                    inline_markup.extend(_link_markup(links.pop()))
                if links:
                    _holds(links[-1], rng)
            if tag in _CONTAINERS:
                depth -= 1
            elif heading is not None:
                if tag == "Heading":
                    start, end, level = heading_at
                    raw_headings.append((start, end, level, " ".join("".join(heading).split())))
                    heading = None
            elif table is not None:
                if tag == "TableHead":
                    table[2] = rng["end"]
                elif tag == "Table":
                    raw_tables.append((table[0], table[1], table[2], table[3]))
                    table = None
            continue
        if "Code" in event:
            if seen < nest and event["Code"].strip():
                seen = nest
            if heading is not None:
                heading.append(event["Code"])
            if links:
                _holds(links[-1], rng)
            continue
        ((kind, value),) = event.items()
        if links:
            _holds(links[-1], rng)
        if kind == "InlineHtml":
            raw_markup.append((rng["start"], rng["end"]))
        elif kind in _VISIBLE_EVENTS:
            if seen < nest and str(value).strip():
                seen = nest
            if heading is not None and kind in _TEXT_EVENTS:
                heading.append(str(value))

    # What lies between top-level blocks is what the parser consumed without an event: link
    # reference definitions (and nothing else but whitespace).
    at = 0
    for start, end in [*top, (len(data), len(data))]:
        if start > at and data[at:start].strip():
            raw_markup.append((at, start))
        at = max(at, end)
    # Blank lines of a block quote (nothing but ``>``) show nothing either.
    for qs, qe in quotes:
        for q in _QUOTE_BLANK.finditer(data, qs, qe):
            raw_markup.append((q.start(1), q.end(1)))
    # An OCR model's grounding tags: where on the page each block was found.
    if b"<|" in data:
        raw_markup.extend(m.span() for m in _GROUNDING.finditer(data))

    ascii_only = text.isascii()
    if ascii_only:
        char: Callable[[int], int] = int
    else:
        wanted = {offset for mark in raw_headings for offset in mark[:2]}
        for start, end, head_end, rows in raw_tables + html_tables:
            wanted.update((start, end, head_end), *rows)
        wanted.discard(-1)  # a table without a head row: as before, char(-1) fails loudly
        char = _byte_to_char(data, wanted).__getitem__
    headings = []
    for start, end, level, heading_text in raw_headings:
        s, e = trim(text, char(start), char(end))
        headings.append(HeadingMark(s, e, level, heading_text))
    tables = [
        _table_mark(text, char(s), char(e), char(h), [(char(a), char(b)) for a, b in r])
        for s, e, h, r in raw_tables
    ]
    if html_tables:
        # The tables' replacements went in before the references of their blocks: in order.
        replaced.sort()
        tables.extend(
            _html_table_mark(text, char(s), char(e), None if h < 0 else char(h), r, char)
            for s, e, h, r in html_tables
        )
        tables.sort(key=lambda t: t.start)
    return MarkdownScan(
        text,
        None if ascii_only else data,
        tuple(headings),
        tuple(tables),
        raw_markup,
        inline_markup,
        replaced,
    )


def _holds(link: list[int], rng: Any) -> None:
    """Widen what the open ``link`` holds to an event's range inside it."""
    if link[2] < 0:
        link[2] = rng["start"]
    if rng["end"] > link[3]:
        link[3] = rng["end"]


#: An entity or numeric character reference, and a backslash before ASCII punctuation (an
#: escape), as CommonMark defines them; in code they are text, which ``_unescaped`` tells by
#: the parser's events. Two patterns, each with a literal first byte: one alternation of
#: both searched 10x slower.
_REFERENCE = re.compile(rb"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_ESCAPE = re.compile(rb"\\[!-/:-@\[-`{-~]")
#: ASCII punctuation, which a backslash escapes (CommonMark 2.4).
_ESCAPABLE = frozenset(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _unescaped(
    data: bytes,
    start: int,
    end: int,
    shown: str,
    replaced: list[tuple[int, int, str]],
    cuts: list[Span],
) -> None:
    """A text event of what the source writes otherwise: an entity or numeric character
    reference (its own event, its character as text) is a replacement; the backslash of an
    escape (the byte before the event, not itself escaped) is cut."""
    if data[start] == 38 and data[end - 1] == 59 and data[start:end] != shown.encode("utf-8"):
        replaced.append((start, end, shown))
    if start > 0 and data[start - 1] == 92 and data[start] in _ESCAPABLE:
        run = 1
        while start - run - 1 >= 0 and data[start - run - 1] == 92:
            run += 1
        if run % 2:
            cuts.append((start - 1, start))


def _html_references(
    data: bytes, start: int, end: int, replaced: list[tuple[int, int, str]]
) -> None:
    """The character references in the text an HTML block shows between two tags: a browser
    shows their characters (``<td>&nbsp;</td>``), as CommonMark does outside HTML."""
    for m in _REFERENCE.finditer(data, start, end):
        written = m.group().decode("ascii")
        shown = html.unescape(written)
        if shown != written:
            replaced.append((m.start(), m.end(), shown))


def _link_markup(link: list[int]) -> list[Span]:
    """A link's or image's syntax around its text: ``[`` and ``](destination "title")``,
    ``][label]``, an autolink's ``<`` and ``>``, an image's ``![``. A reader sees the text (an
    image's alternative text), never the destination; a link of no text shows nothing."""
    start, end, first, last = link
    if first < 0:
        return [(start, end)]
    return [(start, first), (last, end)]


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


def merged_touching(spans: list[Span]) -> list[Span]:
    """Spans sorted and joined where they overlap or touch (whitespace between stays)."""
    out: list[Span] = []
    for a, b in sorted(spans):
        if a >= b:
            continue
        if out and out[-1][1] >= a:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _html_table_mark(
    text: str,
    start: int,
    end: int,
    header_end: int | None,
    rows: list[tuple[int, int]],
    char: Callable[[int], int],
) -> TableMark:
    """An HTML table's mark: its block, the header up to the end of its last row, the rest
    of its rows (``markdown_html_tables``)."""
    start, end = trim(text, start, end)
    header = None if header_end is None else trim(text, start, header_end)
    body = tuple(trim(text, char(a), char(b)) for a, b in rows)
    return TableMark(start, end, header, tuple(r for r in body if r[1] > r[0]))


def _table_mark(
    text: str, start: int, end: int, head_end: int, rows: list[tuple[int, int]]
) -> TableMark:
    """Header = header line plus delimiter row (the line after the header line)."""
    start, end = trim(text, start, end)
    header_line_end = text.find("\n", max(head_end - 1, start))
    delimiter_end = -1 if header_line_end < 0 else text.find("\n", header_line_end + 1)
    header = trim(text, start, min(end, delimiter_end) if delimiter_end >= 0 else end)
    body = tuple(trim(text, a, b) for a, b in rows)
    return TableMark(start, end, header, tuple(r for r in body if r[1] > r[0]))
