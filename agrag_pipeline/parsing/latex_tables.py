"""LaTeX tables (``tabular`` and its kin) read as tables: rows end at ``\\\\``, cells at ``&``.

Why: pylatexenc renders a ``tabular`` as running text, a row's cells run together on one line
("Model Modality MMLU HellaSwag ..."), so a paper's results table reached the chunker as a
paragraph with no header and no columns, and a chunk cut from it could not say which number
stood under which benchmark. Here each tabular becomes a table section as the other readers
write them:
- rows end at ``\\\\``, ``\\tabularnewline`` or ``\\cr``; cells end at a top-level ``&`` (one
  inside a nested ``tabular``, ``\\makecell`` or group belongs to that cell);
- a ``\\multicolumn{n}`` cell is repeated in the ``n`` columns it spans and a
  ``\\multirow{n}`` cell in the empty cells below it, as the other readers repeat merged cells
  (``table_grid``), so every row reads whole under its header;
- the header is the rows above the first full-width rule under a row (``\\midrule``,
  ``\\hline``; a partial ``\\cmidrule``/``\\cline`` under a spanning header cell does not end
  it), at most ``MAX_HEADER_ROWS``; a ``longtable``'s ``\\endfirsthead``/``\\endhead`` mark it
  where given, its repeated head and foot rows are left out, and a ``\\caption`` row is
  returned as the table's caption;
- rules, colours and spacing commands are no text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pylatexenc.latex2text import MacroTextSpec
from pylatexenc.latexwalker import (
    LatexCharsNode,
    LatexEnvironmentNode,
    LatexGroupNode,
    LatexMacroNode,
    LatexSpecialsNode,
)
from pylatexenc.macrospec import EnvironmentSpec, MacroSpec

from agrag_pipeline.parsing.table_grid import MAX_FILLED

#: Environments whose body is rows of ``&``-separated cells (``array`` is mathematics: kept
#: verbatim with the formula it belongs to).
TABULAR_ENVIRONMENTS = frozenset(
    {
        "tabular",
        "tabular*",
        "tabularx",
        "tabulary",
        "xltabular",
        "longtable",
        "longtable*",
        "supertabular",
        "supertabular*",
        "mpsupertabular",
        "tblr",
        "longtblr",
        "talltblr",
        "NiceTabular",
        "NiceTabular*",
        "deluxetable",
        "deluxetable*",
    }
)
#: AASTeX's tables: the header in ``\tablehead``, the caption in ``\tablecaption``, notes
#: after the rows.
_DELUXE = frozenset({"deluxetable", "deluxetable*"})
_DELUXE_NOTES = frozenset({"tablecomments", "tablenotetext", "tablerefs"})
#: The rows above the first full rule are the header only when they are this few (a table
#: ruled once near its foot has a one-row header, not a header of every row).
MAX_HEADER_ROWS = 3

_ROW_ENDS = frozenset({"\\", "tabularnewline", "cr", "crcr"})
_FULL_RULES = frozenset({"hline", "midrule", "toprule", "specialrule", "Xhline", "hhline"})
_PARTIAL_RULES = frozenset({"cline", "cmidrule", "cdashline", "morecmidrules"})
_NOT_TEXT = frozenset(
    {"bottomrule", "addlinespace", "rowcolor", "rowcolors", "cellcolor", "arrayrulecolor"}
    | {"startdata", "enddata", "nodata", "tablecolumns", "tablewidth", "tabletypesize"}
    | {"tablenum", "decimals"}
    | {"noalign", "centering", "raggedright", "raggedleft", "arraybackslash", "label"}
    | {"hdashline", "firsthline", "lasthline", "SetCell", "SetRow", "SetHline"}
)
_LONGTABLE_MARKS = frozenset({"endfirsthead", "endhead", "endfoot", "endlastfoot"})
#: What a rule's arguments leave behind when pylatexenc does not parse them: ``[1pt]``,
#: booktabs' trim ``(lr)`` (its ``(`` taken as the argument), ``{2-3}`` read as a group.
_RULE_RESIDUE = re.compile(r"\s*(?:\[[^\]]*\]\s*|\([a-z]*\)\s*)*")
#: Rules whose column range (a group) pylatexenc leaves after the trim: ``(lr){2-3}``.
_RANGE_AFTER = frozenset({"cmidrule", "cdashline"})

#: The arguments of the macros and environments this module reads, for the walker.
WALKER_MACROS = [
    MacroSpec("toprule", "["),
    MacroSpec("midrule", "["),
    MacroSpec("bottomrule", "["),
    MacroSpec("cline", "{"),
    MacroSpec("cmidrule", "["),
    MacroSpec("caption", "*[{"),
    MacroSpec("specialrule", "{{{"),
    MacroSpec("Xhline", "{"),
    MacroSpec("hhline", "{"),
    MacroSpec("addlinespace", "["),
    MacroSpec("rowcolor", "[{"),
    MacroSpec("rowcolors", "*[{{{"),
    MacroSpec("cellcolor", "[{"),
    MacroSpec("arrayrulecolor", "[{"),
    MacroSpec("SetCell", "[{"),
    MacroSpec("SetRow", "{"),
    MacroSpec("makecell", "[{"),
    MacroSpec("shortstack", "[{"),
    MacroSpec("resizebox", "*{{{"),
    MacroSpec("scalebox", "{[{"),
    MacroSpec("adjustbox", "{{"),
    MacroSpec("captionof", "*{[{"),
    *(MacroSpec(name, "{") for name in ("tablecolumns", "tablewidth", "tabletypesize")),
    *(MacroSpec(name, "{") for name in ("tablenum", "tablecaption", "tablehead", "colhead")),
    *(MacroSpec(name, "{") for name in ("tablecomments", "tablerefs")),
    MacroSpec("tablenotetext", "{{"),
]
WALKER_ENVIRONMENTS = [
    EnvironmentSpec("tabular", "[{"),
    EnvironmentSpec("tabular*", "{[{"),
    EnvironmentSpec("tabulary", "{[{"),
    EnvironmentSpec("xltabular", "{[{"),
    EnvironmentSpec("longtable", "[{"),
    EnvironmentSpec("longtable*", "[{"),
    EnvironmentSpec("supertabular", "[{"),
    EnvironmentSpec("supertabular*", "{[{"),
    EnvironmentSpec("mpsupertabular", "[{"),
    EnvironmentSpec("tblr", "[{"),
    EnvironmentSpec("longtblr", "[{"),
    EnvironmentSpec("talltblr", "[{"),
    EnvironmentSpec("NiceTabular", "{["),
    EnvironmentSpec("NiceTabular*", "{{["),
    EnvironmentSpec("adjustbox", "{"),
    EnvironmentSpec("tablenotes", "["),
    EnvironmentSpec("deluxetable", "{["),
    EnvironmentSpec("deluxetable*", "{["),
]
#: Their text: a rule or colour is none, a stacked cell its lines, a box its content.
TEXT_MACROS = [MacroTextSpec(name, "") for name in sorted(_NOT_TEXT | _FULL_RULES)] + [
    MacroTextSpec("cline", ""),
    MacroTextSpec("cmidrule", ""),
    MacroTextSpec("caption", "%(3)s"),
    MacroTextSpec("makecell", "%(2)s"),
    MacroTextSpec("shortstack", "%(2)s"),
    MacroTextSpec("resizebox", "%(4)s"),
    MacroTextSpec("scalebox", "%(3)s"),
    MacroTextSpec("adjustbox", "%(2)s"),
    MacroTextSpec("captionof", "%(4)s"),
    *(MacroTextSpec(name, "%(1)s") for name in ("colhead", "tablecaption", "tablehead")),
    *(MacroTextSpec(name, "%(1)s") for name in ("tablecomments", "tablerefs")),
    MacroTextSpec("tablenotetext", "%(1)s %(2)s"),
]


@dataclass
class Table:
    """A tabular's rows of cell texts, how many of them are its header, and its captions."""

    rows: list[list[str]] = field(default_factory=list)
    header_rows: int = 1
    captions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_table(node: Any) -> bool:
    return isinstance(node, LatexEnvironmentNode) and node.environmentname in TABULAR_ENVIRONMENTS


