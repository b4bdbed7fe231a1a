"""A text without a space anywhere (a megabyte of nested JSON saved as ``.txt``) is chunked with
work in proportion to its length: cutting it into pieces once counted the whole rest of the text
for every piece, so a megabyte took minutes instead of about a second."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from agrag_pipeline.chunking.chunker import StructureChunker
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.parsing import parse_document

#: Characters the chunker may tokenize per character of the document. Cutting a word costs a
#: fixed number of counts of at most ``text_split.EXACT_SEARCH_CHARS`` characters a piece;
#: a search over the rest of the word (the quadratic cut) needs thousands per character.
WORK_PER_CHARACTER = 64


class _CountingCounter(TokenCounter):
    """The real tokenizer, that also adds up the characters it is asked to tokenize and stops
    the run once they exceed an allowance (so quadratic work fails fast instead of running
    for minutes)."""

    def __init__(self, allowance: int) -> None:
        super().__init__()
        # A list, shared with the copies ``trusting`` makes.
        self.tokenized = [0]
        self.allowance = allowance

    def _spend(self, characters: int) -> None:
        self.tokenized[0] += characters
        if self.tokenized[0] > self.allowance:
            raise AssertionError(
                f"tokenized {self.tokenized[0]:,} characters, over the allowance of "
                f"{self.allowance:,}: the work grows faster than the text"
            )

    def count(self, text: str) -> int:
        self._spend(len(text))
        return super().count(text)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        self._spend(sum(map(len, texts)))
        # The base class may call ``count`` for some texts: charged once, here.
        spent = self.tokenized[0]
        counts = super().count_batch(texts)
        self.tokenized[0] = spent
        return counts


def _nested_list(size: int) -> bytes:
    return b"[" * (size // 2) + b"]" * (size // 2)


def _nested_object(size: int) -> bytes:
    depth = size // 6
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize("size", [256 * 1024, 1024 * 1024], ids=["256KB", "1MB"])
@pytest.mark.parametrize("make", [_nested_list, _nested_object], ids=["list", "object"])
def test_deeply_nested_json_as_text_is_chunked_with_linear_work(
    make: Callable[[int], bytes], size: int
) -> None:
    raw = make(size)
    # The parse itself stays far inside a small time budget (a ParseTimeoutError otherwise).
    parsed = parse_document(raw, "hostile/nested.txt", time_budget_s=20)
    assert parsed.text_layer == raw.decode()
    counter = _CountingCounter(allowance=WORK_PER_CHARACTER * len(raw))
    settings = ChunkerSettings()
    chunks = StructureChunker(settings, counter).chunk(
        parsed, schema_fingerprint="s" * 64, extraction_fingerprint=None
    )
    # Every character is in a chunk, in order, and each chunk is within the limit.
    assert "".join(c.text for c in chunks) == parsed.text_layer
    reference = TokenCounter()
    limit = settings.max_tokens - reference.special_tokens
    assert max(reference.count(c.contextual_text) for c in chunks) <= limit


def _plain_binary_search_cut(text: str, budget: int, counter: TokenCounter) -> list[int]:
    """Where the plain binary search over the whole rest of a word cuts it (chunk ids on
    stored data were made with it)."""
    cuts, start = [], 0
    while start < len(text):
        lo, hi, best = 1, len(text) - start, 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if counter.count(text[start : start + mid]) <= budget:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        start += best
        cuts.append(start)
    return cuts


@pytest.mark.parametrize(
    ("word", "budget"),
    [
        # Word pieces make these counts fall as a prefix grows ("`exec" 4, "`execute`" 3).
        ("`execute`.", 3),
        ("[`spawn`][builder-spawn]<!--", 3),
        ("../listings/ch21-web-server/listing-21-15/src/lib.rs:here}}", 4),
        ("../listings/ch17-async-await/listing-17-12/src/main.rs:with-move}}", 10),
        ("https://example.org/" + "segment-of-a-path/" * 55, 40),
    ],
)
def test_a_word_up_to_the_exact_search_length_is_cut_where_it_always_was(
    counter: TokenCounter, word: str, budget: int
) -> None:
    from agrag_pipeline.chunking.text_split import EXACT_SEARCH_CHARS, split_by_characters

    assert len(word) <= EXACT_SEARCH_CHARS
    pieces = split_by_characters(word, 0, len(word), budget, counter)
    assert [end for _, end, _ in pieces] == _plain_binary_search_cut(word, budget, counter)
