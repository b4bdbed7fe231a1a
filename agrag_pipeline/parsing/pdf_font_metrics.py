"""A font's own ascent and descent, where PDFium had to invent them.

Why: the height of PDFium's "loose" character box is how the layout measures type size, and
PDFium takes it from the font descriptor's ``/Ascent`` and ``/Descent``. Where both are 0 (as
LibreOffice 7.4 writes every font it embeds) PDFium sets the ascent to the top of the glyph
drawn for code 65 and the descent to the bottom of the one for code 103, "A" and "g" in a
standard encoding. A subset numbers its glyphs as it likes (LibreOffice: 1, 2, 3, ...), so
those are any two glyphs, and one font's characters measured 0.69 em (Liberation Sans Bold: a
glyph standing on the baseline for "g") while another's measured 1.28 em (Liberation Serif,
from its bounding box): a 14 pt sans-serif heading came out smaller than an 11 pt serif body
and was not found.

How: the embedded font program (TrueType or OpenType) carries its metrics in its ``hhea`` and
``OS/2`` tables. Where PDFium's ascent and descent match none of them (whatever a PDF writer
copies into a descriptor), the document's descriptors are read, once per document and only
then (a subset may have lost or recomputed the tables a writer copied from; see
``_fonts_stating_no_metrics``), and where the font's descriptor states neither an ascent nor a
descent, its ``hhea`` metrics stand in. Fonts without such tables (Type 1, bare CFF) or not
embedded keep PDFium's.
"""

from __future__ import annotations

import ctypes
import re
import struct
from typing import Any

import pypdfium2.raw as pdfium_c

from agrag_pipeline.parsing.pdf_glyph_names import every_object, literal_name, resolved

#: How far (in em) a PDFium metric may lie from the font's own and still be the font's own: the
#: rounding of a descriptor's thousandths and of a font's units.
_TOLERANCE = 0.02
#: Font programs larger than this are not read for their metrics (a full CJK font, tens of MB;
#: PDFium's metrics are kept).
_MAX_PROGRAM_BYTES = 32 << 20
_SUBSET_PREFIX = re.compile(r"^[A-Z]{6}\+")


class FontMetrics:
    """Per font (by base font name), the (ascent, descent) in em to measure its characters by
    where PDFium invented its own; worked out once per document."""

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._replaced: dict[str, tuple[float, float] | None] = {}
        self._stating_none: set[str] | None = None

    def replaced(self, font: Any, name: str) -> tuple[float, float] | None:
        """The font's own (ascent, descent) where PDFium's were invented, else None."""
        if name in self._replaced:
            return self._replaced[name]
        own = _own_if_disagreeing(font)
        if own is not None:
            if self._stating_none is None:
                self._stating_none = _fonts_stating_no_metrics(self._raw)
            if name not in self._stating_none:
                own = None
        self._replaced[name] = own
        return own


def _own_if_disagreeing(font: Any) -> tuple[float, float] | None:
    """The font program's ``hhea`` (ascent, descent), where PDFium's match none of the
    program's metrics; None where they match one, or there is no sfnt program.

    The font's own line box, as PDFium measures a font whose descriptor copies it: the layout's
    thresholds are in such heights (about 1.1 em for most text faces). Scaled to one em, the
    narrow columns of a LibreOffice export ran together."""
    if not font or not pdfium_c.FPDFFont_GetIsEmbedded(font):
        return None
    ascent, descent = ctypes.c_float(), ctypes.c_float()
    if not (
        pdfium_c.FPDFFont_GetAscent(font, 1.0, ctypes.byref(ascent))
        and pdfium_c.FPDFFont_GetDescent(font, 1.0, ctypes.byref(descent))
    ):
        return None
    candidates = _program_metrics(_program(font))
    if not candidates:
        return None
    said = (ascent.value, descent.value)
    if any(
        abs(said[0] - a) <= _TOLERANCE and abs(said[1] - d) <= _TOLERANCE for a, d in candidates
    ):
        return None
    own = candidates[0]  # hhea's: what FreeType (and PDFium, for a font without a box) uses
    return own if own[0] > 0 > own[1] and 0.5 <= own[0] - own[1] <= 3.0 else None


def _fonts_stating_no_metrics(raw: bytes) -> set[str]:
    """Base names of the document's fonts whose descriptor gives 0 (or nothing) for both its
    ``/Ascent`` and ``/Descent``.

    Read from the file's bytes where every object is written plainly (no object streams, as
    LibreOffice writes): a look at each descriptor, about 100x faster than pdfminer's reading
    of every object (0.2 s for a 259-page export); else by pdfminer."""
    if b"/ObjStm" in raw:
        return _fonts_stating_no_metrics_by_pdfminer(raw)
    found: set[str] = set()
    for match in _DESCRIPTOR.finditer(raw):
        start = raw.rfind(b" obj", 0, match.start())
        end = raw.find(b"endobj", match.end())
        if start < 0 or end < 0:
            return _fonts_stating_no_metrics_by_pdfminer(raw)  # not as plain as it looked
        body = raw[start:end]
        name = _FONT_NAME.search(body)
        if name is None:
            continue
        if not (_states(body, "Ascent") or _states(body, "Descent")):
            text = _NAME_ESCAPE.sub(_unescaped, name.group(1).decode("latin-1"))
            found.update((text, _SUBSET_PREFIX.sub("", text)))
    return found


