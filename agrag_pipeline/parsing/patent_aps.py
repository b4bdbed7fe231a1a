"""USPTO patent full text in APS, the fixed-field text of the grants of 1976 to 2001 (the
USPTO's bulk "Green Book" files; ``pftaps*.txt``).

A record is a line whose first four characters name its field (``TTL`` the title, ``PAR`` a
paragraph), its value from the sixth; a value goes on over lines indented by spaces. A line of
a field name alone opens a group: ``PATN`` a patent (a file may hold many), ``INVT`` an
inventor, ``ABST`` the abstract, ``BSUM``/``DRWD``/``DETD`` the description's parts, ``CLMS``
the claims. As plain text it was every field as written, citations and class codes first.
Written as ``patent`` writes ICE, so a patent reads the same whatever its year:
- the title as the level-1 heading, then the patent number and issue date, the application
  and its filing date, the inventors (name and place) and the assignees;
- "Abstract" (level 2) and its paragraphs;
- the description: its ``PAC`` headings at level 2, paragraphs (``PAR``, ``PA1``-``PA5``),
  tables (``TBL``, ``TBL3``: typewriter layouts) as the lines they are; the related
  application text (``PARN``) and government interest (``GOVT``) with their own headings;
- "Claims" (level 2): the statement, then each claim (``NUM``) a block, its clauses one per line.
APS's in-line codes are read as text: ``.sub.``/``.sup.`` marks go ("BF.sub.4" reads "BF4"),
its named characters (``.alpha.``, ``.degree.``, ``.ltoreq.``) are the characters. Citations,
classifications, examiners and attorneys are left out, as for ICE.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.patent import dated, named
from agrag_pipeline.parsing.textlayer import TextLayer

MEDIA_TYPE = "text/x-uspto-aps"

#: A field line: a name of three or four capitals or digits, then its value from column 6.
_FIELD = re.compile(r"^([A-Z][A-Z0-9]{2,3})(?: +(.*))?$")
_SPACE = re.compile(r"\s+")
#: APS's codes for characters a typewriter lacks; ``.sub.``/``.sup.`` only mark what follows.
_NAMED = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "theta": "θ",
    "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ", "phi": "φ", "omega": "ω",
    "Delta": "Δ", "Omega": "Ω", "Sigma": "Σ", "degree": "°", "+-": "±", "times": "×",
    "ltoreq": "≤", "gtoreq": "≥", "noteq": "≠", "apprxeq": "≈", "about": "~",
    "crclbar": "⊖", "sym": "⊕", "multidot": "·", "infin": "∞", "div": "÷",
    "rarw": "→", "larw": "←", "revreaction": "⇄", "sqroot": "√", "perp": "⊥",
}  # fmt: skip
_CODE = re.compile(r"\.(sub|sup|" + "|".join(re.escape(n) for n in _NAMED) + r")\.")
#: Groups whose records are the patent's text, and the heading written for the ones that
#: have none of their own.
_TEXT_GROUPS = {
    "PARN": "Related Applications",
    "GOVT": "Government Interest",
    "BSUM": None,
    "DRWD": None,
    "DETD": None,
}
_PARAGRAPHS = frozenset({"PAR", "PA0", "PA1", "PA2", "PA3", "PA4", "PA5", "PAL", "PAF"})
_TABLES = frozenset({"TBL", "TBL3", "TBL1", "TBL2", "EQU"})


def _decoded(value: str) -> str:
    return _CODE.sub(lambda m: "" if m.group(1) in ("sub", "sup") else _NAMED[m.group(1)], value)


def _records(text: str) -> Iterator[tuple[str, list[str]]]:
    """(field name, its lines: the value, then its continuation lines as written)."""
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        field = _FIELD.match(line) if not line[:1].isspace() else None
        if field is None:
            if name is not None:
                lines.append(line)
            continue
        if name is not None:
            yield name, lines
        name, lines = field.group(1), [field.group(2) or ""]
    if name is not None:
        yield name, lines


def _value(lines: list[str]) -> str:
    return _SPACE.sub(" ", _decoded(" ".join(lines))).strip()


class _Patent:
    """One ``PATN`` record group written to the layer as it is read."""

    def __init__(self, layer: TextLayer) -> None:
        self.layer = layer
        self.fields: dict[str, str] = {}
        self.inventors: list[str] = []
        self.assignees: list[str] = []
        self.group = "PATN"
        self.party: dict[str, str] = {}
        self.fronted = False
        self.claim: list[str] = []

    def _party_done(self) -> None:
        if not self.party.get("NAM"):
            self.party = {}
            return
        name = self.party["NAM"]
        if ";" in name and self.group == "INVT":  # "Miyazaki; Takeshi": family; given
            family, _, given = name.partition(";")
            name = f"{given.strip()} {family.strip()}"
        place = ", ".join(p for p in (self.party.get(k) for k in ("CTY", "STA", "CNT")) if p)
        entry = f"{name} ({place})" if place else name
        (self.inventors if self.group == "INVT" else self.assignees).append(entry)
        self.party = {}

    def front(self) -> None:
        """The title and bibliographic lines, once, before the first text group."""
        if self.fronted:
            return
        self.fronted = True
        fields = self.fields
        self.layer.heading(fields.get("TTL", ""), 1)
        lines = []
        number = fields.get("WKU", "")
        if number:
            # The last of WKU's nine characters is a check digit, not the number's.
            shown = number[:-1] if len(number) == 9 else number
            lines.append(dated(f"US {shown}", "issued", fields.get("ISD", "")))
        if fields.get("APN"):
            lines.append(dated(f"Application {fields['APN']}", "filed", fields.get("APD", "")))
        lines += named("Inventors", self.inventors) + named("Assignees", self.assignees)
        self.layer.lines(lines)

    def open_group(self, name: str) -> None:
        if self.group in ("INVT", "ASSG"):
            self._party_done()
        self.end_claim()
        self.group = name
        if name in ("ABST", "CLMS", "DCLM", *_TEXT_GROUPS):
            self.front()
        if name == "ABST":
            self.layer.heading("Abstract", 2)
        elif name in ("CLMS", "DCLM"):
            self.layer.heading("Claims", 2)
        elif _TEXT_GROUPS.get(name):
            self.layer.heading(str(_TEXT_GROUPS[name]), 2)

    def record(self, name: str, lines: list[str]) -> None:
        group = self.group
        if group == "PATN":
            self.fields.setdefault(name, _value(lines))
        elif group in ("INVT", "ASSG"):
            self.party.setdefault(name, _value(lines))
        elif group in ("ABST", *_TEXT_GROUPS):
            if name == "PAC":
                self.layer.heading(_value(lines), 2)
            elif name in _PARAGRAPHS:
                self.layer.paragraph(_value(lines))
            elif name in _TABLES:
                self.layer.preformatted([_decoded(line) for line in lines])
        elif group in ("CLMS", "DCLM"):
            if name == "STM":
                self.layer.paragraph(_value(lines))
            elif name == "NUM":
                self.end_claim()
            elif name in _PARAGRAPHS:
                self.claim.append(_value(lines))
            elif name in _TABLES:
                self.end_claim()
                self.layer.preformatted([_decoded(line) for line in lines])

    def end_claim(self) -> None:
        if self.claim:
            self.layer.lines(self.claim)
            self.claim = []

    def close(self) -> None:
        self.open_group("END")
        self.front()


def looks_like_aps(text: str) -> bool:
    """Whether ``text`` opens as an APS file: a ``PATN`` line, then its ``WKU`` record."""
    head = text.lstrip("\ufeff")[:200].splitlines()
    return len(head) >= 2 and head[0].rstrip() == "PATN" and head[1].startswith("WKU ")


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of the APS patents in ``text``."""
    key = document.source_key
    if not text.strip():
        raise EmptyDocumentError(key, "the file is empty")
    if not looks_like_aps(text):
        raise CorruptDocumentError(
            key, "not a USPTO APS file: it does not open with a PATN line and its WKU record"
        )
    layer = TextLayer()
    deadline = current_deadline(key)
    patent: _Patent | None = None
    for count, (name, lines) in enumerate(_records(text)):
        if not count % 256:
            deadline.check(f"APS record {count:,}")
        if name == "PATN":
            if patent is not None:
                patent.close()
            patent = _Patent(layer)
        elif patent is None:
            continue
        elif lines == [""] and (name in _TEXT_GROUPS or name in _GROUPS):
            patent.open_group(name)
        else:
            patent.record(name, lines)
    if patent is not None:
        patent.close()
    return layer.parsed(document, "the APS file holds no patent text")


#: Record groups other than the text ones: their records are left out (citations, classes...)
#: or gathered (inventors, assignees) until the next group.
_GROUPS = frozenset(
    {"INVT", "ASSG", "ABST", "CLMS", "DCLM", "PRIR", "REIS", "RLAP", "CLAS", "UREF", "FREF"}
    | {"OREF", "LREP", "PCTA", "PATN"}
)


__all__ = ["MEDIA_TYPE", "looks_like_aps", "parse"]
