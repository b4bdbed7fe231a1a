"""Kindle and Palm books (``parsing.mobi``): a MOBI 6, a KF8 (``.azw3``) and a PalmDOC (``.pdb``)
book that calibre wrote from one source, read to the same words as calibre's own text export
of it; damaged, DRM-protected and HUFF/CDIC-compressed books end in a clear error naming the
file, never a crash or a wrong text. Apple's ``.ibooks`` (an EPUB 3 under its own media type)
reads as the EPUB it is.
"""

from __future__ import annotations

import contextlib
import io
import re
import struct
import zipfile
from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect, mobi, parse_document
from agrag_pipeline.parsing.detect import detect_media_type
from agrag_pipeline.parsing.errors import DocumentError, DocumentTooLargeError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).parent.parent / "fixtures" / "kindle"
BOOKS = {
    "lorem-ipsum.mobi": "MOBI 6",
    "lorem-ipsum.azw3": "KF8",
    "lorem-ipsum.pdb": "PalmDOC",
}
HEAD = 8 * 1024


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def _record0(raw: bytes) -> int:
    """Where record 0 (the PalmDOC and MOBI headers) starts."""
    return int(struct.unpack_from(">I", raw, 78)[0])


@pytest.mark.parametrize(("name", "kind"), sorted(BOOKS.items()))
def test_each_kindle_or_palm_book_reads_to_the_words_of_its_text_export(
    name: str, kind: str
) -> None:
    raw = (FIXTURES / name).read_bytes()
    parsed = parse_checked(raw, f"books/{name}")
    assert parsed.document.media_type == detect.MOBI
    assert parsed.document.metadata["ebook_format"] == kind
    reference = (FIXTURES / "lorem-ipsum.txt").read_text("utf-8")
    # Every word in order across the two text records (4,096 bytes each before compression,
    # a UTF-8 character cut by the first record's end): no word lost, doubled or garbled.
    assert _words(parsed.text_layer) == _words(reference)
    assert "calibre1" not in parsed.text_layer  # KF8's style sheet flow is left out
    assert re.match(r"Variatio Ipsius\s+Lorem ipsum dolor sit amet", parsed.text_layer)


def test_a_book_is_known_by_its_palm_header_under_any_name() -> None:
    raw = (FIXTURES / "lorem-ipsum.mobi").read_bytes()
    for name in ("book.mobi", "book.prc", "book.pdb", "book.azw", "book"):
        assert detect_media_type(name, raw[:HEAD]) == detect.MOBI, name
    # A Protein Data Bank file is a .pdb too: text, never taken for a book.
    protein = b"HEADER    HYDROLASE                               01-JAN-00   1ABC\n" * 20
    assert detect_media_type("1abc.pdb", protein) != detect.MOBI


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        (12, 2, "DRM-protected"),  # PalmDOC header: encryption type (2: Mobipocket DRM)
        (0, 17480, "HUFF/CDIC"),  # compression
        (0, 7, "unknown compression"),
        (8, 60_000, "names 60000 text records"),
        (6, 0, "hold no text"),  # the text length's low half: 0 bytes of text
    ],
)
def test_a_book_that_cannot_be_read_says_why(field: int, value: int, problem: str) -> None:
    raw = bytearray((FIXTURES / "lorem-ipsum.mobi").read_bytes())
    struct.pack_into(">H", raw, _record0(raw) + field, value)
    with pytest.raises(DocumentError, match=rf"locked\.mobi: .*{problem}"):
        parse_document(bytes(raw), "locked.mobi")


def test_truncated_or_damaged_books_end_in_a_document_error_or_a_valid_parse() -> None:
    raw = (FIXTURES / "lorem-ipsum.azw3").read_bytes()
    variants = [raw[:cut] for cut in range(0, len(raw), 97)]
    for at in range(60, len(raw), 41):  # one byte flipped at a time
        damaged = bytearray(raw)
        damaged[at] ^= 0xFF
        variants.append(bytes(damaged))
    for variant in variants:
        with contextlib.suppress(DocumentError):
            parse_document(variant, "damaged.azw3")


def test_an_ibooks_book_reads_as_the_epub_it_is() -> None:
    # Apple Books' format is EPUB 3 whose first member names its own media type.
    source = (Path(__file__).parent.parent / "fixtures" / "epub" / "eng_spa_mult.epub").read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as book, zipfile.ZipFile(out, "w") as ibooks:
        for info in book.infolist():
            data = b"application/x-ibooks+zip" if info.filename == "mimetype" else book.read(info)
            ibooks.writestr(info, data)
    raw = out.getvalue()
    assert detect_media_type("book.ibooks", raw[:HEAD]) == detect.EPUB
    assert detect_media_type("book", raw[:HEAD]) == detect.EPUB
    assert (
        parse_document(raw, "book.ibooks").text_layer
        == parse_document(source, "book.epub").text_layer
    )


def test_a_book_whose_text_decompresses_past_the_budget_is_refused_as_it_grows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # PalmDOC's back references repeat what was just written: two bytes can write ten, so a
    # record of 4 KB writes 20 KB. The budget is checked record by record, not at the end.
    monkeypatch.setattr(mobi, "MAX_TEXT_BYTES", 100_000)
    record = b"\x01a" + bytes([0x80, 0x0F]) * 2047  # "a", then "a" ten times over and over
    header = bytearray(16 + 232)
    struct.pack_into(">HHIHHH", header, 0, 2, 0, 90_000, 20, 4096, 0)  # PalmDOC, 20 records
    header[16:20] = b"MOBI"
    struct.pack_into(">I", header, 20, 232)
    records = [bytes(header)] + [record] * 20
    offset = 78 + 8 * len(records)
    table = b""
    for each in records:
        table += struct.pack(">I", offset) + bytes(4)
        offset += len(each)
    database = bytearray(78)
    database[60:68] = b"BOOKMOBI"
    struct.pack_into(">H", database, 76, len(records))
    raw = bytes(database) + table + b"".join(records)
    with pytest.raises(DocumentTooLargeError, match=r"bomb\.mobi: .*past the limit of 100,000"):
        parse_document(raw, "bomb.mobi")
