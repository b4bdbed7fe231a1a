"""Presentation MathML (JATS ``mml:math``, HTML ``<math>``) to linear LaTeX, as ``omml`` does.

Equations become text that search and embedding models can read, in the notation of DOCX
equations (``omml``): ``\\frac{a}{b}``, ``x^{2}``, ``x_{i}``, ``\\sqrt{x}``,
``\\sum_{i=1}^{n} x_{i}``, ``\\hat{p}``, Greek letters and operators as their LaTeX commands,
no ``$`` delimiters. Where the document carries its author's TeX (a ``<semantics>``
annotation in ``application/x-tex``), that is used as written. An element this module does not
know is reduced to its text, so no symbol of an equation is lost.

Why written here: the Python MathML-to-LaTeX packages on PyPI are single releases or unmaintained
(``mathml-to-latex`` 1.0.0, ``py-asciimath`` last released 2020), and this converter shares its
symbol tables and output conventions with ``omml``, so a formula reads the same from any format.

Nesting is bounded: past ``MAX_DEPTH`` levels an element is reduced to its text (iteratively),
so hostile nesting cannot exhaust the stack.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lxml import etree

from agrag_pipeline.parsing.omml import _ACCENTS, _FUNCTIONS, _NARY, _group, _latex_symbols

MML = "http://www.w3.org/1998/Math/MathML"

#: Deeper than this, an element is written as its plain text.
MAX_DEPTH = 64

#: Annotation encodings that hold the author's TeX.
_TEX_ENCODINGS = frozenset(
    {"application/x-tex", "tex", "latex", "text/x-tex", "text/latex", "application/x-latex"}
)
#: Invisible operators (function application, invisible times, separator, plus) and spaces.
_INVISIBLE = dict.fromkeys(map(ord, "\u2061\u2062\u2063\u2064\u200b\u2009\u200a\u2005\u00a0"), " ")
_ESCAPED = {"{": "\\{", "}": "\\}", "%": "\\%", "#": "\\#", "&": "\\&", "$": "\\$", "_": "\\_"}
#: Accent characters over a base (``mover accent="true"``) -> LaTeX commands.
_OVER_ACCENTS = {
    **_ACCENTS,
    "^": "\\hat",
    "ˆ": "\\hat",
    "~": "\\tilde",
    "˜": "\\tilde",
    "¯": "\\bar",
    "‾": "\\overline",
    "_": "\\overline",
    "→": "\\vec",
    "⃗": "\\vec",
    "˙": "\\dot",
    "¨": "\\ddot",
    "ˇ": "\\check",
    "´": "\\acute",
    "`": "\\grave",
    "˘": "\\breve",
    "⏞": "\\overbrace",
    "︷": "\\overbrace",
}
_UNDER_ACCENTS = {
    "_": "\\underline",
    "‾": "\\underline",
    "¯": "\\underline",
    "\u0332": "\\underline",
    "⏟": "\\underbrace",
    "︸": "\\underbrace",
}
_VARIANTS = {
    "double-struck": "\\mathbb",
    "bold": "\\mathbf",
    "fraktur": "\\mathfrak",
    "script": "\\mathcal",
    "bold-italic": "\\boldsymbol",
}
_SPACE = re.compile(r"\s+")
_LOOSE_COMMAND = re.compile(r"(\\[A-Za-z]+) +(?![A-Za-z])")


def _local(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1] if tag.startswith("{") else tag


def _elements(element: etree._Element) -> list[etree._Element]:
    return [c for c in element if isinstance(c.tag, str)]


def _token_text(element: etree._Element) -> str:
    """A token's characters, whitespace trimmed (MathML ignores it at the token's edges)."""
    return _SPACE.sub(" ", "".join(element.itertext())).strip()


#: Symbols MathML writes that DOCX equations rarely do (``omml`` maps the common ones).
_MORE_SYMBOLS = {
    **{char: command + " " for char, command in _NARY.items()},
    "ℏ": "\\hbar ",
    "′": "'",
    "″": "''",
    "⟨": "\\langle ",
    "⟩": "\\rangle ",
    "∗": "*",
    "≪": "\\ll ",
    "≫": "\\gg ",
    "↦": "\\mapsto ",
    "⊗": "\\otimes ",
    "⊕": "\\oplus ",
    "ℓ": "\\ell ",
    "∠": "\\angle ",
    "⊥": "\\perp ",
    "∥": "\\parallel ",
    "≃": "\\simeq ",
    "⩽": "\\leq ",
    "⩾": "\\geq ",
}


def _symbols(text: str) -> str:
    escaped = "".join(
        _ESCAPED.get(c) or _MORE_SYMBOLS.get(c) or c for c in text.translate(_INVISIBLE)
    )
    return _latex_symbols(escaped)


def _mi(element: etree._Element, depth: int) -> str:
    name = _token_text(element)
    if not name:
        return ""
    if name in _FUNCTIONS:
        return f"\\{name} "
    converted = _symbols(name)
    variant = _VARIANTS.get(element.get("mathvariant", ""))
    if variant:
        return f"{variant}{{{converted.strip()}}}"
    return converted


def _mo(element: etree._Element, depth: int) -> str:
    op = _token_text(element)
    if op in _FUNCTIONS:
        return f"\\{op} "
    return _symbols(op) if op.strip() else ""


def _mtext(element: etree._Element, depth: int) -> str:
    raw = "".join(element.itertext()).translate(_INVISIBLE)
    words = _SPACE.sub(" ", raw).strip()
    if not words:
        return " "
    # Spaces around the words stay outside the braces, so "\\eta \\text{and} \\mu" reads.
    before = " " if raw[:1].isspace() else ""
    after = " " if raw[-1:].isspace() else ""
    return f"{before}\\text{{{''.join(_ESCAPED.get(c, c) for c in words)}}}{after}"


def _row(element: etree._Element, depth: int) -> str:
    return "".join(_latex(child, depth + 1) for child in _elements(element))


def _arg(element: etree._Element, index: int, depth: int) -> str:
    children = _elements(element)
    return _latex(children[index], depth + 1).strip() if index < len(children) else ""


def _frac(element: etree._Element, depth: int) -> str:
    num, den = _arg(element, 0, depth), _arg(element, 1, depth)
    if element.get("linethickness", "").strip() in ("0", "0px", "0pt", "0em"):
        return f"\\genfrac{{}}{{}}{{0pt}}{{}}{{{num}}}{{{den}}}"
    if element.get("bevelled", "") == "true":
        return f"{num}/{den}"
    return f"\\frac{{{num}}}{{{den}}}"


def _base(element: etree._Element, depth: int) -> str:
    return _group(_arg(element, 0, depth))


def _sup(element: etree._Element, depth: int) -> str:
    return f"{_base(element, depth)}^{{{_arg(element, 1, depth)}}}"


def _sub(element: etree._Element, depth: int) -> str:
    return f"{_base(element, depth)}_{{{_arg(element, 1, depth)}}}"


def _subsup(element: etree._Element, depth: int) -> str:
    base = _base(element, depth)
    return f"{base}_{{{_arg(element, 1, depth)}}}^{{{_arg(element, 2, depth)}}}"


def _sqrt(element: etree._Element, depth: int) -> str:
    return f"\\sqrt{{{_row(element, depth).strip()}}}"


def _root(element: etree._Element, depth: int) -> str:
    return f"\\sqrt[{_arg(element, 1, depth)}]{{{_arg(element, 0, depth)}}}"


def _is_large_operator(base: etree._Element) -> str | None:
    """The LaTeX of a large operator or limit-like function used as a base, else None."""
    if _local(base) not in ("mo", "mi"):
        return None
    op = _token_text(base)
    if op in _NARY:
        return _NARY[op]
    if op in _FUNCTIONS:
        return f"\\{op}"
    return None


def _script_text(element: etree._Element, index: int, depth: int) -> tuple[str, str]:
    """(the raw character, the LaTeX) of the ``index``-th child: for accent lookups."""
    children = _elements(element)
    if index >= len(children):
        return "", ""
    child = children[index]
    return _token_text(child), _latex(child, depth + 1).strip()


def _over(element: etree._Element, depth: int) -> str:
    return _limit(element, depth, _OVER_ACCENTS, "^", "\\overset")


def _under(element: etree._Element, depth: int) -> str:
    return _limit(element, depth, _UNDER_ACCENTS, "_", "\\underset")


def _limit(
    element: etree._Element, depth: int, accents: dict[str, str], script: str, stacked: str
) -> str:
    """``mover``/``munder``: an accent over or under its base, a large operator's limit as a
    super- or subscript, else the two stacked."""
    children = _elements(element)
    if not children:
        return ""
    base = _arg(element, 0, depth)
    char, limit = _script_text(element, 1, depth)
    if char in accents:
        return f"{accents[char]}{{{base}}}"
    operator = _is_large_operator(children[0])
    if operator is not None:
        return f"{operator}{script}{{{limit}}}"
    return f"{stacked}{{{limit}}}{{{base}}}"


def _underover(element: etree._Element, depth: int) -> str:
    children = _elements(element)
    if not children:
        return ""
    base = _arg(element, 0, depth)
    under, over = _arg(element, 1, depth), _arg(element, 2, depth)
    operator = _is_large_operator(children[0])
    if operator is not None:
        return f"{operator}_{{{under}}}^{{{over}}}"
    return f"\\overset{{{over}}}{{\\underset{{{under}}}{{{base}}}}}"


def _fence_char(char: str) -> str:
    return {"": ".", "{": "\\{", "}": "\\}", "⟨": "\\langle", "⟩": "\\rangle"}.get(char, char)


def _fenced(element: etree._Element, depth: int) -> str:
    begin = element.get("open", "(").strip()
    end = element.get("close", ")").strip()
    separators = "".join(element.get("separators", ",").split())
    parts = [_latex(child, depth + 1).strip() for child in _elements(element)]
    out: list[str] = []
    for index, part in enumerate(parts):
        if index:
            out.append(separators[min(index - 1, len(separators) - 1)] if separators else "")
        out.append(part)
    return f"\\left{_fence_char(begin)}{''.join(out)}\\right{_fence_char(end)}"


def _table(element: etree._Element, depth: int) -> str:
    rows: list[str] = []
    for row in _elements(element):
        cells = _elements(row)
        if _local(row) == "mlabeledtr":
            cells = cells[1:]  # its first cell is the equation's label, not its content
        if _local(row) in ("mtr", "mlabeledtr"):
            rows.append(" & ".join(_latex(cell, depth + 2).strip() for cell in cells))
        else:
            rows.append(_latex(row, depth + 1).strip())
    return "\\begin{matrix} " + " \\\\ ".join(rows) + " \\end{matrix}"


def _multiscripts(element: etree._Element, depth: int) -> str:
    children = _elements(element)
    if not children:
        return ""
    base = _group(_latex(children[0], depth + 1).strip())
    post: list[etree._Element] = []
    pre: list[etree._Element] = []
    target = post
    for child in children[1:]:
        if _local(child) == "mprescripts":
            target = pre
            continue
        target.append(child)

    def scripts(items: list[etree._Element]) -> str:
        out = []
        for sub, sup in zip(items[::2], items[1::2], strict=False):
            sub_text, sup_text = _latex(sub, depth + 1).strip(), _latex(sup, depth + 1).strip()
            out.append(
                (f"_{{{sub_text}}}" if sub_text else "") + (f"^{{{sup_text}}}" if sup_text else "")
            )
        return "".join(out)

    prefix = f"{{}}{scripts(pre)}" if pre else ""
    return f"{prefix}{base}{scripts(post)}"


def _semantics(element: etree._Element, depth: int) -> str:
    tex = author_tex(element)
    if tex is not None:
        return tex
    children = [c for c in _elements(element) if not _local(c).startswith("annotation")]
    return _latex(children[0], depth + 1) if children else ""


def _enclose(element: etree._Element, depth: int) -> str:
    body = _row(element, depth).strip()
    notation = element.get("notation", "")
    if "radical" in notation:
        return f"\\sqrt{{{body}}}"
    if "box" in notation or "roundedbox" in notation:
        return f"\\boxed{{{body}}}"
    return body


def _action(element: etree._Element, depth: int) -> str:
    children = _elements(element)
    try:
        selected = int(element.get("selection", "1")) - 1
    except ValueError:
        selected = 0
    if not children:
        return ""
    return _latex(children[max(0, min(selected, len(children) - 1))], depth + 1)


def _nothing(element: etree._Element, depth: int) -> str:
    return ""


def _space(element: etree._Element, depth: int) -> str:
    return " "


def _string(element: etree._Element, depth: int) -> str:
    return f'\\text{{"{_token_text(element)}"}}'


_HANDLERS: dict[str, Callable[[etree._Element, int], str]] = {
    "mi": _mi,
    "mn": lambda e, d: _symbols(_token_text(e)),
    "mo": _mo,
    "mtext": _mtext,
    "ms": _string,
    "mspace": _space,
    "mrow": _row,
    "mstyle": _row,
    "mpadded": _row,
    "merror": _row,
    "math": _row,
    "mtd": _row,
    "mphantom": _nothing,
    "none": _nothing,
    "mprescripts": _nothing,
    "annotation": _nothing,
    "annotation-xml": _nothing,
    "mfrac": _frac,
    "msup": _sup,
    "msub": _sub,
    "msubsup": _subsup,
    "msqrt": _sqrt,
    "mroot": _root,
    "mover": _over,
    "munder": _under,
    "munderover": _underover,
    "mfenced": _fenced,
    "mtable": _table,
    "mmultiscripts": _multiscripts,
    "semantics": _semantics,
    "menclose": _enclose,
    "maction": _action,
    "mglyph": lambda e, d: e.get("alt", ""),
}


def _latex(element: etree._Element, depth: int) -> str:
    if not isinstance(element.tag, str):
        return ""
    if depth > MAX_DEPTH:
        # Hostile or absurd nesting: keep the symbols, drop the structure (no recursion).
        return _symbols(_token_text(element))
    handler = _HANDLERS.get(_local(element))
    if handler is None:
        return _row(element, depth) if _elements(element) else _symbols(_token_text(element))
    return handler(element, depth)


def author_tex(element: etree._Element) -> str | None:
    """The TeX annotation of a ``<semantics>`` element (or of a ``<math>`` holding one)."""
    for annotation in element.iter(f"{{{MML}}}annotation", "annotation"):
        encoding = (annotation.get("encoding") or "").strip().lower()
        if encoding in _TEX_ENCODINGS:
            tex = _SPACE.sub(" ", "".join(annotation.itertext())).strip()
            if tex:
                return tex
    return None


def text(element: etree._Element) -> str:
    """The linear LaTeX of a MathML ``<math>`` element (or any part of one), tidied."""
    linear = _latex(element, 0)
    return _LOOSE_COMMAND.sub(r"\1", _SPACE.sub(" ", linear)).strip()


#: ``\\documentclass…\\begin{document}`` and ``\\end{document}`` around a JATS ``tex-math``.
_TEX_PREAMBLE = re.compile(r"\A.*?\\begin\{document\}", re.DOTALL)
_TEX_END = re.compile(r"\\end\{document\}.*\Z", re.DOTALL)
_TEX_DELIMITERS = re.compile(r"\A(\$\$?|\\\[|\\\()(.*?)(\$\$?|\\\]|\\\))\Z", re.DOTALL)


def clean_tex(source: str) -> str:
    """The formula of a JATS ``<tex-math>``: any LaTeX document wrapper and ``$`` delimiters
    removed (publishers wrap each formula in a ``\\documentclass`` preamble)."""
    body = source
    if "\\begin{document}" in body:
        body = _TEX_END.sub("", _TEX_PREAMBLE.sub("", body))
    body = body.strip()
    delimited = _TEX_DELIMITERS.match(body)
    if delimited:
        body = delimited.group(2).strip()
    return _SPACE.sub(" ", body)


__all__ = ["MAX_DEPTH", "MML", "author_tex", "clean_tex", "text"]
