"""The sets written blind (``data/eval/pdf-manuals-heldout``: GNU texinfo manuals;
``data/eval/pdf-manuals-sphinx``: Sphinx/LaTeX guides; ``data/eval/pdf-manuals-printed``: web
manuals printed by Chromium; issue 24) stay scoreable: every quote is
found exactly once in both the PDF's and its HTML twin's parsed text, so one label holds for
both routes of ``benchmarks.retrieval_manuals`` and a parser change that breaks a label fails
here, not silently in a benchmark run."""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.retrieval.evaluate import Question, load_questions, quote_span

EVAL = Path(__file__).resolve().parents[2] / "data" / "eval"
#: Each set: its manuals (PDF name, each with an HTML twin) and how many questions it holds.
SETS = {
    "pdf-manuals-heldout": (["diffutils.pdf", "wget.pdf"], 110),
    "pdf-manuals-sphinx": (["flask.pdf", "requests.pdf"], 110),
    "pdf-manuals-printed": (["handbook.pdf", "prometheus.pdf"], 110),
}
WORD = re.compile(r"[^\W_]+")


def _questions(name: str) -> list[Question]:
    return load_questions(EVAL / name / "questions.tsv")


@functools.cache
def _text_layers(name: str) -> dict[str, str]:
    """Each document's parsed text, keyed by file name (PDFs and their twins)."""
    folder = EVAL / name
    files = sorted(folder.glob("*.pdf")) + sorted(folder.glob("*.html"))
    return {f.name: parse_document(f.read_bytes(), f.name).text_layer for f in files}


def _occurrences(text: str, quote: str) -> int:
    """How many times ``quote_span`` finds the quote, each search starting past the last."""
    n, offset = 0, 0
    while (span := quote_span(text[offset:], quote)) is not None:
        n, offset = n + 1, offset + span[0] + 1
    return n


@pytest.mark.parametrize("name", SETS)
def test_a_blind_set_covers_its_manuals_with_html_twins_and_about_fifty_questions_each(
    name: str,
) -> None:
    manuals, _ = SETS[name]
    per_manual = Counter(q.source_key for q in _questions(name))
    assert sorted(per_manual) == manuals
    for manual, n in per_manual.items():
        pdf = EVAL / name / manual
        assert pdf.is_file() and pdf.with_suffix(".html").is_file()
        assert 45 <= n <= 60, (manual, n)
    assert all(q.quote is not None and q.span is None for q in _questions(name))


@pytest.mark.parametrize("name", SETS)
def test_blind_quotes_are_eight_to_twenty_five_words(name: str) -> None:
    lengths = {q.line: len(WORD.findall(q.quote or "")) for q in _questions(name)}
    assert {line: n for line, n in lengths.items() if not 8 <= n <= 25} == {}


@pytest.mark.parametrize("twin", [False, True], ids=["pdf", "html-twin"])
@pytest.mark.parametrize("name", SETS)
def test_every_blind_quote_occurs_exactly_once_in_its_document(name: str, twin: bool) -> None:
    def key(q: Question) -> str:
        return q.source_key.removesuffix(".pdf") + ".html" if twin else q.source_key

    questions = _questions(name)
    layers = _text_layers(name)
    counts = {(q.line, key(q)): _occurrences(layers[key(q)], q.quote or "") for q in questions}
    assert {where: n for where, n in counts.items() if n != 1} == {}
    assert len(counts) == len(questions) == SETS[name][1]
