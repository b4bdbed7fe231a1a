"""XBRL instance documents (``.xbrl``, or ``.xml`` with an ``xbrl`` root in the XBRL 2.1
instance namespace): the financial reports companies file with the SEC, ESMA and others, as
machine-readable facts.

Read as generic XML they were a list of element paths with every ``contextRef`` and ``id``
(``DocumentType@contextRef: c0``), each context a heading of its own, and the notes to the
financial statements, which filers put in ``...TextBlock`` facts as escaped HTML, written with
their tags. Here the instance is laid out as a page and read by our HTML reader:

- the title: document type, registrant and period end (``dei:DocumentType``,
  ``EntityRegistrantName``, ``DocumentPeriodEndDate``), as docling writes it;
- each text block, in the filing's order, under a heading made of its concept's name
  ("Basis Of Accounting Policy"; the taxonomy's labels live in other files, not read here),
  its HTML read as HTML: the notes' paragraphs and tables;
- every other fact in one table, in the filing's order: concept, period (an instant, or start
  to end), dimensions ("Statement Class Of Stock: Common Class A"), value and unit ("USD",
  "USD per share"); the balance sheet and income statement exist only as such facts in an
  instance, so this is where "total assets at year end" is found. Nil facts and exact
  duplicates (inline XBRL repeats a fact where the page shows it twice) are left out;
- footnotes linked to facts after the table.

Parsed as JATS is (``jats.parse_xml``: no DTD loading, no entity expansion, no network).
"""

from __future__ import annotations

import html as html_escape
import re
from dataclasses import dataclass

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.jats import local_name, parse_xml
from agrag_pipeline.parsing.parsed import ParsedDocument

MEDIA_TYPE = "application/xbrl+xml"
INSTANCE_NAMESPACE = "http://www.xbrl.org/2003/instance"
_XHTML = "http://www.w3.org/1999/xhtml"
_XSI_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"
_LINK = "http://www.xbrl.org/2003/linkbase"

#: A word boundary inside a CamelCase concept name: "AssetsCurrent" -> "Assets Current".
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPACE = re.compile(r"\s+")
#: A fact's value holds HTML (a text block filed without the TextBlock suffix).
_MARKUP = re.compile(r"<(?:p|div|table|span|br|b|i|font|ul|ol|h[1-6])\b", re.IGNORECASE)


