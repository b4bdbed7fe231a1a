"""LaTeX sources (``.tex``): sections as headings, readable text, mathematics kept as LaTeX.

pylatexenc (MIT) parses the source into nodes and renders text from them; we walk the nodes of
the document body and write the text layer ourselves (``textlayer``), so every span is exact:
- ``\\title`` (from the preamble) is the level-1 heading, ``\\author`` a line under it;
- ``\\part`` … ``\\subparagraph`` (starred or not) are headings, nested by their rank, below
  the title; the ``abstract`` environment is a heading "Abstract" with its text;
- everything else is pylatexenc's text rendering with mathematics kept verbatim (``$x^2$``,
  ``\\begin{equation}…\\end{equation}``): macros become their text (``\\emph{a}`` -> ``a``,
  accents -> letters), comments go, paragraphs are split at blank lines; list items and table
  rows keep their own lines; ``\\verb`` keeps its characters;
- code environments (``verbatim``, ``lstlisting``, ``minted``, fancyvrb's ``Verbatim``) are
  written as they stand in the source, lines and indentation kept; a ``comment``
  environment's text is left out.
``\\input`` and ``\\include`` are never followed: the parser reads no file (an ``\\input``
loop cannot loop), and only the file given is the document. A source nested past Python's
recursion limit is an error naming the file; the parse checks the document's time budget
between top-level nodes.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db
from pylatexenc.latexwalker import (
    LatexEnvironmentNode,
    LatexGroupNode,
    LatexMacroNode,
    LatexToken,
    LatexWalker,
    LatexWalkerError,
)
from pylatexenc.latexwalker import get_default_latex_context_db as walker_context_db
from pylatexenc.macrospec import EnvironmentSpec, LatexContextDb, MacroSpec

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import latex_tables
from agrag_pipeline.parsing.budget import Deadline, current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "application/x-latex"

#: Sectioning commands by rank (the shallowest one used becomes level 2, under the title).
_SECTIONS = {
    "part": 0,
    "chapter": 1,
    "section": 2,
    "subsection": 3,
    "subsubsection": 4,
    "paragraph": 5,
    "subparagraph": 6,
}
_NOT_IN_HEADINGS = frozenset({"footnote", "thanks", "label", "index"})
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_END_DOCUMENT = re.compile(r"\\end\s*\{document\}")
_VERB = re.compile(r"\\verb\*?([^\sA-Za-z*])(.*?)\1")
#: An environment whose body is code, with the options it may take (``[...]``; minted's
#: ``{language}``): pylatexenc drops a ``verbatim``'s text and reads a ``lstlisting``'s as
#: LaTeX, so ``%`` ended a line of code and ``{`` opened a group.
_CODE_ENVIRONMENT = re.compile(
    r"\\begin\s*\{(verbatim\*?|Verbatim\*?|BVerbatim|LVerbatim|spverbatim|lstlisting|minted"
    r"|comment)\}([ \t]*\[[^\]\n]*\])?"
)
_MINTED_LANGUAGE = re.compile(r"[ \t]*\{[^{}\n]*\}")
#: What stands for a code environment's body while the rest is parsed (its index as argument).
_LISTING_MACRO = "agraglisting"
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_LIST_LINE = re.compile(r"^\s*(?:[*•\-]|\d+[.)])\s")
_ESCAPES = {
    "\\": "\\textbackslash{}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    **{c: "\\" + c for c in "{}$&#_%"},
}


class _Text(LatexNodes2Text):
    """pylatexenc's text rendering that never reads an ``\\input`` file."""

    #: Macros rendered as nothing while set (an author block's ``\\thanks``, written after it).
    left_out: frozenset[str] = frozenset()
    #: The code environments' bodies (``_listings_apart``), for a listing inside a paragraph.
    listings: tuple[str, ...] = ()

    def read_input_file(self, fn: str) -> str:
        return ""

    def macro_node_to_text(self, node: Any) -> Any:
        if node.macroname in self.left_out:
            return ""
        if node.macroname == _LISTING_MACRO:
            return "\n" + self.listings[_listing_index(node)] + "\n"
        return super().macro_node_to_text(node)


