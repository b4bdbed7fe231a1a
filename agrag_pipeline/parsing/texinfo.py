"""Texinfo sources (``.texi``, ``.texinfo``, ``.txi``: GNU manuals), read as their HTML manual
reads, into our own text layer (``textlayer``).

The reference reader, ``texi2any``, is GPL-licensed Perl; no permissive Python reader exists.
Texinfo is line-based: a block opens with ``@name`` on a line of its own and closes with
``@end name``, a heading or list item is a line command, and inline markup is ``@cmd{…}``, so
a reader of what the HTML output shows is a short loop:

- ``@settitle`` (or ``@top``'s line) is the level-1 heading; ``@chapter``, ``@unnumbered``,
  ``@appendix`` level 2, their sections 3, subsections 4, subsubsections 5;
- paragraphs are joined into one line each; ``@itemize``/``@enumerate`` items are lines
  (``- item``, ``1. item``), a ``@table`` item's terms a line of their own above its text,
  ``@multitable`` a table; a definition (``@deffn Command run args``) reads "Command: run args";
- ``@example``, ``@lisp``, ``@display``, ``@format`` and ``@verbatim`` keep their lines and
  indentation; ``@footnote{…}`` is read in brackets where it is referred to;
- inline commands are their text (``@code{x}`` "x", ``@uref{url, text}`` "text",
  ``@xref{Node}`` "See Node", ``@value{v}`` the ``@set`` value, accents as letters);
- left out, as from the HTML manual: node lines and menus, index entries, the title page and
  copying text, ``@iftex``/``@ifinfo``/``@tex``/``@ignore`` and macro definitions.
``@include`` is never followed: only the file given is read.
"""

from __future__ import annotations

import re
import unicodedata

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "application/x-texinfo"

