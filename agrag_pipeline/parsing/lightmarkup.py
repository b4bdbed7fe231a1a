"""Org (``.org``) and AsciiDoc (``.adoc``, ``.asciidoc``): line-based markup read into our own
text layer (``textlayer``), so every span is exact.

No well-kept permissive Python reader exists for either (AsciiDoc's reference readers are
Ruby's Asciidoctor and the GPL ``asciidoc`` package; Org's is Emacs), and both are line-based:
a heading, a block delimiter or a table row is recognised by how its line starts. What a reader
sees is kept, the markup goes:
- headings: Org ``* Title`` (TODO keyword, priority and tags removed), AsciiDoc ``== Title``;
  a document title (Org ``#+title:``, AsciiDoc ``= Title``) is the level-1 heading, and the
  other headings nest below it;
- paragraphs are joined into one line each; list items keep their own lines (``- item``;
  AsciiDoc's ordered ``.`` items numbered per level, ``1.``, ``2.``);
- literal and source blocks (Org ``#+begin_src``/``#+begin_example`` and ``: `` lines,
  AsciiDoc ``----`` and ``....`` and paragraphs whose first line is indented) keep their lines
  and indentation as written; comments, property drawers, attribute entries and
  block attributes leave nothing;
- tables are pipe rows (``| a | b |``) with their header when the source marks one;
- inline markup (``*bold*``, ``~code~``, ``` `mono` ```, links as their text) is reduced to its
  text; AsciiDoc ``{attribute}`` references are replaced by the values the header defines.
Includes (``include::file[]``, ``#+include:``, ``#+setupfile:``) are never followed: only the
given file is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

ORG_MEDIA_TYPE = "text/x-org"
ASCIIDOC_MEDIA_TYPE = "text/asciidoc"


_DESCRIPTION = re.compile(r"\s+::(?:\s+|$)")


class _Blocks:
    """Paragraph lines and list lines gathered until a blank line or a structural line."""

    def __init__(self, layer: TextLayer, inline: Callable[[str], str]) -> None:
        self.layer = layer
        self.inline = inline
        self.paragraph: list[str] = []
        self.items: list[str] = []

    def flush(self) -> None:
        if self.paragraph:
            self.layer.paragraph(self.inline(" ".join(self.paragraph)))
            self.paragraph = []
        if self.items:
            # Org's description items ("- term :: text") read "- term: text".
            self.layer.lines([self.inline(_DESCRIPTION.sub(": ", i, 1)) for i in self.items])
            self.items = []

    def text(self, line: str) -> None:
        if self.items:  # a continuation line of the last list item
            self.items[-1] += " " + line.strip()
        else:
            self.paragraph.append(line.strip())

    def item(self, line: str) -> None:
        if self.paragraph:
            self.flush()
        self.items.append(line)


def _table(layer: TextLayer, rows: list[list[str]], header: bool) -> None:
    if rows:
        layer.table(rows, header_rows=1 if header else 0)


# --- Org ------------------------------------------------------------------------------------

_ORG_HEADLINE = re.compile(r"^(\*+)\s+(.*)$")
_ORG_TODO = re.compile(r"^(?:TODO|DONE|NEXT|WAIT|WAITING|HOLD|CANCELED|CANCELLED)\s+")
_ORG_PRIORITY = re.compile(r"^\[#[A-Z0-9]\]\s*")
_ORG_TAGS = re.compile(r"\s+:[\w@#%:]+:\s*$")
_ORG_COOKIE = re.compile(r"\s*\[\d*(?:%|/\d*)\]")
_ORG_KEYWORD = re.compile(r"^\s*#\+(\w+):\s?(.*)$")
_ORG_BEGIN = re.compile(r"^\s*#\+begin_(\w+)(?:[ \t]+(\S+))?", re.IGNORECASE)
#: A footnote reference ``[fn:1]`` (read "[1]") and an inline note ``[fn::text]`` or
#: ``[fn:name:text]`` (read "(text)").
_ORG_FOOTNOTE = re.compile(r"\[fn:([\w-]+)\]")
_ORG_INLINE_NOTE = re.compile(r"\[fn:[\w-]*:([^\[\]]+)\]")
_ORG_DRAWER = re.compile(r"^\s*:[\w-]+:\s*$")
_ORG_LIST = re.compile(r"^(\s*)(?:[-+]|\d+[.)]|(?<=\s)\*)\s+(.*)$")
_ORG_LINK = re.compile(r"\[\[([^\]]*)\](?:\[([^\]]*)\])?\]")
_ORG_EMPHASIS = re.compile(r"(?<![\w\\])([~=*/+_])(?=\S)(.+?)(?<=\S)\1(?![\w])")
_VERBATIM_BLOCKS = frozenset({"src", "example", "export"})
#: A fixed-width line (``: code``): an example written without a block.
_ORG_FIXED_WIDTH = re.compile(r"^\s*:(?: |$)")


def _org_link(match: re.Match[str]) -> str:
    target, description = match.group(1), match.group(2)
    if description:
        return description
    scheme, _, rest = target.partition(":")
    if rest and scheme not in ("http", "https", "file", "mailto", "ftp"):
        return rest.lstrip(":")  # "doom-package:flycheck" -> "flycheck"
    return target


def _org_inline(text: str) -> str:
    text = _ORG_LINK.sub(_org_link, text)
    text = _ORG_FOOTNOTE.sub(r"[\1]", _ORG_INLINE_NOTE.sub(r"(\1)", text))
    for _ in range(3):  # nested emphasis (*bold /italic/*)
        text, count = _ORG_EMPHASIS.subn(r"\2", text)
        if not count:
            break
    return text.replace("\\\\", " ")


def _org_cells(line: str) -> list[str]:
    return [_org_inline(c.strip()) for c in line.strip().strip("|").split("|")]


def parse_org(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of an Org document."""
    deadline = current_deadline(document.source_key)
    layer = TextLayer()
    blocks = _Blocks(layer, _org_inline)
    lines = text.splitlines()
    has_title = any(
        (m := _ORG_KEYWORD.match(line)) is not None and m.group(1).lower() == "title"
        for line in lines[:200]
    )
    index = 0
    while index < len(lines):
        deadline.tick(f"line {index + 1:,}")
        line = lines[index]
        index += 1
        stripped = line.strip()
        headline = _ORG_HEADLINE.match(line)
        if headline:
            blocks.flush()
            title = _ORG_TAGS.sub("", headline.group(2))
            title = _ORG_COOKIE.sub("", _ORG_PRIORITY.sub("", _ORG_TODO.sub("", title)))
            level = len(headline.group(1)) + (1 if has_title else 0)
            layer.heading(_org_inline(title), min(level, 6))
            continue
        if not stripped:
            blocks.flush()
            continue
        begin = _ORG_BEGIN.match(line)
        if begin:
            blocks.flush()
            kind = begin.group(1).lower()
            end = re.compile(rf"^\s*#\+end_{re.escape(kind)}\b", re.IGNORECASE)
            body: list[str] = []
            while index < len(lines) and not end.match(lines[index]):
                body.append(lines[index])
                index += 1
            index += 1
            language = (begin.group(2) or "").lower()
            if kind == "html" or (kind == "export" and language == "html"):
                # Raw HTML for the HTML export: its text, as a browser would show it.
                layer.lines([_HTML_TAG.sub(" ", line) for line in body])
            elif kind in _VERBATIM_BLOCKS:
                layer.preformatted(body)
            elif kind != "comment":
                layer.paragraph(_org_inline(" ".join(body)))
            continue
        keyword = _ORG_KEYWORD.match(line)
        if keyword:
            blocks.flush()
            name, value = keyword.group(1).lower(), keyword.group(2)
            if name == "title":
                layer.heading(_org_inline(value), 1)
            elif name in ("subtitle", "caption"):
                layer.paragraph(_org_inline(value))
            continue  # other keywords (options, includes, setup files) leave nothing
        if _ORG_DRAWER.match(line) and stripped.upper() != ":END:":
            blocks.flush()
            while index < len(lines) and lines[index].strip().upper() != ":END:":
                index += 1
            index += 1
            continue
        if stripped.startswith("# ") or stripped == "#":
            continue  # a comment line
        if stripped.startswith("|"):
            blocks.flush()
            rows: list[list[str]] = []
            header = False
            while True:
                if re.match(r"^\s*\|[-+]+\|?\s*$", line):
                    header = header or len(rows) == 1
                else:
                    rows.append(_org_cells(line))
                if index >= len(lines) or not lines[index].strip().startswith("|"):
                    break
                line = lines[index]
                index += 1
            _table(layer, rows, header)
            continue
        if _ORG_FIXED_WIDTH.match(line):
            blocks.flush()
            body = [line]
            while index < len(lines) and _ORG_FIXED_WIDTH.match(lines[index]):
                body.append(lines[index])
                index += 1
            layer.preformatted([_ORG_FIXED_WIDTH.sub("", b, count=1) for b in body])
            continue
        item = _ORG_LIST.match(line)
        if item:
            blocks.item(f"{item.group(1)}- {item.group(2)}")
            continue
        blocks.text(line)
    blocks.flush()
    return layer.parsed(document, "the Org document holds no text")