def _listing_index(node: LatexMacroNode) -> int:
    """The N of ``\\agraglisting{N}`` (written by ``_listings_apart``, so always digits)."""
    argument = node.nodeargd.argnlist[0] if node.nodeargd and node.nodeargd.argnlist else None
    return int(argument.latex_verbatim().strip("{}")) if argument is not None else 0


def _macros_named(nodes: list[Any] | None, name: str) -> list[Any]:
    """Every ``\\name`` among the nodes, inside groups, environments and macro arguments."""
    found: list[Any] = []
    for node in nodes or []:
        if node is None:
            continue
        if isinstance(node, LatexMacroNode):
            if node.macroname == name:
                found.append(node)
            arguments = node.nodeargd.argnlist if node.nodeargd else []
            found.extend(_macros_named(list(arguments), name))
        elif isinstance(node, (LatexGroupNode, LatexEnvironmentNode)):
            found.extend(_macros_named(node.nodelist, name))
    return found


#: Citation commands (natbib's, biblatex's) and cross-references, written as their keys.
_CITATIONS = (
    "cite", "citep", "citet", "citealp", "citealt", "citeauthor", "citeyear", "parencite",
    "textcite", "autocite", "footcite", "Cite", "Citep", "Citet",
)  # fmt: skip
_REFERENCES = ("ref", "eqref", "autoref", "cref", "Cref", "pageref", "nameref", "vref")


def _bracketed_key(node: LatexMacroNode) -> str:
    """``\\cite[p.~3]{a,b}`` as ``[a, b]``, ``\\ref{tab:x}`` as ``[tab:x]``."""
    arguments = node.nodeargd.argnlist if node.nodeargd else []
    key = arguments[-1] if arguments else None
    if key is None:
        return ""
    written = key.latex_verbatim()
    if written.startswith("{") and written.endswith("}"):
        written = written[1:-1]
    keys = [k.strip() for k in written.split(",") if k.strip()]
    return "[" + ", ".join(keys) + "]" if keys else ""


def _spaced(text: str) -> Any:
    """A ``\\xspace`` macro's text: a space after it where one followed it in the source
    (TeX drops the space after a macro; ``\\xspace`` puts it back before a word)."""

    def text_of(node: LatexMacroNode) -> str:
        return text + " " if node.macro_post_space else text

    return text_of


class _Definition(NamedTuple):
    """An argument-free macro the preamble defines: its text, and whether its body ends in
    ``\\xspace``."""

    text: str
    spaced: bool


def _renderer(defined: dict[str, _Definition] | None = None) -> _Text:
    context = _context()
    if defined:
        # The document's own argument-free macros (``\\newcommand\\mytitle{…}``) as their text.
        context.add_context_category(
            "document",
            macros=[
                MacroTextSpec(name, _spaced(text) if spaced else text.replace("%", "%%"))
                for name, (text, spaced) in defined.items()
            ],
            prepend=True,
        )
    return _Text(latex_context=context, math_mode="verbatim", strict_latex_spaces=False)


#: ``\newcommand{\name}{body}``, ``\newcommand\name{body}``, ``\def\name{body}``: no
#: arguments, a body with groups at most one deep (titles, author names, abbreviations, a
#: system's name in its typeface: ``\textsc{Foo}\xspace``).
_BODY = r"\{((?:[^{}]|\{[^{}]*\})*)\}"
_DEFINITION = re.compile(
    rf"\\(?:re)?newcommand\*?\s*\{{?\\([A-Za-z]+)\}}?\s*{_BODY}|\\def\\([A-Za-z]+)\s*{_BODY}"
)
#: A definition's body ending in ``\\xspace`` (the macro keeps the space written after it).
_XSPACE = re.compile(r"\\xspace\s*$")