_HEADING_LEVELS = {
    "top": 1,
    "chapter": 2,
    "unnumbered": 2,
    "appendix": 2,
    "majorheading": 2,
    "chapheading": 2,
    "section": 3,
    "unnumberedsec": 3,
    "appendixsec": 3,
    "appendixsection": 3,
    "heading": 3,
    "subsection": 4,
    "unnumberedsubsec": 4,
    "appendixsubsec": 4,
    "subheading": 4,
    "subsubsection": 5,
    "unnumberedsubsubsec": 5,
    "appendixsubsubsec": 5,
    "subsubheading": 5,
}
#: Blocks whose text the HTML manual does not show.
_SKIPPED_BLOCKS = frozenset(
    {
        "ignore",
        "iftex",
        "ifinfo",
        "ifplaintext",
        "ifdocbook",
        "iflatex",
        "ifxml",
        "ifnothtml",
        "tex",
        "latex",
        "docbook",
        "xml",
        "macro",
        "rmacro",
        "copying",
        "titlepage",
        "direntry",
        "documentdescription",
        "menu",
        "detailmenu",
        "html",
    }
)
#: Blocks whose lines are kept as written (inline commands still read, except in verbatim).
_LISTING_BLOCKS = frozenset(
    {
        "example",
        "smallexample",
        "lisp",
        "smalllisp",
        "display",
        "smalldisplay",
        "format",
        "smallformat",
        "verbatim",
    }
)
_TAB = re.compile(r"(?:^|\s)@tab\b")
#: Definition blocks (``@deffn``, ``@defun``, …); ``@deffnx`` and kin add a line to one.
_DEFINITIONS = frozenset(
    {
        "deffn",
        "defun",
        "defmac",
        "defspec",
        "defvar",
        "defopt",
        "deftypefn",
        "deftypefun",
        "deftypevar",
        "deftypevr",
        "defvr",
        "deftp",
        "defmethod",
        "deftypemethod",
        "defop",
        "deftypeop",
        "defcv",
        "deftypecv",
        "defivar",
        "deftypeivar",
    }
)
#: Blocks whose content reads as running text (an optional label before it).
_TEXT_BLOCKS = frozenset(
    {
        "quotation",
        "smallquotation",
        "cartouche",
        "indentedblock",
        "smallindentedblock",
        "flushleft",
        "flushright",
        "raggedright",
        "float",
        "ifhtml",
        "ifnottex",
        "ifnotinfo",
        "ifnotplaintext",
        "ifnotdocbook",
        "ifnotlatex",
        "ifnotxml",
        "ifset",
        "ifclear",
        "group",
        "sidebar",
        "nodocbook",
    }
)
_LIST_BLOCKS = frozenset({"itemize", "enumerate", "table", "vtable", "ftable", "multitable"})
#: Line commands that leave nothing.
_SILENT = re.compile(
    r"^@(?:c|comment|node|setfilename|settitle|set|clear|[a-z]*index|defcodeindex|"
    r"paragraphindent|exampleindent|firstparagraphindent|documentencoding|documentlanguage|"
    r"setchapternewpage|headings|finalout|printindex|contents|shortcontents|summarycontents|"
    r"page|sp|need|noindent|indent|vskip|include|dircategory|syncodeindex|synindex|"
    r"allowcodebreaks|frenchspacing|raisesections|lowersections|insertcopying|"
    r"setcontentsaftertitlepage|setshortcontentsaftertitlepage|evenheading|oddheading|"
    r"everyheading|evenfooting|oddfooting|everyfooting|smallbook|afourpaper|afivepaper|"
    r"deftypefnnewline|novalidate|kbdinputstyle|urefbreakstyle|codequoteundirected|"
    r"codequotebacktick|xrefautomaticsectiontitle|hyphenation|columnfractions|"
    r"anchor|refill|group|end\s+group|title|subtitle|author|bye)\b|^\\input\b"
)
_LINE_COMMAND = re.compile(r"^@([A-Za-z]+)\b\s*(.*)$")
_END = re.compile(r"^@end\s+([A-Za-z]+)")
_SETTITLE = re.compile(r"^@settitle\s+(.*)$")
_COMMENT = re.compile(r"(?:^|(?<=\s))@c(?:omment)?(?:\s.*)?$")
#: An innermost brace command: ``@name{text without braces}``.
_BRACED = re.compile(r"@([A-Za-z]+|[\"'`^~=,.v])\{([^{}]*)\}")
_ACCENTED = re.compile(r"@([\"'`^~=])([A-Za-z])")
_SYMBOLS = {
    "dots": "...",
    "enddots": "...",
    "copyright": "©",
    "registeredsymbol": "®",
    "TeX": "TeX",
    "LaTeX": "LaTeX",
    "result": "=>",
    "expansion": "->",
    "print": "-|",
    "error": "error->",
    "equiv": "==",
    "point": "*",
    "bullet": "•",
    "minus": "-",
    "today": "",
    "tie": " ",
    "comma": ",",
    "atchar": "@",
    "lbracechar": "{",
    "rbracechar": "}",
    "backslashchar": "\\",
    "hashchar": "#",
    "geq": ">=",
    "leq": "<=",
    "arrow": "->",
    "euro": "€",
    "pounds": "£",
    "textdegree": "°",
    "quotedblleft": "“",
    "quotedblright": "”",
    "quoteleft": "‘",
    "quoteright": "’",
    "ss": "ß",
    "AE": "Æ",
    "ae": "æ",
    "OE": "Œ",
    "oe": "œ",
    "O": "Ø",
    "o": "ø",
    "L": "Ł",
    "l": "ł",
    "exclamdown": "¡",
    "questiondown": "¿",
    "ordf": "ª",
    "ordm": "º",
}
_ACCENT_MARKS = {
    '"': "\u0308",
    "'": "\u0301",
    "`": "\u0300",
    "^": "\u0302",
    "~": "\u0303",
    "=": "\u0304",
    ",": "\u0327",
    ".": "\u0307",
    "v": "\u030c",
}
#: Placeholders for the escaped characters while commands are read.
_AT, _OPEN, _CLOSE = "\ue000", "\ue001", "\ue002"


def _braced(match: re.Match[str], values: dict[str, str], titles: dict[str, str]) -> str:
    name, argument = match.group(1), match.group(2)
    if name in _ACCENT_MARKS:
        return unicodedata.normalize("NFC", argument + _ACCENT_MARKS[name])
    if name in _SYMBOLS:
        return _SYMBOLS[name] + argument
    arguments = [a.strip() for a in argument.split(",")]
    if name == "value":
        return values.get(argument.strip(), argument.strip())
    if name in ("uref", "url", "email"):
        shown = arguments[2] if len(arguments) > 2 and arguments[2] else ""
        return shown or (arguments[1] if len(arguments) > 1 and arguments[1] else arguments[0])
    if name in ("xref", "pxref", "ref", "inforef"):
        # The title given, else the node's section title (as the HTML manual links read).
        given = arguments[2] if len(arguments) > 2 and arguments[2] else ""
        target = given or titles.get(arguments[0], arguments[0])
        return {"xref": "See ", "pxref": "see "}.get(name, "") + target
    if name in ("acronym", "abbr"):
        return arguments[0] + (f" ({arguments[1]})" if len(arguments) > 1 and arguments[1] else "")
    if name == "footnote":
        return f" ({' '.join(argument.split())})"
    if name == "image":
        return arguments[3] if len(arguments) > 3 else ""
    if name in ("anchor", "indexterm", "hyphenation"):
        return ""
    return argument  # @code, @var, @emph, @samp, @file, @w, @sc, @r, @t, ... and unknown ones


