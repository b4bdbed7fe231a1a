"""DocBook XML is read as the document a reader of the rendered book sees: its sections as
headings, lists, listings, admonitions and tables as such, metadata left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect_media_type, parse_document
from agrag_pipeline.parsing.errors import CorruptDocumentError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "docbook"

#: A DocBook 5 book written for these tests: namespace, ``xml:id`` cross-references, a CALS
#: table with spans, a variable list, a note, a listing, a reference page, metadata.
DOCBOOK5 = """<?xml version="1.0" encoding="UTF-8"?>
<book xmlns="http://docbook.org/ns/docbook" xmlns:xlink="http://www.w3.org/1999/xlink"
      version="5.0">
  <info>
    <title>Widget Server Guide</title>
    <author><personname>Ada Example</personname></author>
    <copyright><year>2026</year><holder>Example Corp</holder></copyright>
  </info>
  <chapter xml:id="install">
    <title>Installing</title>
    <para>Run the <command>widgetd</command> installer<indexterm><primary>installer</primary>
      </indexterm> as root<footnote><para>Or with sudo.</para></footnote>.</para>
    <bridgehead>Before you <emphasis>start</emphasis></bridgehead>
    <note><para>The installer needs 2 GB of disk.</para></note>
    <programlisting>./install --prefix /opt/widgets
widgetd --check</programlisting>
    <section>
      <title>Options</title>
      <variablelist>
        <varlistentry><term><option>--prefix</option></term>
          <listitem><para>Where the files go.</para></listitem></varlistentry>
        <varlistentry><term><option>--quiet</option></term>
          <listitem><para>Say nothing.</para></listitem></varlistentry>
      </variablelist>
      <table>
        <title>Ports</title>
        <tgroup cols="3">
          <colspec colname="c1"/><colspec colname="c2"/><colspec colname="c3"/>
          <thead><row><entry>Service</entry><entry>Port</entry><entry>Protocol</entry></row>
          </thead>
          <tbody>
            <row><entry morerows="1">widgetd</entry><entry>8080</entry><entry>HTTP</entry></row>
            <row><entry>8443</entry><entry>HTTPS</entry></row>
            <row><entry namest="c1" nameend="c3">All ports are configurable.</entry></row>
          </tbody>
        </tgroup>
      </table>
    </section>
  </chapter>
  <chapter>
    <title>Running</title>
    <para>Install it first (see <xref linkend="install"/>).</para>
    <remark>TODO: document the service unit.</remark>
  </chapter>
  <reference>
    <title>Commands</title>
    <refentry>
      <refmeta><refentrytitle>widgetctl</refentrytitle><manvolnum>1</manvolnum></refmeta>
      <refnamediv><refname>widgetctl</refname><refpurpose>control the widget server</refpurpose>
      </refnamediv>
      <refsect1><title>Description</title><para>Starts and stops widgetd.</para></refsect1>
    </refentry>
  </reference>
