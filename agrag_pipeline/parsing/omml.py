"""Office Math (OMML, the ``m:`` elements of DOCX and PPTX) to a linear, LaTeX-like text.

Equations become text that search and embedding models can read, in the notation most of them
have seen: ``\\frac{a}{b}``, ``x^{2}``, ``x_{i}``, ``\\sqrt{x}``, ``\\sum_{i=1}^{n}``,
``\\log(x)``; Greek letters and common operators become their LaTeX commands (``\\pi``,
``\\pm``). A structure this module does not know is reduced to its text, so no symbol of an
equation is lost. Works on Transitional namespaces (``word.py`` maps Strict ones first).
"""

from __future__ import annotations

import re

from lxml import etree

M = "http://schemas.openxmlformats.org/officeDocument/2006/math"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"


def _m(local: str) -> str:
    return f"{{{M}}}{local}"


_NARY = {
    "∑": "\\sum",
    "∏": "\\prod",
    "∐": "\\coprod",
    "∫": "\\int",
    "∬": "\\iint",
    "∭": "\\iiint",
    "∮": "\\oint",
    "⋃": "\\bigcup",
    "⋂": "\\bigcap",
    "⋁": "\\bigvee",
    "⋀": "\\bigwedge",
}
_ACCENTS = {
    "\u0302": "\\hat",
    "\u0303": "\\tilde",
    "\u0304": "\\bar",
    "\u0305": "\\bar",
    "\u20d7": "\\vec",
    "\u0307": "\\dot",
    "\u0308": "\\ddot",
    "\u030c": "\\check",
    "\u0301": "\\acute",
    "\u0300": "\\grave",
    "\u0306": "\\breve",
}
_FUNCTIONS = frozenset(
    {
        *("sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh"),
        *("cosh", "tanh", "coth", "log", "ln", "lg", "exp", "lim", "liminf", "limsup", "max"),
        *("min", "sup", "inf", "det", "dim", "gcd", "deg", "arg", "ker", "hom", "Pr"),
    }
)
#: Unicode math symbols -> LaTeX commands (letters, operators, relations, arrows).
_SYMBOLS = {
    "α": "\\alpha",
    "β": "\\beta",
    "γ": "\\gamma",
    "δ": "\\delta",
    "ε": "\\epsilon",
    "ϵ": "\\epsilon",
    "ζ": "\\zeta",
    "η": "\\eta",
    "θ": "\\theta",
    "ϑ": "\\vartheta",
    "ι": "\\iota",
    "κ": "\\kappa",
    "λ": "\\lambda",
    "μ": "\\mu",
    "ν": "\\nu",
    "ξ": "\\xi",
    "π": "\\pi",
    "ρ": "\\rho",
    "σ": "\\sigma",
    "τ": "\\tau",
    "υ": "\\upsilon",
    "φ": "\\phi",
    "ϕ": "\\phi",
    "χ": "\\chi",
    "ψ": "\\psi",
    "ω": "\\omega",
    "Γ": "\\Gamma",
    "Δ": "\\Delta",
    "Θ": "\\Theta",
    "Λ": "\\Lambda",
    "Ξ": "\\Xi",
    "Π": "\\Pi",
    "Σ": "\\Sigma",
    "Φ": "\\Phi",
    "Ψ": "\\Psi",
    "Ω": "\\Omega",
    "±": "\\pm",
    "∓": "\\mp",
    "×": "\\times",
    "÷": "\\div",
    "·": "\\cdot",
    "⋅": "\\cdot",
    "∙": "\\cdot",
    "∘": "\\circ",
    "≤": "\\leq",
    "≥": "\\geq",
    "≠": "\\neq",
    "≈": "\\approx",
    "≡": "\\equiv",
    "∼": "\\sim",
    "≅": "\\cong",
    "∝": "\\propto",
    "∞": "\\infty",
    "∂": "\\partial",
    "∇": "\\nabla",
    "∈": "\\in",
    "∉": "\\notin",
    "⊂": "\\subset",
    "⊆": "\\subseteq",
    "⊃": "\\supset",
    "⊇": "\\supseteq",
    "∪": "\\cup",
    "∩": "\\cap",
    "∅": "\\emptyset",
    "∀": "\\forall",
    "∃": "\\exists",
    "¬": "\\neg",
    "∧": "\\wedge",
    "∨": "\\vee",
    "→": "\\rightarrow",
    "←": "\\leftarrow",
    "↔": "\\leftrightarrow",
    "⇒": "\\Rightarrow",
    "⇐": "\\Leftarrow",
    "⇔": "\\Leftrightarrow",
    "…": "\\ldots",
    "⋯": "\\cdots",
    "−": "-",
}