def holds_table(node: Any) -> bool:
    """A table is ``node`` or somewhere inside it (not inside mathematics)."""
    if is_table(node):
        return True
    return any(holds_table(child) for child in children(node))


def children(node: Any) -> Iterator[Any]:
    """The nodes inside ``node`` that may hold text: an environment's or group's body, a
    macro's arguments (a ``\\resizebox``'s table); none inside mathematics."""
    if isinstance(node, (LatexEnvironmentNode, LatexGroupNode)):
        yield from node.nodelist or []
    elif isinstance(node, LatexMacroNode) and node.nodeargd:
        yield from (a for a in node.nodeargd.argnlist if a is not None)


def _count(node: Any, render: Callable[[list[Any]], str]) -> int:
    """``\\multicolumn``'s or ``\\multirow``'s first argument as a count (1 if not one; a
    negative ``\\multirow`` puts its text in its last row: read as spanning none below)."""
    argument = node.nodeargd.argnlist[0] if node.nodeargd and node.nodeargd.argnlist else None
    try:
        return max(1, min(int(render([argument]).strip()), 1000)) if argument else 1
    except ValueError:
        return 1


def _significant(nodes: list[Any]) -> list[Any]:
    """The nodes that are not blank space (or a comment)."""
    return [
        n
        for n in nodes
        if not (isinstance(n, LatexCharsNode) and not n.chars.strip())
        and type(n).__name__ != "LatexCommentNode"
    ]


