"""Invariants of issue 4 over every document of the reference corpus."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agrag_pipeline.chunking.chunker import StructureChunker, heading_label
from agrag_pipeline.chunking.errors import ChunkingError
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.models import Chunk
from agrag_pipeline.parsing.parsed import ParsedDocument

SETTINGS = [
    ChunkerSettings(),
    ChunkerSettings(overlap_tokens=24, min_tokens=0),
    ChunkerSettings(
        target_tokens=64, max_tokens=128, min_tokens=16, overlap_tokens=10, table_rows_per_chunk=3
    ),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["defaults", "overlap", "small"])
def test_corpus_chunks_keep_every_invariant(
    corpus_parsed: list[ParsedDocument],
    counter: TokenCounter,
    settings: ChunkerSettings,
    invariants: Callable[..., None],
) -> None:
    chunker = StructureChunker(settings, counter)
    kinds = {p.document.media_type for p in corpus_parsed}
    assert {"text/markdown", "text/html", "application/pdf"} <= kinds
    for parsed in corpus_parsed:
        try:
            chunks = chunker.chunk(parsed, schema_fingerprint="s" * 64, extraction_fingerprint=None)
        except ChunkingError as exc:
            # A heading path that a small max_tokens cannot hold even with its long headings
            # cut is refused: it must really be that long.
            longest = max(
                counter.count(heading_label(s.heading_path) or "") for s in parsed.sections
            )
            need = settings.min_text_tokens + settings.overlap_tokens + counter.special_tokens
            assert "the heading path" in str(exc) and longest + need > settings.max_tokens
            continue
        if parsed.sections:
            assert chunks, parsed.document.source_key
        invariants(parsed, chunks, chunker, counter)


def test_corpus_chunking_is_deterministic(
    corpus_parsed: list[ParsedDocument],
    counter: TokenCounter,
    rows_without_time: Callable[[list[Chunk]], list[dict[str, object]]],
) -> None:
    settings = ChunkerSettings(overlap_tokens=16)
    first, second = StructureChunker(settings, counter), StructureChunker(settings, counter)
    for parsed in corpus_parsed:
        a = first.chunk(parsed, schema_fingerprint="a", extraction_fingerprint="b")
        b = second.chunk(parsed, schema_fingerprint="a", extraction_fingerprint="b")
        assert rows_without_time(a) == rows_without_time(b)


def test_corpus_tables_are_chunked_apart_from_text(
    corpus_parsed: list[ParsedDocument], counter: TokenCounter
) -> None:
    chunker = StructureChunker(ChunkerSettings(), counter)
    tables = 0
    for parsed in corpus_parsed:
        by_id = {s.id: s for s in parsed.sections}
        for c in chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None):
            kinds = {by_id[s].kind for s in c.section_ids}
            assert kinds == {c.content_kind}
            tables += c.content_kind == "table"
    assert tables > 0


def test_no_corpus_chunk_is_markup_alone_and_none_lacks_a_heading_path(
    corpus_parsed: list[ParsedDocument], counter: TokenCounter
) -> None:
    """Rendered as a reader sees it (CommonMark to HTML, tags dropped), every Markdown chunk
    shows text; every chunk of a document with headings has a heading path."""
    import html
    import re

    import pyromark

    tag = re.compile(r"<[^>]*>")
    chunker = StructureChunker(ChunkerSettings(), counter)
    markdown_chunks = 0
    for parsed in corpus_parsed:
        headed = any(s.heading is not None for s in parsed.sections)
        for c in chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None):
            assert bool(c.heading_path) == headed, (parsed.document.source_key, c.text[:60])
            if parsed.document.media_type == "text/markdown":
                markdown_chunks += 1
                seen = html.unescape(tag.sub("", pyromark.html(c.text))).strip()
                assert seen, (parsed.document.source_key, c.index, c.text[:80])
                embedded = c.contextual_text.split("\n\n", 1)[-1]
                assert "<!--" not in embedded and '<a id="' not in embedded
    assert markdown_chunks > 1000