#: A font descriptor, the font name it describes, and a name's ``#xx`` escapes.
_DESCRIPTOR = re.compile(rb"/Type\s*/FontDescriptor\b")
_FONT_NAME = re.compile(rb"/FontName\s*/([^\s/<>\[\]()]+)")
_NAME_ESCAPE = re.compile(r"#([0-9A-Fa-f]{2})")


def _unescaped(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16))


def _states(body: bytes, key: str) -> bool:
    """Whether the descriptor ``body`` gives ``key`` a value other than 0 (a reference to
    one counts as given)."""
    number = re.search(rb"/" + key.encode() + rb"\s*(-?[\d.]+)\b(?!\s+\d+\s+R)", body)
    if number is None:
        return re.search(rb"/" + key.encode() + rb"\b", body) is not None
    try:
        return float(number.group(1)) != 0
    except ValueError:
        return True


def _fonts_stating_no_metrics_by_pdfminer(raw: bytes) -> set[str]:
    """As ``_fonts_stating_no_metrics``, by pdfminer's reading of every object (a composite
    font under its own name and its descendant's)."""

    def states_none(font: dict[str, object]) -> bool:
        descriptor = resolved(font.get("FontDescriptor"))
        if not isinstance(descriptor, dict):
            return False
        return all(resolved(descriptor.get(key, 0)) in (0, 0.0) for key in ("Ascent", "Descent"))

    found: set[str] = set()
    for obj in every_object(raw):
        if not isinstance(obj, dict) or literal_name(obj.get("Type")) != "Font":
            continue
        names = [literal_name(obj.get("BaseFont"))]
        descendants = resolved(obj.get("DescendantFonts"))
        if isinstance(descendants, list) and descendants:
            descendant = resolved(descendants[0])
            if isinstance(descendant, dict):
                names.append(literal_name(descendant.get("BaseFont")))
                obj = descendant
        if states_none(obj):
            # PDFium names a font with its subset prefix (``BAAAAA+``) or without it.
            found.update(name for name in names if name)
            found.update(_SUBSET_PREFIX.sub("", name) for name in names if name)
    return found


def _program(font: Any) -> bytes:
    size = ctypes.c_ulong()
    if not pdfium_c.FPDFFont_GetFontData(font, None, 0, ctypes.byref(size)):
        return b""
    if not 12 <= size.value <= _MAX_PROGRAM_BYTES:
        return b""
    buffer = (ctypes.c_ubyte * size.value)()
    if not pdfium_c.FPDFFont_GetFontData(font, buffer, size.value, ctypes.byref(size)):
        return b""
    return bytes(buffer)


def _program_metrics(data: bytes) -> list[tuple[float, float]]:
    """The (ascent, descent) pairs in em an sfnt font program states: ``hhea``'s first, then
    ``OS/2``'s typographic and Windows metrics; [] where ``data`` is no sfnt (Type 1, bare
    CFF) or lacks ``head`` or ``hhea``. Not the bounding box: a small subset's box is its few
    glyphs', and so, by chance, what PDFium invents from two of them (LibreOffice's
    OpenSymbol)."""
    if len(data) < 12 or data[:4] not in (b"\x00\x01\x00\x00", b"OTTO", b"true"):
        return []
    (count,) = struct.unpack_from(">H", data, 4)
    tables: dict[bytes, tuple[int, int]] = {}
    for n in range(count):
        at = 12 + 16 * n
        if at + 16 > len(data):
            return []
        tag, _checksum, offset, length = struct.unpack_from(">4sIII", data, at)
        if offset + length > len(data):
            continue
        tables[tag] = (offset, length)
    head, hhea = tables.get(b"head"), tables.get(b"hhea")
    if head is None or hhea is None or head[1] < 44 or hhea[1] < 8:
        return []
    (units,) = struct.unpack_from(">H", data, head[0] + 18)
    if not 16 <= units <= 16384:
        return []
    ascender, descender = struct.unpack_from(">hh", data, hhea[0] + 4)
    pairs = [(ascender, descender)]
    os2 = tables.get(b"OS/2")
    if os2 is not None and os2[1] >= 78:
        typo_ascender, typo_descender = struct.unpack_from(">hh", data, os2[0] + 68)
        win_ascent, win_descent = struct.unpack_from(">HH", data, os2[0] + 74)
        pairs += [(typo_ascender, typo_descender), (win_ascent, -win_descent)]
    return [(a / units, d / units) for a, d in pairs]
