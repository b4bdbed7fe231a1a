"""JATS XML (NISO Z39.96: the journal article format of PubMed Central and many publishers).

Parsed with lxml under a hardened parser: no DTD loading, no entity resolution, no network, no
huge-tree mode (libxml2's depth and size limits stay on). A document whose internal DTD subset
declares entities that could nest (billion laughs) or read files (external entities) is refused
before parsing; plain text entities (``<!ENTITY product "Foo">``, no references, no markup) are
expanded by us within a budget. Real JATS references its DTD by public identifier. Named
entities of the JATS DTD that are left unresolved (``&nbsp;``) are read as their HTML5
characters.

The text layer we write (``textlayer``), in reading order:
- the article title as the level-1 heading, then the authors (one line, "Given Surname, …") and
  the affiliations (one line, "; "-separated);
- body text before the first section, after an abstract, under a level-2 heading "Main text"
  (else it would read as the abstract's last part);
- each abstract under a level-2 heading (its own title, else "Abstract"); its sections nest;
- body sections as headings, level 2 at the top of the body and one deeper per nesting (a
  ``<label>`` such as "2.1" is kept before the title); paragraphs, lists (``- item``), quotes;
- formulas as linear LaTeX, inline in their sentence or (``disp-formula``) a block of their own:
  the author's ``<tex-math>`` where given (its ``\\documentclass`` wrapper and ``$`` removed),
  else the MathML converted by ``mathml`` (as DOCX equations are by ``omml``);
- figures and tables: their label and caption as a paragraph ("Fig 1 Number of …"); a table's
  rows as a table (``<thead>`` rows, or leading rows of ``<th>`` cells, are the header; row and
  column spans repeat the cell); its footnotes as a paragraph after it;
- back matter: acknowledgements, appendices, notes and other sections as level-2 sections, and
  the reference list as its own level-2 section "References" (its title when it has one), one
  line per reference: ``[label] citation``;
- figures and tables in ``<floats-group>`` come after the back matter.
Metadata (journal, ids, dates, licence, keywords, funding) is left out: it is not the article's
text.
"""

from __future__ import annotations

import html.entities
import re
from collections.abc import Iterator

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import mathml
from agrag_pipeline.parsing.archive import hardened_xml_parser
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.table_grid import SpanGrid, span
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "application/jats+xml"

_MML = "http://www.w3.org/1998/Math/MathML"
#: Left out of running text: TeX sources, MathML annotations, labels of floats written apart.
SKIP_INLINE = frozenset({"tex-math", "annotation", "annotation-xml", "object-id", "graphic"})
#: Blocks inside a section or paragraph that are written as their own blocks.
_BLOCKS = frozenset(
    {
        "p",
        "sec",
        "fig",
        "fig-group",
        "table-wrap",
        "table-wrap-group",
        "list",
        "disp-formula",
        "disp-quote",
        "boxed-text",
        "def-list",
        "statement",
        "verse-group",
        "preformat",
        "speech",
        "supplementary-material",
        "ref-list",
        "fn-group",
        "glossary",
        "title",
        "label",
    }
)
_ENTITY_DECL = re.compile(rb"<!ENTITY", re.IGNORECASE)
#: The document's own DOCTYPE: before its root, after the XML declaration, comments and
#: processing instructions (a ``<!DOCTYPE`` further on is text: a CDATA section's example).
_DOCTYPE = re.compile(
    rb"\A(?:\xef\xbb\xbf)?(?:\s|<\?.*?\?>|<!--.*?-->)*(<!DOCTYPE)", re.IGNORECASE | re.DOTALL
)
#: What ends a DOCTYPE's head: ``[`` opens its internal subset, ``>`` ends it without one.
_SUBSET_OR_END = re.compile(rb"[\[>]")
_SPACE = re.compile(r"\s+")
#: Formula elements written as linear LaTeX (``_formula``).
_FORMULAS = frozenset({"math", "tex-math", "alternatives"})
_ENDS_IN_COMMAND = re.compile(r"\\[A-Za-z]+\Z")


