"""DocBook XML: the books, articles, chapters and reference pages of technical documentation
(DocBook 4.x without a namespace, 5.x in ``http://docbook.org/ns/docbook``; LibreOffice's
"DocBook File" export, the Linux and GNOME manuals, O'Reilly's sources).

Read as a reader of the rendered book sees it, not as data (generic XML wrote it as element
paths, ``para: …``, ``articleinfo.title: …``). Parsed like JATS (``jats.parse_xml``: no DTD
loading, no entity resolution, no network, libxml2's limits on; a DTD subset that could expand
without bound or read a file is refused). The text layer we write (``textlayer``):
- the root's title (``title``, or ``info``/``bookinfo``/``articleinfo``'s) as the level-1
  heading, then each part, chapter, appendix, preface, section (``section``, ``sect1``-``sect5``,
  ``simplesect``), reference page and glossary one level deeper per nesting; a reference page
  (``refentry``) is titled by its ``refentrytitle`` or first ``refname``, its ``refnamediv``
  written "name — purpose";
- paragraphs (``para``, ``simpara``; a ``formalpara`` as "Title. text"), lists as lines
  (``- item``, ``1. item``, a ``variablelist`` and a glossary as "term: definition", a
  ``procedure``'s steps numbered), program listings and screens line by line, admonitions
  (``note``, ``warning``, ...) as "Note: text", examples, figures and sidebars as their title
  and contents, a block quote's attribution after it;
- tables, CALS (``tgroup``/``row``/``entry``, spans by ``morerows`` and ``namest``/``nameend``)
  or HTML (``tr``/``td``), as pipe rows with their ``thead`` rows as header, after the table's
  title;
- inline markup (``emphasis``, ``literal``, ``link``, ...) read through as text, a footnote in
  brackets where it is referred to, a cross-reference (``xref``) as its target's title;
  metadata (authors, dates, copyright, revision history), index terms, editorial remarks and
  generated lists (``toc``, ``index``) left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.jats import (
    child_named,
    entity_text,
    has_doctype,
    local_name,
    parse_xml,
    strip_namespaces,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "application/docbook+xml"

#: Elements that open a section titled by their own title.
SECTIONS = frozenset(
    {
        "set",
        "book",
        "part",
        "chapter",
        "appendix",
        "preface",
        "article",
        "reference",
        "refentry",
        "refsection",
        "refsect1",
        "refsect2",
        "refsect3",
        "refsynopsisdiv",
        "section",
        "sect1",
        "sect2",
        "sect3",
        "sect4",
        "sect5",
        "simplesect",
        "glossary",
        "glossdiv",
        "bibliography",
        "bibliodiv",
        "colophon",
        "dedication",
        "acknowledgements",
        "topic",
    }
)
#: Left out: metadata, generated lists, index terms, editorial remarks; titles are written
#: by the element they title.
_LEFT_OUT = frozenset(
    {
        "title",
        "titleabbrev",
        "subtitle",
        "info",
        "indexterm",
        "remark",
        "toc",
        "lot",
        "index",
        "setindex",
        "refmeta",
        "revhistory",
        "colspec",
        "spanspec",
    }
)
#: Left out of running text (an index term's words would land mid-sentence).
_SKIP_INLINE = frozenset({"indexterm", "remark"})
#: Blocks that part words where they stand inside a table cell or list item.
_BLOCKS = frozenset(
    {
        "para",
        "simpara",
        "formalpara",
        "programlisting",
        "screen",
        "literallayout",
        "itemizedlist",
        "orderedlist",
        "listitem",
        "variablelist",
        "varlistentry",
        "term",
        "note",
        "tip",
        "warning",
        "caution",
        "important",
        "danger",
        "blockquote",
        "table",
        "informaltable",
        "row",
        "entry",
        "tr",
        "td",
        "th",
        "mediaobject",
        "member",
        "step",
        "sbr",  # a line break in a title or synopsis
    }
)
_VERBATIM = frozenset({"programlisting", "screen", "literallayout", "synopsis", "address"})
_ADMONITIONS = frozenset({"note", "tip", "warning", "caution", "important", "danger"})
#: Blocks a paragraph may hold that are written as blocks of their own (``_Writer.paragraph``).
_NESTED_BLOCKS = (
    _VERBATIM
    | _ADMONITIONS
    | {
        "itemizedlist",
        "orderedlist",
        "variablelist",
        "table",
        "informaltable",
        "figure",
        "informalfigure",
        "example",
        "informalexample",
    }
)
#: Synopses of a command or function: one line each ("chgrp -H -L group file").
_SYNOPSES = frozenset({"cmdsynopsis", "funcsynopsis", "classsynopsis", "fieldsynopsis"})
_SPACE = re.compile(r"\s+")
_INFO = re.compile(r"^(?:info|\w+info)$")


def _pieces(element: etree._Element) -> Iterator[str]:
    """The text inside ``element``, block children parted from their neighbours by a space."""
    if element.text:
        yield element.text
    for child in element:
        yield from _child_pieces(child)
        if child.tail:
            yield child.tail


def _child_pieces(child: etree._Element) -> Iterator[str]:
    """The text one child shows inside its parent's line (its tail not included)."""
    name = local_name(child)
    if isinstance(child, etree._Entity):  # of a DTD never loaded: ``&nbsp;``, ``&eacute;``
        yield _entity(child)
    elif isinstance(child.tag, str) and name not in _SKIP_INLINE:
        if name == "footnote":  # where it is referred to, in brackets: no page to foot
            yield f" ({text(child)})"
        elif name in _BLOCKS:
            yield " "
            yield from _pieces(child)
            yield " "
        else:
            yield from _pieces(child)