def _definitions(preamble: str) -> dict[str, _Definition]:
    """The argument-free macros the preamble defines, as their rendered text."""
    renderer = _renderer()
    defined: dict[str, _Definition] = {}
    for match in _DEFINITION.finditer(preamble):
        name = match.group(1) or match.group(3)
        body = match.group(2) if match.group(1) else match.group(4)
        if name and name not in _SECTIONS:
            try:
                text = " ".join(str(renderer.latex_to_text(body)).split())
                defined[name] = _Definition(text, bool(_XSPACE.search(body)))
            except Exception:  # a body pylatexenc cannot render: keep the macro unknown
                continue
    return defined


def _context() -> Any:
    """pylatexenc's default macros (their arguments and text), plus ours."""
    context = get_default_latex_context_db()  # a fresh database per call: safe to extend
    context.add_context_category(
        "agrag",
        macros=[
            MacroTextSpec("maketitle", ""),  # the title is written from the preamble
            MacroTextSpec("and", "\n"),  # between two authors of one \\author
            MacroTextSpec("thanks", "[%(1)s]"),  # as pylatexenc writes a footnote
            MacroTextSpec("input", ""),
            MacroTextSpec("include", ""),
            MacroTextSpec("texttt", "%(1)s"),  # pylatexenc drops typewriter text
            MacroTextSpec("includegraphics", ""),
            MacroTextSpec("rule", ""),
            MacroTextSpec("lipsum", ""),
            MacroTextSpec("cmidrule", ""),
            MacroTextSpec("multicolumn", "%(3)s"),
            MacroTextSpec("multirow", "%(3)s"),
            *latex_tables.TEXT_MACROS,
            # Text pylatexenc drops (its arguments' text) or writes with a box's dimensions.
            *(MacroTextSpec(name, "%(1)s") for name in ("mbox", "textsf", "textup", "textmd")),
            MacroTextSpec("raisebox", "%(4)s"),
            MacroTextSpec("parbox", "%(5)s"),
            MacroTextSpec("hyperlink", "%(2)s"),
            MacroTextSpec("hypertarget", "%(2)s"),
            *(MacroTextSpec(name, "") for name in ("phantom", "hphantom", "vphantom")),
            *(MacroTextSpec(name, name) for name in ("LaTeX", "TeX", "BibTeX")),
            MacroTextSpec("LaTeXe", "LaTeX2e"),
            # A citation and a cross-reference as their keys ("[vaswani2017attention]",
            # "Table [tab:results]"), as docling writes them: pylatexenc writes "<cit.>" and
            # "<ref>", which tell a reader nothing and look like tags.
            *(MacroTextSpec(name, _bracketed_key) for name in (*_CITATIONS, *_REFERENCES)),
            MacroTextSpec("nocite", ""),
        ],
        prepend=True,
    )
    return context


def _verb_as_text(source: str) -> str:
    """``\\verb+a_b+`` as ``\\texttt{a\\_b}``: pylatexenc drops ``\\verb``'s characters."""
    return _VERB.sub(
        lambda m: "\\texttt{" + "".join(_ESCAPES.get(c, c) for c in m.group(2)) + "}", source
    )


def _listings_apart(source: str) -> tuple[str, list[str]]:
    """``source`` with each code environment replaced by ``\\agraglisting{N}`` and the bodies
    (N-th at N), taken before anything else reads the source: a body is code, not LaTeX. A
    ``comment`` environment leaves nothing; one never closed is left to the parser."""
    listings: list[str] = []
    out: list[str] = []
    last = 0
    for match in _CODE_ENVIRONMENT.finditer(source):
        if match.start() < last:  # inside a listing already taken
            continue
        name = match.group(1)
        start = match.end()
        if name == "minted":
            language = _MINTED_LANGUAGE.match(source, start)
            start = language.end() if language else start
        end = source.find(f"\\end{{{name}}}", start)
        if end < 0:
            continue
        out.append(source[last : match.start()])
        if name != "comment":
            body = source[start:end]
            out.append(f"\n\n\\{_LISTING_MACRO}{{{len(listings)}}}\n\n")
            listings.append(body[1:] if body.startswith("\n") else body)
        last = end + len(name) + 6
    if not out:
        return source, listings
    out.append(source[last:])
    return "".join(out), listings


