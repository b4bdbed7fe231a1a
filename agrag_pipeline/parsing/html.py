"""HTML with selectolax's Lexbor backend (a real HTML5 parser, in C).

The text layer is text we extract, recording spans as we write it, so every section span is
exact by construction:
- block elements are separated by line breaks (paragraph-like ones by a blank line); runs of
  HTML whitespace collapse to one space, except inside ``<pre>`` (kept verbatim);
- ``h1``–``h6`` sit on their own lines and open sections (a heading inside a table cell is cell
  text, not a section heading);
- list items start a line with ``- `` (``ul``) or ``N. `` (``ol``); ``dt``/``dd`` get a line each;
- a table is written one row per line, cells joined by `` | ``; leading rows of ``<th>`` cells
  (or rows in ``<thead>``) are its header; a ``<caption>`` is a text line before the table;
- ``script``, ``style``, ``template``, ``noscript``, ``head``, comments, ``button``s and
  ``hidden`` elements are skipped, but for a tab's panel (``role="tabpanel"``), hidden until
  its tab is chosen: it is read, after its tab's label where that tab is a button.

Page furniture of generated documentation (texinfo, Sphinx, MkDocs, Javadoc, rustdoc, mdBook) is
left out by structure, never by a site's class names, so that chunks hold the document and not
its "Next: …, Previous: …, Up: …" lines, menus, breadcrumbs and footers:
- the text is read from the page's main content (``<main>`` or ``role="main"``, the first one)
  when it has one and it shows text, else from ``<body>``; a saved web page is first rid of the
  unmarked furniture around its article there, where that is sure (``html_furniture``: news
  and blog pages' menus, teasers, share links and footers, an encyclopedia's categories);
- ``<nav>`` and ARIA landmarks navigation, banner, contentinfo, search and complementary are
  skipped, and so are ``<header>``/``<footer>`` outside the main content and outside any
  ``article``/``aside``/``section`` (where HTML makes them the page's banner and footer);
- a link-dense block (at least half of its text is link text; ``_Frame``) is dropped when its
  links say they navigate (``rel`` next/prev/up/contents/index/…), when it comes before the
  first heading of a page that has headings (skip links, breadcrumbs, top navigation bars), or
  when it repeats the links of an earlier block (a navigation bar at the top and the bottom);
  a block holding a heading is never dropped;
- a link to an anchor of the page whose text is only symbols (the "¶", "§", "#" permalinks
  beside headings) is skipped.
The DOM is walked with an explicit stack, never by Python recursion.

Nesting is capped at ``MAX_DEPTH`` elements, as browsers do (Chromium: 512): HTML5 tree
construction scans the stack of open elements on every start tag, so 200,000 nested ``<div>``s
cost Lexbor minutes (quadratic). ``cap_nesting`` rewrites only markup nested deeper than the cap,
in one linear pass before Lexbor sees it: an element that would open beyond the cap first
closes the innermost open one, so it becomes that element's sibling (its text, heading or
table is kept; only the excess nesting goes) and the matching end tag later is dropped. The walk
checks the parse's ``budget.Deadline`` every few thousand nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree
from selectolax.lexbor import LexborHTMLParser, LexborNode

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import mathml
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.html_furniture import page_furniture
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.svg import TspanLines, shown_run
from agrag_pipeline.parsing.table_grid import SpanGrid, filled_columns, span
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections

MEDIA_TYPE = "text/html"

CELL_SEPARATOR = " | "
#: ``Document.metadata`` key: how much of a web page's furniture was left out (``html_furniture``).
FURNITURE_METADATA = "html.furniture_left_out"

_SKIP = frozenset(
    {
        "script",
        "style",
        "template",
        "noscript",
        "head",
        "title",
        "meta",
        "link",
        "svg",
        "iframe",
        "object",
        "canvas",
        "-comment",
        "button",
    }
)
#: Inside an inline SVG, never text: definitions, styles, scripts, tooltips, editor data.
_DRAWING_SKIPPED = frozenset(
    {"defs", "style", "script", "title", "desc", "metadata", "foreignobject", "-comment"}
)
#: Separated from their neighbours by a blank line.
_PARAGRAPH_LIKE = frozenset(
    {
        "p",
        "pre",
        "blockquote",
        "ul",
        "ol",
        "dl",
        "table",
        "figure",
        "hr",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "form",
        "fieldset",
        "details",
        "address",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
    }
)
#: Separated from their neighbours by a line break.
_LINE_LIKE = frozenset(
    {
        "div",
        "li",
        "dt",
        "dd",
        "tr",
        "br",
        "figcaption",
        "summary",
        "caption",
        "center",
        "body",
        "html",
        "option",
        "legend",
    }
)
#: Landmark roles (ARIA) of page furniture, never of the document's own content.
_BOILERPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary"})
#: Link types (HTML ``rel``) that say a link moves through a site rather than cites something.
_NAVIGATION_RELS = frozenset(
    {"next", "prev", "previous", "up", "first", "last", "start", "contents", "toc", "index"}
)
#: Elements whose text is measured for link density (``_Frame``), to drop navigation blocks.
_LINK_BLOCKS = frozenset(
    {"div", "p", "ul", "ol", "dl", "menu", "form", "section", "aside", "center", "details"}
)
#: ``<header>``/``<footer>`` inside these belong to them, not to the page (HTML-AAM).
_SECTIONING = frozenset({"article", "aside", "main", "nav", "section"})
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HTML_WHITESPACE = " \t\n\r\f"
_HTML_SPACE = re.compile(f"[{_HTML_WHITESPACE}]+")
#: Spaces HTML does not collapse (``&nbsp;``, ``&#8239;``) but that show nothing on their own.
_NO_BREAK_SPACES = " \u00a0\u202f\u2007"
#: Text made only of these shows nothing.
_BLANK = _HTML_WHITESPACE + _NO_BREAK_SPACES
_ENDS_IN_COMMAND = re.compile(r"\\[A-Za-z]+\Z")
_XML_NAME = re.compile(r"\A[A-Za-z_][\w.-]*\Z")

#: Elements nested deeper than this become siblings of the innermost one (see the module doc).
MAX_DEPTH = 512

#: Never counted as nesting: void elements, and those closed implicitly by their siblings.
# fmt: off
_NOT_NESTING = frozenset(
    [
        "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta",
        "param", "source", "track", "wbr", "html", "head", "body", "p", "li", "dt", "dd", "tr",
        "td", "th", "option", "optgroup", "thead", "tbody", "tfoot", "colgroup", "caption",
        "rb", "rt", "rp", "rtc",
    ]
)
#: Their content is text up to the matching end tag: tags inside are not tags.
_RAW_TEXT = frozenset(
    [
        "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
        "plaintext",
    ]
)
# fmt: on
#: A comment's opening (no groups), or a start or end tag: its slash and its name.
_SCAN = re.compile(r"<(?:!--|(/?)([A-Za-z][^\s/<>]*)(?:[^<>\"']++|\"[^\"]*+\"|'[^']*+')*+>)")


def cap_nesting(text: str, max_depth: int = MAX_DEPTH) -> str:
    """``text`` with elements beyond ``max_depth`` levels turned into siblings; unchanged (the
    same object) when nothing is nested that deep. One pass, linear in the length of ``text``:
    the regex engine finds the next comment or tag (``_SCAN``), Python keeps the stack; it
    starts its search again only past a comment or a raw-text element's content."""
    if text.count("<") <= max_depth:
        return text
    source: list[list[object]] = []  # the elements the markup opened: [name, still open in out]
    in_source: dict[str, int] = {}  # name -> how many of ``source`` have it
    real: list[int] = []  # indices into ``source`` of the elements open in the output
    out: list[str] = []
    copied = 0  # text[:copied] is already in ``out``
    pos = 0
    scanning = True
    while scanning:
        scanning = False
        for match in _SCAN.finditer(text, pos):
            closing, name = match.groups()
            if name is None:  # a comment: nothing in it is markup
                end = text.find("-->", match.end())
                if end >= 0:
                    pos, scanning = end + 3, True
                break
            name = name.lower()
            if not closing:
                if name in _RAW_TEXT:
                    if name != "plaintext":  # the rest of the document is its text
                        end_tag = re.compile(f"</{name}", re.IGNORECASE).search(text, match.end())
                        if end_tag is not None:
                            pos, scanning = end_tag.start(), True
                    break
                if name in _NOT_NESTING:
                    continue
                if len(real) >= max_depth:  # close the innermost open element first
                    innermost = source[real.pop()]
                    innermost[1] = False
                    lt = match.start()
                    out.append(text[copied:lt])
                    out.append(f"</{innermost[0]}>")
                    copied = lt
                real.append(len(source))
                source.append([name, True])
                in_source[name] = in_source.get(name, 0) + 1
                continue
            if not in_source.get(name):
                continue  # a stray end tag: Lexbor ignores it, so do we
            while True:  # pop what this end tag closes
                popped_name, still_open = source.pop()
                in_source[str(popped_name)] -= 1
                if still_open:
                    real.pop()
                if popped_name == name:
                    break
            if not still_open:  # its element was closed early: drop the end tag
                out.append(text[copied : match.start()])
                copied = match.end()
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


