"""Kindle and Palm books without DRM: MOBI (Mobipocket: ``.mobi``, ``.prc``, ``.azw``), KF8
(``.azw3``) and PalmDOC (``.pdb``), as calibre, kindlegen and the old Palm converters wrote them.

Each is a Palm database: a 78-byte header (``BOOKMOBI`` or ``TEXtREAd`` at byte 60), then a
table of records. Record 0 holds the PalmDOC header (compression, text length, how many text
records follow, encryption) and, in a Mobipocket book, the MOBI header (text encoding, format
version, which trailing entries each text record carries, where KF8's flows end). Records
1..N are the book's text, each compressed on its own with PalmDOC's LZ77 variant (or stored),
trailing indexing entries appended after the compressed bytes.

What is read:
- the text records, trailing entries cut off (their sizes are written backwards from each
  record's end), decompressed and joined, within ``MAX_TEXT_BYTES``, the deadline checked
  between records;
- a Mobipocket book's text is HTML (MOBI 6: ``<mbp:pagebreak/>`` between chapters, ``filepos``
  links; KF8: each XHTML file's skeleton followed by its fragments, which an HTML5 parser reads
  in order, then the style sheets, left out by the flow table ``FDST``), read by our HTML parser
  with its headings and tables; a book holding both formats (calibre's default ``.mobi``) is
  read from its MOBI 6 part, the whole book;
- a PalmDOC book's text is plain text (Windows-1252 by the format; decoded as any text file).

Refused, naming the file: a database that is no book (another Palm type), a DRM-protected
book ("encrypted"), HUFF/CDIC compression (kindlegen's ``-c2``, rare; not read here), records
that lie outside the file or a text that decompresses past its budget.

Why our own reader: the maintained readers of the format are GPL-3.0 (calibre; ``mobi`` on PyPI,
a port of KindleUnpack). The format is small and documented (MobileRead wiki, "MOBI" and
"PDB"); this module reads what a text layer needs, not the images or the index records.
"""

from __future__ import annotations

import itertools
import struct

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html, plaintext
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.detect import MOBI, is_palm_book
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument

MEDIA_TYPE = MOBI
#: Decompressed text past this is refused (the largest real books hold a few MB of markup; a
#: record can grow fivefold, so a 64 MB file could otherwise decompress to 320 MB).
MAX_TEXT_BYTES = 64 * 1024 * 1024

