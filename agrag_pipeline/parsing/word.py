"""DOCX (Word 2007+, Transitional and Strict OOXML) with lxml over the package's XML parts.

Why not python-docx: it refuses Strict documents (other namespaces), and what a text layer
needs (list numbers, merged cells, text boxes, equations, footnotes, comments, content
controls) lies below its API anyway. The package is opened by ``archive.open_zip`` (zip-bomb
checks) and every part by ``archive.parse_xml`` (no DTD, no entities; Strict names mapped to
Transitional), so both conformance classes go through one reader.

Text layer (what offsets index), in body order:
- a paragraph is a block, blocks are separated by a blank line; consecutive list items by a
  line break. Tracked deletions, field codes and the header/footer parts (page furniture,
  repeated on every page) are left out;
- headings: paragraphs whose style is a built-in heading (``heading 1``-``9``), or whose
  outline level (direct or from the style chain) is 0-8; a ``Title`` paragraph (or one in
  LibreOffice's title style, ``Heading``) is a heading one level above them. Heading numbers
  are computed from ``numbering.xml`` and kept as text (``"2.1 Scope"``). A document with no
  heading style gets the headings set by hand in larger, bold or capital type
  (``typographic_headings``);
- a paragraph set wholly in a monospaced font (directly or by its style) is code: it keeps
  its indentation, and consecutive code paragraphs are separated by a line break;
- list items start with their computed marker (``"1."``, ``"a)"``, ``"iv."``, ``"-"`` for
  bullets), indented two spaces per level;
- a table is written one row per line, ``| a | b |``, with a ``| - | - |`` line after the
  header (rows marked as repeating headers, else the first row of a table of two or more);
  a horizontally merged cell repeats its text in every column it spans, a vertically merged
  one in every row, so each row reads on its own; a cell's paragraphs and lists stay on its
  row's line, a nested table is flattened into its cell (``a, b; c, d``);
- text boxes (DrawingML and VML) follow the paragraph they are anchored in, and so does a
  chart (its title and data table, categories by series, ``charts.py``) and a SmartArt
  diagram (its node texts as ``-`` lines); equations are
  their linear LaTeX-like text (``omml.py``); a checkbox content control is ``[x]``/``[ ]``;
  an image is ``[Image: alt text]`` when it has alt text (an image without any, or whose
  "alt text" is its file name, leaves no text: a bare placeholder gives a reader and a
  retriever nothing);
- footnotes and endnotes (``[1]`` at the reference, numbered in reference order) and comments
  (``[author: Name (initials), time: date]: text``) are kept, each kind as its own section
  at the end, headed ``Footnotes``, ``Endnotes`` and ``Comments``: they are part of what the
  document says (review decisions live in comments), and a retriever can leave them out by
  their heading path.
No page spans: a DOCX has no layout until a word processor lays it out.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import omml
from agrag_pipeline.parsing.archive import (
    MAX_XML_PART_BYTES,
    open_zip,
    parse_xml,
    read_member,
    transitional_uri,
)
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.charts import read_chart
from agrag_pipeline.parsing.errors import CorruptDocumentError, DocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MACRO_MEDIA_TYPE = "application/vnd.ms-word.document.macroEnabled.12"

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
WPS = "http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
V = "urn:schemas-microsoft-com:vml"
C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
DGM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
VML_O = "urn:schemas-microsoft-com:office:office"

_MAX_STYLE_CHAIN = 32
#: Grid columns a table may span (Word itself allows 63): hostile spans cost no more.
MAX_COLUMNS = 1000
_MAX_LEVELS = 9
_SPACE = re.compile(r"\s+")
_HEADING_NAME = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_TITLE_NAMES = frozenset({"title", "heading"})
_FALSE = frozenset({"0", "false", "off", "none"})
#: What the appendix sections are headed.
FOOTNOTES, ENDNOTES, COMMENTS = "Footnotes", "Endnotes", "Comments"


def _w(local: str) -> str:
    return f"{{{W}}}{local}"


def _val(element: etree._Element | None, attr: str = "val") -> str | None:
    if element is None:
        return None
    return element.get(_w(attr))


def _on(element: etree._Element | None) -> bool:
    """An OOXML on/off property: present and not ``0``/``false``/``off``."""
    if element is None:
        return False
    value = element.get(_w("val"))
    return value is None or value.lower() not in _FALSE


def _int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


_FILE_NAME = re.compile(r"^[^\n]{0,200}\.(png|jpe?g|gif|bmp|tiff?|emf|wmf|svg|webp|heic)$", re.I)


def is_file_name(alt: str) -> bool:
    """True for alt text that is only an image's file name (older Office fills it in)."""
    return bool(_FILE_NAME.match(alt.strip()))


def clean(text: str) -> str:
    """One line: whitespace runs collapsed."""
    return _SPACE.sub(" ", text).strip()


# --- the package ---------------------------------------------------------------------------