class _Layer:
    """The text layer being written, with pending separators resolved lazily."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.pending_break = 0
        self.pending_space = False
        self.last = "\n"
        #: Element ids (``anchor``) -> where the first text after them starts (EPUB navigation).
        self.anchors: dict[str, int] = {}
        self.pending_anchors: list[str] = []

    def anchor(self, element_id: str) -> None:
        """Remember ``element_id``: it will point at the next text written."""
        self.pending_anchors.append(element_id)

    def block(self, lines: int) -> None:
        self.pending_break = max(self.pending_break, lines)

    def _emit(self, chunk: str) -> None:
        self.parts.append(chunk)
        self.pos += len(chunk)
        self.last = chunk[-1]

    def write(self, content: str) -> int:
        """Writes non-empty ``content`` after any pending separator; returns where it starts."""
        if self.pos:
            if self.pending_break:
                newlines = self.pending_break - (1 if self.last == "\n" else 0)
                if newlines > 0:
                    self._emit("\n" * newlines)
            elif self.pending_space and self.last not in " \n":
                self._emit(" ")
        self.pending_break = 0
        self.pending_space = False
        start = self.pos
        if self.pending_anchors:
            for element_id in self.pending_anchors:
                self.anchors.setdefault(element_id, start)
            self.pending_anchors.clear()
        self._emit(content)
        return start

    def text(self, raw: str) -> int | None:
        """Writes flowing HTML text (whitespace collapsed); returns where it starts, if any."""
        collapsed = _HTML_SPACE.sub(" ", raw)
        if not collapsed:
            return None
        if collapsed[0] == " ":
            self.pending_space = True
        body = collapsed.strip(" ")
        if not body:
            return None
        if not body.strip(_NO_BREAK_SPACES):
            # Only no-break spaces: a spacer (Word's and EDGAR's empty ``<p>&nbsp;</p>``, a
            # blank cell), which shows as space, not as a block or cell of its own.
            self.pending_space = True
            return None
        start = self.write(body)
        self.pending_space = collapsed[-1] == " "
        return start

    def value(self) -> str:
        return "".join(self.parts)

    def mark(self) -> tuple[int, int, int, str, bool]:
        """Where the layer stands, for ``rewind``."""
        return (len(self.parts), self.pos, self.pending_break, self.last, self.pending_space)

    def rewind(self, mark: tuple[int, int, int, str, bool]) -> None:
        """Forgets everything written since ``mark``."""
        count, self.pos, self.pending_break, self.last, self.pending_space = mark
        del self.parts[count:]


class _Frame:
    """Text and link text written inside one block element (``_LINK_BLOCKS``), to tell a
    navigation block from content when it closes: kept, its counts join its parent's."""

    __slots__ = (
        "has_heading",
        "headings",
        "hrefs",
        "link_text",
        "mark",
        "node",
        "rel",
        "tables",
        "text",
    )

    def __init__(
        self, node: LexborNode, mark: tuple[int, int, int, str, bool], headings: int, tables: int
    ) -> None:
        self.node = node
        self.mark = mark
        self.headings = headings
        self.tables = tables
        self.text = 0  # characters written inside
        self.link_text = 0  # of them, inside a link
        self.hrefs: list[str] = []
        self.rel = False  # holds a link whose rel says it navigates
        self.has_heading = False

    def absorb(self, child: _Frame) -> None:
        self.text += child.text
        self.link_text += child.link_text
        self.hrefs.extend(child.hrefs)
        self.rel = self.rel or child.rel
        self.has_heading = self.has_heading or child.has_heading

    @property
    def link_dense(self) -> bool:
        return bool(self.hrefs) and self.text > 0 and 2 * self.link_text >= self.text