def _entity(entity: etree._Entity) -> str:
    """A named entity of a DTD never loaded: an HTML5 character's (``&ldquo;``), else a book's
    own (``&SGML;``, ``&product;``, defined where the chapter is included) as its name, which
    is what such an entity nearly always stands for."""
    return entity_text(entity) or (entity.name or "").strip("&;")


def text(element: etree._Element | None) -> str:
    """The text of ``element`` on one line (recursion is bounded: libxml2 refuses nesting
    past 256 levels)."""
    if element is None:
        return ""
    return _SPACE.sub(" ", "".join(_pieces(element))).strip()


def title_of(element: etree._Element) -> str:
    """An element's title: its ``title``, else its info element's; a reference page's
    ``refentrytitle`` or first ``refname``."""
    own = child_named(element, "title")
    if own is not None and text(own):
        return text(own)
    for child in element:
        if _INFO.match(local_name(child)):
            found = child_named(child, "title")
            if found is not None and text(found):
                return text(found)
    if local_name(element) == "refentry":
        found = child_named(child_named(element, "refmeta"), "refentrytitle")
        if found is None:
            found = child_named(child_named(element, "refnamediv"), "refname")
        return text(found)
    return ""


def _span(value: str | None, default: int = 0) -> int:
    try:
        return max(0, min(int(value or default), 1000))
    except ValueError:
        return default