def _words(name: str) -> str:
    """A concept or member name as words ("IncomeTaxPolicyTextBlock" -> "Income Tax Policy")."""
    for suffix in ("TextBlock", "Member", "Axis", "Abstract"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    words = _CAMEL.sub(" ", name.split(":")[-1]).replace("_", " ").split()
    # "BasisOfAccountingPolicyPolicy": a taxonomy's name with its kind appended again.
    return " ".join(w for i, w in enumerate(words) if i == 0 or w != words[i - 1])


def _text(element: etree._Element) -> str:
    return _SPACE.sub(" ", "".join(element.itertext())).strip()


@dataclass(frozen=True)
class _Context:
    period: str
    dimensions: str


def _contexts(root: etree._Element) -> dict[str, _Context]:
    contexts: dict[str, _Context] = {}
    for context in root:
        if local_name(context) != "context" or not context.get("id"):
            continue
        start = end = instant = ""
        dimensions: list[str] = []
        for element in context.iter():
            name = local_name(element)
            if name == "startDate":
                start = _text(element)
            elif name == "endDate":
                end = _text(element)
            elif name == "instant":
                instant = _text(element)
            elif name == "forever":
                instant = "forever"
            elif name == "explicitMember":
                dimensions.append(
                    f"{_words(element.get('dimension', ''))}: {_words(_text(element))}"
                )
            elif name == "typedMember":
                dimensions.append(f"{_words(element.get('dimension', ''))}: {_text(element)}")
        period = instant or (f"{start} to {end}" if start or end else "")
        contexts[context.get("id", "")] = _Context(period, "; ".join(dimensions))
    return contexts


def _measures(unit: etree._Element, part: str) -> list[str]:
    """The measures of a divided unit's ``unitNumerator`` or ``unitDenominator``, as words."""
    return [
        _words(_text(m))
        for e in unit.iter()
        if local_name(e) == part
        for m in e
        if local_name(m) == "measure"
    ]


def _units(root: etree._Element) -> dict[str, str]:
    """Unit id -> its words: "USD", "shares", "USD per share" (a divide)."""
    units: dict[str, str] = {}
    for unit in root:
        if local_name(unit) != "unit" or not unit.get("id"):
            continue
        numerator = _measures(unit, "unitNumerator")
        denominator = ["share" if m == "shares" else m for m in _measures(unit, "unitDenominator")]
        if numerator or denominator:
            units[unit.get("id", "")] = f"{' '.join(numerator)} per {' '.join(denominator)}"
        else:
            measures = [_text(m).split(":")[-1] for m in unit if local_name(m) == "measure"]
            units[unit.get("id", "")] = " ".join(measures)
    return units


def _markup_of(fact: etree._Element) -> str | None:
    """A fact's value as HTML when it is a text block (escaped HTML, or XHTML children)."""
    children = [c for c in fact if isinstance(c.tag, str)]
    if children and all(str(c.tag).startswith(f"{{{_XHTML}}}") for c in children):
        inner = "".join(etree.tostring(c, encoding="unicode", with_tail=True) for c in children)
        return html_escape.escape(fact.text or "") + inner
    value = fact.text or ""
    if local_name(fact).endswith("TextBlock") or _MARKUP.search(value):
        return value if _MARKUP.search(value) else f"<p>{html_escape.escape(value)}</p>"
    return None


def _cell(value: str) -> str:
    return f"<td>{html_escape.escape(value)}</td>"


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of an XBRL instance: its text blocks and its facts."""
    key = document.source_key
    if not raw.strip():
        raise EmptyDocumentError(key, "the file is empty")
    root = parse_xml(raw, key)
    if local_name(root) != "xbrl" or etree.QName(root).namespace != INSTANCE_NAMESPACE:
        raise CorruptDocumentError(
            key, f"not an XBRL instance: the root element is <{local_name(root) or '?'}>"
        )
    deadline = current_deadline(key)
    contexts = _contexts(root)
    units = _units(root)
    title: dict[str, str] = {}
    blocks: list[str] = []
    rows: list[str] = []
    footnotes: list[str] = []
    seen: set[tuple[str, str, str, str]] = set()
    for count, fact in enumerate(root.iter()):
        deadline.tick(f"element {count:,}")
        if not isinstance(fact.tag, str):
            continue
        if local_name(fact) == "footnote" and etree.QName(fact).namespace == _LINK:
            footnotes.append(f"<p>{html_escape.escape(_text(fact))}</p>")
            continue
        context_id = fact.get("contextRef")
        if context_id is None or fact.get(_XSI_NIL) == "true":
            continue
        name = local_name(fact)
        markup = _markup_of(fact)
        value = _text(fact) if markup is None else ""
        if etree.QName(fact).namespace and "/dei/" in str(etree.QName(fact).namespace):
            title.setdefault(name, value)
        identity = (
            etree.QName(fact).text,
            context_id,
            fact.get("unitRef", ""),
            value or markup or "",
        )
        if identity in seen:
            continue
        seen.add(identity)
        if markup is not None:
            if markup.strip():
                blocks.append(
                    f"<h2>{html_escape.escape(_words(name))}</h2>\n<section>{markup}</section>"
                )
            continue
        if not value:
            continue
        context = contexts.get(context_id, _Context("", ""))
        rows.append(
            "<tr>"
            + _cell(_words(name))
            + _cell(context.period)
            + _cell(context.dimensions)
            + _cell(value)
            + _cell(units.get(fact.get("unitRef", ""), ""))
            + "</tr>"
        )
    heading = " ".join(
        title[k]
        for k in ("DocumentType", "EntityRegistrantName", "DocumentPeriodEndDate")
        if title.get(k)
    )
    page = [f"<h1>{html_escape.escape(heading)}</h1>" if heading else ""]
    page.extend(blocks)
    if rows:
        page.append(
            "<h2>Facts</h2>\n<table><thead><tr><th>Concept</th><th>Period</th><th>Dimensions</th>"
            "<th>Value</th><th>Unit</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        )
    if footnotes:
        page.append("<h2>Footnotes</h2>" + "".join(footnotes))
    parsed = html.parse(
        "<!DOCTYPE html><html><body>" + "\n".join(page) + "</body></html>", document
    )
    if not parsed.text_layer.strip():
        raise EmptyDocumentError(key, "the XBRL instance holds no fact with a value")
    return parsed


__all__ = ["INSTANCE_NAMESPACE", "MEDIA_TYPE", "parse"]