def _latex_symbols(text: str) -> str:
    out: list[str] = []
    for char in text:
        command = _SYMBOLS.get(char)
        if command is None:
            out.append(char)
            continue
        # A command always ends in a space here ("\\pi r", not "\\pir", even when the
        # letter comes from the next element); ``text`` drops the spaces no letter follows.
        out.append(command + " " if command.startswith("\\") else command)
    return "".join(out)


def _prop(element: etree._Element, pr: str, name: str) -> str | None:
    """The ``m:val`` of ``<m:{pr}><m:{name} m:val=…/>`` under ``element``, if present."""
    found = element.find(f"{_m(pr)}/{_m(name)}")
    if found is None:
        return None
    return found.get(_m("val"), "")


def _part(element: etree._Element, name: str) -> str:
    child = element.find(_m(name))
    return "" if child is None else linear(child)


def _group(text: str) -> str:
    """``text`` as a script base: braced when it is more than one symbol."""
    return (
        text if len(text) <= 1 or (text.startswith("\\") and text[1:].isalpha()) else f"{{{text}}}"
    )


def linear(element: etree._Element) -> str:
    """The linear text of an OMML element (``m:oMath``, ``m:oMathPara`` or any part of one)."""
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    local = etree.QName(tag).localname
    ns = etree.QName(tag).namespace
    if ns == M:
        handler = _HANDLERS.get(local)
        if handler is not None:
            return handler(element)
        if local.endswith("Pr"):
            return ""
    elif local == "t" and ns in (W, A):
        return element.text or ""
    elif local in ("rPr", "pPr"):
        return ""
    return "".join(linear(child) for child in element)


def _run(element: etree._Element) -> str:
    text = "".join(t.text or "" for t in element.iter(_m("t"), f"{{{W}}}t"))
    return _latex_symbols(text)


def _frac(element: etree._Element) -> str:
    num, den = _part(element, "num"), _part(element, "den")
    if _prop(element, "fPr", "type") in ("lin", "skw"):
        return f"{num}/{den}"
    return f"\\frac{{{num}}}{{{den}}}"


def _sup(element: etree._Element) -> str:
    return f"{_group(_part(element, 'e'))}^{{{_part(element, 'sup')}}}"


def _sub(element: etree._Element) -> str:
    return f"{_group(_part(element, 'e'))}_{{{_part(element, 'sub')}}}"


def _subsup(element: etree._Element) -> str:
    base = _group(_part(element, "e"))
    return f"{base}_{{{_part(element, 'sub')}}}^{{{_part(element, 'sup')}}}"


def _pre(element: etree._Element) -> str:
    return f"{{}}_{{{_part(element, 'sub')}}}^{{{_part(element, 'sup')}}}{_part(element, 'e')}"


def _rad(element: etree._Element) -> str:
    degree = (
        "" if _prop(element, "radPr", "degHide") in ("1", "on", "true") else _part(element, "deg")
    )
    body = _part(element, "e")
    return f"\\sqrt[{degree}]{{{body}}}" if degree else f"\\sqrt{{{body}}}"


def _fence(char: str) -> str:
    """A delimiter for ``\\left``/``\\right``: braces escaped, none as ``.``."""
    return {"": ".", "{": "\\{", "}": "\\}"}.get(char, char)