class _Writer:
    def __init__(self, deadline: Deadline) -> None:
        self.layer = TextLayer()
        self.deadline = deadline
        self.count = 0

    def _tick(self) -> None:
        self.count += 1
        self.deadline.tick(f"element {self.count:,}")

    def section(self, element: etree._Element, level: int) -> None:
        self._tick()
        heading = title_of(element)
        if heading:
            self.layer.heading(heading, min(level, 6))
        for child in element:
            if _INFO.match(local_name(child)):
                for part in child:
                    if local_name(part) == "abstract":
                        self.block(part, level + 1)
        self.blocks(element, level + 1 if heading else level)

    def blocks(self, element: etree._Element, level: int) -> None:
        for child in element:
            if isinstance(child.tag, str):
                self.block(child, level)

    def block(self, child: etree._Element, level: int) -> None:
        self._tick()
        name = local_name(child)
        if name in _LEFT_OUT or _INFO.match(name):
            return
        if name in SECTIONS:
            self.section(child, level)
        elif name in ("para", "simpara"):
            self.paragraph(child, level)
        elif name == "formalpara":
            heading = text(child_named(child, "title"))
            body = " ".join(text(p) for p in child if local_name(p) in ("para", "simpara"))
            joiner = " " if heading.endswith((".", ":", "?", "!")) else ". "
            self.layer.paragraph(joiner.join(p for p in (heading, body) if p))
        elif name in _SYNOPSES:
            self.layer.paragraph(text(child))
        elif name in _VERBATIM:
            self.layer.preformatted("".join(_pieces(child)).splitlines())
        elif name in ("itemizedlist", "orderedlist", "procedure", "substeps", "simplelist"):
            self.items(child, level)
        elif name in ("variablelist", "glosslist"):
            self.definitions(title_of(child), list(child))
        elif name == "glossentry":
            self.definitions("", [child])
        elif name in _ADMONITIONS:
            self.admonition(child, level)
        elif name in ("table", "informaltable"):
            self.layer.paragraph(title_of(child))
            self.table(child)
        elif name == "refnamediv":
            names = ", ".join(text(n) for n in child if local_name(n) == "refname")
            purpose = text(child_named(child, "refpurpose"))
            self.layer.paragraph(" — ".join(p for p in (names, purpose) if p))
        elif name in ("blockquote", "epigraph"):
            self.layer.paragraph(title_of(child))
            for part in child:
                if local_name(part) != "attribution" and isinstance(part.tag, str):
                    self.block(part, level)
            attribution = text(child_named(child, "attribution"))
            if attribution:
                self.layer.paragraph(f"— {attribution}")
        elif _has_own_text(child) or not any(isinstance(c.tag, str) for c in child):
            # Mixed content (a ``bridgehead``, a ``caption`` of words and markup): one
            # paragraph, blocks nested in it apart.
            self.paragraph(child, level)
        else:
            self.layer.paragraph(title_of(child))
            self.blocks(child, level)

    def paragraph(self, para: etree._Element, level: int) -> None:
        """A paragraph; lists, listings and tables nested in it are blocks of their own."""
        nested = [c for c in para if isinstance(c.tag, str) and _is_block(c)]
        if not nested:
            self.layer.paragraph(text(para))
            return
        pieces: list[str] = [para.text or ""]
        for child in para:
            if child in nested:
                self.layer.paragraph("".join(pieces))
                pieces = []
                self.block(child, level)
            else:
                pieces.extend(_child_pieces(child))
            pieces.append(child.tail or "")
        self.layer.paragraph("".join(pieces))

    def items(self, element: etree._Element, level: int) -> None:
        self.layer.paragraph(title_of(element))
        name = local_name(element)
        numbered = name in ("orderedlist", "procedure", "substeps")
        items = [c for c in element if local_name(c) in ("listitem", "step", "member")]
        lines = []
        for number, item in enumerate(items, start=1):
            self._tick()
            marker = f"{number}." if numbered else "-"
            lines.append(f"{marker} {text(item)}")
        self.layer.lines(lines)

    def definitions(self, title: str, entries: list[etree._Element]) -> None:
        self.layer.paragraph(title)
        lines = []
        for entry in entries:
            self._tick()
            name = local_name(entry)
            if name == "varlistentry":
                terms = ", ".join(text(t) for t in entry if local_name(t) == "term")
                definition = text(child_named(entry, "listitem"))
            elif name == "glossentry":
                terms = text(child_named(entry, "glossterm"))
                definition = " ".join(
                    text(d) for d in entry if local_name(d) in ("glossdef", "glosssee")
                )
            else:
                continue
            lines.append(f"{terms}: {definition}" if terms and definition else terms or definition)
        self.layer.lines(lines)

    def admonition(self, element: etree._Element, level: int) -> None:
        label = title_of(element) or local_name(element).capitalize()
        parts = [c for c in element if isinstance(c.tag, str) and local_name(c) != "title"]
        if all(local_name(c) in ("para", "simpara") and not _has_blocks(c) for c in parts):
            self.layer.paragraph(f"{label}: " + " ".join(text(c) for c in parts))
        else:
            self.layer.paragraph(f"{label}:")
            for part in parts:
                self.block(part, level)

    def table(self, table: etree._Element) -> None:
        groups = [g for g in table if local_name(g) == "tgroup"] or [table]
        for group in groups:
            columns: dict[str, int] = {}
            for number, spec in enumerate(
                (c for c in group if local_name(c) == "colspec"), start=1
            ):
                columns[spec.get("colname", "")] = _span(spec.get("colnum"), number) or number
            rows: list[list[str]] = []
            header_rows = 0
            leading = True
            covered: dict[tuple[int, int], str] = {}  # cells a span from above covers
            for row in _rows(group):
                self._tick()
                r = len(rows)
                cells: list[str] = []
                for cell in row:
                    if local_name(cell) not in ("entry", "td", "th", "entrytbl"):
                        continue
                    while (r, len(cells)) in covered:
                        cells.append(covered.pop((r, len(cells))))
                    value = text(cell)
                    first = columns.get(cell.get("namest") or cell.get("colname") or "", 0)
                    last = columns.get(cell.get("nameend") or "", 0)
                    while first and len(cells) < first - 1:
                        cells.append(covered.pop((r, len(cells)), ""))
                    width = last - first + 1 if first and last > first else 1
                    width = max(width, _span(cell.get("colspan"), 1))
                    down = _span(cell.get("morerows")) or _span(cell.get("rowspan"), 1) - 1
                    for _ in range(width):
                        for d in range(1, down + 1):
                            covered[(r + d, len(cells))] = value
                        cells.append(value)
                while (r, len(cells)) in covered:
                    cells.append(covered.pop((r, len(cells))))
                rows.append(cells)
                if leading and local_name(row.getparent()) == "thead":
                    header_rows += 1
                else:
                    leading = False
            self.layer.table(rows, header_rows=header_rows)


