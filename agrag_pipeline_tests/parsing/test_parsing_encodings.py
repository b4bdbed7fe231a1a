"""Text in the encodings people actually save: legacy code pages, UTF-32, mixed files.

Each legacy file is made from real text by Python's own encoder for that code page: chapters of
the Rust book (``../shared/corpus``) saved as windows-1252, as an old Windows editor would, and
Article 1 of the Universal Declaration of Human Rights (public domain) in the languages whose
code pages a team's archive holds. The parse must give exactly the text the author wrote, and
say how it was read (``text_encoding`` in the document's metadata).
"""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from agrag_pipeline.chunking.chunker import StructureChunker
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import EncodingError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

#: Article 1 of the UDHR, with the legacy code page a document in that language was saved in.
UDHR_ARTICLE_1 = {
    "french": (
        "cp1252",
        "Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont "
        "doués de raison et de conscience et doivent agir les uns envers les autres dans un "
        "esprit de fraternité.",
    ),
    "german": (
        "iso8859-1",
        "Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit "
        "Vernunft und Gewissen begabt und sollen einander im Geist der Brüderlichkeit "
        "begegnen.",
    ),
    "polish": (
        "cp1250",
        "Wszyscy ludzie rodzą się wolni i równi pod względem swej godności i swych praw. Są "
        "oni obdarzeni rozumem i sumieniem i powinni postępować wobec innych w duchu "
        "braterstwa.",
    ),
    "russian": (
        "cp1251",
        "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены "
        "разумом и совестью и должны поступать в отношении друг друга в духе братства.",
    ),
    "russian-koi8": (
        "koi8-r",
        "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены "
        "разумом и совестью и должны поступать в отношении друг друга в духе братства.",
    ),
    "greek": (
        "cp1253",
        "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα δικαιώματα. "
        "Είναι προικισμένοι με λογική και συνείδηση, και οφείλουν να συμπεριφέρονται μεταξύ "
        "τους με πνεύμα αδελφοσύνης.",
    ),
    "japanese": (
        "shift_jis",
        "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"
        "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。",
    ),
    "chinese": (
        "gb18030",
        "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。",
    ),
}


@pytest.mark.parametrize("language", sorted(UDHR_ARTICLE_1))
def test_legacy_code_page_text_is_read_as_written_and_its_encoding_recorded(
    language: str,
) -> None:
    codec, sentence = UDHR_ARTICLE_1[language]
    text = f"Article 1\n\n{sentence}\n"
    parsed = parse_checked(text.encode(codec), f"udhr-{language}.txt")
    assert parsed.text_layer == text
    # A superset reads the same text: cp932 of Shift_JIS, windows-1252 of ISO-8859-1.
    supersets = {"shift_jis": "cp932", "iso8859-1": "cp1252"}
    assert codecs.lookup(parsed.document.metadata["text_encoding"]).name in {
        codecs.lookup(codec).name,
        codecs.lookup(supersets.get(codec, codec)).name,
    }


def _windows_1252_chapters(corpus_dir: Path, count: int) -> list[Path]:
    chapters = []
    for path in sorted((corpus_dir / "markdown" / "rust-book").glob("ch*.md")):
        text = path.read_text(encoding="utf-8")
        if any(ord(c) > 127 for c in text) and "’" in text:
            try:
                text.encode("cp1252")
            except UnicodeEncodeError:
                continue
            chapters.append(path)
    assert len(chapters) >= count
    return chapters[:count]


def test_a_markdown_chapter_saved_as_windows_1252_chunks_as_its_utf8_original(
    corpus_dir: Path,
) -> None:
    chunker = StructureChunker(ChunkerSettings(), TokenCounter(), max_sequence_tokens=256)
    for path in _windows_1252_chapters(corpus_dir, 3):
        key = f"legacy/{path.name}"
        original = parse_checked(path.read_bytes(), key)
        legacy = parse_checked(path.read_text(encoding="utf-8").encode("cp1252"), key)
        assert legacy.text_layer == original.text_layer
        assert legacy.document.metadata["text_encoding"] == "windows-1252"
        assert original.document.metadata["text_encoding"] == "utf-8"
        ours = chunker.chunk(legacy, schema_fingerprint=None, extraction_fingerprint=None)
        theirs = chunker.chunk(original, schema_fingerprint=None, extraction_fingerprint=None)
        assert [(c.text, c.heading_path) for c in ours] == [
            (c.text, c.heading_path) for c in theirs
        ]


