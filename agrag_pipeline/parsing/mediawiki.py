"""MediaWiki markup (``.wiki``, ``.mediawiki``, ``.wikitext``): pages exported from a wiki
(Wikipedia, a team's MediaWiki), read as the rendered page reads.

Parsed with mwparserfromhell (MIT; pywikibot's parser: the wiki's own grammar, nested
templates, tables and tags; ~0.1 s for a long Wikipedia article here). The text layer we write
(``textlayer``):
- ``== Headings ==`` at their level (``=`` 1 to ``======`` 6);
- paragraphs as written (blank lines part them), list items one a line (``- item``), a
  definition list's term and description on lines of their own;
- tables (``{| … |}``, ``!`` header cells) as pipe rows, a header row where its cells are all
  ``!`` cells;
- bold and italic read through, a link as its label (``[[Page|label]]`` "label",
  ``[[Page]]`` "Page", ``[https://… label]`` "label", a bare URL as written), character
  references as their characters, ``<math>`` LaTeX as written;
- code as the wiki shows it, lines and indentation kept: ``<pre>``, ``<syntaxhighlight>`` and
  ``<source>`` blocks, and lines the source starts with a space;
- a note (``<ref>…</ref>``) in brackets where it is referred to, as a footnote would read.
Left out: templates (``{{cite web|…}}``, infoboxes: what they show is rendered by the wiki from
pages we do not have, so a reference holding only a citation template shows nothing), the
``<references/>`` list, comments, category, file and interlanguage links, magic words
(``__TOC__``).
"""

from __future__ import annotations

import html
import itertools
import re
from typing import TypeGuard

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Node,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import Deadline, check_size, current_deadline
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.table_grid import SpanGrid, span
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "text/x-mediawiki"

#: Links to pages of these namespaces show nothing in the text (a category, an image's frame,
#: another language's page).
_HIDDEN_LINKS = re.compile(
    r"^\s*:?\s*(?:category|file|image|media|[a-z]{2,3}(?:-[a-z]+)?)\s*:", re.I
)
#: Tags whose content is not running text of the page.
_LEFT_OUT_TAGS = frozenset({"references", "gallery", "timeline", "templatedata"})
#: Tags whose content is code (or a formula's LaTeX), kept as written.
_CODE_TAGS = frozenset({"pre", "syntaxhighlight", "source", "code", "nowiki", "math", "chem"})
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
#: A list item's marker, one a nesting level, until ``flush`` writes the run as "- ".
_ITEM = "\x00"
_ITEMS = re.compile(r"\x00+\s*")
#: A line the source starts with a space (the wiki's preformatted text), until ``flush``.
_PRE = "\x01"
_PRE_LINE = re.compile(r"(?<=\n) ")
#: Tags whose content is a block of code (``<code>`` and ``<nowiki>`` are inline).
_BLOCK_CODE_TAGS = frozenset({"pre", "syntaxhighlight", "source"})
_BLANK_LINES = re.compile(r"\n[ \t]*\n")
_SPACES = re.compile(r"[ \t]+")


def _is_table(node: Node) -> TypeGuard[Tag]:
    return isinstance(node, Tag) and str(node.tag).lower() == "table"


def _is_code_block(node: Node) -> TypeGuard[Tag]:
    """``<pre>``, or a ``<syntaxhighlight>``/``<source>`` not marked ``inline``."""
    return (
        isinstance(node, Tag)
        and node.contents is not None
        and str(node.tag).lower() in _BLOCK_CODE_TAGS
        and not node.has("inline")
    )