class _Package:
    def __init__(self, raw: bytes, source_key: str) -> None:
        self.source_key = source_key
        self.zip: zipfile.ZipFile = open_zip(raw, source_key)
        self.names = set(self.zip.namelist())
        self._rels: dict[str, dict[str, tuple[str, str, bool]]] = {}

    def xml(self, name: str | None) -> etree._Element | None:
        if name is None or name not in self.names:
            return None
        data = read_member(self.zip, name, self.source_key, max_bytes=MAX_XML_PART_BYTES)
        return parse_xml(data, self.source_key, name)

    def rels(self, part: str) -> dict[str, tuple[str, str, bool]]:
        """``rId -> (type, target part or URL, external)`` of ``part``'s relationships (read
        once: the main part's are asked for its styles, numbering, notes and comments)."""
        out = self._rels.get(part)
        if out is None:
            out = self._rels[part] = self._read_rels(part)
        return out

    def _read_rels(self, part: str) -> dict[str, tuple[str, str, bool]]:
        folder, base = posixpath.split(part)
        root = self.xml(posixpath.join(folder, "_rels", f"{base}.rels"))
        out: dict[str, tuple[str, str, bool]] = {}
        if root is None:
            return out
        for rel in root.iter(f"{{{PKG_REL}}}Relationship"):
            rid, kind, target = rel.get("Id"), rel.get("Type", ""), rel.get("Target", "")
            if not rid:
                continue
            external = rel.get("TargetMode") == "External"
            if not external:
                target = (
                    target.lstrip("/")
                    if target.startswith("/")
                    else posixpath.normpath(posixpath.join(folder, target))
                )
            out[rid] = (transitional_uri(kind), target, external)
        return out

    def main_part(self, suffix: str, fallback: str) -> str:
        for kind, target, external in self.rels("").values():
            if kind.endswith(suffix) and not external and target in self.names:
                return target
        if fallback in self.names:
            return fallback
        raise CorruptDocumentError(self.source_key, "the package has no main document part")

    def related(self, part: str, suffix: str) -> str | None:
        for kind, target, external in self.rels(part).values():
            if kind.endswith(suffix) and not external:
                return target
        return None


# --- styles and numbering ------------------------------------------------------------------


@dataclass
class _Style:
    name: str
    based_on: str | None
    outline: int | None
    num_id: str | None
    ilvl: int | None
    font: str | None = None
    #: Font size in half-points and boldness set by the style itself (None: inherited).
    size: int | None = None
    bold: bool | None = None


class _Styles:
    def __init__(self, root: etree._Element | None) -> None:
        self.styles: dict[str, _Style] = {}
        self.default: str | None = None
        self.default_size = _WORD_DEFAULT_SIZE
        self._looks: dict[str | None, tuple[int, bool]] = {}
        if root is None:
            return
        for style in root.iter(_w("style")):
            if style.get(_w("type"), "paragraph") != "paragraph":
                continue
            sid = style.get(_w("styleId"))
            if not sid:
                continue
            ppr = style.find(_w("pPr"))
            num_pr = ppr.find(_w("numPr")) if ppr is not None else None
            self.styles[sid] = _Style(
                name=_val(style.find(_w("name"))) or sid,
                based_on=_val(style.find(_w("basedOn"))),
                outline=_int(_val(ppr.find(_w("outlineLvl")))) if ppr is not None else None,
                num_id=_val(num_pr.find(_w("numId"))) if num_pr is not None else None,
                ilvl=_int(_val(num_pr.find(_w("ilvl")))) if num_pr is not None else None,
                font=_font(style.find(_w("rPr"))),
                size=_size(style.find(_w("rPr"))),
                bold=_bold(style.find(_w("rPr"))),
            )
            if _on_attr(style.get(_w("default"))):
                self.default = sid
        defaults = root.find(f"{_w('docDefaults')}/{_w('rPrDefault')}/{_w('rPr')}")
        self.default_size = _size(defaults) or _WORD_DEFAULT_SIZE

    def chain(self, style_id: str | None) -> list[_Style]:
        out: list[_Style] = []
        current = style_id if style_id in self.styles else self.default
        while current is not None and current in self.styles and len(out) < _MAX_STYLE_CHAIN:
            style = self.styles[current]
            out.append(style)
            current = style.based_on
        return out

    def heading(self, style_id: str | None) -> int | None:
        """0 for a title, 1-9 for a heading level, None for body text."""
        chain = self.chain(style_id)
        # The style's name, else its id (a style used but not defined: "Heading1").
        names = [chain[0].name] if chain else []
        for text in (*names, style_id or ""):
            # "Heading" alone is LibreOffice's title style: it writes a legacy .doc's Title
            # paragraph with it (converted to DOCX, ``legacy_office.py``), and it is the
            # parent of its "Heading N" styles, never body text.
            if text.strip().lower() in _TITLE_NAMES:
                return 0
            match = _HEADING_NAME.fullmatch(text.strip())
            if match:
                return int(match.group(1))
        for style in chain:
            if style.outline is not None:
                return style.outline + 1 if 0 <= style.outline < _MAX_LEVELS else None
        return None

    def font(self, style_id: str | None) -> str | None:
        for style in self.chain(style_id):
            if style.font is not None:
                return style.font
        return None

    def look(self, style_id: str | None) -> tuple[int, bool]:
        """The font size (half-points) and boldness a paragraph of this style inherits."""
        found = self._looks.get(style_id)
        if found is None:
            size: int | None = None
            bold: bool | None = None
            for style in self.chain(style_id):
                size = style.size if size is None else size
                bold = style.bold if bold is None else bold
            found = self._looks[style_id] = (size or self.default_size, bool(bold))
        return found

    def numbering(self, style_id: str | None) -> tuple[str, int | None] | None:
        for style in self.chain(style_id):
            if style.num_id is not None:
                return style.num_id, style.ilvl
        return None


_MONOSPACE = re.compile(
    r"mono|courier|consolas|menlo|monaco|lucida console|source code|fira code|cascadia|"
    r"inconsolata|fixedsys|andale",
    re.IGNORECASE,
)


