"""FictionBook 2 (``.fb2``) is read as the book it is: title, authors, annotation, nested
sections as headings, poems verse by verse, notes after the text, images and metadata out."""

from __future__ import annotations

import base64

import pytest

from agrag_pipeline.parsing import detect_media_type, parse_document
from agrag_pipeline.parsing.errors import CorruptDocumentError

#: A small book written for these tests, in windows-1251 as many FB2 files in the wild are.
BOOK = """<?xml version="1.0" encoding="windows-1251"?>
<FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0"
             xmlns:l="http://www.w3.org/1999/xlink">
  <description>
    <title-info>
      <genre>prose_classic</genre>
      <author><first-name>Антон</first-name><last-name>Чехов</last-name></author>
      <book-title>Рассказы</book-title>
      <annotation><p>Короткие рассказы.</p></annotation>
      <lang>ru</lang>
    </title-info>
    <document-info><program-used>by hand</program-used><id>abc-123</id></document-info>
  </description>
  <body>
    <epigraph><p>Краткость — сестра таланта.</p><text-author>А. Ч.</text-author></epigraph>
    <section>
      <title><p>Глава первая</p></title>
      <p>Первый <emphasis>абзац</emphasis> текста<a l:href="#n1" type="note">1</a>.</p>
      <empty-line/>
      <image l:href="#cover.jpg"/>
      <cite><p>Цитата.</p><text-author>Автор цитаты</text-author></cite>
      <section>
        <title><p>Часть</p><p>первая</p></title>
        <poem><title><p>Стихи</p></title>
          <stanza><v>Строка один,</v><v>строка два.</v></stanza>
        </poem>
        <table><tr><th>Год</th><th>Тираж</th></tr><tr><td>1886</td><td>1000</td></tr></table>
      </section>
    </section>
  </body>
  <body name="notes">
    <title><p>Примечания</p></title>
    <section id="n1"><title><p>1</p></title><p>Текст примечания.</p></section>
  </body>
  <binary id="cover.jpg" content-type="image/jpeg">{image}</binary>
</FictionBook>
"""


def _book() -> bytes:
    image = base64.b64encode(b"\xff\xd8\xff\xe0not really a jpeg" * 50).decode("ascii")
    return BOOK.replace("{image}", image).encode("windows-1251")


def test_a_fictionbook_reads_as_its_title_sections_poems_and_notes() -> None:
    parsed = parse_document(_book(), "books/chekhov.fb2")
    assert parsed.document.media_type == "application/x-fictionbook+xml"
    paths = list(dict.fromkeys(" > ".join(s.heading_path) for s in parsed.sections))
    assert paths == [
        "Рассказы",
        "Рассказы > Глава первая",
        "Рассказы > Глава первая > Часть первая",
        "Рассказы > Примечания",
        "Рассказы > Примечания > 1",
    ]
    text = parsed.text_layer
    assert text.startswith(
        "Рассказы\n\nАнтон Чехов\n\nКороткие рассказы.\n\nКраткость — сестра таланта.\n\nА. Ч."
    )
    assert "Первый абзац текста1." in text
    assert "Цитата.\n\nАвтор цитаты" in text
    assert "Стихи\n\nСтрока один,\nстрока два." in text
    assert "| Год | Тираж |\n| - | - |\n| 1886 | 1000 |" in text
    assert text.endswith("Примечания\n\n1\n\nТекст примечания.")
    for left_out in ("prose_classic", "abc-123", "by hand", "/9j/", "cover.jpg"):
        assert left_out not in text, left_out


def test_a_fictionbook_saved_as_xml_is_told_by_its_root() -> None:
    assert detect_media_type("book.xml", _book()[:4096]) == "application/x-fictionbook+xml"
    assert parse_document(_book(), "book.xml").sections[0].heading_path == ["Рассказы"]


def test_a_file_named_fb2_that_is_not_a_fictionbook_is_refused_with_its_name() -> None:
    with pytest.raises(CorruptDocumentError, match="not a FictionBook") as error:
        parse_document(b"<html><body><p>x</p></body></html>", "shelf/odd.fb2")
    assert str(error.value).startswith("shelf/odd.fb2: ")