#: An unparsed entity (``NDATA``: an image a patent grant names) is never expanded into text,
#: so declaring it is no attack; every other declaration is refused.
_UNPARSED_ENTITY = re.compile(
    rb"<!ENTITY\s+[^\s%>]+\s+(?:SYSTEM\s+(?:\"[^\"]*\"|'[^']*')|PUBLIC\s+(?:\"[^\"]*\"|'[^']*')"
    rb"\s+(?:\"[^\"]*\"|'[^']*'))\s+NDATA\s+[^\s>]+\s*>",
    re.IGNORECASE,
)


#: ``<!ENTITY name "text">``: an internal entity whose text refers to no other entity and holds
#: no markup, so expanding it can neither nest (billion laughs) nor read a file.
_TEXT_ENTITY = re.compile(
    rb"<!ENTITY\s+([A-Za-z_][\w.-]*)\s+(?:\"([^\"&%<]{0,1024})\"|'([^'&%<]{0,1024})')\s*>"
)
#: A reference to a named entity (``&name;``) in the document's body.
_ENTITY_REFERENCE = re.compile(rb"&([A-Za-z_][\w.-]*);")
#: Text the declared entities of one document may add, beyond its own size.
_ENTITY_EXPANSION_BUDGET = 1 << 20


def _declared_entities(raw: bytes, doctype_at: int, source_key: str) -> dict[str, str]:
    """The text entities the DTD's internal subset declares, by name.

    Unparsed (``NDATA``) entities are skipped (never expanded into text); an internal text
    entity is kept when its text refers to nothing and holds no markup. Anything else (parameter
    entities, external or nested ones) is refused, as is expansion past a budget (many
    references to a long text).

    Raises:
        CorruptDocumentError: a declaration that could expand without bound or read a file.
    """
    opened = _SUBSET_OR_END.search(raw, doctype_at)
    if opened is None or opened.group() == b">":
        return {}  # no internal subset: nothing declared here
    end = raw.find(b"]>", opened.end())
    subset = _UNPARSED_ENTITY.sub(b"", raw[doctype_at : end if end >= 0 else len(raw)])
    declared = {
        m.group(1).decode("ascii"): (m.group(2) or m.group(3) or b"")
        for m in _TEXT_ENTITY.finditer(subset)
    }
    if len(_ENTITY_DECL.findall(subset)) != len(_TEXT_ENTITY.findall(subset)):
        raise CorruptDocumentError(
            source_key,
            "the XML declares entities in its DTD that could expand without bound or read files "
            "(an entity-expansion or external-entity attack?): refused",
        )
    body = raw[end:] if end >= 0 else b""
    # One pass over the body, however many entities are declared.
    added = sum(
        len(declared.get(m.group(1).decode("ascii"), b"")) for m in _ENTITY_REFERENCE.finditer(body)
    )
    if added > _ENTITY_EXPANSION_BUDGET + len(raw):
        raise CorruptDocumentError(
            source_key, f"the XML's entities would add {added:,} bytes of text: refused"
        )
    return {name: text.decode("utf-8", "replace") for name, text in declared.items()}


def _expand(root: etree._Element, declared: dict[str, str]) -> None:
    """Each reference to a declared text entity replaced by its text, in place."""
    for entity in list(root.iter(etree.Entity)):
        name = (entity.name or "").strip("&;")
        if name not in declared:
            continue  # a named character entity (``&nbsp;``), read later as its character
        text = declared[name] + (entity.tail or "")
        previous, parent = entity.getprevious(), entity.getparent()
        if previous is not None:
            previous.tail = (previous.tail or "") + text
        elif parent is not None:
            parent.text = (parent.text or "") + text
        if parent is not None:
            parent.remove(entity)


