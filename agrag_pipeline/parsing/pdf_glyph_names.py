"""The characters a PDF's simple fonts name in their encoding, for fonts without a ToUnicode map.

Why: a Type 3 font (how matplotlib embeds the text of a figure, the default before 3.10) often
has no ToUnicode map, only an encoding whose ``/Differences`` name each glyph (``/seven``,
``/period``, ``/alpha``). PDFium does not read those names for Type 3 fonts: it flags the
characters as unmapped and gives the character code instead, which is a digit by luck and a
wrong letter otherwise (``®`` for the ``/alpha`` of TeX's cmmi10 at code 174). The names are the
characters (Adobe's glyph list, ``uniXXXX``), so they are read here, from the font dictionaries,
by pdfminer.six (installed with pdfplumber), and only for a document where PDFium flagged some.

PDFium names a font by its ``/BaseFont`` (a subset prefix such as ``GYUURQ+`` keeps the subsets of
one document apart); two fonts of one name whose encodings disagree on a code give no character
for it.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Mapping

#: Font subtypes whose codes are single bytes named by an encoding's ``/Differences``.
_SIMPLE_FONTS = frozenset({"Type1", "Type3", "TrueType", "MMType1"})
# pdfminer warns of every damaged object it meets; a damaged PDF is PDFium's to report. Set once
# (not around each read: parses run in threads too).
logging.getLogger("pdfminer").setLevel(logging.ERROR)


class GlyphNames:
    """Per font name, the characters its encoding names (read on first use, once)."""

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._fonts: dict[str, dict[int, str]] | None = None

    def of(self, font_name: str) -> Mapping[int, str]:
        """Code -> characters for the simple font ``font_name`` without a ToUnicode map
        (empty when there is none, or its names are no characters: ``/g12``, ``/cid7``)."""
        if not font_name:
            return {}
        if self._fonts is None:
            self._fonts = _read_fonts(self._raw)
        return self._fonts.get(font_name, {})


def every_object(raw: bytes) -> Iterator[object]:
    """Each object of the document once, as pdfminer reads it: damaged ones left out, none at
    all where pdfminer cannot read the file (PDFium's reading then stands)."""
    # Imported here, on first use: most PDFs never need pdfminer (0.1 s to import).
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfparser import PDFParser

    try:
        document = PDFDocument(PDFParser(io.BytesIO(raw)))
    except Exception:
        return
    seen: set[int] = set()
    for xref in document.xrefs:
        for objid in xref.get_objids():
            if objid in seen:
                continue
            seen.add(objid)
            try:
                yield document.getobj(objid)
            except Exception:
                continue  # a damaged object: left out


def _read_fonts(raw: bytes) -> dict[str, dict[int, str]]:
    found: dict[str, dict[int, str]] = {}
    conflicts: dict[str, set[int]] = {}
    for obj in every_object(raw):
        font = _named_font(obj)
        if font is None:
            continue
        name, codes = font
        known = found.setdefault(name, {})
        for code, text in codes.items():
            if known.get(code, text) != text:
                conflicts.setdefault(name, set()).add(code)
            known[code] = text
    for name, ambiguous in conflicts.items():
        for code in ambiguous:
            found[name].pop(code, None)
    return found


def _named_font(obj: object) -> tuple[str, dict[int, str]] | None:
    """(base font name, code -> characters) of a simple font without a ToUnicode map whose
    encoding has ``/Differences``; None for anything else."""
    from pdfminer.psparser import PSLiteral

    if not isinstance(obj, dict) or "ToUnicode" in obj:
        return None
    subtype = resolved(obj.get("Subtype"))
    if not isinstance(subtype, PSLiteral) or subtype.name not in _SIMPLE_FONTS:
        return None
    name = literal_name(obj.get("BaseFont"))
    encoding = resolved(obj.get("Encoding"))
    if name is None or not isinstance(encoding, dict):
        return None
    differences = resolved(encoding.get("Differences"))
    if not isinstance(differences, list):
        return None
    codes: dict[int, str] = {}
    code = 0
    for item in differences:
        item = resolved(item)
        if isinstance(item, int):
            code = item
        elif isinstance(item, PSLiteral):
            text = _character(item.name)
            if text is not None and 0 <= code < 256:
                codes[code] = text
            code += 1
    return name, codes


def _character(glyph: object) -> str | None:
    """The characters a glyph name stands for; None for a name that is no character."""
    from pdfminer.encodingdb import name2unicode

    if isinstance(glyph, bytes):
        glyph = glyph.decode("latin-1")
    if not isinstance(glyph, str):
        return None
    try:
        text = name2unicode(glyph)
    except Exception:  # /g12, /cid7, /.notdef: an index, not a name of a character
        return None
    # One character: a ligature's name (``/f_f_i``) is left to PDFium's reading, as before.
    return text if len(text) == 1 and text.isprintable() else None


def literal_name(value: object) -> str | None:
    """The name ``value`` is (``/BaseFont``'s ``GYUURQ+Cmmi10``), references followed; None
    for anything that is no name."""
    from pdfminer.psparser import PSLiteral

    value = resolved(value)
    if not isinstance(value, PSLiteral):
        return None
    return value.name if isinstance(value.name, str) else value.name.decode("latin-1")


def resolved(value: object) -> object:
    """``value`` with indirect references followed (None where pdfminer cannot)."""
    from pdfminer.pdftypes import resolve1

    try:
        return resolve1(value)
    except Exception:
        return None
