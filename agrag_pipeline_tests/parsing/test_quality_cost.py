"""The reading-quality score's cost stays linear in the text and free of per-word file-system
work: it runs on every parse, and a per-word glob of wordfreq's data folder made it 95% of a
Markdown parse + chunk (issue 25)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import wordfreq

from agrag_pipeline.parsing import quality


def test_scoring_more_documents_reads_no_wordfreq_list_index_again(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = wordfreq.available_languages

    def counted(wordlist: str = "best") -> dict[str, str]:
        calls.append(wordlist)
        return dict(real(wordlist))

    monkeypatch.setattr(wordfreq, "available_languages", counted)
    cached = getattr(quality, "_wordlists", None)
    if cached is not None:
        cached.cache_clear()
    texts = [
        p.read_text(encoding="utf-8")
        for p in sorted((corpus_dir / "markdown" / "rust-book").glob("ch0*.md"))[:6]
    ]
    first = quality.assess(texts[0])
    after_first = len(calls)
    scores = [first] + [quality.assess(text) for text in texts[1:]]
    assert all(s.language == "en" and s.score > 0.9 for s in scores), scores
    # Read while the first document is scored (the lists it needs), then never again: not
    # per word, nor per document.
    assert len(calls) == after_first, (
        f"wordfreq.available_languages called {len(calls) - after_first} more times "
        f"for 5 more documents (first: {after_first})"
    )


def test_documents_in_many_languages_read_each_word_list_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A folder of mixed documents shortlists more languages than word sets were kept (16),
    and read the lists again and again (42% of the score on the benchmark suite's corpus):
    identifying a language now keeps every list it reads, in 8 bytes a word."""
    latin = [c for c in quality.SCRIPT_LANGUAGES["Latin"] if quality._available(c)]
    assert len(latin) > 16
    texts = [" ".join(wordfreq.top_n_list(c, 400)[100:400]) for c in latin]
    reads: list[str] = []
    real = quality._buckets

    def counted(language: str, wordlist: str, limit: int | None = None) -> Iterator[list[str]]:
        if limit is None:
            reads.append(f"{language}/{wordlist}")
        return real(language, wordlist, limit)

    monkeypatch.setattr(quality, "_buckets", counted)
    for name in ("_small_list", "_small"):  # the word lists kept so far
        kept = getattr(quality, name, None)
        if kept is not None:
            kept.cache_clear()
    for _ in range(2):
        identified = [quality.identify_language(text, "Latin")[0] for text in texts]
    assert sum(found == c for found, c in zip(identified, latin, strict=True)) > len(latin) // 2
    assert len(reads) == len(set(reads)) <= len(latin), reads


def test_documents_in_five_languages_in_turn_read_each_large_list_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three of the largest lists were kept, as word sets of 50-60 MB: documents in five
    languages in turn read a list again for every document (0.1-0.24 s each, a hundred times
    the rest of the score). Kept as hashes, sixteen fit in less memory than three did."""
    languages = ["en", "de", "fr", "es", "it"]
    texts = {c: " ".join(wordfreq.top_n_list(c, 600)[200:600]) for c in languages}
    reads: list[str] = []
    real = quality._buckets

    def counted(language: str, wordlist: str, limit: int | None = None) -> Iterator[list[str]]:
        if wordlist == "best":
            reads.append(language)
        return real(language, wordlist, limit)

    monkeypatch.setattr(quality, "_buckets", counted)
    quality._lexicon.cache_clear()
    for _ in range(3):
        found = [quality.assess(texts[c]).language for c in languages]
    assert found == languages
    assert sorted(reads) == sorted(languages)
