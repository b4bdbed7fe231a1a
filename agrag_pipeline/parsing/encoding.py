"""Decoding raw bytes of a text format (Markdown, plain text, HTML) into the text layer.

Decision: we refuse rather than guess. Accepted are UTF-8 (with or without a byte-order mark)
and UTF-16 with a byte-order mark. Anything else that is not valid UTF-8 raises
``EncodingError`` naming the byte offset of the first bad byte: a guessed encoding would give
text (and offsets) that silently differ from what the author wrote. NUL bytes mean binary data
behind a text extension and are refused too.

UTF-16 *without* a byte-order mark is not a guess when its shape is unmistakable: an even
length, decodes strictly, at least 90% of its code units below U+0100 with a zero high byte on
the one side (little or big endian) and no zero low byte, and no control characters but
whitespace once decoded. Such a file is decoded as UTF-16 (offsets count from its first byte);
one that has zero bytes in that pattern but fails the rest is refused as "UTF-16 without a
byte-order mark", not as binary data.

Offsets of the text layer count from *after* the byte-order mark (the mark is not text).
"""

from __future__ import annotations

import codecs

from agrag_pipeline.parsing.errors import EmptyDocumentError, EncodingError

_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def decode_text(raw: bytes, source_key: str) -> str:
    """The decoded text of ``raw``, without a byte-order mark.

    Raises:
        EmptyDocumentError: no bytes at all.
        EncodingError: not UTF-8 / BOM-marked UTF-16, or binary (NUL bytes).
    """
    if not raw:
        raise EmptyDocumentError(source_key, "the file is empty (0 bytes)")
    if raw.startswith(codecs.BOM_UTF8):
        return _decode_utf8(raw[len(codecs.BOM_UTF8) :], source_key, offset_base=3)
    if raw[:2] in _UTF16_BOMS:
        return _decode_utf16(raw, source_key)
    codec = _bomless_utf16(raw)
    if codec is not None:
        return _decode_bomless_utf16(raw, codec, source_key)
    return _decode_utf8(raw, source_key, offset_base=0)


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


def _decode_utf8(body: bytes, source_key: str, offset_base: int) -> str:
    nul = body.find(b"\x00")
    if nul >= 0:  # checked first: binary data usually is invalid UTF-8 too, but NUL says why
        raise EncodingError(
            source_key, f"binary data, not text: NUL byte at byte offset {nul + offset_base}"
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EncodingError(
            source_key,
            f"not valid UTF-8: bad byte 0x{body[exc.start]:02x} at byte offset "
            f"{exc.start + offset_base} (only UTF-8, or UTF-16 with a byte-order mark, is "
            "accepted; convert the file to UTF-8)",
        ) from None
    return text


def _decode_utf16(raw: bytes, source_key: str) -> str:
    codec = "utf-16-le" if raw.startswith(codecs.BOM_UTF16_LE) else "utf-16-be"
    body = raw[2:]
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        raise EncodingError(
            source_key,
            f"not valid UTF-16 despite its byte-order mark: bad data at byte offset "
            f"{exc.start + 2}",
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise EncodingError(
            source_key, f"binary data, not text: NUL character at character index {nul}"
        )
    return text
