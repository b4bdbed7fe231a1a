"""Transcripts and captions (WebVTT, SubRip) are read as their words, and the rest of a team's
folder that no parser reads is skipped with a reason that says what it is."""

from __future__ import annotations

from pathlib import Path

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.detect import detect_media_type, undetected_reason

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "subtitles"

SRT = (
    "1\r\n00:00:01,000 --> 00:00:03,500\r\nWelcome to the quarterly review.\r\n\r\n"
    "2\r\n00:00:03,600 --> 00:00:06,000\r\nRevenue grew <i>twelve</i> percent\r\n\r\n"
    "3\r\n00:00:06,100 --> 00:00:08,000\r\nin the third quarter.\r\n\r\n"
    "4\r\n00:00:30,000 --> 00:00:33,000\r\nQuestions &amp; answers follow.\r\n"
)


def test_a_webvtt_transcript_reads_as_its_speakers_words_without_timings_or_ids() -> None:
    raw = (FIXTURES / "webvtt_example_03.vtt").read_bytes()
    parsed = parse_document(raw, "meetings/review.vtt")
    text = parsed.text_layer
    assert parsed.document.media_type == "text/vtt"
    assert text.startswith("Speaker A: OK, I think now we should be recording properly.")
    assert "Speaker B: I was also thinking." in text
    # Cue identifiers, timings, the header and voice tags are not text.
    for noise in ("-->", "00:00", "WEBVTT", "62357a1d", "<v", "</v>"):
        assert noise not in text
    # A change of speaker starts a paragraph.
    assert all(p.split(": ", 1)[0] in {"Speaker A", "Speaker B"} for p in text.split("\n\n"))


def test_subrip_cues_join_into_sentences_and_a_long_pause_starts_a_paragraph() -> None:
    parsed = parse_document(SRT.encode("utf-8"), "talks/review.srt")
    assert parsed.text_layer == (
        "Welcome to the quarterly review. Revenue grew twelve percent in the third quarter."
        "\n\nQuestions & answers follow."
    )


def test_recordings_compressed_files_and_schemas_are_told_apart_by_what_they_are() -> None:
    mp3 = b"ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb"
    assert detect_media_type("call.mp3", mp3) is None
    assert "audio (.mp3): there is no speech recognition here" in (
        undetected_reason("call.mp3", mp3) or ""
    )
    mp4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00"
    assert "video (.mp4)" in (undetected_reason("demo.mp4", mp4) or "")
    gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
    assert detect_media_type("logs.gz", gz) == "application/gzip"  # unpacked: one member
    zst = b"\x28\xb5\x2f\xfd\x00\x58\x00\x00"
    assert detect_media_type("logs.zst", zst) == "application/zstd"  # unpacked by libarchive
    lz4 = b"\x04\x22\x4d\x18\x64\x40\xa7\x00"
    assert "a compressed file (.lz4), which is not unpacked" in (
        undetected_reason("logs.lz4", lz4) or ""
    )
    # An XML schema is XML (its annotations are documentation); TeX and BibTeX files are text.
    xsd = b'<?xml version="1.0"?><xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>'
    assert detect_media_type("types.xsd", xsd) == "application/xml"
    assert detect_media_type("paper/refs.bib", b"@article{k, title={T}}") == "text/x-bibtex"
    assert detect_media_type("paper/style.sty", b"\\ProvidesPackage{style}") == "text/x-tex"
    assert detect_media_type("paper/main.bbl", b"\\begin{thebibliography}{1}") == (
        "application/x-latex"
    )
