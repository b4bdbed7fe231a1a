"""Scoring labelled questions: the two hit rules, the paired bootstrap, the fixed-size baseline."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.retrieval.evaluate import (
    EvalError,
    Question,
    Scores,
    answer_spans,
    comparison_table,
    fixed_size_spans,
    load_questions,
    paired_bootstrap,
    pooled,
    score_rules,
)

DOC = (
    "# Ponds\n\nPonds hold water.\n\n"
    "## Ducks\n\nDucks paddle on ponds.\n\n"
    "### Mallards\n\nMallards have green heads.\n\n"
    "## Geese\n\nGeese honk.\n"
)
RUST_BOOK = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "markdown" / "rust-book"


@dataclass(frozen=True)
class Found:
    """A search result as the scorer reads it: where its chunk lies."""

    source_key: str
    char_start: int
    char_end: int


def _chunk(text: str, words: str) -> Found:
    at = text.index(words)
    return Found("ponds.md", at, at + len(words))


def test_strict_rule_wants_the_leaf_section_and_section_rule_takes_its_subsections() -> None:
    parsed = parse_document(DOC.encode(), "ponds.md")
    text = parsed.text_layer
    mallards = text.index("Mallards have green heads.")
    questions = [
        Question("what do ducks do?", "ponds.md", "Ducks", None),
        Question("colour of a mallard?", "ponds.md", None, (mallards, mallards + 26)),
    ]

    def spans(asked: list[Question]) -> dict[str, dict[int, tuple[int, int]]]:
        return {
            rule: answer_spans(asked, lambda _key: parsed.sections, rule)
            for rule in ("section", "strict")
        }

    # The only chunk retrieved is the Mallards subsection: under Ducks, but not Ducks' own text.
    subsection = _chunk(text, "Mallards have green heads.")
    ducks = questions[:1]
    under_ducks = score_rules("dense", ducks, spans(ducks), lambda _q, _k: [subsection])
    assert [(s.rule, s.recall[1]) for s in under_ducks] == [("section", 1.0), ("strict", 0.0)]
    # A span answer in Mallards: the Ducks paragraph above it is neither its section nor it.
    mallard = questions[1:]
    ducks_text = _chunk(text, "Ducks paddle on ponds.")
    by_rule = score_rules("dense", mallard, spans(mallard), lambda _q, _k: [ducks_text, subsection])
    assert [(s.rule, s.ranks) for s in by_rule] == [("section", (2,)), ("strict", (2,))]
    # The heading line of Mallards is in its section but not in the labelled span.
    heading_then_text = [_chunk(text, "### Mallards"), _chunk(text, "Mallards have green")]
    strict = score_rules("dense", mallard, spans(mallard), lambda _q, _k: heading_then_text)
    assert [s.mrr10 for s in strict] == [1.0, 0.5]


def test_a_span_answer_widens_to_its_headed_section_under_the_section_rule() -> None:
    parsed = parse_document(DOC.encode(), "ponds.md")
    text = parsed.text_layer
    at = text.index("paddle")
    question = [Question("q", "ponds.md", None, (at, at + 6))]
    section = answer_spans(question, lambda _key: parsed.sections, "section")[0]
    strict = answer_spans(question, lambda _key: parsed.sections, "strict")[0]
    assert strict == (at, at + 6)
    assert text[section[0] : section[1]].startswith("## Ducks\n\nDucks paddle")
    assert "Mallards have green heads." in text[section[0] : section[1]]
    assert "Geese" not in text[section[0] : section[1]]


def _run(mode: str, ranks: list[int | None]) -> Scores:
    return score_rules(
        mode,
        [Question(str(i), "k", None, (0, 1)) for i in range(len(ranks))],
        {"strict": dict.fromkeys(range(len(ranks)), (0, 1))},
        _ranked(ranks),
    )[0]


def _ranked(ranks: list[int | None]):
    answers = iter(ranks)

    def retrieve(_query: str, k: int) -> list[Found]:
        rank = next(answers)
        misses = [Found("other", 0, 1)] * k
        if rank is not None:
            misses[rank - 1] = Found("k", 0, 1)
        return misses

    return retrieve


def test_paired_bootstrap_tells_a_real_gap_from_noise() -> None:
    better = _run("ours", [1] * 30 + [2] * 10)
    worse = _run("baseline", [3] * 30 + [2] * 10)
    gap = paired_bootstrap(better, worse, "mrr@10")
    assert gap.difference == pytest.approx((1 - 1 / 3) * 30 / 40)
    assert 0 < gap.low <= gap.difference <= gap.high and gap.verdict == "ours better"
    assert paired_bootstrap(better, worse, "mrr@10") == gap  # seeded: the same report again
    # Two runs that trade wins question by question: no clear difference.
    a = _run("a", [1, None] * 10)
    b = _run("b", [None, 1] * 10)
    tie = paired_bootstrap(a, b, "recall@5")
    assert tie.difference == 0 and tie.low < 0 < tie.high and tie.verdict == "no clear difference"
    assert "| a | strict | recall@5 | 0.500 | 0.500 | +0.000 |" in comparison_table([tie])
    with pytest.raises(ValueError, match="same questions"):
        paired_bootstrap(better, a)


def test_pooled_sets_weigh_every_question_the_same() -> None:
    small, large = _run("ours", [1, None]), _run("ours", [1] * 8)
    both = pooled([small, large])
    assert both.questions == 10 and both.ranks == (1, None, *[1] * 8)
    assert both.mrr10 == pytest.approx(9 / 10)  # not the mean of the sets' 0.5 and 1.0
    with pytest.raises(ValueError, match="one mode and rule"):
        pooled([small, _run("baseline", [1])])


def test_fixed_size_baseline_covers_the_text_in_chunks_of_at_most_1000_characters() -> None:
    text = parse_document(
        (RUST_BOOK / "ch08-01-vectors.md").read_bytes(), "ch08-01-vectors.md"
    ).text_layer
    spans = fixed_size_spans(text)
    assert all(0 < b - a <= 1000 for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(spans))
    covered = "".join(text[a:b] for a, b in spans)
    assert "".join(covered.split()) == "".join(text.split())  # every non-space character once
    # Cut at a paragraph break wherever the window holds one.
    assert sum(text[b : b + 2] == "\n\n" for _, b in spans[:-1]) >= len(spans) - 2
    assert fixed_size_spans("x" * 2500) == [(0, 1000), (1000, 2000), (2000, 2500)]
    assert fixed_size_spans(" \n ") == []


def _quoted(question: Question, text: str) -> tuple[int, int]:
    parsed = parse_document(text.encode(), "manual.md")
    spans = answer_spans([question], lambda _k: parsed.sections, "strict", lambda _k: text)
    return spans[0]


def test_a_quoted_answer_is_found_by_its_words_in_either_twin(tmp_path: Path) -> None:
    """One label for a PDF and its HTML twin: line breaks, markup and case aside."""
    questions = tmp_path / "q.tsv"
    questions.write_text(
        "query\tsource_key\tquote\n"
        "what does cif mean?\tmanual\tThe cif in ffi_cif stands for Call InterFace\n"
    )
    (question,) = load_questions(questions)
    pdf_text = "Intro.\n\nthe cif in ffi_\ncif stands for Call\nInterFace. To prepare..."
    start, end = _quoted(question, pdf_text)
    assert pdf_text[start:end] == "the cif in ffi_\ncif stands for Call\nInterFace"
    html_text = "# Basics\n\nThe `cif` in `ffi_cif` stands for **Call InterFace**."
    start, end = _quoted(question, html_text)
    assert html_text[start:end] == "The `cif` in `ffi_cif` stands for **Call InterFace"
    with pytest.raises(EvalError, match="does not contain"):
        _quoted(question, "The cif in ffi_cif stands for Call InterFaces")  # words, not prefixes
