"""The reading-quality score's cost stays linear in the text and free of per-word file-system
work: it runs on every parse, and a per-word glob of wordfreq's data folder made it 95% of a
Markdown parse + chunk (issue 25)."""

from __future__ import annotations

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