def _delimiter(element: etree._Element) -> str:
    """Word's delimiters grow with their content: ``\\left( … \\right)`` in LaTeX."""
    begin = _prop(element, "dPr", "begChr")
    end = _prop(element, "dPr", "endChr")
    sep = _prop(element, "dPr", "sepChr")
    parts = [linear(e) for e in element.findall(_m("e"))]
    inner = (sep if sep is not None else "|").join(parts)
    left = _fence("(" if begin is None else begin)
    right = _fence(")" if end is None else end)
    return f"\\left{left}{inner}\\right{right}"


def _nary(element: etree._Element) -> str:
    char = _prop(element, "naryPr", "chr")
    op = _NARY.get(char or "∫", char or "\\int")
    sub, sup = _part(element, "sub"), _part(element, "sup")
    limits = (f"_{{{sub}}}" if sub else "") + (f"^{{{sup}}}" if sup else "")
    return f"{op}{limits} {_part(element, 'e')}".rstrip()


_OPENERS = ("(", "[", "{", "\\left")


def _func(element: etree._Element) -> str:
    name = _part(element, "fName").strip()
    if name in _FUNCTIONS:
        name = f"\\{name}"
    body = _part(element, "e")
    glue = "" if body.startswith(_OPENERS) else " "
    return f"{name}{glue}{body}".rstrip()


def _lim_low(element: etree._Element) -> str:
    return f"{_part(element, 'e')}_{{{_part(element, 'lim')}}}"


def _lim_upp(element: etree._Element) -> str:
    return f"{_part(element, 'e')}^{{{_part(element, 'lim')}}}"


def _accent(element: etree._Element) -> str:
    char = _prop(element, "accPr", "chr")
    command = _ACCENTS.get("\u0302" if char is None else char)
    body = _part(element, "e")
    return f"{command}{{{body}}}" if command else f"{body}{char}"


def _bar(element: etree._Element) -> str:
    under = _prop(element, "barPr", "pos") == "bot"
    return f"\\{'underline' if under else 'overline'}{{{_part(element, 'e')}}}"


def _group_chr(element: etree._Element) -> str:
    top = _prop(element, "groupChrPr", "pos") == "top"
    return f"\\{'overbrace' if top else 'underbrace'}{{{_part(element, 'e')}}}"


def _eq_array(element: etree._Element) -> str:
    return " \\\\ ".join(linear(e) for e in element.findall(_m("e")))


def _matrix(element: etree._Element) -> str:
    rows = [
        " & ".join(linear(e) for e in row.findall(_m("e"))) for row in element.findall(_m("mr"))
    ]
    return "\\begin{matrix} " + " \\\\ ".join(rows) + " \\end{matrix}"


def _math_para(element: etree._Element) -> str:
    return "\n".join(linear(m) for m in element.findall(_m("oMath")))


_HANDLERS = {
    "r": _run,
    "f": _frac,
    "sSup": _sup,
    "sSub": _sub,
    "sSubSup": _subsup,
    "sPre": _pre,
    "rad": _rad,
    "d": _delimiter,
    "nary": _nary,
    "func": _func,
    "limLow": _lim_low,
    "limUpp": _lim_upp,
    "acc": _accent,
    "bar": _bar,
    "groupChr": _group_chr,
    "eqArr": _eq_array,
    "m": _matrix,
    "oMathPara": _math_para,
}


_LOOSE_COMMAND = re.compile(r"(\\[A-Za-z]+) +(?![A-Za-z])")


def text(element: etree._Element) -> str:
    """The linear text of an equation, tidied: the one entry point for the format parsers."""
    return _LOOSE_COMMAND.sub(r"\1", linear(element)).strip()


def is_math(element: etree._Element) -> bool:
    """True for ``m:oMath`` and ``m:oMathPara``: the elements a text walker hands to ``linear``."""
    return element.tag in (_m("oMath"), _m("oMathPara"))