</book>
"""


def _parse(data: bytes, key: str = "guide.xml"):  # type: ignore[no-untyped-def]
    return parse_document(data, key)


def test_a_docbook_5_book_reads_as_its_chapters_sections_and_reference_pages() -> None:
    parsed = _parse(DOCBOOK5.encode())
    assert parsed.document.media_type == "application/docbook+xml"  # by content, as .xml
    paths = list(dict.fromkeys(" > ".join(s.heading_path) for s in parsed.sections))
    assert paths == [
        "Widget Server Guide",
        "Widget Server Guide > Installing",
        "Widget Server Guide > Installing > Options",
        "Widget Server Guide > Running",
        "Widget Server Guide > Commands",
        "Widget Server Guide > Commands > widgetctl",
        "Widget Server Guide > Commands > widgetctl > Description",
    ]
    text = parsed.text_layer
    assert "Run the widgetd installer as root (Or with sudo.)." in text  # no index term
    assert "Before you start\n\nNote: The installer needs 2 GB of disk." in text
    assert "./install --prefix /opt/widgets\nwidgetd --check" in text
    assert "--prefix: Where the files go.\n--quiet: Say nothing." in text
    assert "Install it first (see Installing)." in text  # the cross-reference's target title
    assert "widgetctl — control the widget server" in text
    for left_out in ("Ada Example", "2026", "Example Corp", "TODO", "primary"):
        assert left_out not in text, left_out


def test_docbook_cals_tables_keep_their_header_and_spread_spanned_cells() -> None:
    parsed = _parse(DOCBOOK5.encode())
    under = [s for s in parsed.sections if s.heading_path[-1] == "Options"]
    body = parsed.text_layer[under[0].start : under[-1].end]
    assert any(s.kind == "table" for s in under)
    assert "Ports\n\n| Service | Port | Protocol |\n| - | - | - |\n" in body
    assert "| widgetd | 8080 | HTTP |\n| widgetd | 8443 | HTTPS |\n" in body
    assert (
        "| All ports are configurable. | All ports are configurable. "
        "| All ports are configurable. |"
    ) in body


def test_a_libreoffice_docbook_export_has_the_headings_of_its_word_original(
    corpus_dir: Path,
) -> None:
    # LibreOffice's "DocBook File" export of a corpus document: DocBook 4.1.2 by its DOCTYPE.
    # It writes the Word title as a paragraph, so the sections are the original's less it.
    exported = _parse((FIXTURES / "unit_test_headers.xml").read_bytes(), "unit_test_headers.xml")
    original = parse_document(
        (corpus_dir / "docx" / "unit_test_headers.docx").read_bytes(), "unit_test_headers.docx"
    )
    assert exported.document.media_type == "application/docbook+xml"
    ours = [s.heading_path for s in exported.sections if s.heading_path]
    theirs = [s.heading_path[1:] for s in original.sections if len(s.heading_path) > 1]
    assert ours == theirs
    assert exported.text_layer.startswith("Test Document\n\nSection 1\n\nParagraph 1.1")


def test_a_table_nested_in_a_cell_stays_in_its_cell_and_out_of_the_outer_rows() -> None:
    parsed = _parse((FIXTURES / "docx_rich_cells.xml").read_bytes(), "docx_rich_cells.xml")
    text = parsed.text_layer
    assert "| This is a list: A First A Second A Third | This is a formatted list:" in text
    assert (
        "| Simple cell upper left | Simple cell with bold and italic text |\n"
        "| A B C Cell 1 Cell 2 Cell 3 | Rich cellA nested table A B C Cell 1 Cell 2 Cell 3 |\n\n"
        "After table"
    ) in text
    assert "\n| Cell 1 | Cell 2 | Cell 3 |" not in text


def test_docbook_is_told_from_other_xml_by_namespace_doctype_or_its_own_elements() -> None:
    head = b'<?xml version="1.0"?>\n'
    dbk = "application/docbook+xml"
    assert detect_media_type("a.xml", head + b"<article><sect1><title>A</title>") == dbk
    assert detect_media_type("a.xml", head + b"<chapter><para>x</para><itemizedlist>") == dbk
    assert detect_media_type("a.dbk", b"<book/>") == dbk
    # <para> alone is no proof: other vocabularies have it.
    assert detect_media_type("a.xml", head + b"<article><para>x</para></article>") == (
        "application/xml"
    )


def test_broken_or_hostile_docbook_is_refused_with_the_file_named() -> None:
    with pytest.raises(CorruptDocumentError, match="not well-formed") as error:
        _parse(b"<book xmlns='http://docbook.org/ns/docbook'><title>A</book>", "b/broken.dbk")
    assert str(error.value).startswith("b/broken.dbk: ")
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE book [<!ENTITY a "x"><!ENTITY b "&a;&a;&a;&a;">]>'
        b"<book xmlns='http://docbook.org/ns/docbook'><para>&b;</para></book>"
    )
    with pytest.raises(CorruptDocumentError, match="expand without bound"):
        _parse(bomb, "bomb.dbk")


def test_a_chapter_file_using_its_books_entities_without_a_doctype_is_read() -> None:
    # As "DocBook: The Definitive Guide" keeps its chapters: no DOCTYPE, the book's entities.
    chapter = (
        b"<chapter id='ch01'><title>Getting Started<sbr/>with &SGML;</title>"
        b"<para>It&rsquo;s &ldquo;structured&rdquo; markup.</para>"
        b"<sect1><title>Basics</title><para>Tags.</para></sect1></chapter>"
    )
    parsed = _parse(chapter, "ch01.xml")
    assert parsed.document.media_type == "application/docbook+xml"
    assert parsed.text_layer == (
        "Getting Started with SGML\n\nIt’s “structured” markup.\n\nBasics\n\nTags."
    )


def test_a_doctype_and_entities_in_a_cdata_example_are_text_not_the_files_dtd() -> None:
    # A chapter about DTDs shows declarations in a CDATA section: they are its text, and the
    # file (which has no DTD of its own) is no entity attack.
    chapter = (
        b"<chapter><title>Entities</title><sect1><title>Declaring</title>"
        b'<screen><![CDATA[<!DOCTYPE book [\n<!ENTITY ch01 SYSTEM "ch01.sgm">\n]>]]></screen>'
        b"</sect1></chapter>"
    )
    parsed = _parse(chapter, "entities.xml")
    assert '<!ENTITY ch01 SYSTEM "ch01.sgm">' in parsed.text_layer


def test_one_block_kept_as_a_file_of_its_own_is_read_as_that_block() -> None:
    # As a book's examples are kept: a lone paragraph, markup inside words.
    example = (
        b'<!DOCTYPE para PUBLIC "-//OASIS//DTD DocBook XML V4.1.2//EN" "docbookx.dtd">\n'
        b"<para>Select <guimenuitem><accel>Q</accel>uit</guimenuitem> from the "
        b"<guimenu><accel>F</accel>ile</guimenu> menu.</para>"
    )
    parsed = _parse(example, "example.1.xml")
    assert parsed.text_layer == "Select Quit from the File menu."


def test_a_program_listing_keeps_its_indentation() -> None:
    source = b"""<?xml version="1.0"?>
<article xmlns="http://docbook.org/ns/docbook" version="5.0"><title>Loops</title>
<para>A loop:</para>
<programlisting>
    for x in xs:
        if x:
            print(x)

    done()
</programlisting>
<para>And on.</para></article>"""
    text = parse_document(source, "loops.dbk").text_layer
    assert text == (
        "Loops\n\nA loop:\n\nfor x in xs:\n    if x:\n        print(x)\n\ndone()\n\nAnd on."
    )
