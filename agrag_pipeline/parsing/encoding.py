"""Decoding raw bytes of a text format (Markdown, plain text, HTML, CSV) into the text layer.

Decision: read what people actually save, and say how it was read. A folder holds text in
legacy 8-bit encodings (windows-1252 is the HTML standard's fallback; older notes are Latin-1;
Central European, Cyrillic, Greek and CJK files have their own code pages), so refusing every
file that is not UTF-8 failed real documents. The order, first match wins, follows the HTML
standard's encoding sniffing:

1. a byte-order mark: UTF-8, UTF-32 (checked before UTF-16, whose mark is a prefix of
   UTF-32 LE's) or UTF-16;
2. BOM-less UTF-16 when its shape is unmistakable (see ``_bomless_utf16``);
3. valid UTF-8 (strict: a file that decodes as UTF-8 is UTF-8, whatever it declares);
4. HTML only: the charset a ``<meta>`` in the first 1,024 bytes declares, when it decodes;
5. a detector (charset-normalizer, MIT) over legacy encodings; windows-1252 wins whenever its
   reading is as clean and as coherent as the best guess (short Western text is ambiguous
   between the Latin code pages, and windows-1252 is what such text almost always is);
6. windows-1252 (bytes it leaves undefined read as their Latin-1 C1 controls, as the WHATWG
   decoder does).

``Decoded.encoding`` and ``Decoded.rule`` say which; the parsers record both in the
document's metadata (``text_encoding``, ``text_encoding_rule``), stored with its sections.
NUL bytes still mean binary data behind a text extension and are refused, as is text whose
decoding is mostly control characters.

Offsets of the text layer count characters of the decoded text, after any byte-order mark.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from agrag_pipeline.parsing.errors import EmptyDocumentError, EncodingError

_UTF32_BOMS = {codecs.BOM_UTF32_LE: "utf-32-le", codecs.BOM_UTF32_BE: "utf-32-be"}
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)

#: How much of a file the detector reads: enough to tell a code page, cheap on any size.
_DETECTOR_SAMPLE = 64 * 1024
#: Share of control characters past which decoded "text" is binary data.
_MAX_CONTROL_SHARE = 0.05
#: Stray non-UTF-8 bytes accepted in UTF-8 text whatever its share of multi-byte characters.
_MAX_STRAY_BYTES = 16
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_CONTROL_CHARACTER = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
#: How many of charset-normalizer's candidates are scored.
_DETECTOR_CANDIDATES = 8
_IMPLAUSIBLE = re.compile(
    r"(?<=[^\W\d_])[\u00a1-\u00bf\u00d7\u00f7\u2020\u2021\u2030]"  # symbol after a letter
    r"|[\u00a4-\u00be\u00d7\u00f7](?=[^\W\d_])"  # symbol before a letter
    r"|[\uff61-\uff9f]"  # half-width katakana
    r"|[\x80-\x9f]"  # C1 controls
)
#: The HTML standard's prescan: a <meta charset=...> or http-equiv content type.
_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)", re.IGNORECASE)


@dataclass(frozen=True)
class Decoded:
    """Text and how it was read: the codec's name and the rule that chose it."""

    text: str
    encoding: str
    rule: str

    def metadata(self) -> dict[str, str]:
        """What a parser records in the document's metadata."""
        return {"text_encoding": self.encoding, "text_encoding_rule": self.rule}


def decode(raw: bytes, source_key: str, *, html: bool = False) -> Decoded:
    """``raw`` decoded by the first rule of the module docstring that applies.

    Raises:
        EmptyDocumentError: no bytes at all.
        EncodingError: binary data (NUL bytes, mostly control characters), or a byte-order
            mark the bytes behind it do not honour.
    """
    if not raw:
        raise EmptyDocumentError(source_key, "the file is empty (0 bytes)")
    if raw.startswith(codecs.BOM_UTF8):
        return Decoded(_decode_bom(raw, "utf-8", 3, source_key), "utf-8", "byte-order mark")
    for bom, codec in _UTF32_BOMS.items():
        if raw.startswith(bom):
            return Decoded(_decode_bom(raw, codec, 4, source_key), codec, "byte-order mark")
    if raw[:2] in _UTF16_BOMS:
        utf16 = "utf-16-le" if raw.startswith(codecs.BOM_UTF16_LE) else "utf-16-be"
        return Decoded(_decode_bom(raw, utf16, 2, source_key), utf16, "byte-order mark")
    bomless = _bomless_utf16(raw)
    if bomless is not None:
        text = _decode_bomless_utf16(raw, bomless, source_key)
        return Decoded(text, bomless, "UTF-16 shape without a byte-order mark")
    utf8 = _decode_utf8(raw, source_key, offset_base=0)
    if utf8 is not None:
        return Decoded(utf8, "utf-8", "valid UTF-8")
    return _legacy(raw, source_key, html)