def _children(node: LexborNode) -> list[LexborNode]:
    out = []
    child = node.child
    while child is not None:
        out.append(child)
        child = child.next
    return out


def _math_latex(node: LexborNode) -> str:
    """A ``<math>`` element as linear LaTeX (``mathml``): its Lexbor subtree is copied into an
    lxml tree first, with an explicit stack (nesting is capped by ``cap_nesting``)."""
    root = etree.Element(
        "math", {k: v or "" for k, v in node.attributes.items() if _XML_NAME.match(k)}
    )
    stack: list[tuple[LexborNode | None, etree._Element]] = [(node.child, root)]
    while stack:
        current, parent = stack.pop()
        if current is None:
            continue
        stack.append((current.next, parent))
        tag = current.tag
        if tag == "-text":
            text = current.text_content or ""
            if len(parent):
                parent[-1].tail = (parent[-1].tail or "") + text
            else:
                parent.text = (parent.text or "") + text
        elif tag and not tag.startswith("-") and _XML_NAME.match(tag):
            attributes = {k: v or "" for k, v in current.attributes.items() if _XML_NAME.match(k)}
            stack.append((current.child, etree.SubElement(parent, tag, attributes)))
    return mathml.text(root)


def _inline_text(node: LexborNode) -> str:
    """The flowing text of ``node`` on one line (blocks and ``<br>`` become spaces)."""
    pieces: list[str] = []
    # (node, and its next siblings too): the stack grows with depth, never with width.
    stack: list[tuple[LexborNode, bool]] = [(node, False)]
    while stack:
        current, siblings = stack.pop()
        if siblings and (following := current.next) is not None:
            stack.append((following, True))
        tag = current.tag
        if tag == "-text":
            pieces.append(current.text_content or "")
            continue
        if tag in _SKIP:
            continue
        if tag == "math":
            pieces.append(f" {_math_latex(current)} ")
            continue
        if tag in _PARAGRAPH_LIKE or tag in _LINE_LIKE or tag in ("td", "th"):
            pieces.append(" ")
        if (child := current.child) is not None:
            stack.append((child, True))
    return _HTML_SPACE.sub(" ", "".join(pieces)).strip()


