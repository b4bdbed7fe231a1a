"""Decoding raw bytes of a text format (Markdown, plain text, HTML) into the text layer.

Decision: we refuse rather than guess. Accepted are UTF-8 (with or without a byte-order mark)
and UTF-16 with a byte-order mark. Anything else that is not valid UTF-8 raises
``EncodingError`` naming the byte offset of the first bad byte: a guessed encoding would give
text (and offsets) that silently differ from what the author wrote. NUL bytes mean binary data
behind a text extension and are refused too.

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
    return _decode_utf8(raw, source_key, offset_base=0)


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