def _walker_context() -> Any:
    """pylatexenc's parsing specs, plus the arguments of macros its text specs expect."""
    context = walker_context_db()
    context.add_context_category(
        "agrag",
        macros=[
            MacroSpec("href", "{{"),
            MacroSpec("thanks", "{"),
            MacroSpec("input", "{"),
            MacroSpec("include", "{"),
            MacroSpec("paragraph", "*[{"),
            MacroSpec("subparagraph", "*[{"),
            MacroSpec("rule", "[{{"),
            MacroSpec("lipsum", "["),
            MacroSpec("multicolumn", "{{{"),
            MacroSpec("multirow", "{{{"),
            MacroSpec(_LISTING_MACRO, "{"),
            *latex_tables.WALKER_MACROS,
            MacroSpec("raisebox", "{[[{"),
            MacroSpec("parbox", "[[[{{"),
            MacroSpec("hyperlink", "{{"),
            MacroSpec("hypertarget", "{{"),
            *(MacroSpec(name, "{") for name in ("phantom", "hphantom", "vphantom")),
            *(MacroSpec(name, "*[[{") for name in _CITATIONS),
            *(MacroSpec(name, "*{") for name in _REFERENCES),
            MacroSpec("nocite", "{"),
        ],
        # Environments that wrap a document's body, with their arguments (which are no text:
        # "UTF8gbsn" was read from ``\begin{CJK*}{UTF8}{gbsn}``).
        environments=[
            EnvironmentSpec("CJK", "*[{{"),
            EnvironmentSpec("CJK*", "[{{"),
            EnvironmentSpec("otherlanguage", "{"),
            EnvironmentSpec("otherlanguage*", "{"),
            EnvironmentSpec("multicols", "{[["),
            EnvironmentSpec("multicols*", "{[["),
            EnvironmentSpec("spacing", "{"),
            *latex_tables.WALKER_ENVIRONMENTS,
        ],
        prepend=True,
    )
    return context


def _holds_sections(node: Any) -> bool:
    """An environment with sectioning commands in it (outside groups): one that wraps the
    body, as ``CJK*`` does a Chinese author's paper, or ``multicols`` a two-column part."""
    return isinstance(node, LatexEnvironmentNode) and any(
        (isinstance(n, LatexMacroNode) and n.macroname in _SECTIONS) or _holds_sections(n)
        for n in node.nodelist or []
    )