def _label_lines(text: LexborNode) -> list[str]:
    """An SVG ``<text>`` element's lines, as ``svg.drawing_text`` reads a drawing's
    (``svg.TspanLines``)."""
    lines: list[list[str]] = [[]]
    placement = TspanLines()
    stack: list[tuple[LexborNode, bool]] = []
    if text.child is not None:
        stack.append((text.child, True))
    while stack:
        current, siblings = stack.pop()
        if siblings and (following := current.next) is not None:
            stack.append((following, True))
        tag = current.tag
        if tag == "-text":
            lines[-1].append(shown_run(current.text_content or ""))
        elif tag == "tspan":
            attributes = current.attributes
            x, y, dy = attributes.get("x"), attributes.get("y"), attributes.get("dy")
            if placement.starts_line(x, y, dy):
                lines.append([])
        elif tag in _DRAWING_SKIPPED:
            continue
        if tag != "-text" and (child := current.child) is not None:
            stack.append((child, True))
    return [line for pieces in lines if (line := _HTML_SPACE.sub(" ", "".join(pieces)).strip())]


def _table_rows(table: LexborNode) -> list[tuple[bool, list[str]]]:
    """(is header row, cell texts) for the rows of ``table`` itself (not of nested tables), a
    merged cell's text in every cell it spans (``table_grid``)."""
    rows: list[tuple[bool, list[str]]] = []
    grid = SpanGrid()
    for in_head, tr in _row_elements(table):
        cells = [c for c in _children(tr) if c.tag in ("td", "th")]
        texts = grid.row(
            (_inline_text(c), span(attributes.get("colspan")), span(attributes.get("rowspan")))
            for c in cells
            for attributes in (c.attributes,)  # built once a cell: selectolax makes a new dict
        )
        if not any(texts) or grid.continued:
            continue  # no text, or only text the next row repeats
        rows.append((in_head or all(c.tag == "th" for c in cells), texts))
    return _without_blank_columns(rows)