class _Writer:
    def __init__(self, deadline: Deadline) -> None:
        self.layer = TextLayer()
        self.deadline = deadline
        self.count = 0
        self.pending: list[str] = []  # the text since the last heading or table

    def _tick(self) -> None:
        self.count += 1
        self.deadline.tick(f"node {self.count:,}")

    def page(self, code: Wikicode) -> None:
        line_start = True  # the next node starts a line of the source
        for node in code.nodes:
            self._tick()
            if isinstance(node, Text):
                # A line the source starts with a space is preformatted (not one whose space
                # follows a list's ``:`` or a template on the same line).
                value = _PRE_LINE.sub(_PRE, str(node.value))
                self.pending.append(_PRE + value[1:] if line_start and value[:1] == " " else value)
                line_start = value.endswith("\n")
                continue
            line_start = isinstance(node, Heading) or _is_code_block(node) or _is_table(node)
            if isinstance(node, Heading):
                self.flush()
                self.layer.heading(self.inline(node.title), node.level)
            elif _is_table(node):
                self.flush()
                self.table(node)
            elif _is_code_block(node):
                self.flush()
                self.layer.preformatted(html.unescape(str(node.contents)).splitlines())
            else:
                self.pending.append(self.node(node))
        self.flush()

    def flush(self) -> None:
        """The text gathered since the last block: paragraphs, or lines where it lists."""
        text = _MAGIC_WORD.sub("", "".join(self.pending))
        text = _ITEMS.sub("- ", text)
        self.pending = []
        for block in _BLANK_LINES.split(text):
            # A line of only the wiki's leading space is an empty line of the code around it.
            raw = [line for line in block.split("\n") if line.strip(" \t")]
            for preformatted, run in itertools.groupby(raw, key=lambda r: r.startswith(_PRE)):
                if preformatted:
                    self.layer.preformatted([line[1:] for line in run])
                    continue
                raw_run = list(run)
                lines = [_SPACES.sub(" ", line).strip() for line in raw_run]
                # A list stays lines, and so do lines indented inside an HTML block or after
                # a ``:``; anything else is a paragraph.
                if any(line.startswith("- ") for line in lines) or any(
                    line[:1] in " \t" for line in raw_run
                ):
                    self.layer.lines(lines)
                else:
                    self.layer.paragraph(" ".join(lines))

    def node(self, node: Node) -> str:
        """What a reader sees of one inline node."""
        if isinstance(node, Text):
            return str(node.value)
        if isinstance(node, Wikilink):
            if _HIDDEN_LINKS.match(str(node.title)):
                return ""
            return self.inline(node.text) if node.text else str(node.title.strip_code()).strip()
        if isinstance(node, ExternalLink):
            return self.inline(node.title) if node.title else str(node.url)
        if isinstance(node, HTMLEntity):
            return str(node.normalize())
        if isinstance(node, Template | Argument | Comment):
            return ""
        if isinstance(node, Tag):
            name = str(node.tag).lower()
            markup = node.wiki_markup
            if markup and set(markup) <= {"*", "#"}:
                return _ITEM  # one a level: "** deeper" is two (``flush`` makes them "- ")
            if markup in (";", ":"):
                return "\n"
            if name in ("br", "hr"):
                return "\n"
            if name in _LEFT_OUT_TAGS or node.contents is None:
                return ""
            if name == "ref":  # a note, in brackets where it is referred to (a citation
                # template inside shows nothing, so neither does its reference)
                note = " ".join(self.inline(node.contents).split())
                return f" ({note})" if note else ""
            if name in _CODE_TAGS:
                return html.unescape(str(node.contents))
            return self.inline(node.contents, strip=False)
        return str(node)

    def inline(self, code: Wikicode | None, strip: bool = True) -> str:
        """What a reader sees of ``code``; the spaces at its ends kept inside running text
        ("emph ''inside'' strong")."""
        if code is None:
            return ""
        shown = "".join(self.node(n) for n in code.nodes)
        return shown.strip() if strip else shown

    def table(self, table: Tag) -> None:
        implicit: list[Tag] = []  # cells before the first "|-"
        groups: list[list[Tag]] = []
        for child in table.contents.filter_tags(recursive=False):
            name = str(child.tag).lower()
            if name in ("td", "th"):
                if not groups and not implicit and str(child.contents).lstrip().startswith("+"):
                    # "|+ caption": the parser reads it as a cell whose text starts with "+".
                    self.layer.paragraph(self.cell(child).lstrip("+ "))
                else:
                    implicit.append(child)
            elif name == "tr":
                cells = [
                    c
                    for c in child.contents.filter_tags(recursive=False)
                    if str(c.tag).lower() in ("td", "th")
                ]
                groups.append(cells)
        if implicit:
            groups.insert(0, implicit)
        rows: list[list[str]] = []
        header_rows = 0
        grid = SpanGrid()
        for cells in groups:
            self._tick()
            row = grid.row(
                (self.cell(cell), _span(cell, "colspan"), _span(cell, "rowspan")) for cell in cells
            )
            if not any(row):
                continue
            rows.append(row)
            if len(rows) == header_rows + 1 and all(str(c.tag).lower() == "th" for c in cells):
                header_rows += 1
        self.layer.table(rows, header_rows=header_rows)

    def cell(self, cell: Tag) -> str:
        return _SPACES.sub(" ", self.inline(cell.contents).replace("\n", " ")).strip()


def _span(cell: Tag, name: str) -> int:
    """A cell's ``rowspan`` or ``colspan`` (``table_grid.span``; 1 when absent)."""
    return span(cell.get(name).value) if cell.has(name) else 1


#: The parser's C tokenizer cannot be stopped by the parse deadline, and two shapes of input
#: cost it far more than their size (measured here): unclosed table openings nest, quadratic
#: (10,000 ``{|`` lines: 4.6 s), and every list marker is a node (200,000 markers: 8 s). A
#: real page has tens of each: a page over these is refused before the tokenizer sees it.
MAX_TABLE_OPENINGS = 2_000
MAX_LIST_MARKERS = 50_000
_TABLE_OPENING = re.compile(r"^[ \t]*\{\|", re.MULTILINE)
_LIST_MARKERS = re.compile(r"^[*#:;]+", re.MULTILINE)


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of a MediaWiki page."""
    key = document.source_key
    check_size(key, "table openings ({|)", len(_TABLE_OPENING.findall(text)), MAX_TABLE_OPENINGS)
    markers = sum(len(m) for m in _LIST_MARKERS.findall(text))
    check_size(key, "list markers", markers, MAX_LIST_MARKERS)
    writer = _Writer(current_deadline(key))
    writer.page(mwparserfromhell.parse(text))
    return writer.layer.parsed(document, "the wiki page holds no text (only templates or markup)")


__all__ = ["MEDIA_TYPE", "parse"]