class _BudgetedWalker(LatexWalker):
    """pylatexenc's walker with the parse's deadline checked at every nested node list.

    pylatexenc has no budget of its own, and its tolerant parsing backtracks exponentially in
    groups that open an environment they do not close: a real 47 KB paper defining 20
    theorem-like environments (``\\newenvironment{x}{\\begin{X}...}{\\end{X}}``) ran for
    many minutes. Every recursion goes through ``get_latex_nodes``, so checking there bounds
    the whole parse by the document's time budget (``ParseTimeoutError`` naming the file).
    """

    def __init__(self, source: str, context: Any, deadline: Deadline) -> None:
        super().__init__(source, latex_context=context, tolerant_parsing=True)
        self._deadline = deadline
        #: Per context database: the characters a LaTeX special (``~``, ``--``, ``&``) opens
        #: with. The databases are kept beside, so an id is never another's.
        self._special_starts: dict[int, tuple[Any, frozenset[str] | None]] = {}

    def get_latex_nodes(self, *args: Any, **kwargs: Any) -> Any:
        self._deadline.tick("LaTeX parsing")
        return super().get_latex_nodes(*args, **kwargs)

    def get_token(
        self,
        pos: int,
        include_brace_chars: Any = None,
        environments: bool = True,
        keep_inline_math: Any = None,
        parsing_state: Any = None,
        **kwargs: Any,
    ) -> Any:
        """pylatexenc's token at ``pos``; the common ones read here, as pylatexenc reads them.

        pylatexenc reads text a character a token, and tests each for every special of every
        category of its database (~40 ``startswith`` calls), builds a closure for its errors
        and slices the rest of the source at each ``\\begin``: most of a LaTeX parse. Text
        characters, braces and macros named by letters are read here; anything else (a blank
        line, ``%``, ``$``, ``\\[``, a special, a brace asked for) by pylatexenc."""
        token = None
        if not kwargs:  # ``brackets_are_chars``: pylatexenc's own reading
            token = self._common_token(pos, include_brace_chars, environments, parsing_state)
        if token is None:
            return super().get_token(
                pos, include_brace_chars, environments, keep_inline_math, parsing_state, **kwargs
            )
        return token

    def _common_token(
        self, pos: int, include_brace_chars: Any, environments: bool, parsing_state: Any
    ) -> Any:
        """A ``char``, brace or lettered macro token at ``pos`` (after the spaces pylatexenc
        gobbles before a token), or None for pylatexenc to read."""
        s = self.s
        at = pos
        while at < len(s) and s[at].isspace():
            at += 1
        if at >= len(s):
            return None
        space = s[pos:at]
        if "\n\n" in space:
            return None  # a blank line: a paragraph token
        char = s[at]
        if char == "\\":
            return self._macro_token(at, space, environments)
        if include_brace_chars and any(char in pair for pair in include_brace_chars):
            return None
        if char == "{":
            return LatexToken(tok="brace_open", arg=char, pos=at, len=1, pre_space=space)
        if char == "}":
            return LatexToken(tok="brace_close", arg=char, pos=at, len=1, pre_space=space)
        if char in "%$":
            return None
        context = (parsing_state or self.default_parsing_state).latex_context
        known = self._special_starts.get(id(context))
        if known is None:
            known = self._special_starts[id(context)] = (context, _special_starts(context))
        starts = known[1]
        if starts is None or char in starts:
            return None
        return LatexToken(tok="char", arg=char, pos=at, len=1, pre_space=space)

    def _macro_token(self, pos: int, space: str, environments: bool) -> Any:
        """The macro named by letters at ``pos`` (its backslash), with the spaces after it up
        to a blank line; ``\\begin{name}`` and ``\\end{name}`` as environment tokens."""
        s = self.s
        end = pos + 1
        while end < len(s) and s[end].isalpha():
            end += 1
        if end == pos + 1:
            return None  # ``\&``, ``\[``, a backslash at the end: pylatexenc's
        name = s[pos + 1 : end]
        if environments and name in ("begin", "end"):
            found = _ENVIRONMENT_NAME.match(s, end)
            if found is None:
                return None  # pylatexenc reports it
            return LatexToken(
                tok="begin_environment" if name == "begin" else "end_environment",
                arg=found.group(1),
                pos=pos,
                len=found.end() - pos,
                pre_space=space,
            )
        after = end
        while after < len(s) and s[after].isspace():
            after += 1
        post = s[end:after]
        blank = post.find("\n\n")  # a blank line after the macro ends a paragraph
        if blank >= 0:
            post, after = post[:blank], end + blank
        return LatexToken(
            tok="macro", arg=name, pos=pos, len=after - pos, pre_space=space, post_space=post
        )


#: An environment's name after ``\\begin`` or ``\\end``, as pylatexenc reads it.
_ENVIRONMENT_NAME = re.compile(r"\s*\{([\w* ._-]+)\}")


