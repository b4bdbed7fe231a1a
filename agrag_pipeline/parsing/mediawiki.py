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
  references as their characters, ``<pre>``/``<syntaxhighlight>`` code and ``<math>``
  LaTeX as written.
Left out: templates (``{{cite web|…}}``, infoboxes: what they show is rendered by the wiki from
pages we do not have), references (``<ref>``), comments, category, file and interlanguage
links, magic words (``__TOC__``).
"""

from __future__ import annotations

import html
import re

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
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "text/x-mediawiki"

#: Links to pages of these namespaces show nothing in the text (a category, an image's frame,
#: another language's page).
_HIDDEN_LINKS = re.compile(
    r"^\s*:?\s*(?:category|file|image|media|[a-z]{2,3}(?:-[a-z]+)?)\s*:", re.I
)
#: Tags whose content is not running text of the page.
_LEFT_OUT_TAGS = frozenset({"ref", "references", "gallery", "timeline", "templatedata"})
#: Tags whose content is code (or a formula's LaTeX), kept as written.
_CODE_TAGS = frozenset({"pre", "syntaxhighlight", "source", "code", "nowiki", "math", "chem"})
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
#: A list item's marker, one a nesting level, until ``flush`` writes the run as "- ".
_ITEM = "\x00"
_ITEMS = re.compile(r"\x00+\s*")
_BLANK_LINES = re.compile(r"\n[ \t]*\n")
_SPACES = re.compile(r"[ \t]+")


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
        for node in code.nodes:
            self._tick()
            if isinstance(node, Heading):
                self.flush()
                self.layer.heading(self.inline(node.title), node.level)
            elif isinstance(node, Tag) and str(node.tag).lower() == "table":
                self.flush()
                self.table(node)
            else:
                self.pending.append(self.node(node))
        self.flush()

    def flush(self) -> None:
        """The text gathered since the last block: paragraphs, or lines where it lists."""
        text = _MAGIC_WORD.sub("", "".join(self.pending))
        text = _ITEMS.sub("- ", text)
        self.pending = []
        for block in _BLANK_LINES.split(text):
            raw = [line for line in block.split("\n") if line.strip()]
            lines = [_SPACES.sub(" ", line).strip() for line in raw]
            # A list, or lines that start with a space (preformatted: code as the wiki shows
            # it), stay lines; anything else is a paragraph.
            if any(line.startswith("- ") for line in lines) or any(
                line.startswith(" ") for line in raw
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
        covered: dict[tuple[int, int], str] = {}  # cells a rowspan from above covers
        for cells in groups:
            self._tick()
            r = len(rows)
            row: list[str] = []
            for cell in cells:
                while (r, len(row)) in covered:
                    row.append(covered.pop((r, len(row))))
                value = self.cell(cell)
                for _ in range(_span(cell, "colspan")):
                    for down in range(1, _span(cell, "rowspan")):
                        covered[(r + down, len(row))] = value
                    row.append(value)
            while (r, len(row)) in covered:
                row.append(covered.pop((r, len(row))))
            if not any(row):
                continue
            rows.append(row)
            if len(rows) == header_rows + 1 and all(str(c.tag).lower() == "th" for c in cells):
                header_rows += 1
        self.layer.table(rows, header_rows=header_rows)

    def cell(self, cell: Tag) -> str:
        return _SPACES.sub(" ", self.inline(cell.contents).replace("\n", " ")).strip()


def _span(cell: Tag, name: str) -> int:
    """A cell's ``rowspan`` or ``colspan`` (1 when absent or not a number; at most 1,000)."""
    if not cell.has(name):
        return 1
    try:
        return max(1, min(int(str(cell.get(name).value).strip()), 1000))
    except ValueError:
        return 1


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
