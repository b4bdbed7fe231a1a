"""Type detection by content, and which files count as documents (include/exclude)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from agrag_pipeline.parsing import detect, parse_document
from agrag_pipeline.parsing.detect import detect_media_type, undetected_reason
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, DocumentsSettings, load_settings

HEAD = 8 * 1024  # what the raw-root scan reads

JATS_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) '
    b'Journal Archiving and Interchange DTD v1.2//EN" "JATS-archivearticle1.dtd">\n'
    b'<article article-type="research-article"><front>'
)


def test_txt_holding_html_or_jats_is_what_it_holds() -> None:
    assert detect_media_type("notes.txt", b"  <!DOCTYPE html><html><h1>x</h1>") == detect.HTML
    assert detect_media_type("page.txt", b"<html lang='en'><body>hi</body></html>") == detect.HTML
    assert detect_media_type("paper.txt", JATS_HEAD) == detect.JATS
    no_doctype = b'<article xmlns:xlink="http://www.w3.org/1999/xlink" dtd-version="1.3">'
    assert detect_media_type("paper.xml", no_doctype) == detect.JATS
    assert detect_media_type("plain.txt", b"just words, no <markup> at the start") == detect.PLAIN


def test_txt_holding_html_is_parsed_as_html_not_tag_by_tag() -> None:
    parsed = parse_document(b"<html><body><h1>Budget</h1><p>Rise of 4%.</p></body></html>", "b.txt")
    assert parsed.document.media_type == detect.HTML
    assert [s.heading for s in parsed.sections] == ["Budget"]
    assert "<p>" not in parsed.text_layer


def test_binaries_and_unknown_extensions_have_no_parser_and_say_why() -> None:
    # Any XML that is not JATS is generic XML now (issue 23), read as element text.
    svg = b'<?xml version="1.0"?>\n<!-- drawn -->\n<svg xmlns="http://www.w3.org/2000/svg"/>'
    assert detect_media_type("logo.xml", svg) == detect.XML
    assert detect_media_type("song.mp3", b"ID3\x04\x00\x00\x00\x00\x00\x00") is None
    assert "audio (.mp3): there is no speech recognition here" in (
        undetected_reason("song.mp3", b"ID3\x04\x00") or ""
    )
    assert "binary data with extension '.dwg'" in (
        undetected_reason("plan.dwg", b"AC1032\x00\x00") or ""
    )
    # An image is a scan for OCR, known by its signature.
    assert detect_media_type("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR") == "image/png"
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100
    assert detect_media_type("old.bin", ole) is None
    assert "OLE2 compound file" in (undetected_reason("old.bin", ole) or "")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("photos/a.jpg", b"\xff\xd8")
    assert detect_media_type("photos.jar", archive.getvalue()) is None
    assert "a zip archive" in (undetected_reason("photos.jar", archive.getvalue()) or "")
    # Behind .zip it is an archive, whose members are documents (``derived``).
    assert detect_media_type("photos.zip", archive.getvalue()) == "application/zip"
    assert detect_media_type("data.json", b'{"a": 1}') == detect.JSON
    assert detect_media_type("data.xyz", b'{"a": 1}') is None
    assert undetected_reason("data.xyz", b'{"a": 1}') == "no parser for extension '.xyz'"
    assert undetected_reason("README", b"hello") is None


def test_ooxml_and_pdf_are_known_by_content_from_the_first_8_kib(corpus_dir: Path) -> None:
    expected = {
        "xlsx/xlsx_03_chartsheet.xlsx": detect.XLSX,
        "xlsx/xlsx_02_sample_sales_data.xlsm": detect.XLSM,
        "docx/lorem_ipsum.docx": detect.DOCX,
        "pptx/powerpoint_bad_text.pptx": detect.PPTX,
        "pdf/multi_page.pdf": detect.PDF,
    }
    for key, media_type in expected.items():
        head = (corpus_dir / key).read_bytes()[:HEAD]
        assert detect_media_type(key, head) == media_type, key
        # The extension lies or is missing: the content decides.
        assert detect_media_type("renamed.bin", head) == media_type, key
        assert detect_media_type("no_extension", head) == media_type, key
    # A workbook named .docx is a workbook.
    head = (corpus_dir / "xlsx/xlsx_04_inflated.xlsx").read_bytes()[:HEAD]
    assert detect_media_type("report.docx", head) == detect.XLSX


def test_damaged_file_with_a_known_extension_keeps_its_type_for_a_clear_parse_error() -> None:
    assert detect_media_type("cut.xlsx", b"PK\x03\x04\x14\x00") == detect.XLSX
    assert detect_media_type("locked.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1") == detect.DOCX
    assert detect_media_type("latin.csv", b"caf\xe9;1\n") == detect.CSV
    assert detect_media_type("empty.md", b"") == detect.MARKDOWN
    assert detect_media_type("empty.bin", b"") is None


def test_file_without_extension_is_text_when_it_is_utf8_text() -> None:
    assert detect_media_type("README", "Über dieses Projekt\n".encode()) == detect.PLAIN
    assert detect_media_type("docs/CHANGES", b"\xef\xbb\xbf1.0: first") == detect.PLAIN
    assert detect_media_type("blob", b"\x00\x01\x02") is None
    cut = "é".encode()[:1]
    assert detect_media_type("NOTES", b"a" * 10 + cut) == detect.PLAIN  # a cut last char


# --- documents.include / documents.exclude ---------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "LICENSE",
        "vendor/lib/LICENSE.txt",
        "COPYING",
        "COPYING.LESSER",
        "repo/.git/HEAD",
        "poetry.lock",
        "web/yarn.lock",
        "web/package-lock.json",
        "web/node_modules/left-pad/README.md",
        "reports/~$budget.xlsx",
        "notes.txt~",
    ],
)
def test_default_exclude_keeps_licences_vcs_lock_and_owner_files_out(key: str) -> None:
    reason = DocumentsSettings().skip_reason(key)
    assert reason is not None and reason.startswith("excluded by the documents.exclude pattern")


@pytest.mark.parametrize(
    "key", ["README", "README.md", "reports/budget.xlsx", "License agreement.pdf", "lock.txt"]
)
def test_default_settings_keep_ordinary_documents(key: str) -> None:
    assert DocumentsSettings().skip_reason(key) is None


def test_include_and_exclude_patterns_are_globs_over_source_keys() -> None:
    settings = DocumentsSettings(include=["papers/**/*.nxml", "*.csv"], exclude=["**/draft-*"])
    assert settings.skip_reason("papers/2024/a.nxml") is None
    assert settings.skip_reason("papers/a.nxml") is None  # ** matches no folder too
    assert settings.skip_reason("data/x.csv") is None  # no slash: the name in any folder
    assert settings.skip_reason("papers/draft-b.nxml") == (
        "excluded by the documents.exclude pattern '**/draft-*'"
    )
    assert settings.skip_reason("notes/a.md") == (
        "matches no documents.include pattern (papers/**/*.nxml, *.csv)"
    )
    single = DocumentsSettings(include=["docs/*.md"], exclude=[])
    assert single.skip_reason("docs/a.md") is None
    assert single.skip_reason("docs/sub/a.md") is not None  # * stays inside one folder


def test_bad_patterns_are_refused_and_the_shipped_file_holds_the_defaults() -> None:
    with pytest.raises(ValidationError, match="a pattern is a non-empty relative glob"):
        DocumentsSettings(include=["/abs/**"])
    assert load_settings(DEFAULT_SETTINGS_PATH).documents == DocumentsSettings()
