"""USPTO patent full text in the XML formats of 2001 to 2004, before ICE (``patent``): grants
as ``PATDOC`` (the "Red Book" DTD v2.4/2.5: SGML element names such as ``B540`` for the title)
and applications as ``patent-application-publication`` (DTD v1.5/1.6), as the USPTO's bulk
data for those years gives them.

As generic XML they were element paths (``B110.DNUM.PDAT: 06442728``) with the citations and
classification codes before the text, and no section for the claims. Written as ``patent``
writes ICE, so a patent reads the same whatever its year:
- the title as the level-1 heading, then one line each for the publication ("US 06442728 B1,
  published 2002-08-27"), the application, the inventors (name and place) and the assignees;
- "Abstract" (level 2) and its paragraphs;
- the description with its own headings (level 2, one deeper per ``LVL``/``lvl`` past 1) and
  paragraphs; tables (CALS) as tables; text before the first heading under "Description";
- "Claims" (level 2): each claim a block, its steps (``CLMSTEP``, nested ``claim-text``) one
  per line.
Paragraph numbers ("[0001]"), drawings, citations and classification codes are left out.
Parsed as JATS is (``jats.parse_xml``: hardened, the DTD never loaded; the images' ``NDATA``
entities no text; character entities such as ``&ldquo;`` read as their characters).
"""

from __future__ import annotations

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import jats
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.patent import PatentWriter, cals_tables, dated, find_path, named
from agrag_pipeline.parsing.tree import MAX_HEADING_LEVEL

MEDIA_TYPE = "application/vnd.uspto.patent-2001+xml"
GRANT_ROOT = "PATDOC"
APPLICATION_ROOT = "patent-application-publication"

_name = jats.local_name
#: Never text of a paragraph: paragraph numbers, drawings and embedded images.
_SKIP = jats.SKIP_INLINE | {"number", "EMI", "image", "CWU", "figure"}
#: Written as blocks of their own where they stand inside a paragraph.
_TABLES = frozenset({"TABLE-US", "table-us", "table", "TABLE", "tables"})


def _text(element: etree._Element | None, *path: str) -> str:
    return jats.inline(find_path(element, *path), _SKIP)


def _joined(*parts: str, separator: str = " ") -> str:
    return separator.join(p for p in parts if p)


def _someone(name: str, *place: str) -> str:
    """ "Jian Cui (Nepean, CA)": a name and the parts of its place there are ('' for no name)."""
    where = _joined(*place, separator=", ")
    return f"{name} ({where})" if name and where else name


class _Writer(PatentWriter):
    """The 2001-2004 elements (upper-case SGML names in grants, lower-case in applications)."""

    def paragraph(self, element: etree._Element) -> None:
        self.tick()
        self.layer.paragraph(jats.inline(element, _SKIP | _TABLES))
        for table in (e for e in element.iter() if _name(e) in _TABLES):
            if not any(_name(a) in _TABLES for a in table.iterancestors() if a is not element):
                for rows, header_rows in cals_tables(table, self.tick):
                    self.layer.table(rows, header_rows=header_rows)

    def heading(self, element: etree._Element, level_attribute: str) -> None:
        level = element.get(level_attribute, "1")
        depth = int(level) if level.isdigit() else 1
        self.layer.heading(jats.inline(element, _SKIP), min(1 + max(depth, 1), MAX_HEADING_LEVEL))
        self.headed = True

    def body(self, element: etree._Element, heading: str, paragraph: str, level: str) -> None:
        """A description's headings and paragraphs, in order, however deep they are nested."""
        for child in element:
            name = _name(child)
            if name == heading:
                self.heading(child, level)
            elif name == paragraph or name in _TABLES:
                if not self.headed:
                    self.layer.heading("Description", 2)
                    self.headed = True
                if name == paragraph:
                    self.paragraph(child)
                else:
                    for rows, header_rows in cals_tables(child, self.tick):
                        self.layer.table(rows, header_rows=header_rows)
            elif isinstance(child.tag, str) and name not in _SKIP:
                self.body(child, heading, paragraph, level)

    def front_and_text(
        self,
        lines: list[str],
        inventors: list[str],
        assignees: list[str],
        abstract: etree._Element | None,
        description: etree._Element | None,
        names: tuple[str, str, str],
    ) -> None:
        """The bibliographic lines (inventors and assignees last), the abstract and the description;
        ``names``: the format's heading and paragraph elements and its level attribute."""
        heading, paragraph, level = names
        self.layer.lines([*lines, *named("Inventors", inventors), *named("Assignees", assignees)])
        if abstract is not None:
            self.layer.heading("Abstract", 2)
            for element in (e for e in abstract.iter() if _name(e) == paragraph):
                self.paragraph(element)
        if description is not None:
            self.body(description, heading, paragraph, level)

    def claim(self, lines: list[str]) -> None:
        self.tick()
        self.layer.lines(lines)