@dataclass
class _Cell:
    text: str
    across: int = 1
    down: int = 1


def _cell(nodes: list[Any], render: Callable[[list[Any]], str]) -> _Cell:
    """A cell's text and spans from its nodes (``\\multicolumn`` around ``\\multirow`` too)."""
    significant = _significant(nodes)
    across = down = 1
    if len(significant) == 1 and isinstance(significant[0], LatexMacroNode):
        macro = significant[0]
        if macro.macroname == "multicolumn":
            across = _count(macro, render)
            inner = macro.nodeargd.argnlist[-1] if macro.nodeargd else None
            inside = _significant(list(children(inner)))
            if len(inside) == 1 and getattr(inside[0], "macroname", "") == "multirow":
                down = _count(inside[0], render)
        elif macro.macroname == "multirow":
            down = _count(macro, render)
    return _Cell(" ".join(render(nodes).split()), across, down)


class _Rows:
    """Cells gathered into rows as a tabular's nodes are read."""

    def __init__(self, render: Callable[[list[Any]], str]) -> None:
        self.render = render
        self.rows: list[list[_Cell]] = []
        self.cells: list[_Cell] = []
        self.nodes: list[Any] = []
        self.header_at: int | None = None  # rows above the first full rule under a row
        self.marked_header: int | None = None  # longtable's \endfirsthead / \endhead
        self.captions: list[str] = []
        self.segment_start = 0  # where the rows since a longtable's last mark start
        self.last_foot: list[list[_Cell]] = []  # a longtable's \endlastfoot rows

    def end_cell(self) -> None:
        captions = [
            n for n in self.nodes if isinstance(n, LatexMacroNode) and n.macroname == "caption"
        ]
        if captions:
            self.captions.extend(" ".join(self.render([c]).split()) for c in captions)
            self.nodes = [n for n in self.nodes if n not in captions]
        self.cells.append(_cell(self.nodes, self.render))
        self.nodes = []

    def end_row(self) -> None:
        self.end_cell()
        if any(cell.text for cell in self.cells):
            self.rows.append(self.cells)
        self.cells = []

    def rule(self, name: str) -> None:
        if _significant(self.nodes) or self.cells:  # a rule inside a row, after its text
            return
        if name in _FULL_RULES and self.header_at is None and self.rows:
            self.header_at = len(self.rows)

    def longtable_mark(self, name: str) -> None:
        """The rows since the last mark are: before ``\\endfirsthead``, the header; before
        ``\\endhead``, the header where no first head was marked, else its repeat (left
        out); before ``\\endfoot``, the foot repeated on every page ("continued on the next
        page": left out); before ``\\endlastfoot``, the table's last rows (moved there)."""
        if _significant(self.nodes) or self.cells:
            self.end_row()
        segment = self.rows[self.segment_start :]
        if name == "endfirsthead" or (name == "endhead" and self.marked_header is None):
            self.marked_header = len(self.rows)
        else:
            del self.rows[self.segment_start :]
            if name == "endlastfoot":
                self.last_foot = segment
        self.segment_start = len(self.rows)

    def feed(self, nodes: list[Any]) -> None:
        """Read a tabular's nodes into cells, rows, rules and marks."""
        after_rule = ""  # the rule just read: the next nodes may be its unparsed arguments
        for node in nodes:
            if after_rule and isinstance(node, LatexCharsNode):
                rest = node.chars[_RULE_RESIDUE.match(node.chars).end() :]  # type: ignore[union-attr]
                if not rest:
                    continue
                after_rule = ""
                node = LatexCharsNode(parsing_state=node.parsing_state, chars=rest)
            elif after_rule in _RANGE_AFTER and isinstance(node, LatexGroupNode):
                after_rule = ""
                continue  # the ``{2-3}`` of ``\cmidrule(lr){2-3}``
            after_rule = ""
            if isinstance(node, LatexSpecialsNode) and node.specials_chars == "&":
                self.end_cell()
            elif isinstance(node, LatexMacroNode) and node.macroname in _ROW_ENDS:
                self.end_row()
            elif isinstance(node, LatexMacroNode) and node.macroname in _LONGTABLE_MARKS:
                self.longtable_mark(node.macroname)
            elif isinstance(node, LatexMacroNode) and (
                node.macroname in _FULL_RULES or node.macroname in _PARTIAL_RULES
            ):
                self.rule(node.macroname)
                after_rule = node.macroname
            elif not (isinstance(node, LatexMacroNode) and node.macroname in _NOT_TEXT):
                self.nodes.append(node)

    def table(self) -> Table:
        if _significant(self.nodes) or self.cells:
            self.end_row()
        self.rows.extend(self.last_foot)
        header = self.marked_header
        if header is None:
            at = self.header_at
            header = at if at is not None and at <= MAX_HEADER_ROWS and at < len(self.rows) else 1
        return Table(_grid(self.rows), max(1, header), self.captions)