# --- AsciiDoc -------------------------------------------------------------------------------

#: "== Title" (and Asciidoctor's Markdown-style "## Title").
_ADOC_HEADING = re.compile(r"^(={1,6}|#{1,6})\s+(\S.*?)\s*(?:=*)\s*$")
_HTML_TAG = re.compile(r"<[^>]*>")
_ADOC_ATTRIBUTE = re.compile(r"^:(!?[\w-]+!?):\s*(.*)$")
_ADOC_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|_{4,}|\*{4,}|={4,}|/{4,}|--)\s*$")
_ADOC_BLOCK_ATTRIBUTES = re.compile(r"^\[[^\]]*\]\s*$")
_ADOC_LIST = re.compile(r"^\s*(\*{1,5}|-|\.{1,5}|\d+\.)\s+(.*)$")
_ADOC_DESCRIPTION = re.compile(r"^(.*?\S)(:{2,4}|;;)(?:\s+(.*))?$")
_ADOC_DIRECTIVE = re.compile(r"^(?:include|toc|ifdef|ifndef|ifeval|endif)::")
_ADOC_IMAGE = re.compile(r"^image::[^\[]*\[([^\],]*)[^\]]*\]\s*$")
_ADOC_MACRO = re.compile(
    r"\b(?:link|xref|mailto|footnote|kbd|btn|menu|pass|image|icon|anchor|indexterm2?):"
    r"([^\[\s]*)\[([^\]]*)\]"
)
#: An inline formula (``latexmath:[x^2]``, ``stem:[…]``, ``asciimath:[…]``): its source, as
#: a LaTeX formula is kept elsewhere (a ``\]`` inside is a bracket of the formula).
_ADOC_MATH = re.compile(r"\b(?:latexmath|asciimath|stem):\[((?:\\\]|[^\]])*)\]")
_ADOC_URL = re.compile(r"\b((?:https?|ftp|irc)://[^\s\[\]]+)\[([^\]]*)\]")
_ADOC_XREF = re.compile(r"<<([^,>]+)(?:,\s*([^>]+))?>>")
_ADOC_ANCHOR = re.compile(r"\[\[[^\]]*\]\]|\[#[\w-]+\]")
_ADOC_EMPHASIS = re.compile(r"(?<![\w\\])(\*\*|__|``|##|\*|_|`|#|\+)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_ADOC_ATTR_REF = re.compile(r"(?<!\\)\{([\w-]+)\}")
_VERBATIM_DELIMITERS = ("----", "....", "++++")


def _adoc_macro(match: re.Match[str]) -> str:
    target, text = match.group(1), match.group(2)
    return text.split(",")[0].strip('"') if text else target


def _adoc_inline(text: str, attributes: dict[str, str]) -> str:
    text = _ADOC_ATTR_REF.sub(lambda m: attributes.get(m.group(1).lower(), m.group(0)), text)
    text = _ADOC_ANCHOR.sub("", text)
    text = _ADOC_URL.sub(lambda m: m.group(2) or m.group(1), text)
    text = _ADOC_MATH.sub(lambda m: m.group(1).replace("\\]", "]"), text)
    text = _ADOC_MACRO.sub(_adoc_macro, text)
    text = _ADOC_XREF.sub(lambda m: m.group(2) or m.group(1), text)
    for _ in range(3):
        text, count = _ADOC_EMPHASIS.subn(r"\2", text)
        if not count:
            break
    return text.replace(" +", "").strip()


#: A cell separator, with its optional specifier at a line's start or after a space (``2+|``
#: spans two columns, ``.3+|`` three rows, ``3*|`` repeats the cell, ``a|`` ``^.>s|`` style
#: and alignment); an escaped ``\\|`` is text.
_ADOC_CELL = re.compile(
    r"(?P<spec>(?:^|(?<=\s))(?:(?P<repeat>\d+)\*)?(?:(?P<cols>\d+)?(?:\.(?P<rows>\d+))?\+)?"
    r"[<^>]?(?:\.[<^>])?[adehlmsv]?)?(?<!\\)\|"
)


@dataclass
class _AdocCell:
    text: str
    columns: int = 1
    rows: int = 1


def _adoc_cells(line: str) -> tuple[str, list[_AdocCell]]:
    """(text continuing the previous cell, the cells the line starts)."""
    matches = list(_ADOC_CELL.finditer(line))
    if not matches:
        return line, []
    cells: list[_AdocCell] = []
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        text = line[match.end() : following.start() if following else len(line)].strip()
        for _ in range(int(match["repeat"] or 1)):
            cells.append(_AdocCell(text, int(match["cols"] or 1), int(match["rows"] or 1)))
    return line[: matches[0].start()].strip(), cells


def _adoc_columns(block_attributes: str) -> int | None:
    """The column count a ``[cols="1,2a,3*"]`` attribute gives; None without one."""
    found = re.search(r"\bcols\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^,\]\s]+))", block_attributes)
    if not found:
        return None
    value = next(g for g in found.groups() if g is not None).strip()
    if value.isdigit():
        return int(value) or None  # cols=3: three columns
    count = 0
    for spec in re.split(r"[,;]", value):
        repeat = re.match(r"\s*(\d+)\*", spec)
        count += int(repeat.group(1)) if repeat else 1
    return count or None


def _adoc_table(
    table_lines: list[str], inline: Callable[[str], str], block_attributes: str = ""
) -> tuple[list[list[str]], bool]:
    """(rows, has a header) of a ``|===`` table. The column count is the ``cols`` attribute's,
    else the cells of the first line; cells may each sit on their own line, continue over
    several lines, span columns and rows (left empty where spanned) or repeat. The first line
    followed by a blank line is the header row (AsciiDoc's implicit header), as is one marked
    ``%header``/``options="header"``; ``%noheader`` turns the implicit one off."""
    lines = [
        line for line in table_lines if not (line.startswith("//") and not line.startswith("////"))
    ]
    content = [line for line in lines if line]
    if not content:
        return [], False
    first = next(i for i, line in enumerate(lines) if line)
    width = _adoc_columns(block_attributes) or max(
        1, sum(cell.columns for cell in _adoc_cells(lines[first])[1])
    )
    options = block_attributes.lower()
    header = ("header" in options and "noheader" not in options) or (
        "noheader" not in options and first + 1 < len(lines) and not lines[first + 1]
    )
    cells: list[_AdocCell] = []
    for line in content:
        continued, started = _adoc_cells(line)
        if continued and cells:
            cells[-1].text += " " + continued  # a cell's text continued on the next line
        cells.extend(started)
    rows: list[list[str]] = []
    occupied: dict[tuple[int, int], bool] = {}  # (row, column) held by a cell spanning rows
    row, column = 0, 0
    for cell in cells:
        while occupied.get((row, column)):
            column += 1
            if column >= width:
                row, column = row + 1, 0
        while len(rows) <= row:
            rows.append([""] * width)
        rows[row][column] = inline(cell.text)
        for r in range(row, row + cell.rows):
            for c in range(column, min(width, column + cell.columns)):
                occupied[(r, c)] = True
        column += cell.columns
        if column >= width:
            row, column = row + 1, 0
    return rows, header


def _adoc_marker(mark: str, ordinals: dict[int, int]) -> str:
    """An item's marker as a reader sees it: "-" for ``*``/``-`` items, the item's number for
    ``.`` items (counted per nesting level, ``ordinals``) and for ``3.`` ones."""
    depth = len(mark) if mark[0] in ".*" else 1
    for deeper in [d for d in ordinals if d > depth]:
        del ordinals[deeper]  # a nested list's count ends with it
    if mark[0].isdigit():
        ordinals[depth] = int(mark[:-1])
        return mark
    if mark[0] != ".":
        return "-"
    ordinals[depth] = ordinals.get(depth, 0) + 1
    return f"{ordinals[depth]}."


def parse_asciidoc(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of an AsciiDoc document."""
    deadline = current_deadline(document.source_key)
    layer = TextLayer()
    attributes: dict[str, str] = {}

    def inline(value: str) -> str:
        return _adoc_inline(value, attributes)

    blocks = _Blocks(layer, inline)
    lines = text.splitlines()
    index = 0
    block_attributes = ""  # the ``[...]`` lines just above the current line
    ordinals: dict[int, int] = {}  # the last number of each level of the current ordered list
    while index < len(lines):
        deadline.tick(f"line {index + 1:,}")
        line = lines[index]
        index += 1
        stripped = line.strip()
        attributes_of_block, block_attributes = block_attributes, ""
        if not stripped:
            blocks.flush()
            continue
        if stripped.startswith("//") and not stripped.startswith("////"):
            continue  # a comment line
        heading = _ADOC_HEADING.match(line)
        if heading:
            blocks.flush()
            ordinals.clear()
            layer.heading(inline(heading.group(2)), len(heading.group(1)))
            continue
        attribute = _ADOC_ATTRIBUTE.match(line)
        if attribute:
            blocks.flush()
            attributes[attribute.group(1).strip("!").lower()] = attribute.group(2).strip()
            continue
        if _ADOC_BLOCK_ATTRIBUTES.match(stripped):
            block_attributes = attributes_of_block + stripped  # a table below reads its cols
            continue
        if _ADOC_DIRECTIVE.match(stripped):
            continue  # includes are never followed
        image = _ADOC_IMAGE.match(stripped)
        if image:
            blocks.flush()
            layer.paragraph(inline(image.group(1)))
            continue
        delimiter = _ADOC_DELIMITER.match(stripped)
        if delimiter:
            blocks.flush()
            fence = delimiter.group(1)
            if fence.startswith(_VERBATIM_DELIMITERS) or fence.startswith("////"):
                body: list[str] = []
                while index < len(lines) and lines[index].strip() != fence:
                    body.append(lines[index])
                    index += 1
                index += 1
                if fence.startswith("++++"):  # passthrough: raw HTML, read as its text
                    layer.lines([_HTML_TAG.sub(" ", line) for line in body])
                elif not fence.startswith("////"):
                    layer.preformatted(body)
            continue  # quote, sidebar, example and open blocks: their content reads as text
        if stripped.startswith("|==="):
            blocks.flush()
            table_lines: list[str] = []
            while index < len(lines) and not lines[index].strip().startswith("|==="):
                table_lines.append(lines[index].strip())
                index += 1
            index += 1
            _table(layer, *_adoc_table(table_lines, inline, attributes_of_block))
            continue
        if re.match(r"^\.[^.\s]", stripped):
            blocks.flush()
            layer.paragraph(inline(stripped[1:]))  # a block title
            continue
        if stripped == "+":
            continue  # a list continuation joiner
        item = _ADOC_LIST.match(line)
        if item:
            blocks.item(f"{_adoc_marker(item.group(1), ordinals)} {item.group(2)}")
            continue
        if line[:1] in " \t" and (index < 2 or not lines[index - 2].strip()):
            # A paragraph whose first line is indented is a literal one: code as written, to
            # the next blank line (an indented line under a list item or a ``+`` is not).
            body = [line]
            while (
                index < len(lines)
                and lines[index].strip()
                and not _ADOC_DELIMITER.match(lines[index].strip())
            ):
                body.append(lines[index])
                index += 1
            layer.preformatted(body)
            continue
        description = _ADOC_DESCRIPTION.match(stripped)
        if description and not stripped.startswith("http"):
            blocks.item(f"- {description.group(1)}: {description.group(3) or ''}".rstrip(": "))
            continue
        if not blocks.items:
            ordinals.clear()  # prose between two lists: the next one counts from 1
        blocks.text(line)
    blocks.flush()
    return layer.parsed(document, "the AsciiDoc document holds no text")


__all__ = ["ASCIIDOC_MEDIA_TYPE", "ORG_MEDIA_TYPE", "parse_asciidoc", "parse_org"]