def _rows(group: etree._Element) -> Iterator[etree._Element]:
    """A table group's own rows (CALS ``row`` or HTML ``tr``, in ``thead``/``tbody``/``tfoot``
    or not), never those of a table nested in one of its cells."""
    for child in group:
        name = local_name(child)
        if name in ("row", "tr"):
            yield child
        elif name in ("thead", "tbody", "tfoot"):
            yield from (r for r in child if local_name(r) in ("row", "tr"))


def _resolve_cross_references(root: etree._Element) -> None:
    """An ``xref`` shows its target's ``xreflabel`` or title, as DocBook's stylesheets
    render it ("see Chapter 2, Installing"); written into the tree before it is read."""
    xml_id = "{http://www.w3.org/XML/1998/namespace}id"
    targets: dict[str, etree._Element] = {}
    for element in root.iter():
        if isinstance(element.tag, str):
            found = element.get(xml_id) or element.get("id")
            if found:
                targets[found] = element
    for xref in root.iter("xref"):
        target = targets.get(xref.get("linkend") or "")
        if target is None or (xref.text or "").strip() or len(xref):
            continue
        label = target.get("xreflabel") or title_of(target)
        if not label and xref.get("endterm") in targets:
            label = text(targets[xref.get("endterm") or ""])
        xref.text = label


def _is_block(element: etree._Element) -> bool:
    return local_name(element) in _NESTED_BLOCKS


def _has_own_text(element: etree._Element) -> bool:
    """Whether ``element`` holds text of its own, not only in child elements."""
    return bool((element.text or "").strip()) or any(
        (c.tail or "").strip() for c in element if local_name(c) not in _LEFT_OUT
    )


def _has_blocks(element: etree._Element) -> bool:
    return any(isinstance(c.tag, str) and _is_block(c) for c in element)


#: The root element's start, after the XML declaration, comments and processing instructions.
_ROOT_START = re.compile(rb"\A(?:\s|<\?.*?\?>|<!--.*?-->)*<([A-Za-z_][\w.:-]*)", re.DOTALL)


def _with_doctype(raw: bytes) -> bytes:
    """``raw`` with a DOCTYPE naming an external DTD (never loaded) before its root."""
    found = _ROOT_START.match(raw)
    if found is None:
        return raw
    at = found.start(1) - 1
    return raw[:at] + b"<!DOCTYPE " + found.group(1) + b' SYSTEM "docbook.dtd">\n' + raw[at:]


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a DocBook document."""
    key = document.source_key
    if not raw.strip():
        raise EmptyDocumentError(key, "the file is empty")
    try:
        root = parse_xml(raw, key)
    except CorruptDocumentError as exc:
        # A chapter kept in a file of its own has no DOCTYPE, and the entities its book
        # declares are undefined there, which XML without a DTD does not allow: read it as
        # the book would, with a DTD we do not load.
        if "not defined" not in str(exc) or has_doctype(raw):
            raise
        root = parse_xml(_with_doctype(raw), key)
    strip_namespaces(root)
    if not isinstance(root.tag, str):
        raise CorruptDocumentError(key, "the XML holds no element")
    _resolve_cross_references(root)
    writer = _Writer(current_deadline(key))
    # A book, a chapter, a section; or one block of a larger book kept on its own (a
    # ``para``, a ``table``, an example), read as that block.
    writer.block(root, 1)
    return writer.layer.parsed(document, "the DocBook document holds no text")


__all__ = ["MEDIA_TYPE", "SECTIONS", "parse", "text", "title_of"]
