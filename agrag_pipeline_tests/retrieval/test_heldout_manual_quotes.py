"""The held-out set (``data/eval/pdf-manuals-heldout``, issue 24) stays scoreable: every quote
is found exactly once in both the PDF's and its HTML twin's parsed text, so one label holds for
both routes of ``benchmarks.retrieval_manuals`` and a parser change that breaks a label fails
here, not silently in a benchmark run."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.retrieval.evaluate import Question, load_questions, quote_span

HELDOUT = Path(__file__).resolve().parents[2] / "data" / "eval" / "pdf-manuals-heldout"
QUESTIONS = load_questions(HELDOUT / "questions.tsv")
WORD = re.compile(r"[^\W_]+")


@pytest.fixture(scope="module")
def text_layers() -> dict[str, str]:
    """Each document's parsed text, keyed by file name (PDFs and their twins)."""
    files = sorted(HELDOUT.glob("*.pdf")) + sorted(HELDOUT.glob("*.html"))
    return {f.name: parse_document(f.read_bytes(), f.name).text_layer for f in files}


def _occurrences(text: str, quote: str) -> int:
    """How many times ``quote_span`` finds the quote, each search starting past the last."""
    n, offset = 0, 0
    while (span := quote_span(text[offset:], quote)) is not None:
        n, offset = n + 1, offset + span[0] + 1
    return n


def test_heldout_set_covers_two_manuals_with_html_twins_and_about_fifty_questions_each() -> None:
    per_manual = Counter(q.source_key for q in QUESTIONS)
    assert sorted(per_manual) == ["diffutils.pdf", "wget.pdf"]
    for name, n in per_manual.items():
        assert (HELDOUT / name).is_file() and (HELDOUT / name).with_suffix(".html").is_file()
        assert 45 <= n <= 60, (name, n)
    assert all(q.quote is not None and q.span is None for q in QUESTIONS)


def test_heldout_quotes_are_eight_to_twenty_five_words() -> None:
    lengths = {q.line: len(WORD.findall(q.quote or "")) for q in QUESTIONS}
    assert {line: n for line, n in lengths.items() if not 8 <= n <= 25} == {}


@pytest.mark.parametrize("twin", [False, True], ids=["pdf", "html-twin"])
def test_every_heldout_quote_occurs_exactly_once_in_its_document(
    text_layers: dict[str, str], twin: bool
) -> None:
    def key(q: Question) -> str:
        return q.source_key.removesuffix(".pdf") + ".html" if twin else q.source_key

    counts = {(q.line, key(q)): _occurrences(text_layers[key(q)], q.quote or "") for q in QUESTIONS}
    assert {where: n for where, n in counts.items() if n != 1} == {}
    assert len(counts) == len(QUESTIONS) == 110