def _grid(rows: list[list[_Cell]]) -> list[list[str]]:
    """Cells as the grid a reader sees: a spanning cell's text in every cell it covers."""
    grid: list[list[str]] = []
    below: dict[int, tuple[str, int]] = {}  # column -> (text of a \multirow, rows left)
    left = MAX_FILLED  # copies still allowed: a table of \multicolumn{1000} rows stays small
    for cells in rows:
        out: list[str] = []
        for cell in cells:
            column = len(out)
            text = cell.text
            if not text and column in below:
                text = below[column][0]
            across = cell.across if cell.across - 1 <= left else 1
            left -= across - 1
            for _ in range(across):
                if cell.down > 1:
                    below[len(out)] = (text, cell.down)
                out.append(text)
        for column in list(below):
            held, rows_left = below[column]
            if rows_left <= 1:
                del below[column]
            else:
                below[column] = (held, rows_left - 1)
        grid.append(out)
    return grid


def read(environment: LatexEnvironmentNode, render: Callable[[list[Any]], str]) -> Table:
    """The rows of one tabular environment."""
    rows = _Rows(render)
    nodes = list(environment.nodelist or [])
    notes: list[str] = []
    if environment.environmentname in _DELUXE:
        for node in nodes:
            name = getattr(node, "macroname", "")
            if name == "tablehead":
                rows.feed([n for argument in children(node) for n in children(argument)])
                rows.end_row()
                rows.marked_header = len(rows.rows)
            elif name == "tablecaption":
                rows.captions.append(" ".join(render([node]).split()))
            elif name in _DELUXE_NOTES:
                notes.append(" ".join(render([node]).split()))
        parts = _DELUXE_NOTES | {"tablehead", "tablecaption"}
        nodes = [n for n in nodes if getattr(n, "macroname", "") not in parts]
    rows.feed(nodes)
    table = rows.table()
    table.notes = [note for note in notes if note]
    return table


__all__ = [
    "TABULAR_ENVIRONMENTS",
    "TEXT_MACROS",
    "WALKER_ENVIRONMENTS",
    "WALKER_MACROS",
    "Table",
    "children",
    "holds_table",
    "is_table",
    "read",
]