def _inline(text: str, values: dict[str, str], titles: dict[str, str] | None = None) -> str:
    """What the HTML manual shows of one line or paragraph of Texinfo ``text``."""
    text = text.replace("@@", _AT).replace("@{", _OPEN).replace("@}", _CLOSE)
    text = _ACCENTED.sub(
        lambda m: unicodedata.normalize("NFC", m.group(2) + _ACCENT_MARKS[m.group(1)]), text
    )
    for _ in range(32):  # innermost first; nesting deeper than this is left as written
        text, count = _BRACED.subn(lambda m: _braced(m, values, titles or {}), text)
        if not count:
            break
    text = re.sub(r"@(?:-|/|:|\*|\|)", "", text).replace("@.", ".").replace("@?", "?")
    text = text.replace("@!", "!").replace("@ ", " ").replace("@\t", " ")
    return text.replace(_AT, "@").replace(_OPEN, "{").replace(_CLOSE, "}")


class _Reader:
    def __init__(self, key: str) -> None:
        self.layer = TextLayer()
        self.deadline = current_deadline(key)
        self.values: dict[str, str] = {}
        self.paragraph: list[str] = []
        self.lines: list[str] = []  # list items or table terms, one a line
        self.numbers: list[int] = []  # the next number of each open @enumerate
        self.titles: dict[str, str] = {}  # node name -> the title of the heading it holds

    def _text(self, text: str) -> str:
        return _inline(text, self.values, self.titles)

    def flush(self) -> None:
        self._flush_paragraph()
        if self.lines:
            self.layer.lines([self._text(line) for line in self.lines])
            self.lines = []

    def read(self, source: str) -> TextLayer:
        lines = source.splitlines()
        self.titles = _node_titles(lines)
        title = next((m.group(1).strip() for m in map(_SETTITLE.match, lines) if m), "")
        has_top = any(line.startswith("@top") for line in lines)
        if title and not has_top:
            self.layer.heading(self._text(title), 1)
        stack: list[str] = []
        index = 0
        while index < len(lines):
            self.deadline.tick(f"line {index + 1:,}")
            line = lines[index]
            index += 1
            end = _END.match(line)
            if end:
                if end.group(1) in stack:
                    while stack and stack.pop() != end.group(1):
                        pass
                    self.flush()
                    if end.group(1) == "enumerate" and self.numbers:
                        self.numbers.pop()
                continue
            command = _LINE_COMMAND.match(line)
            name = command.group(1) if command else ""
            if name in _SKIPPED_BLOCKS:
                index = self._skip(lines, index, name)
                continue
            if name in _LISTING_BLOCKS:
                self.flush()
                index = self._listing(lines, index, name)
                continue
            if name == "set" and command is not None:
                key, _, value = command.group(2).partition(" ")
                self.values[key] = value.strip()
                continue
            if name == "bye":
                break
            if name in _HEADING_LEVELS and command is not None:
                self.flush()
                self.layer.heading(self._text(command.group(2)), _HEADING_LEVELS[name])
                continue
            if name in _LIST_BLOCKS:
                self.flush()
                stack.append(name)
                if name == "enumerate":
                    start = command.group(2).strip() if command else ""
                    self.numbers.append(int(start) if start.isdigit() else 1)
                if name == "multitable":
                    index = self._multitable(lines, index)
                    stack.pop()
                continue
            if name in ("item", "itemx") and stack and stack[-1] in _LIST_BLOCKS:
                self._item(stack[-1], name, command.group(2) if command else "")
                continue
            if name in _DEFINITIONS and command is not None:
                self.flush()
                stack.append(name)
                self.layer.paragraph(_definition_line(name, command.group(2), self.values))
                continue
            if name.endswith("x") and name[:-1] in _DEFINITIONS and command is not None:
                self.flush()
                self.layer.paragraph(_definition_line(name[:-1], command.group(2), self.values))
                continue
            if name in ("center", "exdent") and command is not None:
                self.flush()
                self.layer.paragraph(self._text(command.group(2)))
                continue
            if name in _TEXT_BLOCKS:
                self.flush()
                stack.append(name)
                label = command.group(2).strip() if command else ""
                if label and name in ("quotation", "smallquotation", "float", "sidebar"):
                    self.layer.paragraph(self._text(label) + ":")
                continue
            if not line.strip():
                self.flush()
                continue
            if _SILENT.match(line):
                continue
            text = _COMMENT.sub("", line).strip()
            if not text:
                continue
            if self.lines:  # a list item's or table item's own text
                if stack and stack[-1] in ("table", "vtable", "ftable") and not self.paragraph:
                    self.layer.lines([self._text(x) for x in self.lines])
                    self.lines = []
                    self.paragraph.append(text)
                else:
                    self.lines[-1] += " " + text
                continue
            self.paragraph.append(text)
        self.flush()
        return self.layer

    def _flush_paragraph(self) -> None:
        if self.paragraph:
            self.layer.paragraph(self._text(" ".join(self.paragraph)))
            self.paragraph = []

    def _item(self, block: str, name: str, text: str) -> None:
        if block in ("itemize", "enumerate"):
            self._flush_paragraph()  # the items of one list stay lines of one block
            if block == "enumerate" and self.numbers:
                marker = f"{self.numbers[-1]}."
                self.numbers[-1] += 1
            else:
                marker = "-"
            self.lines.append(f"{marker} {text.strip()}".rstrip())
        elif name == "itemx" and self.lines:
            self.lines[-1] += ", " + text.strip()
        else:  # a @table item: its term on a line of its own above its text
            self.flush()
            self.lines.append(text.strip())

    def _skip(self, lines: list[str], index: int, name: str) -> int:
        """The index after the ``@end name`` of a block left out (nested ones counted)."""
        depth = 1
        opening = re.compile(rf"^@{name}\b")
        while index < len(lines):
            line = lines[index]
            index += 1
            end = _END.match(line)
            if opening.match(line):
                depth += 1
            elif end is not None and end.group(1) == name:
                depth -= 1
                if not depth:
                    break
        return index

    def _listing(self, lines: list[str], index: int, name: str) -> int:
        body: list[str] = []
        while index < len(lines):
            line = lines[index]
            index += 1
            end = _END.match(line)
            if end and end.group(1) == name:
                break
            if name == "verbatim":
                body.append(line)
            elif not _SILENT.match(line) or line.startswith("@noindent"):
                body.append(self._text(_COMMENT.sub("", line)))
        self.layer.preformatted(body)
        return index

    def _multitable(self, lines: list[str], index: int) -> int:
        """A ``@multitable`` as a table: ``@headitem`` rows its header, ``@tab`` its cells."""
        rows: list[str] = []
        header = 0
        while index < len(lines):
            line = lines[index]
            index += 1
            end = _END.match(line)
            if end and end.group(1) == "multitable":
                break
            command = _LINE_COMMAND.match(line)
            if command and command.group(1) in ("item", "headitem"):
                if command.group(1) == "headitem" and len(rows) == header:
                    header += 1
                rows.append(command.group(2))
            elif rows and line.strip() and not _SILENT.match(line):
                rows[-1] += " " + line.strip()  # a continuation, or a ``@tab`` line
        cells = [[self._text(c.strip()) for c in _TAB.split(row)] for row in rows]
        self.layer.table(cells, header)
        return index