def _without_blank_columns(
    rows: list[tuple[bool, list[str]]],
) -> list[tuple[bool, list[str]]]:
    """The rows less the columns blank in every row (``table_grid.filled_columns``)."""
    filled = filled_columns(cells for _, cells in rows)
    if all(filled):
        return rows
    return [(head, [c for i, c in enumerate(cells) if filled[i]]) for head, cells in rows]


def _row_elements(table: LexborNode) -> list[tuple[bool, LexborNode]]:
    """(in ``<thead>``, ``tr``) for the rows of ``table`` itself, in order."""
    rows: list[tuple[bool, LexborNode]] = []
    for child in _children(table):
        if child.tag == "tr":
            rows.append((False, child))
        elif child.tag in ("thead", "tbody", "tfoot"):
            rows.extend((child.tag == "thead", tr) for tr in _children(child) if tr.tag == "tr")
    return rows


def _is_frame(table: LexborNode) -> bool:
    """A table of one row and one cell: a frame around content (a boxed note, a page laid out
    in a table), read as the content it holds, its lists as lists and a table in it as a
    table; as a table it was one cell holding all of it on one line."""
    rows = _row_elements(table)
    if len(rows) != 1:
        return False
    return sum(1 for c in _children(rows[0][1]) if c.tag in ("td", "th")) == 1


def _roles(node: LexborNode) -> set[str]:
    return set((node.attributes.get("role") or "").lower().split())


def _is_permalink(node: LexborNode, href: str) -> bool:
    """A link to an anchor of this page shown as a symbol ("¶", "§", "#"): a heading's
    permalink, not text."""
    return href.startswith("#") and not any(c.isalnum() for c in node.text(deep=True))


def main_content(top: LexborNode) -> LexborNode | None:
    """The page's main content (its first ``<main>`` or ``role="main"`` not hidden), if it holds
    text."""
    for main in top.css("main, [role~=main]"):
        if "hidden" in main.attributes:
            continue  # not shown (HTML allows hidden <main>s besides the visible one)
        return main if main.text(deep=True).strip() else None
    return None


def _says_something_before_a_list(item: LexborNode) -> bool:
    """Whether a list item shows text before any list nested in it. One that does not gets no
    marker of its own: an icon-only share button, or an item holding only a sublist, wrote a
    line of a bare "-" (5% of the lines of 311 saved news pages; docling writes none)."""
    for child in item.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            if (child.text_content or "").strip(_BLANK):
                return True
        elif tag in ("ul", "ol"):
            return False
        elif tag is not None and tag not in _SKIP and child.text(deep=True).strip():
            return True
    return False


def _list_start(node: LexborNode) -> int:
    """The first number of an ordered list (its ``start`` attribute, default 1)."""
    try:
        return int((node.attributes.get("start") or "1").strip())
    except ValueError:
        return 1


