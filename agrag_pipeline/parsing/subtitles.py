"""Subtitles and transcripts: WebVTT (``.vtt``) and SubRip (``.srt``).

A meeting recording's transcript or a video's captions is text a team wants searchable; the
cue timings, identifiers, styling blocks and notes are not. Each cue's text becomes a line
(a ``<v Speaker>`` voice tag reads ``Speaker: ...``, other tags are dropped); consecutive cues
of the same speaker, or without speakers, join into one paragraph until a pause of more than
``PARAGRAPH_PAUSE_S`` seconds, so the chunker sees sentences rather than two-second fragments.
A file whose first line is not ``WEBVTT`` is still read, as SubRip is (no header).
"""

from __future__ import annotations

import html
import re

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.textlayer import TextLayer

VTT_MEDIA_TYPE = "text/vtt"
SRT_MEDIA_TYPE = "application/x-subrip"

#: A silence longer than this between two cues starts a new paragraph.
PARAGRAPH_PAUSE_S = 4.0

_TIMING = re.compile(
    r"^\s*(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})\s*-->\s*(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})"
)
_VOICE = re.compile(r"<v(?:\.[\w.-]+)?\s+([^>]+)>", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][^>]*>|<\d+:\d{2}(?::\d{2})?[.,]\d{3}>")
_BLOCK_KEYWORDS = ("NOTE", "STYLE", "REGION")


def _seconds(hours: str | None, minutes: str, seconds: str, millis: str) -> float:
    return (
        int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(millis.ljust(3, "0")) / 1000
    )


def _cue_text(lines: list[str]) -> tuple[str | None, str]:
    """(speaker or None, the cue's words without markup)."""
    speaker: str | None = None
    words: list[str] = []
    for line in lines:
        voice = _VOICE.search(line)
        if voice is not None and speaker is None:
            speaker = voice.group(1).strip()
        words.append(html.unescape(_TAG.sub("", line)).strip())
    return speaker, " ".join(w for w in words if w)


def parse(text: str, document: Document) -> ParsedDocument:
    """The cue text of a WebVTT or SubRip file as paragraphs, in cue order."""
    deadline = current_deadline(document.source_key)
    layer = TextLayer()
    blocks = re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff"))
    paragraph: list[str] = []
    last_speaker: str | None = None
    last_end: float | None = None

    def flush() -> None:
        if paragraph:
            layer.paragraph(" ".join(paragraph))
            paragraph.clear()

    for number, block in enumerate(blocks):
        deadline.tick(f"cue block {number + 1:,}")
        lines = [line for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        first = lines[0].strip()
        if number == 0 and first.startswith("WEBVTT"):
            continue  # the header block: its settings are no caption text
        if first.split(" ", 1)[0] in _BLOCK_KEYWORDS:
            continue
        timing_at = next((i for i, line in enumerate(lines[:2]) if _TIMING.match(line)), None)
        if timing_at is None:
            continue  # not a cue (stray text between cues is not caption text)
        timing = _TIMING.match(lines[timing_at])
        assert timing is not None
        start = _seconds(*timing.group(1, 2, 3, 4))
        end = _seconds(*timing.group(5, 6, 7, 8))
        speaker, words = _cue_text(lines[timing_at + 1 :])
        if not words:
            continue
        paused = last_end is not None and start - last_end > PARAGRAPH_PAUSE_S
        if paused or (speaker is not None and speaker != last_speaker):
            flush()
        if speaker is not None and (not paragraph or speaker != last_speaker):
            words = f"{speaker}: {words}"
        paragraph.append(words)
        last_speaker = speaker if speaker is not None else last_speaker
        last_end = end
    flush()
    return layer.parsed(document, "the subtitle file holds no cue text")
