"""Invariants of issue 4 over generated Markdown (headings, paragraphs, fences, tables, unicode)."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agrag_pipeline.chunking.chunker import StructureChunker
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.models import Chunk
from agrag_pipeline.parsing import parse_document

_COUNTER: list[TokenCounter] = []

words = st.one_of(
    st.sampled_from(
        [
            "the",
            "borrow",
            "checker",
            "naïve",
            "日本語",
            "Straße",
            "🦀",
            "x=1;",
            "ünïcödé",
            "fn",
            "main()",
            "(see",
            "below)",
            "e.g.",
            "Crab.",
        ]
    ),
    st.text(
        alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S"]),
        min_size=1,
        max_size=12,
    ),
)
sentence = st.lists(words, min_size=1, max_size=25).map(lambda ws: " ".join(ws) + ".")
paragraph = st.lists(sentence, min_size=1, max_size=8).map(" ".join)
heading = st.tuples(st.integers(1, 4), st.lists(words, min_size=1, max_size=5)).map(
    lambda t: "#" * t[0] + " " + " ".join(t[1])
)
fence = st.lists(st.lists(words, max_size=10).map(" ".join), min_size=1, max_size=30).map(
    lambda lines: "```rust\n" + "\n".join(lines) + "\n```"
)
table = st.tuples(st.integers(1, 4), st.integers(1, 40), st.data()).flatmap(
    lambda t: st.lists(
        st.lists(
            st.lists(words, min_size=1, max_size=4).map(" ".join), min_size=t[0], max_size=t[0]
        ),
        min_size=t[1] + 1,
        max_size=t[1] + 1,
    ).map(
        lambda rows: "\n".join(
            ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
            + ["| " + " | ".join(r) + " |" for r in rows[1:]]
        )
    )
)
block = st.one_of(heading, paragraph, paragraph, fence, table)
markdown = st.lists(block, min_size=1, max_size=14).map("\n\n".join)
chunker_settings = st.builds(
    lambda max_t, target_frac, min_t, overlap, rows: ChunkerSettings(
        max_tokens=max_t,
        target_tokens=max(int(max_t * target_frac), 40),
        min_tokens=min(min_t, max(int(max_t * target_frac), 40)),
        overlap_tokens=overlap,
        table_rows_per_chunk=rows,
    ),
    st.integers(96, 256),
    st.floats(0.5, 1.0),
    st.integers(0, 40),
    st.integers(0, 20),
    st.one_of(st.none(), st.integers(1, 10)),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(markdown, chunker_settings)
def test_generated_markdown_keeps_every_invariant(
    invariants: Callable[..., None],
    rows_without_time: Callable[[list[Chunk]], list[dict[str, object]]],
    source: str,
    chunk_settings: ChunkerSettings,
) -> None:
    if not _COUNTER:
        _COUNTER.append(TokenCounter())
    counter = _COUNTER[0]
    parsed = parse_document(source.encode("utf-8"), "generated.md")
    chunker = StructureChunker(chunk_settings, counter)
    chunks = chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
    invariants(parsed, chunks, chunker, counter)
    again = StructureChunker(chunk_settings, counter).chunk(
        parsed, schema_fingerprint=None, extraction_fingerprint=None
    )
    assert rows_without_time(again) == rows_without_time(chunks)


def test_subsections_sharing_their_parents_title_are_kept_under_its_label(
    invariants: Callable[..., None],
) -> None:
    counter = TokenCounter()
    settings_ = ChunkerSettings(target_tokens=96, max_tokens=96, min_tokens=4, min_text_tokens=16)
    parsed = parse_document(b"# the\n\n## the\n\n## the", "generated.md")
    chunker = StructureChunker(settings_, counter)
    chunks = chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
    invariants(parsed, chunks, chunker, counter)
    # The two subsections are content under the title's label, not a repeat of the title line.
    assert [(c.heading_path, c.text) for c in chunks] == [(["the"], "## the\n\n## the")]
    assert chunks[0].contextual_text == "the\n\n## the\n\n## the"
