"""Paragraph and fence blocks: the fast finder agrees with a plain line-by-line reading."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agrag_pipeline.chunking.text_split import Block, blocks_and_texts

_FENCE = re.compile(r"[ \t>]*(`{3,}|~{3,})")
_BLANK = re.compile(r"[ \t\r]*")


def _reference_blocks(text: str, start: int, end: int, keep_code_whole: bool) -> list[Block]:
    """The rule read line by line: blank lines part paragraphs; a fence line opens a code block
    that runs to the next fence line of the same character, at least as long, with nothing but
    whitespace after its marker (or to the end of the span). Only lines that start inside the
    span count (its first line only when the span starts at a line start)."""
    lines: list[tuple[int, int]] = []
    line_start = start if start == 0 or text[start - 1] == "\n" else None
    for i in range(start, end + 1):
        if i == end or text[i] == "\n":
            if line_start is not None:
                lines.append((line_start, i))
            line_start = i + 1 if i < end else None
    raw: list[Block] = []
    para, fence = start, None
    for ls, le in lines:
        line = text[ls:le]
        m = _FENCE.match(line)
        marker = m.group(1) if m else None
        if fence is not None:
            fence_char, fence_len, fence_start = fence
            closes = m is not None and not line[m.end(1) :].strip()
            if closes and marker and marker[0] == fence_char and len(marker) >= fence_len:
                raw.append((fence_start, le, "code"))
                fence, para = None, le
        elif _BLANK.fullmatch(line):
            raw.append((para, ls, "prose"))
            para = le
        elif marker and keep_code_whole:
            raw.append((para, ls, "prose"))
            fence = (marker[0], len(marker), ls)
    raw.append((fence[2], end, "code") if fence is not None else (para, end, "prose"))
    out: list[Block] = []
    for s, e, level in raw:
        body = text[s:e]
        if body.strip():
            s += len(body) - len(body.lstrip())
            out.append((s, s + len(body.strip()), level))
    return out


_PIECES = st.sampled_from(
    [
        "\n",
        "\n",
        "\n\n",
        " ",
        "\t",
        "\r\n",
        "\x0b",
        "\xa0",
        ">",
        "`",
        "```",
        "````",
        "~~~",
        "```rust",
        "~~~~ x",
        "word",
        "a b.",
        "é中",
    ]
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=30), st.data(), st.booleans())
def test_blocks_match_the_line_by_line_reading(
    pieces: list[str], data: st.DataObject, keep_code_whole: bool
) -> None:
    text = "".join(pieces)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    found, texts = blocks_and_texts(text, start, end, keep_code_whole)
    assert found == _reference_blocks(text, start, end, keep_code_whole)
    assert texts == [text[s:e] for s, e, _ in found]


def test_fence_keeps_blank_lines_inside_and_splits_a_paragraph() -> None:
    text = "intro\n```rust\nfn a() {}\n\nfn b() {}\n```\nafter\n\nlast"
    found, _ = blocks_and_texts(text, 0, len(text), True)
    assert [(text[s:e], level) for s, e, level in found] == [
        ("intro", "prose"),
        ("```rust\nfn a() {}\n\nfn b() {}\n```", "code"),
        ("after", "prose"),
        ("last", "prose"),
    ]