def _special_starts(context: Any) -> frozenset[str] | None:
    """The first characters of ``context``'s specials; None where its look-up is not
    pylatexenc's own (a subclass may find specials otherwise: no shortcut then)."""
    if type(context).test_for_specials is not LatexContextDb.test_for_specials:
        return None
    return frozenset(
        chars[0] for category in context.category_list for chars in context.d[category]["specials"]
    )


#: Definitions whose bodies are code, not text: ``\newenvironment`` and friends (name,
#: optional argument count and default, begin code, end code).
_ENVIRONMENT_DEFINITION = re.compile(r"\\(?:re)?newenvironment\*?")
#: ``\newcommand`` and friends (name, optional argument count and default, body).
_COMMAND_DEFINITION = re.compile(r"\\(?:re)?newcommand\*?|\\providecommand\*?")
_ENVIRONMENT_EDGE = re.compile(r"\\(?:begin|end)\s*\{")


def _group_end(source: str, start: int) -> int | None:
    """The index after the ``{...}`` or ``[...]`` group opening at ``start`` (escaped
    characters and ``%`` comments skipped, nested braces counted), or None when it does not
    close."""
    square = source[start] == "["
    depth = 0
    index = start + 1 if square else start
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if char == "%":
            newline = source.find("\n", index)
            if newline < 0:
                return None
            index = newline
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0 and not square:
                return index + 1
        elif char == "]" and square and depth == 0:
            return index + 1
        index += 1
    return None


def _definition_groups(source: str, at: int, groups: int) -> tuple[int, list[str]] | None:
    """Read a definition's ``groups`` braced arguments from ``at`` (optional ``[...]`` ones
    between them skipped); (end, the braced arguments' contents) or None."""
    contents: list[str] = []
    index = at
    while len(contents) < groups:
        while index < len(source) and source[index] in " \t\r\n%":
            if source[index] == "%":  # a comment runs to the end of its line
                newline = source.find("\n", index)
                index = len(source) if newline < 0 else newline
            index += 1
        if index >= len(source) or source[index] not in "{[":
            return None
        end = _group_end(source, index)
        if end is None:
            return None
        if source[index] == "{":
            contents.append(source[index + 1 : end - 1])
        index = end
    return index, contents


def _without_code_definitions(source: str) -> str:
    """``source`` without the definitions whose bodies open or close environments: they are
    code, never text, and exactly what makes pylatexenc backtrack (``_BudgetedWalker``)."""
    cuts: list[tuple[int, int]] = []
    for pattern, groups in ((_ENVIRONMENT_DEFINITION, 3), (_COMMAND_DEFINITION, 2)):
        for match in pattern.finditer(source):
            read = _definition_groups(source, match.end(), groups)
            if read is None:
                continue
            end, contents = read
            if groups == 3 or any(_ENVIRONMENT_EDGE.search(c) for c in contents[1:]):
                cuts.append((match.start(), end))
    if not cuts:
        return source
    out: list[str] = []
    last = 0
    for start, end in sorted(cuts):
        if start < last:
            continue
        out.append(source[last:start])
        last = end
    out.append(source[last:])
    return "".join(out)


#: ``\def\name{body}`` and its kin: in the body of a document a definition is never text
#: (Pandoc writes ``\def\labelenumi{\arabic{enumi}.}`` into each list: "enumi." was read).
_BODY_DEFINITION = re.compile(r"\\[gex]?def\s*\\[A-Za-z@]+(?:#\d)*\s*(?=\{)")


def _without_body_definitions(body: str) -> str:
    """``body`` without its ``\\def`` definitions (name, parameters and braced body)."""
    out: list[str] = []
    last = 0
    for match in _BODY_DEFINITION.finditer(body):
        if match.start() < last:
            continue
        end = _group_end(body, match.end())
        if end is None:
            continue
        out.append(body[last : match.start()])
        last = end
    if not out:
        return body
    out.append(body[last:])
    return "".join(out)