def parse_xml(raw: bytes, source_key: str) -> etree._Element:
    """The root element of a JATS file, parsed safely (see the module docstring).

    Raises:
        CorruptDocumentError: entity declarations that could expand without bound or read
            files, or XML that is not well-formed.
    """
    doctype = _DOCTYPE.match(raw, 0, 65536)
    declared = _declared_entities(raw, doctype.start(1), source_key) if doctype else {}
    try:
        root = etree.fromstring(raw, hardened_xml_parser())
    except etree.XMLSyntaxError as exc:
        raise CorruptDocumentError(source_key, f"not well-formed XML: {exc}") from exc
    if root is None:
        raise CorruptDocumentError(source_key, "the XML holds no element")
    if declared:
        _expand(root, declared)
    return root


def has_doctype(raw: bytes) -> bool:
    """Whether the XML declares a DOCTYPE before its root element."""
    return _DOCTYPE.match(raw, 0, 65536) is not None


def local_name(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1] if tag.startswith("{") else tag


#: ISO 8879's Greek letters (the ISOgrk1 entity set: ``&agr;`` alpha, ``&Dgr;`` Delta,
#: ``&eegr;`` eta), which SGML-era DTDs declare and HTML does not: the USPTO's 2001-2004 patents
#: write "10 &mgr;g/ml" and "each &agr;<sub>j</sub>"; read as HTML's, the letter was lost.
_ISO_GREEK = {
    f"{latin}gr": greek
    for latin, greek in zip(
        [
            "a",
            "b",
            "g",
            "d",
            "e",
            "z",
            "ee",
            "th",
            "i",
            "k",
            "l",
            "m",
            "n",
            "x",
            "o",
            "p",
            "r",
            "s",
            "t",
            "u",
            "ph",
            "kh",
            "ps",
            "oh",
        ],
        "αβγδεζηθικλμνξοπρστυφχψω",
        strict=True,
    )
}
_ISO_GREEK |= {name[:-2].upper() + "gr": letter.upper() for name, letter in _ISO_GREEK.items()}
_ISO_GREEK["sfgr"] = "ς"


def entity_text(entity: etree._Entity) -> str:
    """The character(s) an undeclared entity reference names: HTML's names, then ISO 8879's
    Greek letters ('' for a name neither knows)."""
    name = (entity.name or "").strip("&;")
    return html.entities.html5.get(name + ";", html.entities.html5.get(name, "")) or (
        _ISO_GREEK.get(name, "")
    )


#: Elements whose parts are written without separators in the XML (``<surname>Smith</surname>
#: <given-names>J</given-names>``): their parts are joined by spaces.
_SPACED = frozenset({"name", "string-name", "name-alternatives"})


def _formula(element: etree._Element) -> str | None:
    """The LaTeX of a formula element (``<mml:math>``, ``<tex-math>``, or the ``<alternatives>``
    holding them), else None. The author's TeX wins over MathML where both are given (it is the
    formula as written); MathML becomes linear LaTeX (``mathml``)."""
    name = local_name(element)
    if name == "tex-math":
        return mathml.clean_tex("".join(element.itertext()))
    if name == "math":
        return mathml.text(element)
    if name == "alternatives":
        forms = [c for c in element if local_name(c) in ("tex-math", "math")]
        tex = [c for c in forms if local_name(c) == "tex-math"]
        for form in tex + [c for c in forms if c not in tex]:
            latex = _formula(form)
            if latex:
                return latex
    return None


def _pieces(element: etree._Element, skip: frozenset[str]) -> Iterator[str]:
    spaced = local_name(element) in _SPACED
    if element.text:
        yield element.text
    for child in element:
        if spaced:
            yield " "
        if isinstance(child, etree._Entity):
            yield entity_text(child)
        elif isinstance(child.tag, str) and local_name(child) in _FORMULAS:
            formula = _formula(child)
            if formula is None:
                yield from _pieces(child, skip)
            elif formula:
                # A trailing command keeps its space ("\\pi r", not "\\pir").
                yield formula + (" " if _ENDS_IN_COMMAND.search(formula) else "")
        elif isinstance(child.tag, str) and local_name(child) == "disp-formula":
            # A display formula run into a caption's text is still apart from its words.
            yield " "
            yield from _pieces(child, skip)
            yield " "
        elif isinstance(child.tag, str) and local_name(child) not in skip:
            yield from _pieces(child, skip)
        if child.tail:
            yield child.tail