class _Extractor:
    def __init__(self, *, anchors: bool = False) -> None:
        self.layer = _Layer()
        self.anchors = anchors  # record element ids (``_Layer.anchor``)
        #: Open list items with a marker: the item, the layer before its marker, where it ends.
        self.markers: list[tuple[LexborNode, tuple[int, int, int, str, bool], int]] = []
        self.headings: list[HeadingMark] = []
        self.tables: list[TableMark] = []
        self.lists: list[list[int]] = []  # per open list: [is ordered, next number]
        self.pre_depth = 0
        self.heading: tuple[LexborNode, int] | None = None  # open heading element and level
        self.heading_start: int | None = None
        self.frames: list[_Frame] = []  # open link-measured blocks, innermost last
        self.links: list[LexborNode] = []  # open <a href> elements
        self.sectioning = 0  # open article/aside/main/nav/section elements
        self.page_has_heading = False  # set by ``run``: whether the page region has headings
        self.link_blocks: dict[tuple[str, ...], int] = {}  # kept link blocks' hrefs -> end

    def _count(self, start: int | None) -> None:
        if start is not None and self.frames:
            frame = self.frames[-1]
            written = self.layer.pos - start
            frame.text += written
            if self.links:
                frame.link_text += written

    def _written(self, start: int | None) -> None:
        self._count(start)
        if start is not None and self.heading is not None and self.heading_start is None:
            self.heading_start = start

    @staticmethod
    def _tab_label(panel: LexborNode) -> str | None:
        """The label of a tab panel's tab, where the tab is a button (buttons are not read):
        "Bash", "Fish", "CMD" over the same command in sphinx-tabs. Looked for in the panel's
        tab set (its parent), as ids repeat across the pages of one file (Sphinx's singlehtml).
        Tabs written as text (a Docusaurus tab list) are read where they stand; a panel that
        several tabs control (Javadoc's "All / Instance / Concrete Methods") gets no label."""
        parent = panel.parent
        if parent is None:
            return None
        panel_id = panel.attributes.get("id")
        labelled_by = set((panel.attributes.get("aria-labelledby") or "").split())
        labels = [
            " ".join(tab.text(deep=True).split())
            for tab in parent.css("button[role~=tab]")
            if (panel_id and panel_id in (tab.attributes.get("aria-controls") or "").split())
            or (not panel_id and tab.attributes.get("id") in labelled_by)
        ]
        return labels[0] if len(labels) == 1 and labels[0] else None

    def run(self, top: LexborNode, deadline: Deadline) -> None:
        # (node, entering, and its next siblings too): entering a node pushes its next sibling,
        # its leave mark and its first child, so the stack grows with depth, never with width
        # (a <p> of a million inline elements holds no list of a million wrappers).
        self.page_has_heading = top.css_first("h1, h2, h3, h4, h5, h6") is not None
        if top.tag != "body":
            self.sectioning += 1  # the main content: a header in it is its own
        stack: list[tuple[LexborNode, bool, bool]] = [(top, True, False)]
        visited = 0
        while stack:
            node, entering, siblings = stack.pop()
            if entering:
                visited += 1
                if not visited & 4095:
                    deadline.check(f"HTML node {visited:,}")
                if siblings and (following := node.next) is not None:
                    stack.append((following, True, True))
                self._enter(node, stack)
            else:
                self._leave(node)

    def _enter(self, node: LexborNode, stack: list[tuple[LexborNode, bool, bool]]) -> None:
        tag = node.tag
        layer = self.layer
        if tag == "-text":
            raw = node.text_content or ""
            if self.pre_depth:
                if raw:
                    self._written(layer.write(raw))
            else:
                self._written(layer.text(raw))
            return
        if tag == "svg":
            self._drawing(node)
            return
        if tag is None or tag in _SKIP or tag == "nav":
            return
        attributes = node.attributes
        roles = _roles(node) if "role" in attributes else set()
        if "hidden" in attributes and "tabpanel" not in roles:
            return  # a tab's panel is hidden until its tab is chosen: content all the same
        if roles & _BOILERPLATE_ROLES:
            return
        if tag in ("header", "footer") and not self.sectioning:
            return  # the page's banner or footer
        href = attributes.get("href") if tag == "a" else None
        if href is not None and _is_permalink(node, href):
            return
        if self.anchors and (element_id := node.attributes.get("id")):
            layer.anchor(element_id)
        if tag == "table" and not _is_frame(node):
            self._table(node)
            return
        if tag == "math":
            self._math(node)
            return
        if tag in ("p", "div") and self.markers and layer.pos == self.markers[-1][2]:
            pass  # the first paragraph of a list item stays on its marker's line ("- text")
        elif tag in _PARAGRAPH_LIKE:
            layer.block(2)
        elif tag in _LINE_LIKE:
            layer.block(1)
        if "tabpanel" in roles and (label := self._tab_label(node)):
            layer.block(2)
            self._written(layer.text(label))
            layer.block(2)
        if tag in _LINK_BLOCKS:
            self.frames.append(_Frame(node, layer.mark(), len(self.headings), len(self.tables)))
        if tag in _SECTIONING:
            self.sectioning += 1
        if href is not None:
            self.links.append(node)
            if self.frames:
                frame = self.frames[-1]
                frame.hrefs.append(href)
                rels = (attributes.get("rel") or "").lower().split()
                frame.rel = frame.rel or not _NAVIGATION_RELS.isdisjoint(rels)
        if tag in _HEADINGS and self.heading is None:
            self.heading, self.heading_start = (node, _HEADINGS[tag]), None
        elif tag in ("ul", "ol"):
            self.lists.append([tag == "ol", _list_start(node)])
        elif tag == "li":
            marker = "- "
            if self.lists and self.lists[-1][0]:
                marker = f"{self.lists[-1][1]}. "
                self.lists[-1][1] += 1
            if _says_something_before_a_list(node):
                before = layer.mark()
                layer.write(marker.strip())
                layer.pending_space = True
                self.markers.append((node, before, layer.pos))
        elif tag == "pre":
            self.pre_depth += 1
        stack.append((node, False, False))
        if (child := node.child) is not None:
            stack.append((child, True, True))

    def _leave(self, node: LexborNode) -> None:
        tag = node.tag
        layer = self.layer
        if self.heading is not None and node is self.heading[0]:
            if self.heading_start is not None:
                # Heading text is filled in from the finished layer (``parse``).
                self.headings.append(
                    HeadingMark(self.heading_start, layer.pos, self.heading[1], "")
                )
            self.heading, self.heading_start = None, None
            if self.frames:
                self.frames[-1].has_heading = True
        if self.links and node is self.links[-1]:
            self.links.pop()
        if tag in _SECTIONING:
            self.sectioning -= 1
        if self.frames and node is self.frames[-1].node:
            self._close_frame(self.frames.pop())
        if self.markers and node is self.markers[-1][0]:
            _, before, after_marker = self.markers.pop()
            if layer.pos == after_marker:  # what it showed was dropped (a navigation block)
                layer.rewind(before)
        if tag in ("ul", "ol") and self.lists:
            self.lists.pop()
        elif tag == "pre":
            self.pre_depth -= 1
        if tag in _PARAGRAPH_LIKE:
            layer.block(2)
        elif tag in _LINE_LIKE:
            layer.block(1)

    def _drawing(self, svg: LexborNode) -> None:
        """An inline SVG's labels (``<text>``), a line each, in document order: a chart's
        axes and legend, a fixed-layout book's page set as a drawing. Its shapes, styles and
        titles (tooltips: an icon's "Search") are no text."""
        layer = self.layer
        wrote = False
        stack = [svg.child] if svg.child is not None else []
        while stack:
            node = stack.pop()
            if node.next is not None:
                stack.append(node.next)
            tag = node.tag
            if tag == "text":
                for line in _label_lines(node):
                    layer.block(2 if not wrote else 1)
                    self._written(layer.text(line))
                    wrote = True
            elif tag not in _DRAWING_SKIPPED and node.child is not None:
                stack.append(node.child)
        if wrote:
            layer.block(2)

    def _math(self, node: LexborNode) -> None:
        """An equation as linear LaTeX: inline in its sentence, or a line of its own when
        ``display="block"``."""
        latex = _math_latex(node)
        if not latex:
            return
        display = (node.attributes.get("display") or "").strip().lower() == "block"
        layer = self.layer
        if display:
            layer.block(1)
        elif self.pre_depth == 0 and layer.last not in " \n":
            layer.pending_space = layer.pending_space or latex[0].isalnum()
        self._written(layer.write(latex) if self.pre_depth else layer.text(latex))
        if display:
            layer.block(1)
        elif _ENDS_IN_COMMAND.search(latex):
            layer.pending_space = True  # "\\pi r", not "\\pir"

    def _close_frame(self, frame: _Frame) -> None:
        """Drops the block just closed if it is navigation (module doc), else keeps it."""
        if self._is_navigation(frame):
            self.layer.rewind(frame.mark)
            del self.headings[frame.headings :]
            del self.tables[frame.tables :]
            return
        if frame.link_dense and len(frame.hrefs) >= 2:
            self.link_blocks.setdefault(tuple(frame.hrefs), self.layer.pos)
        if self.frames:
            self.frames[-1].absorb(frame)

    def _is_navigation(self, frame: _Frame) -> bool:
        if frame.has_heading or self.heading is not None or not frame.link_dense:
            return False
        if frame.rel:
            return True
        if self.page_has_heading and not self.headings:
            # Before the first heading: a bar of links, or one link alone (a skip link).
            return len(frame.hrefs) >= 2 or 10 * frame.link_text >= 9 * frame.text
        earlier_end = self.link_blocks.get(tuple(frame.hrefs))
        return earlier_end is not None and earlier_end <= frame.mark[1]

    def _table(self, table: LexborNode) -> None:
        layer = self.layer
        captions = [c for c in _children(table) if c.tag == "caption"]
        for caption in captions:
            text = _inline_text(caption)
            if text:
                layer.block(2)
                self._written(layer.write(text))
        rows = _table_rows(table)
        if not rows:
            return
        layer.block(2)
        spans: list[tuple[int, int]] = []
        for _, cells in rows:
            layer.block(1)
            start = layer.write(CELL_SEPARATOR.join(cells))
            self._written(start)
            spans.append((start, layer.pos))
        if self.frames:  # the table's links, for the link density of the block around it
            frame = self.frames[-1]
            for link in table.css("a[href]"):
                frame.hrefs.append(link.attributes.get("href") or "")
                frame.link_text += len(_inline_text(link))
        layer.block(2)
        if self.heading is not None:
            return  # a table inside a heading element is heading text, not a table section
        header_count = 0
        while header_count < len(rows) and rows[header_count][0]:
            header_count += 1
        if header_count == len(rows) and header_count > 1:
            header_count = 1  # a table of <th> rows only: the first is its header
        header = (spans[0][0], spans[header_count - 1][1]) if header_count else None
        self.tables.append(
            TableMark(spans[0][0], spans[-1][1], header, tuple(spans[header_count:]))
        )


