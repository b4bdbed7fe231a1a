"""The fast counter (tokie) must count exactly like HF tokenizers, truncation and padding off."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agrag_pipeline.chunking.tokens import TokenCounter, default_tokenizer_path


def _corpus_paragraphs(corpus_dir: Path) -> list[str]:
    texts = []
    for path in sorted((corpus_dir / "markdown").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        texts.append(text)
        texts.extend(text.split("\n\n"))
    return texts


def test_tokie_counts_like_hf_tokenizers_on_the_corpus(corpus_dir: Path) -> None:
    texts = _corpus_paragraphs(corpus_dir)
    fast, reference = TokenCounter(backend="tokie"), TokenCounter(backend="tokenizers")
    assert fast.count_batch(texts) == reference.count_batch(texts)
    # Whole chapters run to thousands of tokens: the 128-token truncation is really off.
    assert max(reference.count_batch(texts)) > 1000


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=200), min_size=1, max_size=8))
def test_tokie_counts_like_hf_tokenizers_on_any_unicode(texts: list[str]) -> None:
    fast, reference = _counters()
    assert fast.count_batch(texts) == reference.count_batch(texts)
    assert [fast.count(t) for t in texts] == reference.count_batch(texts)


def test_tokie_counts_like_hf_tokenizers_beside_every_code_point() -> None:
    """Each character between a digit and a letter: where HF keeps it in the word and tokie
    splits it off (CJK ideographs from U+2B820, punctuation newer than HF's tables), the
    counter must count with HF, as hypothesis once found with '0\U0002b820'."""
    fast, reference = _counters()
    points = [*range(0x80, 0xD800), *range(0xE000, 0x323B0)]
    texts = [f"0{chr(cp)}a" for cp in points]
    expected = [len(e.ids) for e in reference._hf.encode_batch(texts, add_special_tokens=False)]
    counted = [fast.count(t) for t in texts]
    differ = [hex(cp) for cp, a, b in zip(points, counted, expected, strict=True) if a != b]
    assert differ == []
    # The check really meets the cases: tokie alone counts these differently.
    assert fast._tokie.count_tokens("0\U0002b820a") != expected[points.index(0x2B820)]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=100), st.sampled_from([" ", "\n", "\n\n", "\t"]), st.text(max_size=100))
def test_counts_add_up_over_whitespace(a: str, gap: str, b: str) -> None:
    """What the chunker relies on when it sums counted pieces instead of recounting."""
    fast, _ = _counters()
    assert fast.additive
    assert fast.count(a + gap + b) == fast.count(a) + fast.count(b)


def test_a_short_text_is_not_padded_and_specials_are_apart() -> None:
    counter = TokenCounter()
    assert counter.count("hello world") == 2
    assert counter.special_tokens == 2


def test_identity_is_the_sha256_of_the_tokenizer_file() -> None:
    path = default_tokenizer_path()
    assert TokenCounter(path).identity == hashlib.sha256(path.read_bytes()).hexdigest()


_CACHE: list[TokenCounter] = []


def _counters() -> tuple[TokenCounter, TokenCounter]:
    if not _CACHE:
        _CACHE.extend([TokenCounter(backend="tokie"), TokenCounter(backend="tokenizers")])
    return _CACHE[0], _CACHE[1]


def test_characters_tokie_counts_differently_are_counted_like_hf() -> None:
    """Found by the unicode test above: unassigned code points (HF: [UNK], tokie: nothing),
    some combining marks, DEL. Texts holding one are counted by HF tokenizers."""
    fast, reference = _counters()
    texts = ["\U00014647", "x\U00014647y", "a \x7f b", "नमस्ते", "সাহিত্য", "e\u0301t\u00e9", "\u200b"]
    assert [fast.count(t) for t in texts] == reference.count_batch(texts)
    assert fast.count_batch(texts) == reference.count_batch(texts)


def test_the_fast_disputed_check_agrees_with_the_per_character_rule() -> None:
    from agrag_pipeline.chunking.tokens import _disputed_char, disputed

    for cp in [*range(0x10000), *range(0x1F000, 0x1FB00), 0x10FFFF]:
        ch = chr(cp)  # lone surrogates included: a text layer from another source may hold one
        assert disputed(ch) == _disputed_char(ch), hex(cp)
        assert disputed("plain ascii text " + ch) == _disputed_char(ch), hex(cp)