def inline(element: etree._Element | None, skip: frozenset[str] = SKIP_INLINE) -> str:
    """The text of ``element`` on one line.

    Recursion is safe: libxml2 (without huge-tree mode) refuses nesting past 256 levels."""
    if element is None:
        return ""
    return _SPACE.sub(" ", "".join(_pieces(element, skip))).strip()


def child_named(element: etree._Element | None, name: str) -> etree._Element | None:
    """The first child element of that local name (None for no element or no such child)."""
    if element is None:
        return None
    for child in element:
        if local_name(child) == name:
            return child
    return None


def _children(element: etree._Element, name: str) -> list[etree._Element]:
    return [child for child in element if local_name(child) == name]


class _Writer:
    def __init__(self, deadline: Deadline) -> None:
        self.layer = TextLayer()
        self.deadline = deadline
        self.count = 0

    def _tick(self) -> None:
        self.count += 1
        self.deadline.tick(f"element {self.count:,}")

    # --- front matter ---------------------------------------------------------------------

    def front(self, article: etree._Element) -> None:
        meta = article.find("front/article-meta")
        if meta is None:
            meta = article.find(".//article-meta")
        if meta is None:
            return
        self.layer.heading(inline(meta.find("title-group/article-title")), 1)
        subtitle = meta.find("title-group/subtitle")
        if subtitle is not None:
            self.layer.paragraph(inline(subtitle))
        authors: list[str] = []
        for contrib in meta.iterfind(".//contrib-group/contrib"):
            if contrib.get("contrib-type", "author") != "author":
                continue
            name = contrib.find("name")
            if name is not None:
                given = inline(name.find("given-names"))
                surname = inline(name.find("surname"))
                authors.append(" ".join(p for p in (given, surname) if p))
            elif contrib.find("collab") is not None:
                authors.append(inline(contrib.find("collab")))
            elif contrib.find("string-name") is not None:
                authors.append(inline(contrib.find("string-name")))
        self.layer.paragraph(", ".join(a for a in authors if a))
        affiliations = [inline(aff, SKIP_INLINE | {"label"}) for aff in _author_affiliations(meta)]
        self.layer.paragraph("; ".join(a for a in affiliations if a))
        for abstract in meta.iterfind("abstract"):
            title = child_named(abstract, "title")
            self.layer.heading(inline(title) if title is not None else "Abstract", 2)
            self.content(abstract, level=3)
        for abstract in meta.iterfind("trans-abstract"):
            title = child_named(abstract, "title")
            self.layer.heading(inline(title) if title is not None else "Abstract", 2)
            self.content(abstract, level=3)

    # --- sections and blocks --------------------------------------------------------------

    def section(self, sec: etree._Element, level: int) -> None:
        self._tick()
        label = inline(child_named(sec, "label"))
        title = inline(child_named(sec, "title"))
        heading = " ".join(p for p in (label, title) if p)
        if heading:
            self.layer.heading(heading, min(level, 6))
        self.content(sec, level + 1 if heading else level)

    def content(self, element: etree._Element, level: int) -> None:
        """The blocks of a section-like element (its own title and label excluded)."""
        for child in element:
            name = local_name(child)
            if name in ("title", "label", "sec-meta"):
                continue
            self.block(child, level)

    def block(self, child: etree._Element, level: int) -> None:
        self._tick()
        name = local_name(child)
        if name == "sec":
            self.section(child, level)
        elif name == "p":
            self.paragraph(child, level)
        elif name in ("fig", "table-wrap"):
            self.float(child)
        elif name in ("fig-group", "table-wrap-group", "boxed-text", "disp-quote", "statement"):
            caption = self.caption_text(child)
            if caption:
                self.layer.paragraph(caption)
            self.content(child, level)
        elif name == "list":
            self.list(child)
        elif name == "def-list":
            lines = []
            for item in child.iterfind(".//def-item"):
                term = inline(item.find("term"))
                definition = " ".join(inline(d) for d in item.iterfind("def"))
                lines.append(f"{term}: {definition}" if term else definition)
            self.layer.lines(lines)
        elif name == "ref-list":
            self.references(child, level)
        elif name in ("fn-group", "glossary", "notes", "app-group", "app", "ack"):
            self.section(child, level)
        elif name == "disp-formula":
            label = inline(child_named(child, "label"))
            formula = inline(child, SKIP_INLINE | {"label"})
            self.layer.paragraph(" ".join(p for p in (formula, label) if p))
        elif name in ("preformat", "code"):  # JATS 1.1's ``code`` as a block: a listing
            self.layer.preformatted((child.xpath("string()") or "").splitlines())
        elif name in ("caption", "alternatives", "supplementary-material"):
            self.content(child, level)
        else:
            self.layer.paragraph(inline(child))

    def paragraph(self, p: etree._Element, level: int) -> None:
        """A paragraph; blocks nested in it (lists, figures, formulas) are their own blocks."""
        nested = [c for c in p if local_name(c) in _BLOCKS or local_name(c) == "disp-formula"]
        if not nested:
            self.layer.paragraph(inline(p))
            return
        pieces: list[str] = [p.text or ""]
        for child in p:
            if child in nested:
                self.layer.paragraph("".join(pieces))
                pieces = []
                self.block(child, level)
            elif isinstance(child, etree._Entity):
                pieces.append(entity_text(child))
            elif isinstance(child.tag, str) and local_name(child) not in SKIP_INLINE:
                pieces.append(inline(child))
            pieces.append(child.tail or "")
        self.layer.paragraph("".join(pieces))

    def list(self, element: etree._Element) -> None:
        ordered = element.get("list-type", "") in ("order", "arabic", "alpha-lower", "roman-lower")
        lines: list[str] = []
        for number, item in enumerate(_children(element, "list-item"), start=1):
            label = inline(child_named(item, "label"))
            text = inline(item, SKIP_INLINE | {"label"})
            marker = label or (f"{number}." if ordered else "-")
            lines.append(f"{marker} {text}")
        self.layer.lines(lines)

    def caption_text(self, element: etree._Element) -> str:
        label = inline(child_named(element, "label"))
        caption = child_named(element, "caption")
        text = inline(caption) if caption is not None else ""
        return " ".join(p for p in (label, text) if p)

    def float(self, element: etree._Element) -> None:
        caption = self.caption_text(element)
        if caption:
            self.layer.paragraph(caption)
        for table in element.iter("table"):
            self.table(table)
        foot = child_named(element, "table-wrap-foot")
        if foot is not None:
            self.layer.paragraph(inline(foot))

    def table(self, table: etree._Element) -> None:
        rows: list[list[str]] = []
        header_rows = 0
        leading = True
        grid = SpanGrid()
        for tr in table.iter("tr"):
            self._tick()
            in_head = any(local_name(a) == "thead" for a in tr.iterancestors())
            cells = [c for c in tr if local_name(c) in ("td", "th")]
            row = grid.row(
                (inline(cell), span(cell.get("colspan")), span(cell.get("rowspan")))
                for cell in cells
            )
            rows.append(row)
            is_header = in_head or (bool(cells) and all(local_name(c) == "th" for c in cells))
            if leading and is_header:
                header_rows += 1
            else:
                leading = False
        self.layer.table(rows, header_rows=header_rows)

    def references(self, ref_list: etree._Element, level: int) -> None:
        title = inline(child_named(ref_list, "title")) or "References"
        self.layer.heading(title, min(level, 6))
        lines: list[str] = []
        for ref in ref_list.iter("ref"):
            self._tick()
            label = inline(child_named(ref, "label"))
            citation = " ".join(_citation(c) for c in ref if local_name(c).endswith("citation"))
            if not citation:
                citation = inline(ref, SKIP_INLINE | {"label"})
            if citation:
                lines.append(f"[{label}] {citation}" if label else citation)
        self.layer.lines(lines)
        for nested in _children(ref_list, "ref-list"):
            self.references(nested, level + 1)

    # --- the article ----------------------------------------------------------------------

    def article(self, article: etree._Element) -> None:
        self.front(article)
        body = child_named(article, "body")
        if body is not None:
            leading = next((c for c in body if isinstance(c.tag, str)), None)
            after_abstract = bool(self.layer.headings) and self.layer.headings[-1].level > 1
            if after_abstract and leading is not None and local_name(leading) != "sec":
                # Body text before any section would read as the abstract's: give it a
                # heading of its own (short articles have no sections at all).
                self.layer.heading("Main text", 2)
            self.content(body, level=2)
        back = child_named(article, "back")
        if back is not None:
            for child in back:
                name = local_name(child)
                if name in ("title", "label"):
                    continue
                if name == "ack" and child_named(child, "title") is None:
                    self.layer.heading("Acknowledgments", 2)
                    self.content(child, level=3)
                else:
                    self.block(child, 2)
        floats = child_named(article, "floats-group")
        if floats is not None:
            self.content(floats, level=2)
        for sub in _children(article, "sub-article"):
            self.article(sub)