_PDB_HEADER = 78
_MOBI_BOOK = b"BOOKMOBI"
#: PalmDOC header compression values.
_STORED, _PALMDOC, _HUFF_CDIC = 1, 2, 17480
#: MOBI header: where the record-0 fields this reader uses lie (from the record's start).
_MOBI_MAGIC_AT, _HEADER_LENGTH_AT, _ENCODING_AT, _VERSION_AT = 16, 20, 28, 0x68
_FDST_AT, _EXTRA_FLAGS_AT = 0xC0, 0xF2
_KF8 = 8
_UTF8 = 65001


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a Mobipocket, KF8 or PalmDOC book."""
    key = document.source_key
    if not is_palm_book(raw):
        raise CorruptDocumentError(
            key, "not a Kindle or Palm book (no BOOKMOBI or TEXtREAd Palm database header)"
        )
    records = _records(raw, key)
    header = records[0]
    if len(header) < 16:
        raise CorruptDocumentError(key, "the book's first record is cut short")
    compression, _, text_length, text_records, _, encryption = struct.unpack_from(
        ">HHIHHH", header, 0
    )
    if encryption != 0:
        raise CorruptDocumentError(
            key, "a DRM-protected (encrypted) Kindle book: it cannot be read without its key"
        )
    if compression == _HUFF_CDIC:
        raise CorruptDocumentError(
            key, "a Kindle book compressed with HUFF/CDIC (kindlegen -c2), which is not read"
        )
    if compression not in (_STORED, _PALMDOC):
        raise CorruptDocumentError(key, f"an unknown compression ({compression}) of the text")
    if text_length > MAX_TEXT_BYTES:
        raise DocumentTooLargeError(
            key, f"its text is {text_length:,} bytes, over the limit of {MAX_TEXT_BYTES:,}"
        )
    if text_records >= len(records):
        raise CorruptDocumentError(
            key, f"it names {text_records} text records but holds {len(records) - 1}"
        )
    mobi = raw[60:68] == _MOBI_BOOK and header[_MOBI_MAGIC_AT : _MOBI_MAGIC_AT + 4] == b"MOBI"
    extra_flags = _field(header, _EXTRA_FLAGS_AT, ">H") if mobi else 0
    deadline = current_deadline(key)
    parts: list[bytes] = []
    size = 0
    for number in range(1, text_records + 1):
        deadline.check(f"text record {number}")
        record = records[number]
        record = record[: len(record) - _trailing_size(record, extra_flags)]
        text = _palmdoc_decompress(record) if compression == _PALMDOC else record
        size += len(text)
        if size > MAX_TEXT_BYTES:
            raise DocumentTooLargeError(
                key, f"its text decompresses past the limit of {MAX_TEXT_BYTES:,} bytes"
            )
        parts.append(text)
    body = b"".join(parts)[:text_length]
    if not mobi:
        document.metadata["ebook_format"] = "PalmDOC"
        decoded = decode(body, key)  # Windows-1252 by the format; UTF-8 where it is
        document.metadata.update(decoded.metadata())
        return plaintext.parsed(decoded.text, document)
    version = _field(header, _VERSION_AT, ">I")
    if version >= _KF8:
        body = body[: _first_flow_end(records, header, len(body))]
    encoding = "utf-8" if _field(header, _ENCODING_AT, ">I") == _UTF8 else "cp1252"
    document.metadata["ebook_format"] = "KF8" if version >= _KF8 else f"MOBI {version}"
    parsed = html.parse(body.decode(encoding, "replace"), document)
    if not parsed.text_layer.strip():
        raise EmptyDocumentError(key, "the book's text records hold no text")
    return parsed


def _records(raw: bytes, key: str) -> list[bytes]:
    """The database's records, each from its offset to the next one's (the last to the end)."""
    count = struct.unpack_from(">H", raw, 76)[0]
    table_end = _PDB_HEADER + 8 * count
    if count == 0 or table_end > len(raw):
        raise CorruptDocumentError(key, "the book's record table is cut short or empty")
    offsets = [struct.unpack_from(">I", raw, _PDB_HEADER + 8 * i)[0] for i in range(count)]
    offsets.append(len(raw))
    if any(b < a for a, b in itertools.pairwise(offsets)) or offsets[0] < table_end:
        raise CorruptDocumentError(key, "the book's records lie outside the file or overlap")
    return [raw[offsets[i] : offsets[i + 1]] for i in range(count)]


def _field(header: bytes, at: int, form: str) -> int:
    """A MOBI header field, 0 where the header is too short to hold it (older versions)."""
    header_length = struct.unpack_from(">I", header, _HEADER_LENGTH_AT)[0]
    end = at + struct.calcsize(form)
    if end > _MOBI_MAGIC_AT + header_length or end > len(header):
        return 0
    return int(struct.unpack_from(form, header, at)[0])


def _trailing_size(record: bytes, flags: int) -> int:
    """How many bytes of trailing entries end ``record``: one entry per flag bit above bit 0,
    each ending in its own size written backwards (7 bits a byte, the first byte's top bit
    set); bit 0: the bytes of a character cut by the record's end, counted in the low two bits
    of the last byte before the other entries."""
    size = 0
    entries = flags >> 1
    while entries:
        if entries & 1:
            end = len(record) - size
            value = 0
            for byte in record[max(0, end - 4) : end]:
                if byte & 0x80:
                    value = 0
                value = (value << 7) | (byte & 0x7F)
            size += value
        entries >>= 1
    if flags & 1 and len(record) > size:
        size += (record[len(record) - size - 1] & 0x3) + 1
    return min(size, len(record))


def _palmdoc_decompress(data: bytes) -> bytes:
    """PalmDOC's LZ77: a byte 0x01-0x08 copies that many literal bytes; 0x80-0xBF with the next
    byte is a back reference (11 bits of distance, 3 of length - 3); 0xC0-0xFF is a space then
    the byte less 0x80; any other byte stands for itself."""
    out = bytearray()
    at, end = 0, len(data)
    while at < end:
        byte = data[at]
        at += 1
        if 1 <= byte <= 8:
            out += data[at : at + byte]
            at += byte
        elif byte < 0x80:
            out.append(byte)
        elif byte >= 0xC0:
            out.append(0x20)
            out.append(byte ^ 0x80)
        elif at < end:
            pair = (byte << 8) | data[at]
            at += 1
            distance, length = (pair >> 3) & 0x7FF, (pair & 7) + 3
            if 0 < distance <= len(out):
                start = len(out) - distance
                if distance >= length:
                    out += out[start : start + length]
                else:  # the copy overlaps what it writes: byte by byte
                    for offset in range(length):
                        out.append(out[start + offset])
    return bytes(out)


def _first_flow_end(records: list[bytes], header: bytes, text_size: int) -> int:
    """Where KF8's first flow (the book's XHTML) ends in the text, by the ``FDST`` record: the
    flows after it are style sheets and SVG. Without a table, the whole text."""
    index = _field(header, _FDST_AT, ">I")
    if not 0 < index < len(records):
        return text_size
    table = records[index]
    if table[:4] != b"FDST" or len(table) < 12:
        return text_size
    pairs_at, flows = struct.unpack_from(">II", table, 4)
    if flows < 1 or pairs_at + 8 > len(table):
        return text_size
    start, end = struct.unpack_from(">II", table, pairs_at)
    return end if start == 0 and 0 < end <= text_size else text_size


__all__ = ["MAX_TEXT_BYTES", "MEDIA_TYPE", "parse"]
