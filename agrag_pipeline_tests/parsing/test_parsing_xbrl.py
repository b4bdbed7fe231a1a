"""An XBRL instance (a filing's facts) is read as the report it is: its title, the notes filed
as text blocks read as HTML, every other fact one row of a table with its period, dimensions
and unit; never element paths, context ids or escaped tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect_media_type, parse_document
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.xbrl import MEDIA_TYPE

#: A small 10-K instance as EDGAR serves them (``*_htm.xml``), written for these tests.
INSTANCE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "xbrl" / "acme-20251231_htm.xml"
).read_text()


def test_an_xbrl_instance_reads_as_its_title_notes_and_a_table_of_its_facts() -> None:
    parsed = parse_document(INSTANCE.encode(), "filings/acme-20251231_htm.xml")
    assert parsed.document.media_type == MEDIA_TYPE
    headings = [s.heading for s in parsed.sections if s.heading]
    assert headings == [
        "10-K ACME WIDGETS CORP. 2025-12-31",
        "Income Tax Policy",
        "Basis Of Accounting Policy",
        "Facts",
        "Footnotes",
    ]
    text = parsed.text_layer
    assert "Income Taxes\n\nThe Company accounts for income taxes under ASC 740." in text
    assert "Deferred tax asset | $ | 12,400\nValuation allowance | $ | (12,400)" in text
    assert "The statements follow US GAAP." in text
    assert "Concept | Period | Dimensions | Value | Unit" in text
    assert "Assets | 2025-12-31 |  | 243187654 | USD" in text
    assert text.count("243187654") == 1  # the duplicate fact is one row
    assert (
        "Common Stock Shares Outstanding | 2025-12-31 | Statement Class Of Stock: Common Class A "
        "| 23000000 | shares"
    ) in text
    assert "Earnings Per Share Diluted | 2025-01-01 to 2025-12-31 |  | 0.27 | USD per share" in text
    assert "Includes restricted cash of $1,000." in text
    assert [s.kind for s in parsed.sections].count("table") == 2
    for left_out in ("<p", "&lt;", "contextRef", "c0", "Liabilities", "\xa0", "acme-20251231.xsd"):
        assert left_out not in text, left_out


def test_an_xbrl_instance_is_told_by_its_root_behind_xml_and_by_its_extension() -> None:
    head = INSTANCE.encode()[:4096]
    assert detect_media_type("acme-20251231_htm.xml", head) == MEDIA_TYPE
    assert detect_media_type("acme.xbrl", head) == MEDIA_TYPE
    assert detect_media_type("other.xml", b"<?xml version='1.0'?><xbrl><a>1</a></xbrl>") != (
        MEDIA_TYPE
    )


def test_a_file_named_xbrl_that_is_none_or_holds_no_fact_is_refused_with_why() -> None:
    with pytest.raises(CorruptDocumentError, match="not an XBRL instance") as error:
        parse_document(b"<?xml version='1.0'?><report><a>1</a></report>", "odd.xbrl")
    assert str(error.value).startswith("odd.xbrl: ")
    empty = (
        '<xbrl xmlns="http://www.xbrl.org/2003/instance"><context id="c0"><entity>'
        "<identifier scheme='x'>1</identifier></entity><period><instant>2025-01-01</instant>"
        "</period></context></xbrl>"
    )
    with pytest.raises(EmptyDocumentError, match="no fact with a value"):
        parse_document(empty.encode(), "empty.xbrl")