@dataclass(frozen=True)
class Extracted:
    """The text we extract from one HTML document, with its marks (offsets into ``text``)."""

    text: str
    headings: list[HeadingMark]
    tables: list[TableMark]
    #: Element id -> where the text after it starts (only when asked for: EPUB navigation).
    anchors: dict[str, int]
    #: Characters (other than whitespace) of a web page's furniture left out (``web_page``).
    furniture_chars: int = 0


def _leave_out_furniture(top: LexborNode, web_page: bool, deadline: Deadline) -> int:
    """Removes a web page's furniture under ``top`` from the DOM (``html_furniture``); returns
    how many characters it showed."""
    if not web_page:
        return 0
    furniture, shown = page_furniture(top)
    for element in furniture:
        element.decompose()
    deadline.check("the page's furniture")
    return shown


def extract(
    text: str, deadline: Deadline, *, anchors: bool = False, web_page: bool = False
) -> Extracted:
    """The text layer and heading/table marks of decoded HTML ``text`` (no sections yet).

    ``web_page``: ``text`` may be a page saved from the web, whose furniture around its article
    (``html_furniture``) is left out, in its ``<main>`` or its body. Off for HTML that a
    document format or a converter wrote (EPUB chapters, manual pages, ...), which has none."""
    tree = LexborHTMLParser(cap_nesting(text))
    deadline.check("the end of HTML tree construction")
    extractor = _Extractor(anchors=anchors)
    body = tree.body if tree.body is not None else tree.root
    furniture = 0
    if body is not None:
        main = main_content(body)
        if main is not None:
            furniture = _leave_out_furniture(main, web_page, deadline)
            extractor.run(main, deadline)
        if main is None or not extractor.layer.value().strip():
            # No <main>, or one that shows nothing (ad slots' scripts, the article beside it).
            furniture = _leave_out_furniture(body, web_page, deadline)
            extractor = _Extractor(anchors=anchors)
            extractor.run(body, deadline)
        del main
    del body, tree  # free Lexbor's DOM (about 300 bytes a node) before building sections
    extractor.heading = None
    layer = extractor.layer.value()
    headings = [
        HeadingMark(h.start, h.end, h.level, " ".join(layer[h.start : h.end].split()))
        for h in extractor.headings
    ]
    return Extracted(layer, headings, extractor.tables, extractor.layer.anchors, furniture)


def parse(text: str, document: Document, *, web_page: bool = False) -> ParsedDocument:
    """The extracted text layer and sections of decoded HTML ``text`` (``web_page``: as
    ``extract``)."""
    extracted = extract(text, current_deadline(document.source_key), web_page=web_page)
    if extracted.furniture_chars:  # said with the sections, so a user sees what was not read
        document.metadata[FURNITURE_METADATA] = (
            f"{extracted.furniture_chars:,} characters of menus, teasers, share links, readers'"
            " comments and footers around the article left out"
        )
    layer = extracted.text
    sections = build_sections(layer, document, extracted.headings, extracted.tables)
    return ParsedDocument(document=document, text_layer=layer, sections=sections)
