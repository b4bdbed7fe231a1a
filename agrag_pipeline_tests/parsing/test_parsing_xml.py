"""Generic XML (issue 23): element text under its element path, repeated elements as record
sections; entity bombs, deep nesting and truncation refused with an error naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline_tests.parsing.parsed_support import headings, parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "structured"


@pytest.mark.parametrize("name", ["factbook.xml", "factbook-utf-16.xml"])
def test_every_element_text_of_an_xml_file_is_in_the_text_layer(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    parsed = parse_checked(raw, name)
    assert parsed.document.media_type == "application/xml"
    assert parsed.document.metadata["xml_root"] == "factbook"
    root = etree.fromstring(raw)
    texts = [e.text.strip() for e in root.iter() if e.text and e.text.strip()]
    assert len(texts) == 16
    assert [t for t in texts if t not in parsed.text_layer] == []
    assert headings(parsed) == [
        (1, ["country"]),
        (2, ["country", "United States"]),
        (2, ["country", "Canada"]),
        (2, ["country", "France"]),
        (2, ["country", "Trinidad & Tobado"]),
    ]
    france = next(s for s in parsed.sections if s.heading == "France")
    assert "capital: Paris" in france.text_in(parsed.text_layer).splitlines()


def test_xml_attributes_mixed_content_and_namespaces_read_under_their_paths() -> None:
    raw = (
        b'<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="en">'
        b'<title type="text">Team notes</title>'
        b"<entry><id>n1</id><summary>Budget <b>rises</b> by 4%.</summary></entry>"
        b"<entry><id>n2</id><summary>Hiring <i>paused</i>.</summary></entry></feed>"
    )
    parsed = parse_checked(raw, "feed.xml")
    lines = parsed.text_layer.splitlines()
    assert "title@type: text" in lines
    assert "title: Team notes" in lines
    assert "summary: Budget rises by 4%." in lines
    assert [h for _, h in headings(parsed)] == [["entry"], ["entry", "n1"], ["entry", "n2"]]


def test_a_file_without_extension_opening_as_xml_is_xml() -> None:
    parsed = parse_checked(b'<?xml version="1.0"?><config><mode>fast</mode></config>', "CONFIG")
    assert parsed.document.media_type == "application/xml"
    assert parsed.text_layer == "mode: fast"


def test_xml_billion_laughs_is_refused_before_parsing() -> None:
    raw = (
        b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
        b' <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n'
        b' <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">\n'
        b"]>\n<lolz>&lol3;</lolz>"
    )
    with pytest.raises(CorruptDocumentError, match=r"^lolz\.xml: the XML declares entities"):
        parse_document(raw, "lolz.xml")
    external = (
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>'
    )
    with pytest.raises(CorruptDocumentError, match=r"declares entities"):
        parse_document(external, "xxe.xml")


def test_deep_and_truncated_xml_are_refused_naming_the_file() -> None:
    with pytest.raises(CorruptDocumentError, match=r"^deep\.xml: not well-formed XML: .*depth"):
        parse_document(b"<a>" * 100_000 + b"</a>" * 100_000, "deep.xml")
    raw = (FIXTURES / "factbook.xml").read_bytes()
    with pytest.raises(CorruptDocumentError, match=r"^cut\.xml: not well-formed XML"):
        parse_document(raw[: len(raw) // 2], "cut.xml")


def test_text_around_entities_of_a_dtd_never_loaded_is_kept() -> None:
    raw = (
        b'<?xml version="1.0"?>\n<!DOCTYPE book PUBLIC "-//OASIS//DTD DocBook XML V4.5//EN" '
        b'"http://www.oasis-open.org/docbook/xml/4.5/docbookx.dtd">\n'
        b"<book><title>Costs&nbsp;and risks &amp; more</title>"
        b"<para>Caf&eacute; au lait</para></book>"
    )
    parsed = parse_checked(raw, "book.xml")
    # A DocBook book (by its DOCTYPE): read as a book, its entities as their characters.
    assert parsed.document.media_type == "application/docbook+xml"
    assert parsed.text_layer == "Costs and risks & more\n\nCafé au lait"
    other = (
        b'<?xml version="1.0"?>\n<!DOCTYPE book SYSTEM "book.dtd">\n'
        b"<book><title>Costs&nbsp;and risks &amp; more</title><p>Caf&eacute; au lait</p></book>"
    )
    parsed = parse_checked(other, "book.xml")  # another vocabulary: generic XML
    assert parsed.text_layer == "title: Costs and risks & more\np: Café au lait"


#: The internal DTD subset of a real USPTO patent grant (pg06442728.xml in docling's test data;
#: US patent text is public domain): unparsed (NDATA) entities naming the grant's images.
USPTO_PROLOG = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE PATDOC SYSTEM "ST32-US-Grant-025xml.dtd" [
<!ENTITY US06442728-20020827-M00001.NB SYSTEM "US06442728-20020827-M00001.NB" NDATA NB>
<!ENTITY US06442728-20020827-D00000.TIF SYSTEM "US06442728-20020827-D00000.TIF" NDATA TIF>
]>
"""


def test_a_patent_grant_naming_its_images_as_unparsed_entities_is_read() -> None:
    raw = USPTO_PROLOG + (
        b'<PATDOC DTD="2.5"><SDOBI><B100><B110><DNUM><PDAT>06442728</PDAT></DNUM></B110>'
        b"</B100><B540><STEXT><PDAT>Run-length encoder</PDAT></STEXT></B540></SDOBI></PATDOC>"
    )
    parsed = parse_document(raw, "patents/pg06442728.xml")
    assert "06442728" in parsed.text_layer and "Run-length encoder" in parsed.text_layer
    # An entity that expands other entities beside them is still refused before parsing.
    laugh = raw.replace(b"]>", b'<!ENTITY lol "lol">\n<!ENTITY lol2 "&lol;&lol;">\n]>', 1)
    with pytest.raises(CorruptDocumentError, match="declares entities"):
        parse_document(laugh, "patents/laugh.xml")
