"""USPTO patent full text as XML: grants and applications in the ICE format (DTD v4.x, since
2005; roots ``us-patent-grant`` and ``us-patent-application``), as the USPTO's bulk data gives
them.

Why a reader of its own: as generic XML (``xmldoc``) a patent is its element paths, with the
bibliographic fields (80 lines of classification codes) before the text and none of its
structure: the description's headings (BACKGROUND, SUMMARY, DETAILED DESCRIPTION) were no
sections and the claims no section of their own.

Parsed as JATS is (``jats.parse_xml``: hardened lxml, the DTD never loaded; the images' unparsed
``NDATA`` entities a grant declares are no text). The text layer, in reading order:
- the invention's title as the level-1 heading, then one line each for the publication
  ("US 20200022300 A1, published 2020-01-23"), the application, the applicants, the
  inventors (name and place), the assignees and the main CPC classifications;
- "Abstract" (level 2) and its paragraphs;
- the description: its own headings (``<heading level="1">`` at level 2, one deeper per level)
  with their paragraphs, lists as ``- item`` lines, tables (CALS ``<row>``/``<entry>``) as
  tables, formulas (MathML) as linear LaTeX (``mathml``), figure references as written; text
  before the first heading under "Description";
- "Claims" (level 2): the claim statement ("What is claimed is:"), then each claim as a block,
  its nested clauses one per line.
Drawings (image references), citations and the remaining bibliographic codes are left out: they
are not the patent's text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import jats
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer
from agrag_pipeline.parsing.tree import MAX_HEADING_LEVEL

MEDIA_TYPE = "application/vnd.uspto.patent+xml"
#: The roots of the ICE format's two documents.
ROOTS = frozenset({"us-patent-grant", "us-patent-application"})

_name = jats.local_name
#: Written as their own blocks where they stand inside a paragraph.
_BLOCKS = frozenset({"tables", "table", "ul", "ol", "maths"})


def date_text(value: str) -> str:
    """``20200123`` as ``2020-01-23`` (anything else as given)."""
    value = value.strip()
    return f"{value[:4]}-{value[4:6]}-{value[6:]}" if len(value) == 8 and value.isdigit() else value


def dated(what: str, verb: str, date: str) -> str:
    """A front line: ``what`` and, where there is one, the date it was ``verb`` ("US 06442728 B1,
    published 2002-08-27", "Application 09263431, filed 1999-03-04"); ``date`` as the USPTO
    writes it. One wording for the readers of every year."""
    shown = date_text(date)
    return f"{what}, {verb} {shown}" if shown else what


def named(label: str, names: Iterable[str]) -> list[str]:
    """``["Inventors: Jian Cui (Nepean, CA); Bin Li"]``, or no line where no name is given."""
    given = [name for name in names if name]
    return [f"{label}: " + "; ".join(given)] if given else []


def find_path(element: etree._Element | None, *path: str) -> etree._Element | None:
    """The element at ``path`` (child names, first match at each step) under ``element``."""
    for name in path:
        if element is None:
            return None
        element = next((c for c in element if _name(c) == name), None)
    return element


def _text(element: etree._Element | None, *path: str) -> str:
    return jats.inline(find_path(element, *path))


def _party(party: etree._Element) -> str:
    """A party's name (an organisation, else given and family name) and its place."""
    book = find_path(party, "addressbook")
    name = _text(book, "orgname") or " ".join(
        n for n in (_text(book, "first-name"), _text(book, "last-name")) if n
    )
    address = find_path(book, "address")
    place = ", ".join(
        p for p in (_text(address, "city"), _text(address, "state"), _text(address, "country")) if p
    )
    return f"{name} ({place})" if name and place else name


def _parties(element: etree._Element | None, name: str) -> list[str]:
    if element is None:
        return []
    return [p for p in (_party(e) for e in element.iter() if _name(e) == name) if p]


def _cpc(classification: etree._Element) -> str:
    """``A01B 63/32`` from a ``classification-cpc``'s section, class, subclass and groups."""
    head = "".join(_text(classification, n) for n in ("section", "class", "subclass"))
    group = "/".join(
        g for g in (_text(classification, "main-group"), _text(classification, "subgroup")) if g
    )
    return f"{head} {group}".strip()


def cals_tables(
    element: etree._Element, tick: Callable[[], None]
) -> Iterator[tuple[list[list[str]], int]]:
    """The CALS tables under ``element`` (the USPTO's, every era): each ``tgroup``'s rows of
    ``entry`` texts, and how many of them are its ``thead``'s."""
    for tgroup in (e for e in element.iter() if _name(e) == "tgroup"):
        rows: list[list[str]] = []
        header_rows = 0
        for row in (e for e in tgroup.iter() if _name(e) == "row"):
            tick()
            rows.append([jats.inline(c) for c in row if _name(c) == "entry"])
            if any(_name(a) == "thead" for a in row.iterancestors()):
                header_rows += 1
        yield rows, header_rows


class PatentWriter:
    """The text layer of a patent of any year (``patent``, ``patent_early_xml``): the count of
    elements that checks the parse's deadline, and whether the description has had a heading
    (text before the first is put under "Description")."""

    def __init__(self, deadline: Deadline) -> None:
        self.layer = TextLayer()
        self.deadline = deadline
        self.count = 0
        self.headed = False

    def tick(self) -> None:
        self.count += 1
        if not self.count % 256:
            self.deadline.check(f"patent element {self.count:,}")


class _Writer(PatentWriter):
    """ICE's elements."""

    def front(self, biblio: etree._Element | None) -> None:
        self.layer.heading(_text(biblio, "invention-title"), 1)
        lines: list[str] = []
        publication = find_path(biblio, "publication-reference", "document-id")
        if publication is not None:
            number = " ".join(
                p for p in (_text(publication, n) for n in ("country", "doc-number", "kind")) if p
            )
            lines.append(dated(number, "published", _text(publication, "date")))
        application = find_path(biblio, "application-reference", "document-id")
        if application is not None:
            lines.append(
                dated(
                    f"Application {_text(application, 'doc-number')}",
                    "filed",
                    _text(application, "date"),
                )
            )
        parties = find_path(biblio, "us-parties")
        if parties is None:
            parties = find_path(biblio, "parties")
        for label, group, one in (
            ("Applicants", "us-applicants", "us-applicant"),
            ("Inventors", "inventors", "inventor"),
        ):
            names = _parties(find_path(parties, group), one) or _parties(biblio, one)
            lines += named(label, names)
        lines += named("Assignees", _parties(find_path(biblio, "assignees"), "assignee"))
        main = find_path(biblio, "classifications-cpc", "main-cpc")
        if main is not None:
            codes = [_cpc(c) for c in main if _name(c) == "classification-cpc"]
            if any(codes):
                lines.append("CPC: " + "; ".join(c for c in codes if c))
        self.layer.lines(lines)

    def paragraph(self, element: etree._Element) -> None:
        """A paragraph, with the tables, lists and formulas set inside it written after it."""
        self.tick()
        self.layer.paragraph(jats.inline(element, jats.SKIP_INLINE | _BLOCKS))
        for child in element:
            if _name(child) in _BLOCKS:
                self.block(child)

    def block(self, element: etree._Element) -> None:
        """A table, a list or a formula (one of ``_BLOCKS``) as a block of its own."""
        name = _name(element)
        if name in ("tables", "table"):
            self.tables(element)
        elif name in ("ul", "ol"):
            self.items(element)
        else:
            self.layer.paragraph(jats.inline(element))

    def items(self, element: etree._Element) -> None:
        lines = []
        for item in element.iter():
            if _name(item) == "li":
                self.tick()
                text = jats.inline(item, jats.SKIP_INLINE | {"ul", "ol"})
                if text:  # an item holding only a nested list: its items follow
                    lines.append("- " + text)
        self.layer.lines(lines)

    def tables(self, element: etree._Element) -> None:
        for rows, header_rows in cals_tables(element, self.tick):
            self.layer.table(rows, header_rows=header_rows)

    def description(self, element: etree._Element) -> None:
        for child in element:
            name = _name(child)
            if name == "heading":
                level = child.get("level", "1")
                depth = int(level) if level.isdigit() else 1
                self.layer.heading(jats.inline(child), min(1 + max(depth, 1), MAX_HEADING_LEVEL))
                self.headed = True
            elif name == "description-of-drawings":
                self.description(child)
            elif name in ("p", *_BLOCKS):
                if not self.headed:
                    self.layer.heading("Description", 2)
                    self.headed = True
                if name == "p":
                    self.paragraph(child)
                else:
                    self.block(child)

    def claims(self, root: etree._Element, claims: etree._Element) -> None:
        self.layer.heading("Claims", 2)
        self.layer.paragraph(_text(root, "us-claim-statement"))
        for claim in (c for c in claims if _name(c) == "claim"):
            self.tick()
            lines: list[str] = []
            for text in (c for c in claim if _name(c) == "claim-text"):
                self._clauses(text, lines)
            self.layer.lines(lines)

    def _clauses(self, element: etree._Element, lines: list[str]) -> None:
        """A claim's text, its nested clauses (``<claim-text>`` in ``<claim-text>``) each on a
        line of its own."""
        lines.append(jats.inline(element, jats.SKIP_INLINE | {"claim-text"}))
        for child in element:
            if _name(child) == "claim-text":
                self._clauses(child, lines)


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a USPTO patent grant or application (ICE XML)."""
    key = document.source_key
    if not raw.strip():
        raise EmptyDocumentError(key, "the file is empty")
    root = jats.parse_xml(raw, key)
    jats.strip_namespaces(root)
    if _name(root) not in ROOTS:
        raise CorruptDocumentError(
            key, f"not a USPTO patent: the root element is <{_name(root) or '?'}>"
        )
    writer = _Writer(current_deadline(key))
    biblio = next((c for c in root if _name(c).startswith("us-bibliographic-data")), None)
    writer.front(biblio)
    abstract = find_path(root, "abstract")
    if abstract is not None:
        writer.layer.heading("Abstract", 2)
        for p in (c for c in abstract.iter() if _name(c) == "p"):
            writer.paragraph(p)
    description = find_path(root, "description")
    if description is not None:
        writer.description(description)
    claims = find_path(root, "claims")
    if claims is not None:
        writer.claims(root, claims)
    return writer.layer.parsed(document, "the patent holds no text")


__all__ = [
    "MEDIA_TYPE",
    "ROOTS",
    "PatentWriter",
    "cals_tables",
    "date_text",
    "dated",
    "find_path",
    "named",
    "parse",
]