def test_html_follows_its_meta_charset_else_windows_1252() -> None:
    _, sentence = UDHR_ARTICLE_1["polish"]
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-2">'
        f"<title>Artykuł 1</title></head><body><h1>Artykuł 1</h1><p>{sentence}</p></body></html>"
    )
    declared = parse_checked(page.encode("iso8859-2"), "udhr-pl.html")
    assert sentence in declared.text_layer
    assert declared.document.metadata["text_encoding_rule"] == "HTML meta charset"
    # Undeclared Western text: the HTML standard's fallback.
    _, french = UDHR_ARTICLE_1["french"]
    page = f"<html><body><h1>Article 1 – “Égalité”</h1><p>{french}</p></body></html>"
    undeclared = parse_checked(page.encode("cp1252"), "udhr-fr.htm")
    assert "Article 1 – “Égalité”" in undeclared.text_layer
    assert french in undeclared.text_layer
    assert undeclared.document.metadata["text_encoding"] == "windows-1252"


@pytest.mark.parametrize("codec", ["utf-32", "utf-32-be", "utf-16"])
def test_utf32_and_utf16_with_a_byte_order_mark_are_each_read_as_themselves(codec: str) -> None:
    _, sentence = UDHR_ARTICLE_1["german"]
    text = f"# Artikel 1\n\n{sentence}\n"
    raw = text.encode(codec)
    if codec == "utf-32-be":
        raw = codecs.BOM_UTF32_BE + raw
    parsed = parse_checked(raw, "artikel.md")
    assert parsed.text_layer == text
    assert parsed.document.metadata["text_encoding"].startswith(codec[:6])


def test_utf8_with_a_few_stray_latin1_bytes_keeps_its_utf8_text() -> None:
    raw = "# Café\n\nrésumé: ".encode() + "naïve façade".encode("latin-1") + b"\n"
    parsed = parse_checked(raw, "mixed.md")
    assert parsed.text_layer == "# Café\n\nrésumé: naïve façade\n"
    assert parsed.document.metadata["text_encoding"] == "utf-8"
    assert "stray" in parsed.document.metadata["text_encoding_rule"]


def test_a_windows_1252_csv_is_read_and_binary_noise_is_still_refused() -> None:
    parsed = parse_document("Stadt;Café\nKöln;Früh\n".encode("cp1252"), "cities.csv")
    assert "Köln" in parsed.text_layer and "Café" in parsed.text_layer
    noise = bytes(range(1, 256)) * 8  # no NUL, not text in any code page
    with pytest.raises(EncodingError, match=r"noise\.txt: binary data, not text"):
        parse_document(noise, "noise.txt")


def test_the_encoding_is_stored_with_the_sections_and_reported_when_they_are_reused(
    tmp_path: Path,
) -> None:
    from agrag_pipeline.pipeline import PARSER_METADATA, build_sections, run_document
    from agrag_pipeline.runtime import Runtime
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

    raw = tmp_path / "raw"
    raw.mkdir()
    _, sentence = UDHR_ARTICLE_1["german"]
    (raw / "artikel.md").write_bytes(f"# Artikel 1\n\n{sentence}\n".encode("cp1252"))
    runtime = Runtime.from_files(DEFAULT_SETTINGS_PATH, raw, tmp_path / "warehouse")
    chunks = run_document(runtime, "artikel.md", embed=False)
    assert any("Brüderlichkeit" in c.text for c in chunks.chunks)
    document = chunks.document
    assert document.id is not None
    stored = runtime.warehouse.table_metadata("sections", document.id) or {}
    assert stored[PARSER_METADATA + "text_encoding"] == "windows-1252"
    reused = build_sections(runtime.warehouse, document)
    assert reused.reused
    assert reused.parsed.document.metadata["text_encoding"] == "windows-1252"