def _author_affiliations(meta: etree._Element) -> list[etree._Element]:
    """The ``<aff>`` elements of the authors: not those only editors or reviewers point at."""
    authors: set[str] = set()
    others: set[str] = set()
    for contrib in meta.iterfind(".//contrib"):
        is_author = contrib.get("contrib-type", "author") == "author"
        for xref in contrib.iterfind(".//xref[@ref-type='aff']"):
            (authors if is_author else others).update((xref.get("rid") or "").split())
    kept = []
    for aff in meta.iterfind(".//aff"):
        owner = next(aff.iterancestors("contrib"), None)
        if owner is not None:
            if owner.get("contrib-type", "author") == "author":
                kept.append(aff)
            continue
        aff_id = aff.get("id", "")
        if aff_id in authors or aff_id not in others:
            kept.append(aff)
    return kept


def _citation(citation: etree._Element) -> str:
    """A reference's text: a ``mixed-citation`` as written; an ``element-citation`` (fields
    without punctuation) as its authors, then its other fields, joined by ". "."""
    if local_name(citation) != "element-citation":
        return inline(citation)
    authors: list[str] = []
    parts: list[str] = []
    for child in citation:
        name = local_name(child)
        if name == "person-group":
            for person in child:
                if local_name(person) == "name":
                    surname = inline(person.find("surname"))
                    given = inline(person.find("given-names"))
                    authors.append(" ".join(p for p in (surname, given) if p))
                elif isinstance(person.tag, str):
                    authors.append(inline(person))
        elif name not in ("pub-id", "object-id"):
            text = inline(child)
            if text:
                parts.append(text)
    head = ", ".join(a for a in authors if a)
    return ". ".join(p for p in ([head] if head else []) + parts if p)


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a JATS article."""
    key = document.source_key
    if not raw.strip():
        raise EmptyDocumentError(key, "the file is empty")
    root = parse_xml(raw, key)
    strip_namespaces(root)
    if local_name(root) != "article":
        raise CorruptDocumentError(
            key, f"not a JATS article: the root element is <{local_name(root) or '?'}>"
        )
    writer = _Writer(current_deadline(key))
    writer.article(root)
    return writer.layer.parsed(document, "the article holds no text")


def strip_namespaces(root: etree._Element) -> None:
    """JATS elements are un-namespaced; a file that puts them in a namespace reads the same."""
    for element in root.iter():
        tag = element.tag
        if isinstance(tag, str) and tag.startswith("{") and not tag.startswith("{" + _MML):
            element.tag = tag.rsplit("}", 1)[-1]


__all__ = [
    "MEDIA_TYPE",
    "SKIP_INLINE",
    "child_named",
    "entity_text",
    "has_doctype",
    "inline",
    "local_name",
    "parse",
    "parse_xml",
    "strip_namespaces",
]