def _nodes(source: str, context: Any, deadline: Deadline) -> list[Any]:
    walker = _BudgetedWalker(source, context, deadline)
    nodes, _, _ = walker.get_latex_nodes()
    return list(nodes or [])


def _argument(node: LatexMacroNode) -> Any | None:
    """The last given argument of a macro (a section's or title's text), or None."""
    args = node.nodeargd.argnlist if node.nodeargd is not None else []
    given = [a for a in args if a is not None]
    return given[-1] if given else None


def _preamble_macro(nodes: list[Any], name: str) -> Any | None:
    for node in nodes:
        if isinstance(node, LatexMacroNode) and node.macroname == name:
            return _argument(node)
        if isinstance(node, (LatexGroupNode, LatexEnvironmentNode)) and node.nodelist:
            found = _preamble_macro(list(node.nodelist), name)
            if found is not None:
                return found
    return None


class _Writer:
    def __init__(self, renderer: _Text, key: str) -> None:
        self.layer = TextLayer()
        self.renderer = renderer
        self.key = key
        self.deadline = current_deadline(key)
        self.pending: list[Any] = []
        self.top_rank = 2

    def render(self, nodes: list[Any]) -> str:
        """pylatexenc's text of ``nodes``; a node it cannot render (a macro given fewer
        arguments than it expects) is kept as its source."""
        try:
            return str(self.renderer.nodelist_to_text(nodes))
        except (IndexError, KeyError, TypeError, AttributeError, ValueError):
            out = []
            for node in nodes:
                try:
                    out.append(str(self.renderer.nodelist_to_text([node])))
                except (IndexError, KeyError, TypeError, AttributeError, ValueError):
                    out.append(str(node.latex_verbatim()))
            return "".join(out)

    def text_of(self, node: Any) -> str:
        """A heading's or title's text: footnotes, ``\\thanks`` and labels left out."""
        if node is None:
            return ""
        nodes = node.nodelist if isinstance(node, LatexGroupNode) else [node]
        kept = [
            n
            for n in nodes or []
            if not (isinstance(n, LatexMacroNode) and n.macroname in _NOT_IN_HEADINGS)
        ]
        return " ".join(self.render(kept).split())

    def thanks_notes(self, node: Any) -> list[str]:
        """The ``\\thanks`` notes inside a title or author block, one line each."""
        if node is None:
            return []
        notes = (
            self.render([a for a in n.nodeargd.argnlist if a is not None])
            for n in _macros_named([node], "thanks")
            if n.nodeargd
        )
        return [" ".join(note.split()) for note in notes if note.strip()]

    def author_lines(self, node: Any) -> list[str]:
        """An author block line by line (``\\\\`` and ``\\and`` break it), without its
        ``\\thanks`` notes (written after it, not glued to the name they follow)."""
        if node is None:
            return []
        self.renderer.left_out = frozenset({"thanks"})
        try:
            rendered = self.render(node.nodelist if isinstance(node, LatexGroupNode) else [node])
        finally:
            self.renderer.left_out = frozenset()
        return [" ".join(line.split()) for line in rendered.splitlines() if line.strip()]

    def flush(self) -> None:
        if not self.pending:
            return
        rendered = self.render(self.pending)
        self.pending = []
        for block in _PARAGRAPH_BREAK.split(rendered):
            lines = [line for line in block.splitlines() if line.strip()]
            if len(lines) > 1 and (
                any(_LIST_LINE.match(line) for line in lines) or "    " in block
            ):
                self.layer.lines(lines)  # list items and table rows keep their own lines
            else:
                self.layer.paragraph(block)

    def walk(self, nodes: list[Any], base_level: int) -> None:
        for index, node in enumerate(nodes):
            if not index % 64:
                self.deadline.check(f"LaTeX node {index:,}")
            if isinstance(node, LatexMacroNode) and node.macroname == _LISTING_MACRO:
                self.flush()
                self.layer.preformatted(self.renderer.listings[_listing_index(node)].splitlines())
            elif isinstance(node, LatexMacroNode) and node.macroname in _SECTIONS:
                self.flush()
                level = base_level + _SECTIONS[node.macroname] - self.top_rank
                self.layer.heading(self.text_of(_argument(node)), max(1, min(level, 6)))
            elif isinstance(node, LatexEnvironmentNode) and node.environmentname == "abstract":
                self.flush()
                self.layer.heading("Abstract", base_level)
                self.pending.extend(node.nodelist or [])
                self.flush()
            elif isinstance(node, LatexEnvironmentNode) and (
                node.environmentname == "document" or _holds_sections(node)
            ):
                self.flush()
                self.walk(list(node.nodelist or []), base_level)
            elif latex_tables.holds_table(node):
                self.flush()
                self.tables_in(node)
            else:
                self.pending.append(node)
        self.flush()

    def tables_in(self, node: Any) -> None:
        """A table, or what holds one (a ``table`` float, ``\\resizebox``, a group): its
        tables as tables, its other text (a caption, notes) as text where it stands; the
        arguments of a macro around a table (a width, a scale) are no text."""
        if latex_tables.is_table(node):
            table = latex_tables.read(node, self.render)
            for caption in table.captions:
                self.layer.paragraph(caption)
            self.layer.table(table.rows, table.header_rows)
            for note in table.notes:
                self.layer.paragraph(note)
            return
        for child in latex_tables.children(node):
            if latex_tables.holds_table(child):
                self.flush()
                self.tables_in(child)
            elif not isinstance(node, LatexMacroNode):
                self.pending.append(child)
        self.flush()