def _font(rpr: etree._Element | None) -> str | None:
    fonts = rpr.find(_w("rFonts")) if rpr is not None else None
    return (fonts.get(_w("ascii")) or fonts.get(_w("hAnsi"))) if fonts is not None else None


def _text_runs(p: etree._Element) -> Iterator[tuple[etree._Element, int]]:
    """A paragraph's runs that hold text, each with its characters (whitespace at the edges of
    its text pieces not counted)."""
    for run in p.iter(_w("r")):
        chars = sum(len((t.text or "").strip()) for t in run.iter(_w("t")))
        if chars:
            yield run, chars


#: Word's font size where neither the document's defaults nor a style set one (10 pt).
_WORD_DEFAULT_SIZE = 20


def _size(rpr: etree._Element | None) -> int | None:
    """A run property's font size in half-points (``w:sz``), None where not set."""
    return _int(_val(rpr.find(_w("sz")))) if rpr is not None else None


def _bold(rpr: etree._Element | None) -> bool | None:
    """A run property's boldness (``w:b``), None where not set."""
    found = rpr.find(_w("b")) if rpr is not None else None
    return None if found is None else _on(found)


def _on_attr(value: str | None) -> bool:
    return value is not None and value.lower() not in _FALSE


@dataclass
class _Level:
    start: int = 1
    fmt: str = "decimal"
    text: str = "%1."
    legal: bool = False
    style: str | None = None


def _levels(parent: etree._Element) -> dict[int, _Level]:
    out: dict[int, _Level] = {}
    for lvl in parent.findall(_w("lvl")):
        ilvl = _int(lvl.get(_w("ilvl")), 0) or 0
        text_el = lvl.find(_w("lvlText"))
        out[ilvl] = _Level(
            start=_int(_val(lvl.find(_w("start"))), 1) or 0,
            fmt=_val(lvl.find(_w("numFmt"))) or "decimal",
            text=(_val(text_el) or "") if text_el is not None else f"%{ilvl + 1}.",
            legal=_on(lvl.find(_w("isLgl"))),
            style=_val(lvl.find(_w("pStyle"))),
        )
    return out


_ROMAN = [
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
]


def _roman(n: int) -> str:
    out = []
    for value, letters in _ROMAN:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


