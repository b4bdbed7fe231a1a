"""Invariants of issue 4 over every document of the reference corpus."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agrag_pipeline.chunking.chunker import StructureChunker
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
        chunks = chunker.chunk(parsed, schema_fingerprint="s" * 64, extraction_fingerprint=None)
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