def _section_ranks(nodes: list[Any]) -> list[int]:
    ranks: list[int] = []
    for n in nodes:
        if isinstance(n, LatexMacroNode) and n.macroname in _SECTIONS:
            ranks.append(_SECTIONS[n.macroname])
        elif _holds_sections(n):
            ranks.extend(_section_ranks(list(n.nodelist or [])))
    return ranks


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of decoded LaTeX ``text``."""
    key = document.source_key
    source, listings = _listings_apart(text)
    source = _without_code_definitions(_verb_as_text(source))
    begin = _BEGIN_DOCUMENT.search(source)
    preamble, body = (
        ("", source) if begin is None else (source[: begin.start()], source[begin.end() :])
    )
    end = _END_DOCUMENT.search(body)
    if end is not None:
        body = body[: end.start()]
    body = _without_body_definitions(body)
    renderer = _renderer(_definitions(preamble))
    renderer.listings = tuple(listings)
    writer = _Writer(renderer, key)
    try:
        context = _walker_context()
        preamble_nodes = _nodes(preamble, context, writer.deadline) if preamble else []
        nodes = _nodes(body, context, writer.deadline)
        title_node = _preamble_macro(preamble_nodes, "title")
        title = writer.text_of(title_node)
        author = _preamble_macro(preamble_nodes, "author")
        if not title:  # a \title given in the body instead
            title_node = _preamble_macro(nodes, "title")
            title = writer.text_of(title_node)
        if title:
            writer.layer.heading(title, 1)
            writer.layer.lines(writer.author_lines(author))
            writer.layer.lines(writer.thanks_notes(title_node) + writer.thanks_notes(author))
        ranks = _section_ranks(nodes)
        writer.top_rank = min(ranks) if ranks else 2
        writer.walk(nodes, 2 if title else 1)
    except RecursionError as exc:
        raise CorruptDocumentError(
            key, "LaTeX nested too deeply to read (groups or environments)"
        ) from exc
    except LatexWalkerError as exc:
        raise CorruptDocumentError(key, f"not readable LaTeX: {exc}") from exc
    return writer.layer.parsed(document, "the LaTeX source holds no text")


__all__ = ["MEDIA_TYPE", "parse"]