_NODE = re.compile(r"^@node\s+([^,]+)")


def _node_titles(lines: list[str]) -> dict[str, str]:
    """Each ``@node``'s name -> the text of the heading line that follows it."""
    titles: dict[str, str] = {}
    node: str | None = None
    for line in lines:
        found = _NODE.match(line)
        if found:
            node = found.group(1).strip()
            continue
        command = _LINE_COMMAND.match(line)
        if node is not None and command and command.group(1) in _HEADING_LEVELS:
            titles[node] = command.group(2).strip()
            node = None
    return {name: _inline(title, {}) for name, title in titles.items()}


def _definition_line(name: str, arguments: str, values: dict[str, str]) -> str:
    """``@deffn Command forward-word count`` as "Command: forward-word count"."""
    parts = re.findall(r"\{[^{}]*\}|\S+", arguments)
    words = [p[1:-1] if p.startswith("{") else p for p in parts]
    category = {
        "defun": "Function",
        "defmac": "Macro",
        "defspec": "Special Form",
        "defvar": "Variable",
        "defopt": "User Option",
        "deftypefun": "Function",
        "deftypevar": "Variable",
    }.get(name)
    if category is None and words:
        category, words = words[0], words[1:]
    line = " ".join(words)
    return _inline(f"{category}: {line}" if category else line, values)


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of a Texinfo source ``text``."""
    layer = _Reader(document.source_key).read(text)
    return layer.parsed(document, "the Texinfo source holds no text")


__all__ = ["MEDIA_TYPE", "parse"]
