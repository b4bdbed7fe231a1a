"""EPUB 2 and 3 e-books: chapters through our HTML parser, the book's navigation as headings.

How a book is read:
- the ZIP is opened by ``archive.open_zip`` (bomb checks from the central directory first);
  ``META-INF/container.xml`` names the package document (OPF); its manifest and spine give the
  content documents in reading order. Every member is read from the ZIP by name, never from
  disk; a path that climbs out of the container (``../``) or names no member is skipped with a
  warning, so one bad chapter does not cost the book; a book with no readable chapter is an
  error naming the file; chapters that ``META-INF/encryption.xml`` lists as encrypted (DRM,
  not the font obfuscation readable books use) are such chapters.
- each spine document (XHTML or HTML) is extracted by ``html.extract``; chapters follow each
  other in spine order, separated by a blank line.
- the navigation (EPUB 3 ``nav`` document's ``toc``, else the EPUB 2 NCX) gives the headings:
  an entry that points at a heading of its chapter makes that heading the entry's level (1 at
  the top of the navigation, one deeper per nesting); an entry that points at a chapter's start
  or at a line with no heading is written as a heading line of its own (its label) before it.
  Headings of the chapters that the navigation does not name stay headings, nested below the
  navigation heading they follow. A book without navigation keeps its chapters' own headings.
XML parts (container, OPF, NCX, nav) are parsed without DTDs or entities (a part declaring
entities is refused); the whole parse runs under the document's time budget.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urldefrag

import pypdfium2
from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html, image, pdf, svg
from agrag_pipeline.parsing.archive import hardened_xml_parser, open_zip, read_member
from agrag_pipeline.parsing.budget import check_size, current_deadline
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.jats import parse_xml
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections

if TYPE_CHECKING:
    from agrag_pipeline.settings import ParsingSettings

MEDIA_TYPE = "application/epub+zip"

#: More spine entries than this is refused (real books hold tens to a few hundred).
MAX_CHAPTERS = 10_000
#: More navigation entries than this: the rest are ignored (real tables of contents: hundreds).
MAX_NAV_ENTRIES = 20_000
#: One content document larger than this is refused (the ZIP's own limits bound the total).
MAX_CHAPTER_BYTES = 64 * 1024 * 1024
#: Navigation nested deeper than this is read as this deep (heading levels run 1-6 anyway).
MAX_NAV_DEPTH = 6

_CONTAINER = "META-INF/container.xml"
_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/x-dtbook+xml"})
#: EPUB 3 lets a spine entry be an SVG drawing: a fixed-layout book's page, its lines ``<text>``.
_SVG_TYPE = "image/svg+xml"
#: A spine entry that is a picture: a page of a comic or a scanned book, read by OCR when the
#: book holds no text (``_read_pictures``).
_PICTURE_TYPES = frozenset(
    {"image/jpeg", "image/png", "image/gif", "image/webp", "image/tiff", "image/bmp"}
)
#: A page's picture: an ``<img src>``, or an SVG ``<image href>`` (``xlink:href`` in EPUB 2).
_PICTURE_REF = re.compile(
    r"""<(?:img\b[^>]*?\bsrc|image\b[^>]*?\b(?:xlink:)?href)\s*=\s*["']([^"']+)["']""",
    re.IGNORECASE,
)
_ENTITY_DECL = re.compile(rb"<!ENTITY", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_EPUB_NS = "http://www.idpf.org/2007/ops"
#: Font obfuscation (not DRM): the IDPF's and Adobe's algorithms.
_FONT_OBFUSCATION = frozenset(
    {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}
)


@dataclass(frozen=True)
class _NavEntry:
    label: str
    member: str  # the content document's member name
    fragment: str
    level: int


@dataclass
class _Chapter:
    member: str
    extracted: html.Extracted


def _local(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _xml(data: bytes, source_key: str, part: str) -> etree._Element:
    """An XML part parsed safely: a DTD may be named (NCX does), entities may not be declared."""
    if _ENTITY_DECL.search(data):
        raise CorruptDocumentError(
            source_key, f"{part!r} declares XML entities (an entity-expansion attack?): refused"
        )
    try:
        root = etree.fromstring(data, hardened_xml_parser())
    except etree.XMLSyntaxError as exc:
        raise CorruptDocumentError(source_key, f"{part!r} is not well-formed XML: {exc}") from exc
    if root is None:
        raise CorruptDocumentError(source_key, f"{part!r} holds no element")
    return root


def _resolve(base_member: str, href: str) -> str | None:
    """The member name ``href`` (relative to ``base_member``) points at, or None when it leaves
    the container (``../`` past the root, an absolute path, a URL with a scheme)."""
    path = unquote(urldefrag(href)[0]).strip()
    if not path or ":" in path.split("/", 1)[0] or path.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(base_member), path))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return None
    return joined


class _Book:
    def __init__(self, archive: zipfile.ZipFile, source_key: str) -> None:
        self.archive = archive
        self.key = source_key
        self.names = set(archive.namelist())
        self.warnings: list[str] = []
        self.encrypted: set[str] = set()
        self.drawings: set[str] = set()  # spine entries that are SVG pages
        self.pictures: set[str] = set()  # spine entries that are pictures

    def read(self, member: str, max_bytes: int = MAX_CHAPTER_BYTES) -> bytes:
        return read_member(self.archive, member, self.key, max_bytes=max_bytes)

    def package(self) -> str:
        if _CONTAINER not in self.names:
            raise CorruptDocumentError(self.key, f"not an EPUB: no {_CONTAINER}")
        container = _xml(self.read(_CONTAINER), self.key, _CONTAINER)
        for rootfile in container.iter():
            if _local(rootfile) == "rootfile" and rootfile.get("full-path"):
                path = _resolve("", rootfile.get("full-path", ""))
                if path is not None and path in self.names:
                    return path
        raise CorruptDocumentError(
            self.key, f"{_CONTAINER} names no package document (OPF) that the EPUB holds"
        )


def _manifest_and_spine(book: _Book, opf_member: str) -> tuple[list[str], str | None, str | None]:
    """(the spine's content documents in order, the EPUB 3 nav document, the NCX)."""
    opf = _xml(book.read(opf_member), book.key, opf_member)
    items: dict[str, tuple[str, str, str]] = {}  # id -> (href, media type, properties)
    nav: str | None = None
    for item in opf.iter():
        if _local(item) != "item":
            continue
        item_id, href = item.get("id", ""), item.get("href", "")
        items[item_id] = (href, item.get("media-type", ""), item.get("properties", ""))
        if "nav" in item.get("properties", "").split():
            nav = _resolve(opf_member, href)
    spine = next((e for e in opf.iter() if _local(e) == "spine"), None)
    if spine is None:
        raise CorruptDocumentError(book.key, f"the package document {opf_member!r} has no spine")
    ncx: str | None = None
    toc_id = spine.get("toc")
    if toc_id and toc_id in items:
        ncx = _resolve(opf_member, items[toc_id][0])
    if ncx is None:
        ncx = next(
            (
                _resolve(opf_member, href)
                for href, media_type, _ in items.values()
                if media_type == "application/x-dtbncx+xml"
            ),
            None,
        )
    refs = [e for e in spine if _local(e) == "itemref"]
    check_size(book.key, "spine entries", len(refs), MAX_CHAPTERS)
    chapters: list[str] = []
    for ref in refs:
        idref = ref.get("idref", "")
        if idref not in items:
            book.warnings.append(f"spine entry {idref!r} is not in the manifest: skipped")
            continue
        href, media_type, _ = items[idref]
        member = _resolve(opf_member, href)
        if member is None:
            book.warnings.append(f"spine entry {href!r} points outside the book: skipped")
        elif member not in book.names:
            book.warnings.append(f"spine entry {href!r} names no member of the book: skipped")
        elif media_type == _SVG_TYPE:
            book.drawings.add(member)
            chapters.append(member)
        elif media_type in _PICTURE_TYPES:
            book.pictures.add(member)
            chapters.append(member)
        elif media_type and media_type not in _HTML_TYPES:
            book.warnings.append(f"spine entry {href!r} is {media_type}, not a page: skipped")
        else:
            chapters.append(member)
    return chapters, nav, ncx


def _text(element: etree._Element | None) -> str:
    if element is None:
        return ""
    return _SPACE.sub(" ", "".join(element.itertext())).strip()


def _nav_entries(book: _Book, nav: str | None, ncx: str | None) -> list[_NavEntry]:
    """The table of contents: from the EPUB 3 nav document, else the NCX (empty if neither)."""
    entries: list[_NavEntry] = []
    if nav is not None and nav in book.names:
        try:
            entries = _from_nav(book, nav)
        except DocumentError as exc:
            book.warnings.append(f"navigation document unreadable: {exc.problem}")
    if not entries and ncx is not None and ncx in book.names:
        try:
            entries = _from_ncx(book, ncx)
        except DocumentError as exc:
            book.warnings.append(f"NCX unreadable: {exc.problem}")
    return entries[:MAX_NAV_ENTRIES]


def _entry(base: str, label: str, href: str, level: int) -> _NavEntry | None:
    member = _resolve(base, href)
    if member is None or not label:
        return None
    return _NavEntry(label, member, unquote(urldefrag(href)[1]), min(level, MAX_NAV_DEPTH))


def _from_nav(book: _Book, nav: str) -> list[_NavEntry]:
    root = _xml(book.read(nav), book.key, nav)
    navs = [e for e in root.iter() if _local(e) == "nav"]
    toc = next(
        (n for n in navs if "toc" in n.get(f"{{{_EPUB_NS}}}type", "").split()),
        navs[0] if navs else None,
    )
    if toc is None:
        return []
    top = next((c for c in toc.iter() if _local(c) == "ol"), None)
    if top is None:
        return []
    entries: list[_NavEntry] = []
    # (list item, level), in reverse: an explicit stack, a preorder walk without recursion.
    stack: list[tuple[etree._Element, int]] = [
        (li, 1) for li in reversed(top) if _local(li) == "li"
    ]
    while stack and len(entries) < MAX_NAV_ENTRIES:
        li, level = stack.pop()
        link = next((c for c in li if _local(c) in ("a", "span")), None)
        if link is not None:
            entry = _entry(nav, _text(link), link.get("href", ""), level)
            if entry is not None:
                entries.append(entry)
        for ol in reversed([c for c in li if _local(c) == "ol"]):
            stack.extend((item, level + 1) for item in reversed(ol) if _local(item) == "li")
    return entries


def _from_ncx(book: _Book, ncx: str) -> list[_NavEntry]:
    root = _xml(book.read(ncx), book.key, ncx)
    nav_map = next((e for e in root.iter() if _local(e) == "navMap"), None)
    if nav_map is None:
        return []
    entries: list[_NavEntry] = []
    stack: list[tuple[etree._Element, int]] = [
        (p, 1) for p in reversed(nav_map) if _local(p) == "navPoint"
    ]
    while stack and len(entries) < MAX_NAV_ENTRIES:
        point, level = stack.pop()
        label = next((c for c in point if _local(c) == "navLabel"), None)
        content = next((c for c in point if _local(c) == "content"), None)
        if content is not None:
            entry = _entry(ncx, _text(label), content.get("src", ""), level)
            if entry is not None:
                entries.append(entry)
        stack.extend((p, level + 1) for p in reversed(point) if _local(p) == "navPoint")
    return entries


def _encrypted(book: _Book) -> set[str]:
    """Members ``META-INF/encryption.xml`` says are encrypted (DRM), fonts obfuscated by the
    IDPF or Adobe algorithm aside (those are readable books)."""
    part = "META-INF/encryption.xml"
    if part not in book.names:
        return set()
    root = _xml(book.read(part), book.key, part)
    members: set[str] = set()
    for data in root.iter():
        if _local(data) != "EncryptedData":
            continue
        method = next((e for e in data.iter() if _local(e) == "EncryptionMethod"), None)
        if method is not None and method.get("Algorithm", "") in _FONT_OBFUSCATION:
            continue
        for reference in data.iter():
            if _local(reference) == "CipherReference":
                member = _resolve("", reference.get("URI", ""))
                if member is not None:
                    members.add(member)
    return members


def _chapter(book: _Book, member: str) -> html.Extracted | None:
    if member in book.encrypted:
        book.warnings.append(f"chapter {member!r} is encrypted (DRM): skipped")
        return None
    if member in book.pictures:
        return html.Extracted(text="", headings=[], tables=[], anchors={})  # its text: OCR
    try:
        raw = book.read(member)
        if member in book.drawings:
            return _drawn_page(raw, book.key, member)
        decoded = decode(raw, f"{book.key}!{member}", html=True)
    except DocumentError as exc:
        book.warnings.append(f"chapter {member!r} unreadable: {exc.problem}: skipped")
        return None
    return html.extract(decoded.text, current_deadline(book.key), anchors=True)


def _drawn_page(raw: bytes, key: str, member: str) -> html.Extracted:
    """A page drawn as SVG: its description and lines (``svg.drawing_text``); its title, a
    reading system's label ("Sous le Vent, page 5"), is left to the navigation."""
    _, lines = svg.drawing_text(parse_xml(raw, f"{key}!{member}"), key)
    return html.Extracted(text="\n".join(lines), headings=[], tables=[], anchors={})


@dataclass
class _Writer:
    parts: list[str]
    pos: int
    headings: list[HeadingMark]
    tables: list[TableMark]


def _insertions(
    chapter: html.Extracted, entries: list[_NavEntry]
) -> tuple[dict[int, _NavEntry], list[tuple[int, _NavEntry]]]:
    """Navigation entries of one chapter: those that land on one of its headings (by the
    heading's start), and those to write as heading lines of their own (by offset)."""
    starts = {h.start for h in chapter.headings}
    text = chapter.text
    on_heading: dict[int, _NavEntry] = {}
    own: list[tuple[int, _NavEntry]] = []
    in_table = [(t.start, t.end) for t in chapter.tables]
    for entry in entries:
        at = chapter.anchors.get(entry.fragment, 0) if entry.fragment else 0
        if at in starts:
            on_heading.setdefault(at, entry)
            continue
        if at and text[at - 1] != "\n":
            continue  # an anchor inside a line: no place for a heading line
        if any(start < at < end for start, end in in_table):
            continue
        own.append((at, entry))
    own.sort(key=lambda pair: pair[0])
    return on_heading, own


def _write_chapter(
    writer: _Writer, chapter: html.Extracted, entries: list[_NavEntry], nav_level: list[int]
) -> None:
    """Append one chapter, its headings set by the navigation (``nav_level[0]``: the level of
    the navigation heading in force, carried from chapter to chapter)."""
    on_heading, own = _insertions(chapter, entries)
    text = chapter.text
    # Cut points: the chapter's text with each own-line heading written before its offset.
    marks: list[tuple[int, int, object]] = []  # (offset, order, mark): in reading order
    for heading in chapter.headings:
        marks.append((heading.start, 1, heading))
    for table in chapter.tables:
        marks.append((table.start, 1, table))
    for offset, entry in own:
        marks.append((offset, 0, entry))
    marks.sort(key=lambda m: (m[0], m[1]))
    if writer.pos:
        writer.parts.append("\n\n")
        writer.pos += 2
    base = writer.pos
    shift = 0
    copied = 0
    for offset, _, mark in marks:
        if isinstance(mark, _NavEntry):
            writer.parts.append(text[copied:offset])
            label = mark.label
            start = base + offset + shift
            writer.parts.append(label + "\n\n")
            writer.headings.append(HeadingMark(start, start + len(label), mark.level, label))
            nav_level[0] = mark.level
            shift += len(label) + 2
            copied = offset
        elif isinstance(mark, HeadingMark):
            named = on_heading.get(mark.start)
            if named is not None:
                level, label = named.level, mark.text
                nav_level[0] = named.level
            else:
                level, label = max(mark.level, nav_level[0] + 1), mark.text
            start = base + mark.start + shift
            writer.headings.append(
                HeadingMark(start, base + mark.end + shift, min(level, 6), label)
            )
        elif isinstance(mark, TableMark):
            moved = base + shift
            writer.tables.append(
                TableMark(
                    mark.start + moved,
                    mark.end + moved,
                    (mark.header[0] + moved, mark.header[1] + moved) if mark.header else None,
                    tuple((a + moved, b + moved) for a, b in mark.rows),
                )
            )
    writer.parts.append(text[copied:])
    writer.pos = base + len(text) + shift


def _page_pictures(book: _Book, members: list[str]) -> list[str]:
    """The pictures a book shows as its pages, in spine order: a picture in the spine, and the
    pictures each page holds (``<img>``, SVG ``<image>``), once each."""
    pictures: list[str] = []
    for member in members:
        if member in book.pictures:
            found = [member]
        else:
            try:
                page = book.read(member).decode("utf-8", errors="replace")
            except DocumentError:
                continue
            found = [
                resolved
                for href in _PICTURE_REF.findall(page)
                if (resolved := _resolve(member, href)) is not None and resolved in book.names
            ]
        pictures.extend(p for p in found if p not in pictures)
        if len(pictures) > pdf.MAX_PAGES:
            raise DocumentTooLargeError(
                book.key,
                f"its pages are over {pdf.MAX_PAGES} pictures, the most read by OCR in one book",
            )
    return pictures


def _read_pictures(
    book: _Book, pictures: list[str], document: Document, parsing: ParsingSettings | None
) -> ParsedDocument:
    """A book whose pages are pictures (a comic, a scanned book), read by OCR as a scanned PDF
    of those pages (``image.to_pdf`` for each, one PDF, ``pdf.parse``)."""
    deadline = current_deadline(book.key)
    merged = pypdfium2.PdfDocument.new()
    try:
        for number, member in enumerate(pictures, start=1):
            deadline.check(f"picture {number:,} of {len(pictures):,}")
            try:
                scanned = image.to_pdf(book.read(member), f"{book.key}!{member}")
            except DocumentError as exc:
                book.warnings.append(f"picture {member!r} unreadable: {exc.problem}: skipped")
                continue
            page = pypdfium2.PdfDocument(scanned)
            try:
                merged.import_pages(page)
            finally:
                page.close()
        if len(merged) == 0:
            raise EmptyDocumentError(book.key, "the EPUB's chapters hold no text")
        out = io.BytesIO()
        merged.save(out)
    finally:
        merged.close()
    try:
        parsed = pdf.parse(out.getvalue(), document, parsing=parsing)
    except EmptyDocumentError as exc:
        raise EmptyDocumentError(book.key, f"its pages are pictures: {exc.problem}") from None
    pages = (
        "its page is a picture" if len(pictures) == 1 else f"its {len(pictures)} pages are pictures"
    )
    parsed.warnings.insert(0, f"{pages}: text by OCR")
    parsed.warnings.extend(book.warnings)
    return parsed


def parse(
    raw: bytes, document: Document, *, parsing: ParsingSettings | None = None
) -> ParsedDocument:
    """The text layer and sections of an EPUB book; a book whose pages are pictures, by OCR
    (``parsing``: the run's OCR settings)."""
    key = document.source_key
    deadline = current_deadline(key)
    with open_zip(raw, key) as archive:
        book = _Book(archive, key)
        opf = book.package()
        book.encrypted = _encrypted(book)
        members, nav, ncx = _manifest_and_spine(book, opf)
        entries = _nav_entries(book, nav, ncx)
        by_member: dict[str, list[_NavEntry]] = {}
        for entry in entries:
            by_member.setdefault(entry.member, []).append(entry)
        writer = _Writer([], 0, [], [])
        nav_level = [0]
        read = 0
        for index, member in enumerate(members):
            deadline.check(f"chapter {index + 1:,} of {len(members):,}")
            chapter = _chapter(book, member)
            if chapter is None:
                continue
            read += 1
            if not chapter.text.strip():
                continue
            _write_chapter(writer, chapter, by_member.get(member, []), nav_level)
        if read and not "".join(writer.parts).strip():
            pictures = _page_pictures(book, members)
            if pictures:
                return _read_pictures(book, pictures, document, parsing)
    if not read:
        raise CorruptDocumentError(
            key, "the EPUB has no readable chapter: " + "; ".join(book.warnings or ["no spine"])
        )
    text = "".join(writer.parts)
    if not text.strip():
        raise EmptyDocumentError(key, "the EPUB's chapters hold no text")
    sections = build_sections(text, document, writer.headings, writer.tables)
    parsed = ParsedDocument(document=document, text_layer=text, sections=sections)
    parsed.warnings.extend(book.warnings)
    return parsed


__all__ = ["MAX_CHAPTERS", "MEDIA_TYPE", "parse"]