def _legacy(raw: bytes, source_key: str, html: bool) -> Decoded:
    """Rules 4-6: not UTF-8, so mostly UTF-8, or a declared, detected or default encoding."""
    mixed = _utf8_with_stray_bytes(raw)
    if mixed is not None:
        return mixed
    if html:
        declared = _declared_charset(raw)
        if declared is not None:
            text = _try_decode(raw, declared)
            if text is not None:
                return _checked(Decoded(text, declared, "HTML meta charset"), source_key)
    detected = _detected(raw)
    if detected is not None:
        return _checked(detected, source_key)
    return _checked(Decoded(_windows_1252(raw), "windows-1252", "default"), source_key)


def _utf8_with_stray_bytes(raw: bytes) -> Decoded | None:
    """UTF-8 text with a few bytes of another encoding (files pasted together, an editor that
    saved one line in Latin-1): its UTF-8 read as UTF-8, each stray byte as windows-1252.
    Only when real multi-byte UTF-8 sequences outnumber the stray bytes (or the stray bytes are
    a handful): legacy text almost never forms such sequences by chance."""
    escaped = raw.decode("utf-8", errors="surrogateescape")  # stray byte b -> U+DC00 + b
    stray = len(_ESCAPED_BYTE.findall(escaped))
    text = _ESCAPED_BYTE.sub(lambda m: _windows_1252(bytes([ord(m.group()) - 0xDC00])), escaped)
    multibyte_extra = len(raw) - len(text)  # stray bytes map to one character each
    if multibyte_extra <= 0 or stray > max(_MAX_STRAY_BYTES, multibyte_extra * 2):
        return None
    return Decoded(text, "utf-8", f"UTF-8 with {stray} stray byte(s) read as windows-1252")


def _declared_charset(raw: bytes) -> str | None:
    match = _META_CHARSET.search(raw[:1024])
    if match is None:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return None
    # The standard reads a declared UTF-16/32 as UTF-8 (bytes that are not UTF-16 carry it),
    # and a declared UTF-8 that did not decode is not UTF-8.
    if name.startswith(("utf-16", "utf-32", "utf-8")):
        return None
    return "windows-1252" if name in ("latin-1", "iso8859-1", "ascii", "cp1252") else name


def _detected(raw: bytes) -> Decoded | None:
    """The most plausible reading among charset-normalizer's candidates and windows-1252.

    charset-normalizer alone is unreliable on short text (it took Polish in windows-1250 for
    windows-1252, and Russian in KOI8-R after an English line for Shift_JIS), so each
    candidate's reading is scored by what wrong code pages leave in text: symbols glued to
    letters (``rodz¹``, ``p³atnoœci``), half-width katakana, control characters. The fewest
    wins; on a tie windows-1252, else charset-normalizer's own chaos and coherence.
    """
    from charset_normalizer import from_bytes

    sample = raw[:_DETECTOR_SAMPLE]
    candidates: dict[str, tuple[float, float, float]] = {}
    western = from_bytes(sample, cp_isolation=["cp1252"]).best()
    if western is not None:
        candidates["windows-1252"] = (
            _implausible(_windows_1252(sample)),
            western.chaos,
            -western.coherence,
        )
    for match in list(from_bytes(sample))[:_DETECTOR_CANDIDATES]:
        name = codecs.lookup(match.encoding).name
        if name in ("cp1252", "latin-1", "iso8859-1"):
            continue
        candidates.setdefault(name, (_implausible(str(match)), match.chaos, -match.coherence))
    if not candidates:
        return None
    order = sorted(
        candidates,
        key=lambda n: (candidates[n][0], n != "windows-1252", *candidates[n][1:]),
    )
    for name in order:
        text = _try_decode(raw, name)
        if text is not None:
            return Decoded(text, name, "detected (charset-normalizer)")
    return None


def detected_codec(raw: bytes) -> str | None:
    """The code page legacy-encoded ``raw`` reads most plausibly in (``_detected``'s choice:
    ``windows-1252`` for a Western reading), or None when no candidate decodes it."""
    found = _detected(raw)
    return found.encoding if found is not None else None