def format_number(n: int, fmt: str) -> str:
    """``n`` in a ``w:numFmt`` (unknown formats as decimal)."""
    if fmt in ("lowerLetter", "upperLetter"):
        letter = chr(ord("a") + (max(n, 1) - 1) % 26) * ((max(n, 1) - 1) // 26 + 1)
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt in ("lowerRoman", "upperRoman") and n > 0:
        roman = _roman(n)
        return roman.upper() if fmt == "upperRoman" else roman
    if fmt == "decimalZero":
        return f"{n:02d}"
    if fmt == "none":
        return ""
    return str(n)


class _Numbering:
    """List and heading numbers as Word computes them: counters per abstract list definition,
    deeper levels restart when a shallower one advances, ``startOverride`` restarts a list."""

    def __init__(self, root: etree._Element | None) -> None:
        self.abstract: dict[str, dict[int, _Level]] = {}
        self.nums: dict[str, tuple[str, dict[int, int], dict[int, _Level]]] = {}
        self.counters: dict[str, list[int | None]] = {}
        self.started: set[str] = set()
        if root is None:
            return
        for abstract in root.findall(_w("abstractNum")):
            aid = abstract.get(_w("abstractNumId"))
            if aid is not None:
                self.abstract[aid] = _levels(abstract)
        for num in root.findall(_w("num")):
            nid, aid = num.get(_w("numId")), _val(num.find(_w("abstractNumId")))
            if nid is None or aid is None:
                continue
            starts: dict[int, int] = {}
            overrides: dict[int, _Level] = {}
            for override in num.findall(_w("lvlOverride")):
                ilvl = _int(override.get(_w("ilvl")), 0) or 0
                start = _int(_val(override.find(_w("startOverride"))))
                if start is not None:
                    starts[ilvl] = start
                overrides.update(_levels(override))
            self.nums[nid] = (aid, starts, overrides)

    def _level(self, num_id: str, ilvl: int) -> _Level | None:
        aid, _, overrides = self.nums[num_id]
        return overrides.get(ilvl) or self.abstract.get(aid, {}).get(ilvl)

    def level_of_style(self, num_id: str, style_id: str | None) -> int:
        if num_id in self.nums and style_id is not None:
            aid = self.nums[num_id][0]
            for ilvl, level in self.abstract.get(aid, {}).items():
                if level.style == style_id:
                    return ilvl
        return 0

    def marker(self, num_id: str, ilvl: int) -> tuple[str, bool] | None:
        """(marker text, is a bullet) of the next item of list ``num_id`` at ``ilvl``."""
        if num_id not in self.nums:
            return None
        ilvl = min(max(ilvl, 0), _MAX_LEVELS - 1)
        level = self._level(num_id, ilvl)
        if level is None:
            return None
        if level.fmt == "bullet":
            return "-", True
        aid, starts, _ = self.nums[num_id]
        counters = self.counters.setdefault(aid, [None] * _MAX_LEVELS)
        if num_id not in self.started:
            self.started.add(num_id)
            for at, start in starts.items():
                if 0 <= at < _MAX_LEVELS:
                    counters[at] = start - 1
        current = counters[ilvl]
        counters[ilvl] = level.start if current is None else current + 1
        for deeper in range(ilvl + 1, _MAX_LEVELS):
            counters[deeper] = None

        def number(match: re.Match[str]) -> str:
            at = int(match.group(1)) - 1
            lvl = self._level(num_id, at) or _Level()
            value = counters[at] if 0 <= at < _MAX_LEVELS else None
            value = lvl.start if value is None else value
            return format_number(value, "decimal" if level.legal else lvl.fmt)

        text = re.sub(r"%([1-9])", number, level.text).strip()
        return (text, False) if text else None


# --- the text layer ------------------------------------------------------------------------


@dataclass
class _Heading:
    start: int
    end: int
    level: int  # 0: a title
    text: str


@dataclass
class Writer:
    """The text layer being written block by block, with the heading and table marks into it
    (shared with ``powerpoint``): blocks are separated by a blank line, consecutive list items
    by a line break; a table is ``| a | b |`` rows with a ``| - |`` rule after its header."""

    parts: list[str] = field(default_factory=list)
    pos: int = 0
    last: str = ""
    headings: list[_Heading] = field(default_factory=list)
    tables: list[TableMark] = field(default_factory=list)

    def _emit(self, text: str, kind: str) -> int:
        if self.pos:
            sep = "\n" if kind in ("list", "code") and self.last == kind else "\n\n"
            self.parts.append(sep)
            self.pos += len(sep)
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        self.last = kind
        return start

    def block(self, text: str, kind: str = "para") -> int | None:
        """A block; a list item or code line keeps its leading indentation. Returns where it
        starts in the text layer (None: nothing written)."""
        text = text.rstrip() if kind in ("list", "code") else text.strip()
        if text.strip():
            return self._emit(text, kind)
        return None

    def heading(self, text: str, level: int) -> None:
        text = clean(text)
        if text:
            start = self._emit(text, "heading")
            self.headings.append(_Heading(start, self.pos, level, text))

    def table(self, rows: list[list[str]], header_rows: int) -> None:
        rows = [[cell.replace("|", "\\|") for cell in row] for row in rows if any(row)]
        if not rows:
            return
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        header_rows = min(header_rows, len(rows))
        if header_rows == len(rows):
            header_rows = 1 if len(rows) > 1 else 0
        lines: list[str] = []
        spans: list[tuple[int, int]] = []
        offset = self.pos + (2 if self.pos else 0)
        header: tuple[int, int] | None = None
        for index, row in enumerate(rows):
            line = "| " + " | ".join(row) + " |"
            spans.append((offset, offset + len(line)))
            lines.append(line)
            offset += len(line) + 1
            if header_rows and index == header_rows - 1:
                rule = "| " + " | ".join(["-"] * width) + " |"
                lines.append(rule)
                header = (spans[0][0], offset + len(rule))
                offset += len(rule) + 1
        start = self._emit("\n".join(lines), "table")
        self.tables.append(TableMark(start, self.pos, header, tuple(spans[header_rows:])))

    def value(self) -> str:
        return "".join(self.parts)


@dataclass
class _Para:
    text: str
    heading: int | None
    marker: str | None
    ilvl: int
    boxes: list[etree._Element]
    code: bool = False
    #: A body paragraph's element and style, to read its look later (``typographic_headings``).
    source: tuple[etree._Element, str | None] | None = None


class _Converter:
    def __init__(self, package: _Package, main: str, deadline: Deadline) -> None:
        self.package = package
        self.deadline = deadline
        self.styles = _Styles(package.xml(package.related(main, "/styles")))
        self.numbering = _Numbering(package.xml(package.related(main, "/numbering")))
        self.main = main
        self.writer = Writer()
        self.notes: dict[str, dict[str, int]] = {"footnote": {}, "endnote": {}}
        self.warnings: list[str] = []
        self._main_rels: dict[str, tuple[str, str, bool]] | None = None
        self.blocks_seen = 0
        #: Where the last equation written ended (its list, its length then).
        self._math_end: tuple[list[str], int] | None = None
        #: Each body paragraph written: its span in the text layer, its element and style.
        self.body: list[tuple[int, int, tuple[etree._Element, str | None]]] = []

    # inline content -> text (text boxes collected for after the paragraph)

    def inline(self, element: etree._Element, out: list[str], boxes: list[etree._Element]) -> None:
        for child in element:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            if omml.is_math(child):
                last = self._math_end
                if last is not None and last[0] is out and last[1] == len(out):
                    out.append(" ")  # equations side by side: "a=b c=d", not "a=bc=d"
                out.append(omml.text(child))
                self._math_end = (out, len(out))
                continue
            ns, _, local = tag[1:].partition("}")
            if ns == W:
                self._w_inline(child, local, out, boxes)
            elif ns == MC and local == "AlternateContent":
                chosen = _alternate(child)
                if chosen is not None:
                    self.inline(chosen, out, boxes)
            elif local == "txbxContent":
                boxes.append(child)
            elif ns == V:
                self._vml(child, out, boxes)
            elif ns in (WP, A, WPS) or local in ("wgp", "grpSp", "wsp"):
                self._drawing(child, out, boxes)

    def _w_inline(
        self, child: etree._Element, local: str, out: list[str], boxes: list[etree._Element]
    ) -> None:
        if local == "t":
            out.append(child.text or "")
        elif local in ("tab", "ptab"):
            out.append("\t")
        elif local in ("br", "cr"):
            out.append("\n")
        elif local == "noBreakHyphen":
            out.append("-")
        elif local == "sym":
            char = child.get(_w("char")) or ""
            try:
                code = int(char, 16)
            except ValueError:
                code = None
            if code is not None and not 0xE000 <= code <= 0xF8FF and code < 0x110000:
                out.append(chr(code))
        elif local in ("footnoteReference", "endnoteReference"):
            kind = local[: -len("Reference")]
            note_id = child.get(_w("id"))
            if note_id is not None:
                numbers = self.notes[kind]
                number = numbers.setdefault(note_id, len(numbers) + 1)
                out.append(f"[{number}]")
        elif local in ("drawing", "pict", "object"):
            if local == "drawing":
                self._drawing(child, out, boxes)
            else:
                self._vml(child, out, boxes)
        elif local == "sdt":
            checkbox = _checkbox(child)
            if checkbox is not None:
                out.append(checkbox)
            else:
                content = child.find(_w("sdtContent"))
                if content is not None:
                    self.inline(content, out, boxes)
        elif local == "ruby":
            base = child.find(_w("rubyBase"))
            if base is not None:
                self.inline(base, out, boxes)
        elif local == "txbxContent":
            boxes.append(child)
        elif local in (
            "r",
            "hyperlink",
            "smartTag",
            "customXml",
            "fldSimple",
            "ins",
            "moveTo",
            "dir",
            "bdo",
            "sdtContent",
        ):
            self.inline(child, out, boxes)
        # del, moveFrom, delText, instrText, pPr, rPr, bookmarks, comments refs: no text

    def _drawing(
        self, element: etree._Element, out: list[str], boxes: list[etree._Element]
    ) -> None:
        """DrawingML: an image's alt text, a shape's text box, a group's members."""
        stack = [element]
        while stack:
            node = stack.pop()
            for child in reversed(list(node)):
                if not isinstance(child.tag, str):
                    continue
                local = etree.QName(child.tag).localname
                if local == "docPr":
                    alt = clean(child.get("descr") or child.get("title") or "")
                    if alt and not is_file_name(alt):
                        out.append(f" [Image: {alt}] ")
                elif local == "txbxContent" or child.tag in (f"{{{C}}}chart", f"{{{DGM}}}relIds"):
                    boxes.append(child)  # written after the paragraph
                elif local == "AlternateContent":
                    chosen = _alternate(child)
                    if chosen is not None:
                        stack.append(chosen)
                elif local not in ("blipFill", "spPr", "style", "extLst", "nvPicPr"):
                    stack.append(child)

    def _vml(self, element: etree._Element, out: list[str], boxes: list[etree._Element]) -> None:
        """VML (``w:pict``, legacy images and text boxes): alt text and text box content."""
        for node in element.iter():
            if not isinstance(node.tag, str):
                continue
            local = etree.QName(node.tag).localname
            if local == "txbxContent":
                boxes.append(node)
            elif local == "imagedata":
                parent = node.getparent()
                alt = clean(
                    (parent.get("alt") if parent is not None else None)
                    or node.get(f"{{{VML_O}}}title")
                    or ""
                )
                if alt and not is_file_name(alt):
                    out.append(f" [Image: {alt}] ")

    # blocks

    def paragraph(self, p: etree._Element) -> _Para:
        ppr = p.find(_w("pPr"))
        style = _val(ppr.find(_w("pStyle"))) if ppr is not None else None
        out: list[str] = []
        boxes: list[etree._Element] = []
        self.inline(p, out, boxes)
        code = self._monospace(p, style)
        text = "".join(out).rstrip() if code else "".join(out).strip()
        heading = self.styles.heading(style)
        outline = ppr.find(_w("outlineLvl")) if ppr is not None else None
        if outline is not None:
            level = _int(_val(outline))
            heading = level + 1 if level is not None and 0 <= level < _MAX_LEVELS else None
        marker: str | None = None
        ilvl = 0
        numbering = self._numbering(ppr, style)
        if numbering is not None:
            num_id, ilvl = numbering
            found = self.numbering.marker(num_id, ilvl)
            if found is not None:
                marker = found[0]
        source = (p, style) if heading is None and marker is None and not code else None
        return _Para(text, heading, marker, ilvl, boxes, code, source)

    def looks(self) -> list[tuple[int, int, tuple[int, bool]]]:
        """Each body paragraph written: its span in the text layer and its look. Read only
        for a document without heading styles, so a styled one pays nothing for it."""
        out: list[tuple[int, int, tuple[int, bool]]] = []
        for start, end, (p, style) in self.body:
            look = self._look(p, style, end - start <= _TYPO_MAX_CHARS)
            if look is not None:
                out.append((start, end, look))
        return out

    def _look(self, p: etree._Element, style: str | None, short: bool) -> tuple[int, bool] | None:
        """The size most of the paragraph's characters are set in and whether every one is
        bold (run properties over the style's), for ``typographic_headings``. A paragraph
        too long to be a heading only counts towards the body's size: its first run's size
        stands for it (its runs are not all read again)."""
        size, bold = self.styles.look(style)
        if not short:
            for run, _ in _text_runs(p):
                return _size(run.find(_w("rPr"))) or size, False
            return None
        sizes: dict[int, int] = {}
        all_bold = True
        for run, chars in _text_runs(p):
            rpr = run.find(_w("rPr"))
            run_size = _size(rpr) or size
            sizes[run_size] = sizes.get(run_size, 0) + chars
            run_bold = _bold(rpr)
            if not (bold if run_bold is None else run_bold):
                all_bold = False
        if not sizes:
            return None
        return max(sizes, key=lambda k: (sizes[k], k)), all_bold

    def _monospace(self, p: etree._Element, style: str | None) -> bool:
        """Every run with text is set in a monospaced font: code (its indentation is kept)."""
        inherited = self.styles.font(style)
        seen = False
        for run, _ in _text_runs(p):
            font = _font(run.find(_w("rPr"))) or inherited
            if font is None or not _MONOSPACE.search(font):
                return False
            seen = True
        return seen

    def _numbering(self, ppr: etree._Element | None, style: str | None) -> tuple[str, int] | None:
        num_pr = ppr.find(_w("numPr")) if ppr is not None else None
        if num_pr is not None:
            num_id = _val(num_pr.find(_w("numId")))
            ilvl = _int(_val(num_pr.find(_w("ilvl"))))
            if num_id is None and ilvl is not None:
                inherited = self.styles.numbering(style)
                num_id = inherited[0] if inherited else None
            if num_id is None or num_id == "0":
                return None
            return num_id, ilvl if ilvl is not None else 0
        inherited = self.styles.numbering(style)
        if inherited is None or inherited[0] == "0":
            return None
        num_id, ilvl = inherited
        if ilvl is None:
            ilvl = self.numbering.level_of_style(num_id, style)
        return num_id, ilvl

    def blocks(self, parent: etree._Element, *, headings: bool = True) -> None:
        for child in parent:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            self.blocks_seen += 1
            self.deadline.tick(f"block {self.blocks_seen:,}")
            ns, _, local = tag[1:].partition("}")
            if ns == MC and local == "AlternateContent":
                chosen = _alternate(child)
                if chosen is not None:
                    self.blocks(chosen, headings=headings)
            elif ns != W:
                continue
            elif local == "p":
                self._write_paragraph(self.paragraph(child), headings)
            elif local == "tbl":
                frame = _frame_cell(child)
                if frame is not None:
                    self.blocks(frame, headings=headings)
                    continue
                rows, header_rows = self.table(child)
                self.writer.table(rows, header_rows)
            elif local == "sdt":
                content = child.find(_w("sdtContent"))
                if content is not None:
                    self.blocks(content, headings=headings)
            elif local in ("customXml", "ins", "moveTo", "txbxContent"):
                self.blocks(child, headings=headings)

    def _write_paragraph(self, para: _Para, headings: bool) -> None:
        writer = self.writer
        if para.text:
            if headings and para.heading is not None:
                label = (
                    f"{para.marker} {para.text}"
                    if para.marker and para.marker != "-"
                    else para.text
                )
                writer.heading(label, para.heading)
            elif para.marker is not None:
                writer.block(f"{'  ' * para.ilvl}{para.marker} {para.text.strip()}", "list")
            else:
                start = writer.block(para.text, "code" if para.code else "para")
                if start is not None and headings and para.source is not None:
                    self.body.append((start, writer.pos, para.source))
        for box in para.boxes:
            if box.tag == f"{{{C}}}chart":
                title, rows = self.chart(box)
                writer.block(title)
                writer.table(rows, 1)
            elif box.tag == f"{{{DGM}}}relIds":
                writer.block("\n".join(self.diagram(box)), "list")
            else:
                self.blocks(box, headings=False)

    def _related(self, rid: str | None) -> str | None:
        """The part a relationship of the main document points at, if it is in the package."""
        if self._main_rels is None:
            self._main_rels = self.package.rels(self.main)
        found = self._main_rels.get(rid or "")
        if found is None or found[2] or found[1] not in self.package.names:
            return None
        return found[1]

    def diagram(self, rel_ids: etree._Element) -> list[str]:
        """A SmartArt diagram's node texts (its data part), one ``- `` line each."""
        root = self.package.xml(self._related(rel_ids.get(f"{{{R}}}dm")))
        return diagram_lines(root) if root is not None else []

    def chart(self, element: etree._Element) -> tuple[str, list[list[str]]]:
        """A chart's title and data rows (``charts.py``); nothing when its part is unreadable."""
        part = self._related(element.get(f"{{{R}}}id"))
        if part is None:
            return "", []
        blob = read_member(self.package.zip, part, self.package.source_key)
        try:
            return read_chart(blob, self.package.source_key, part)
        except DocumentError:
            raise
        except Exception as exc:  # a damaged chart: say so, keep the rest of the document
            self.warnings.append(f"chart {part} could not be read: {type(exc).__name__}: {exc}")
            return "", []

    # tables

    def table(self, tbl: etree._Element) -> tuple[list[list[str]], int]:
        """The cell grid of ``tbl`` (merged cells repeated) and how many header rows it has."""
        grid: list[list[str]] = []
        header_rows = 0
        in_header = True
        above: dict[int, str] = {}
        for tr in _children(tbl, "tr"):
            trpr = tr.find(_w("trPr"))
            col = _int(_val(trpr.find(_w("gridBefore")))) if trpr is not None else None
            col = min(col or 0, MAX_COLUMNS)
            row: dict[int, str] = {}
            for tc in _children(tr, "tc"):
                tcpr = tc.find(_w("tcPr"))
                span = _int(_val(tcpr.find(_w("gridSpan")))) if tcpr is not None else None
                span = max(1, min(span or 1, MAX_COLUMNS - col))
                if span <= 0 or col >= MAX_COLUMNS:
                    break
                vmerge = tcpr.find(_w("vMerge")) if tcpr is not None else None
                if vmerge is not None and (_val(vmerge) or "continue") == "continue":
                    text = above.get(col, "")
                else:
                    text = self.cell(tc)
                for at in range(col, col + span):
                    row[at] = text
                col += span
            width = max(row) + 1 if row else 0
            cells = [row.get(at, "") for at in range(width)]
            above = row
            grid.append(cells)
            repeat = trpr is not None and _on(trpr.find(_w("tblHeader")))
            if in_header and repeat:
                header_rows += 1
            else:
                in_header = False
        if header_rows == 0 and len(grid) > 1:
            header_rows = 1
        return grid, header_rows

    def cell(self, tc: etree._Element) -> str:
        """A cell's content on one line: paragraphs and list items in order, nested tables
        flattened (cells joined by ``, ``, rows by ``; ``)."""
        pieces: list[str] = []
        for child in _blocks_in(tc):
            local = etree.QName(child.tag).localname
            if local == "p":
                para = self.paragraph(child)
                text = para.text.strip()
                if text:
                    pieces.append(f"{para.marker} {text}" if para.marker else text)
                for box in para.boxes:
                    if box.tag == f"{{{C}}}chart":
                        title, rows = self.chart(box)
                        flat = "; ".join(", ".join(c for c in r if c) for r in rows if any(r))
                        pieces.extend(p for p in (title, flat) if p)
                    elif box.tag == f"{{{DGM}}}relIds":
                        pieces.extend(self.diagram(box))
                    else:
                        pieces.append(self.cell(box))
            elif local == "tbl":
                rows, _ = self.table(child)
                pieces.append("; ".join(", ".join(c for c in r if c) for r in rows if any(r)))
        return clean(" ".join(p for p in pieces if p))

    # notes and comments

    def appendix(self) -> None:
        for kind, title, suffix in (
            ("footnote", FOOTNOTES, "/footnotes"),
            ("endnote", ENDNOTES, "/endnotes"),
        ):
            numbers = self.notes[kind]
            if not numbers:
                continue
            root = self.package.xml(self.package.related(self.main, suffix))
            if root is None:
                continue
            by_id = {n.get(_w("id")): n for n in root.findall(_w(kind))}
            entries = []
            for note_id, number in sorted(numbers.items(), key=lambda item: item[1]):
                note = by_id.get(note_id)
                if note is not None:
                    text = self.cell(note)
                    if text:
                        entries.append(f"[{number}] {text}")
            if entries:
                self.writer.heading(title, 1)
                for entry in entries:
                    self.writer.block(entry, "list")
        root = self.package.xml(self.package.related(self.main, "/comments"))
        if root is None:
            return
        entries = []
        for comment in root.findall(_w("comment")):
            self.deadline.tick("comments")
            author = clean(comment.get(_w("author")) or "")
            initials = clean(comment.get(_w("initials")) or "")
            line = comment_line((author, initials), comment.get(_w("date")), self.cell(comment))
            if line:
                entries.append(line)
        if entries:
            self.writer.heading(COMMENTS, 1)
            for entry in entries:
                self.writer.block(entry, "list")


def comment_line(author: tuple[str, str] | None, when: str | None, text: str) -> str:
    """``[author: Name (initials), time: when]: text`` (labels only for what is known)."""
    if not text:
        return ""
    labels = []
    if author and author[0]:
        labels.append(f"author: {author[0]}" + (f" ({author[1]})" if author[1] else ""))
    if when:
        labels.append(f"time: {when}")
    return f"[{', '.join(labels)}]: {text}" if labels else text


def diagram_lines(data_model: etree._Element) -> list[str]:
    """The texts of a SmartArt data part's content nodes, as ``- text`` lines in their order."""
    lines = []
    for point in data_model.iter(f"{{{DGM}}}pt"):
        if point.get("type", "node") not in ("node", "asst"):
            continue
        body = point.find(f"{{{DGM}}}t")
        if body is not None:
            paragraphs = (
                "".join(t.text or "" for t in p.iter(f"{{{A}}}t")) for p in body.iter(f"{{{A}}}p")
            )
            line = clean(" ".join(paragraphs))
            if line:
                lines.append(f"- {line}")
    return lines


def _alternate(element: etree._Element) -> etree._Element | None:
    """The branch of ``mc:AlternateContent`` to read: its first ``Choice``, else ``Fallback``
    (reading both would write a text box twice)."""
    choice = element.find(f"{{{MC}}}Choice")
    return choice if choice is not None else element.find(f"{{{MC}}}Fallback")


def _checkbox(sdt: etree._Element) -> str | None:
    props = sdt.find(_w("sdtPr"))
    if props is None:
        return None
    box = props.find(f"{{{W14}}}checkbox")
    if box is None:
        return None
    checked = box.find(f"{{{W14}}}checked")
    value = checked.get(f"{{{W14}}}val") if checked is not None else "0"
    return "[x]" if (value or "0").lower() in ("1", "true", "on") else "[ ]"


def _frame_cell(tbl: etree._Element) -> etree._Element | None:
    """The one cell of a table of one row and one column: a frame drawn around content (a
    boxed note, a list, a table inside), not a table. Its content is read as the body's is,
    lists as lists and a table in it as a table; as a table it was one cell holding all of it
    on one line ("Tab1, Tab2, Tab3; A, B, C")."""
    rows = _children(tbl, "tr")
    if len(rows) != 1:
        return None
    cells = _children(rows[0], "tc")
    return cells[0] if len(cells) == 1 else None


def _children(parent: etree._Element, local: str) -> list[etree._Element]:
    """``parent``'s ``w:{local}`` children, looking through content controls and custom XML."""
    out: list[etree._Element] = []
    stack = list(reversed(list(parent)))
    while stack:
        child = stack.pop()
        if child.tag == _w(local):
            out.append(child)
        elif child.tag in (_w("sdt"), _w("customXml")):
            inner = child.find(_w("sdtContent")) if child.tag == _w("sdt") else child
            if inner is not None:
                stack.extend(reversed(list(inner)))
    return out


def _blocks_in(parent: etree._Element) -> list[etree._Element]:
    out: list[etree._Element] = []
    stack = list(reversed(list(parent)))
    while stack:
        child = stack.pop()
        if child.tag in (_w("p"), _w("tbl")):
            out.append(child)
        elif child.tag in (_w("sdt"), _w("customXml"), f"{{{MC}}}AlternateContent"):
            if child.tag == _w("sdt"):
                inner = child.find(_w("sdtContent"))
            elif child.tag == _w("customXml"):
                inner = child
            else:
                inner = _alternate(child)
            if inner is not None:
                stack.extend(reversed(list(inner)))
    return out


#: A typographic heading: at most this many characters and words, set at least this much
#: larger than the body, or bold at the body's size; at most this many levels.
_TYPO_MAX_CHARS, _TYPO_MAX_WORDS, _TYPO_LARGER, _TYPO_LEVELS = 120, 14, 1.15, 3
#: A paragraph that does not end a sentence reads as body text from this length on.
_TYPO_BODY_CHARS = 60
#: Letters a line in capitals holds at least to stand out ("NOTE", not "OK").
_TYPO_MIN_CAPITALS = 4
#: A heading does not end a sentence or lead into what follows.
_SENTENCE_END = re.compile(r"[.!?;:,…]$")
_LETTER = re.compile(r"[^\W\d_]")


def typographic_headings(
    text: str, looks: list[tuple[int, int, tuple[int, bool]]]
) -> list[_Heading]:
    """Headings a document without heading styles sets by hand: short paragraphs, not ending
    a sentence, larger than the body text, or bold or in capitals at its size, each followed
    by body text (a paragraph that reads as prose, a list or a table) or by a heading of a
    smaller look. The body is the size most characters are set in; levels follow the looks:
    larger first, then bold, then capitals. Two such headings at least, else none: one bold
    line is emphasis, a run of short bold lines a list or a form, not an outline (what the PDF
    reader does by typography, here on the run properties Word stores)."""
    if len(looks) < 3:
        return []
    chars: dict[int, int] = {}
    for start, end, (size, _) in looks:
        chars[size] = chars.get(size, 0) + end - start
    body = max(chars, key=lambda k: (chars[k], -k))
    styled: list[tuple[int, bool, bool] | None] = []  # size, bold, capitals; None: body text
    for start, end, (size, bold) in looks:
        line = text[start:end]
        letters = [c for c in line if c.isalpha()]
        capitals = len(letters) >= _TYPO_MIN_CAPITALS and all(c.isupper() for c in letters)
        short = (
            len(line) <= _TYPO_MAX_CHARS
            and "\n" not in line
            and len(line.split()) <= _TYPO_MAX_WORDS
            and not _SENTENCE_END.search(line)
            and bool(letters)
        )
        stands_out = size >= body * _TYPO_LARGER or (size >= body and (bold or capitals))
        styled.append((size, bold, capitals) if short and stands_out else None)

    def followed_by_body(i: int) -> bool:
        start, end, _ = looks[i]
        j = i + 1
        if text[end : looks[j][0] if j < len(looks) else len(text)].strip():
            return True  # a list, a table, code: content under the heading
        if j == len(looks):
            return False
        mine, next_look = styled[i], styled[j]
        if next_look is not None:
            return mine is not None and next_look < mine  # a heading of a smaller look
        following = text[looks[j][0] : looks[j][1]]
        return _SENTENCE_END.search(following) is not None or len(following) >= max(
            _TYPO_BODY_CHARS, 2 * (end - start)
        )

    kept = {i: look for i, look in enumerate(styled) if look is not None and followed_by_body(i)}
    if len(kept) < 2 or sum(looks[i][1] - looks[i][0] for i in kept) * 4 > sum(chars.values()):
        return []
    ranked = sorted(set(kept.values()), reverse=True)[:_TYPO_LEVELS]
    out: list[_Heading] = []
    for i, look in kept.items():
        start, end, _ = looks[i]
        level = ranked.index(look) + 1 if look in ranked else _TYPO_LEVELS
        out.append(_Heading(start, end, level, clean(text[start:end])))
    return out


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a DOCX package."""
    key = document.source_key
    deadline = current_deadline(key)
    package = _Package(raw, key)
    try:
        main = package.main_part("/officeDocument", "word/document.xml")
        root = package.xml(main)
        body = root.find(_w("body")) if root is not None else None
        if body is None:
            raise CorruptDocumentError(key, f"{main!r} has no w:body (not a Word document?)")
        converter = _Converter(package, main, deadline)
        converter.blocks(body)
        converter.appendix()
    finally:
        package.zip.close()
    writer = converter.writer
    text = writer.value()
    if not text.strip():
        raise EmptyDocumentError(key, "the Word document has no text")
    marks = writer.headings
    if all(h.level == 0 for h in marks):
        marks = sorted(
            [*marks, *typographic_headings(text, converter.looks())], key=lambda h: h.start
        )
    # A title above the headings: every heading one level below it.
    shift = 1 if marks and marks[0].level == 0 else 0
    headings = [
        HeadingMark(h.start, h.end, 1 if h.level == 0 else h.level + shift, h.text) for h in marks
    ]
    sections = build_sections(text, document, headings, writer.tables)
    return ParsedDocument(
        document=document, text_layer=text, sections=sections, warnings=converter.warnings
    )