def _grant(root: etree._Element, writer: _Writer) -> None:
    """A ``PATDOC`` grant: ``SDOBI`` front, ``SDOAB`` abstract, ``SDODE`` description,
    ``SDOCL`` claims."""
    layer = writer.layer
    front = find_path(root, "SDOBI")
    # B540 belongs in B500 (the DTD); a file that puts it elsewhere in SDOBI still has a title.
    title = next(
        (e for e in (front.iter() if front is not None else ()) if _name(e) == "B540"), None
    )
    layer.heading(jats.inline(title, _SKIP), 1)
    lines = []
    number = _joined(
        _text(front, "B100", "B190"), _text(front, "B100", "B110"), _text(front, "B100", "B130")
    )
    if number:
        lines.append(dated(number, "published", _text(front, "B100", "B140")))
    application = _text(front, "B200", "B210")
    if application:
        lines.append(dated(f"Application {application}", "filed", _text(front, "B200", "B220")))
    parties = find_path(front, "B700")
    inventors = []
    for inventor in (
        e for e in (parties.iter() if parties is not None else ()) if _name(e) == "B721"
    ):
        party = find_path(inventor, "PARTY-US")
        party = inventor if party is None else party
        inventors.append(
            _someone(
                _joined(_text(party, "NAM", "FNM"), _text(party, "NAM", "SNM")),
                *(_text(party, "ADR", part) for part in ("CITY", "STATE", "CTRY")),
            )
        )
    assignees = [
        _text(e, "PARTY-US", "NAM", "ONM")
        or _text(e, "NAM", "ONM")
        or _joined(_text(e, "PARTY-US", "NAM", "FNM"), _text(e, "PARTY-US", "NAM", "SNM"))
        for e in (parties.iter() if parties is not None else ())
        if _name(e) == "B731"
    ]
    writer.front_and_text(
        lines,
        inventors,
        assignees,
        find_path(root, "SDOAB"),
        find_path(root, "SDODE"),
        ("H", "PARA", "LVL"),
    )
    claims = find_path(root, "SDOCL")
    if claims is not None:
        layer.heading("Claims", 2)
        for claim in (e for e in claims.iter() if _name(e) == "CLM"):
            lines = []
            for part in claim:
                if _name(part) == "PARA":
                    lines.append(jats.inline(part, _SKIP | {"CLMSTEP"}))
                    lines.extend(
                        jats.inline(step, _SKIP | {"CLMSTEP"})
                        for step in part.iter()
                        if _name(step) == "CLMSTEP"
                    )
                elif _name(part) == "CLMSTEP":
                    lines.append(jats.inline(part, _SKIP))
            writer.claim(lines)


def _application(root: etree._Element, writer: _Writer) -> None:
    """A ``patent-application-publication``: ``subdoc-*`` parts in lower-case names."""
    layer = writer.layer
    front = find_path(root, "subdoc-bibliographic-information")
    layer.heading(_text(front, "technical-information", "title-of-invention"), 1)
    lines = []
    number = _joined(
        "US", _text(front, "document-id", "doc-number"), _text(front, "document-id", "kind-code")
    )
    if _text(front, "document-id", "doc-number"):
        lines.append(dated(number, "published", _text(front, "document-id", "document-date")))
    filing = find_path(front, "domestic-filing-data")
    application = _text(filing, "application-number", "doc-number")
    if application:
        lines.append(dated(f"Application {application}", "filed", _text(filing, "filing-date")))
    inventors = []
    people = find_path(front, "inventors")
    for person in (
        e
        for e in (people if people is not None else ())
        if _name(e) in ("first-named-inventor", "inventor")
    ):
        name = _joined(
            _text(person, "name", "given-name"),
            _text(person, "name", "middle-name"),
            _text(person, "name", "family-name"),
        )
        home = find_path(person, "residence")  # residence-us or residence-non-us inside
        residence = next(
            (c for c in (home if home is not None else ()) if isinstance(c.tag, str)), None
        )
        inventors.append(
            _someone(name, *(_text(residence, part) for part in ("city", "state", "country-code")))
        )
    assignees = [
        _text(e, "organization-name")
        or _joined(_text(e, "name", "given-name"), _text(e, "name", "family-name"))
        for e in (front if front is not None else ())
        if _name(e) == "assignee"
    ]
    writer.front_and_text(
        lines,
        inventors,
        assignees,
        find_path(root, "subdoc-abstract"),
        find_path(root, "subdoc-description"),
        ("heading", "paragraph", "lvl"),
    )
    claims = find_path(root, "subdoc-claims")
    if claims is not None:
        layer.heading("Claims", 2)
        for reference in [e for e in claims.iter() if _name(e) == "dependent-claim-reference"]:
            for text in reference.iter():  # "claim 1": words of its clause, not a clause
                if _name(text) == "claim-text":
                    text.tag = "claim-reference-text"
        for claim in (e for e in claims.iter() if _name(e) == "claim"):
            lines = []
            for text in claim.iter():
                if _name(text) == "claim-text":
                    lines.append(jats.inline(text, _SKIP | {"claim-text"}))
            writer.claim(lines)


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a 2001-2004 USPTO grant (``PATDOC``) or application."""
    key = document.source_key
    if not raw.strip():
        raise EmptyDocumentError(key, "the file is empty")
    root = jats.parse_xml(raw, key)
    jats.strip_namespaces(root)
    writer = _Writer(current_deadline(key))
    if _name(root) == GRANT_ROOT:
        _grant(root, writer)
    elif _name(root) == APPLICATION_ROOT:
        _application(root, writer)
    else:
        raise CorruptDocumentError(
            key, f"not a 2001-2004 USPTO patent: the root element is <{_name(root) or '?'}>"
        )
    return writer.layer.parsed(document, "the patent holds no text")


__all__ = ["APPLICATION_ROOT", "GRANT_ROOT", "MEDIA_TYPE", "parse"]