def _implausible(text: str) -> float:
    """Share of characters a wrong code page typically leaves: a symbol or number sign glued to
    a letter, a letter-glued inverted mark, half-width katakana, C1 control characters."""
    if not text:
        return 0.0
    return len(_IMPLAUSIBLE.findall(text)) / len(text)


def _try_decode(raw: bytes, codec: str) -> str | None:
    if codec in ("windows-1252", "cp1252"):
        return _windows_1252(raw)
    try:
        return raw.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _windows_1252(raw: bytes) -> str:
    """WHATWG windows-1252: Python's cp1252, with its five undefined bytes as Latin-1."""
    return raw.decode("cp1252", errors="agrag-latin1-fallback")


def _latin1_fallback(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    return exc.object[exc.start : exc.end].decode("latin-1"), exc.end


codecs.register_error("agrag-latin1-fallback", _latin1_fallback)


def _checked(decoded: Decoded, source_key: str) -> Decoded:
    """Refuse a legacy reading that is mostly control characters: binary data, not text."""
    text = decoded.text
    controls = len(_CONTROL_CHARACTER.findall(text))
    if text and controls > _MAX_CONTROL_SHARE * len(text):
        raise EncodingError(
            source_key,
            f"binary data, not text: neither UTF-8 nor a legacy encoding ({controls:,} of "
            f"{len(text):,} characters would be control characters read as {decoded.encoding})",
        )
    return decoded


#: Share of code units that must have the zero-high-byte shape of UTF-16 Latin text.
_UTF16_SHAPE = 0.9
_WHITESPACE_CONTROLS = frozenset("\t\n\r\f\v")


def _bomless_utf16(raw: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when ``raw`` has the zero-byte pattern of BOM-less UTF-16."""
    if len(raw) < 2 or b"\x00" not in raw:
        return None
    sample = raw[: 64 * 1024 - (64 * 1024) % 2] if len(raw) > 64 * 1024 else raw
    units = len(sample) // 2
    if units == 0:
        return None
    low_even = sample[0::2]  # little endian: the low byte comes first
    high_odd = sample[1::2][:units]
    le = sum(1 for lo, hi in zip(low_even, high_odd, strict=False) if hi == 0 and lo != 0)
    be = sum(1 for hi, lo in zip(low_even, high_odd, strict=False) if hi == 0 and lo != 0)
    if le >= _UTF16_SHAPE * units and le > be:
        return "utf-16-le"
    if be >= _UTF16_SHAPE * units and be > le:
        return "utf-16-be"
    return None


def _decode_bomless_utf16(raw: bytes, codec: str, source_key: str) -> str:
    endian = "little" if codec.endswith("le") else "big"
    refusal = (
        f"UTF-16 ({endian} endian) without a byte-order mark, but not clean text: "
        "{problem} (save it as UTF-8, or as UTF-16 with a byte-order mark)"
    )
    if len(raw) % 2:
        raise EncodingError(source_key, refusal.format(problem="an odd number of bytes"))
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError as exc:
        raise EncodingError(
            source_key, refusal.format(problem=f"bad data at byte offset {exc.start}")
        ) from None
    for index, ch in enumerate(text):
        if (ord(ch) < 32 and ch not in _WHITESPACE_CONTROLS) or ch == "\x7f":
            raise EncodingError(
                source_key,
                refusal.format(problem=f"control character U+{ord(ch):04X} at index {index}"),
            )
    return text


def _decode_utf8(body: bytes, source_key: str, offset_base: int) -> str | None:
    """``body`` as UTF-8, or None where it is not UTF-8 (a legacy encoding is tried next)."""
    nul = body.find(b"\x00")
    if nul >= 0:  # checked first: binary data usually is invalid UTF-8 too, but NUL says why
        raise EncodingError(
            source_key, f"binary data, not text: NUL byte at byte offset {nul + offset_base}"
        )
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _decode_bom(raw: bytes, codec: str, bom_length: int, source_key: str) -> str:
    """The text behind a byte-order mark, which must honour it."""
    try:
        text = raw[bom_length:].decode(codec)
    except UnicodeDecodeError as exc:
        name = codec.upper().replace("-LE", "").replace("-BE", "")
        raise EncodingError(
            source_key,
            f"not valid {name} despite its byte-order mark: bad data at byte offset "
            f"{exc.start + bom_length}",
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise EncodingError(
            source_key, f"binary data, not text: NUL character at character index {nul}"
        )
    return text
