"""Retrieval score on labelled questions: recall@1/5/10 and MRR@10 per search mode and hit rule.

A question names its answer as a source key plus the heading of the answering section, a
character span ``start:end`` of the document's text layer, or (a questions file whose third
column is named ``quote``) a quote of the answer's words: found in the text layer by its words
alone (case, punctuation, spacing and line breaks aside), so one label holds across parser
versions and across a document's PDF and HTML twins. A hit is a retrieved chunk of
that document whose character range overlaps the answer, under one of two rules (``RULES``):
- ``section``: the answering section with all its subsections (for a span: the section that
  holds it, with its subsections), so a chunk anywhere under the right heading counts;
- ``strict``: the leaf section alone (its text up to the next heading of any level) or the
  labelled span itself, so only a chunk holding the answer's own text counts.
Headings are matched on their words only (case, backticks and punctuation aside).

``paired_bootstrap`` compares two runs on the same questions (ours against a fixed-size
baseline, ``fixed_size_spans``): the mean per-question difference of a metric and a percentile
interval from resampling the questions, so a gap smaller than the noise of a small labelled set
is not read as a win.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from agrag_pipeline.models import Section

KS = (1, 5, 10)
Rule = Literal["section", "strict"]
RULES: tuple[Rule, ...] = ("section", "strict")
#: Characters per chunk of the fixed-size baseline.
BASELINE_CHARS = 1000
_SPAN = re.compile(r"^\s*(\d+)\s*[:-]\s*(\d+)\s*$")
_WORD = re.compile(r"\w+")
_QUOTE_WORD = re.compile(r"[^\W_]+")


class EvalError(ValueError):
    """A questions file or label that cannot be scored (names the file, line and problem)."""


@dataclass(frozen=True)
class Question:
    query: str
    source_key: str
    #: The answering section's heading, or None when ``span`` or ``quote`` is given.
    heading: str | None
    span: tuple[int, int] | None
    line: int = 0
    #: The answer's own words, to be found in the document's text layer.
    quote: str | None = None


class Located(Protocol):
    """What a search result must say for scoring (``search.Hit`` does)."""

    @property
    def source_key(self) -> str: ...
    @property
    def char_start(self) -> int: ...
    @property
    def char_end(self) -> int: ...


def load_questions(path: str | Path) -> list[Question]:
    """Questions from a TSV with a header row: ``query``, ``source_key``, and ``heading`` or
    ``span`` (``start:end``). A third column named otherwise is read as heading-or-span."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader, None)
        if header is None or len(header) < 3:
            raise EvalError(f"{path}: expected a header row: query, source_key, heading (or span)")
        quotes = header[2].strip().lower() == "quote"
        out: list[Question] = []
        for n, row in enumerate(reader, start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3 or not row[0].strip() or not row[1].strip() or not row[2].strip():
                raise EvalError(f"{path}:{n}: expected query, source key and heading or span")
            query, key, answer = row[0].strip(), row[1].strip(), row[2].strip()
            if quotes:
                if not _QUOTE_WORD.search(answer):
                    raise EvalError(f"{path}:{n}: the quote {answer!r} has no words")
                out.append(Question(query, key, None, None, n, answer))
                continue
            m = _SPAN.match(answer)
            if m:
                a, b = int(m.group(1)), int(m.group(2))
                if b <= a:
                    raise EvalError(f"{path}:{n}: empty span {answer!r}")
                out.append(Question(query, key, None, (a, b), n))
            else:
                out.append(Question(query, key, answer, None, n))
    if not out:
        raise EvalError(f"{path}: no questions")
    return out


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def section_span(sections: Sequence[Section], heading: str) -> tuple[int, int] | None:
    """The span of the section headed ``heading`` with all its subsections, or None."""
    want = _words(heading)
    for i, s in enumerate(sections):
        if s.heading is not None and _words(s.heading) == want:
            end = s.end
            for later in sections[i + 1 :]:
                if later.heading is not None and later.level <= s.level:
                    break
                end = max(end, later.end)
            return s.start, end
    return None


def leaf_span(sections: Sequence[Section], heading: str) -> tuple[int, int] | None:
    """The span of the section headed ``heading`` without its subsections: up to the next
    heading of any level (its tables and continued text included), or None."""
    want = _words(heading)
    for i, s in enumerate(sections):
        if s.heading is not None and _words(s.heading) == want:
            end = s.end
            for later in sections[i + 1 :]:
                if later.heading is not None:
                    break
                end = max(end, later.end)
            return s.start, end
    return None


def _enclosing_section_span(sections: Sequence[Section], span: tuple[int, int]) -> tuple[int, int]:
    """``span`` widened to the headed section that holds its start, with its subsections."""
    holder = None
    for s in sections:
        if s.heading is not None and s.start <= span[0]:
            holder = s
    if holder is None or holder.heading is None:
        return span
    found = section_span(sections[sections.index(holder) :], holder.heading)
    assert found is not None
    return min(span[0], found[0]), max(span[1], found[1])


def quote_span(text: str, quote: str) -> tuple[int, int] | None:
    """Where the words of ``quote`` first occur in ``text`` in that order, with nothing but
    non-letters between them (case aside), or None."""
    words = _QUOTE_WORD.findall(quote)
    pattern = r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, words)) + r"(?![^\W_])"
    m = re.search(pattern, text, re.IGNORECASE)
    return (m.start(), m.end()) if m else None


def answer_spans(
    questions: Iterable[Question],
    sections_of: Callable[[str], Sequence[Section]],
    rule: Rule = "section",
    text_of: Callable[[str], str] | None = None,
) -> dict[int, tuple[int, int]]:
    """Each question's answer span (by position) under ``rule``, its heading or quote resolved
    in its document (``text_of``: a document's text layer, needed for quotes)."""
    if rule not in RULES:
        raise ValueError(f"unknown hit rule {rule!r}: use one of {', '.join(RULES)}")
    spans: dict[int, tuple[int, int]] = {}
    for i, q in enumerate(questions):
        if q.quote is not None:
            if text_of is None:
                raise EvalError(f"line {q.line}: a quoted answer needs the document's text")
            quoted = quote_span(text_of(q.source_key), q.quote)
            if quoted is None:
                raise EvalError(f"line {q.line}: {q.source_key} does not contain {q.quote!r}")
            q = replace(q, span=quoted)
        if q.span is not None:
            spans[i] = (
                q.span
                if rule == "strict"
                else _enclosing_section_span(sections_of(q.source_key), q.span)
            )
            continue
        assert q.heading is not None
        find = leaf_span if rule == "strict" else section_span
        found = find(sections_of(q.source_key), q.heading)
        if found is None:
            raise EvalError(f"line {q.line}: {q.source_key} has no section {q.heading!r}")
        spans[i] = found
    return spans


def is_hit(hit: Located, question: Question, span: tuple[int, int]) -> bool:
    return (
        hit.source_key == question.source_key
        and hit.char_start < span[1]
        and hit.char_end > span[0]
    )


@dataclass(frozen=True)
class Scores:
    mode: str
    questions: int
    recall: Mapping[int, float]
    mrr10: float
    rule: Rule = "section"
    #: Per question, the rank of the first hit within the top 10 (None: no hit).
    ranks: tuple[int | None, ...] = ()

    def as_metadata(self) -> dict[str, float]:
        prefix = self.mode if self.rule == "section" else f"{self.mode}/{self.rule}"
        out = {f"{prefix}/recall@{k}": round(v, 4) for k, v in self.recall.items()}
        out[f"{prefix}/mrr@10"] = round(self.mrr10, 4)
        return out

    def subset(self, keep: Sequence[int], mode: str | None = None) -> Scores:
        """The scores of the questions at positions ``keep`` only."""
        return _scores(mode or self.mode, self.rule, [self.ranks[i] for i in keep])

    def per_question(self, metric: str) -> np.ndarray:
        """Each question's value of ``metric`` (``mrr@10`` or ``recall@K``), for pairing."""
        if metric == "mrr@10":
            return np.array([1.0 / r if r else 0.0 for r in self.ranks])
        k = int(metric.removeprefix("recall@"))
        return np.array([1.0 if r is not None and r <= k else 0.0 for r in self.ranks])


def pooled(parts: Sequence[Scores]) -> Scores:
    """The scores of several question sets scored under one rule, as one set: every question
    weighs the same, whichever set it came from."""
    if not parts or len({(s.mode, s.rule) for s in parts}) != 1:
        raise ValueError("pooled: scores of one mode and rule are needed")
    return _scores(parts[0].mode, parts[0].rule, [r for s in parts for r in s.ranks])


def _scores(mode: str, rule: Rule, ranks: list[int | None]) -> Scores:
    n = len(ranks)
    recall = {k: sum(1 for r in ranks if r is not None and r <= k) / n for k in KS}
    mrr = sum(1.0 / r for r in ranks if r is not None) / n
    return Scores(mode, n, recall, mrr, rule, tuple(ranks))


def score_rules(
    mode: str,
    questions: Sequence[Question],
    spans: Mapping[Rule, Mapping[int, tuple[int, int]]],
    retrieve: Callable[[str, int], Sequence[Located]],
) -> list[Scores]:
    """Recall@k and MRR@10 of ``retrieve`` under each rule of ``spans``, asking each question
    once."""
    depth = max(KS)
    ranks: dict[Rule, list[int | None]] = {rule: [] for rule in spans}
    for i, q in enumerate(questions):
        results = retrieve(q.query, depth)[:depth]
        for rule, by_question in spans.items():
            ranks[rule].append(
                next(
                    (r for r, h in enumerate(results, start=1) if is_hit(h, q, by_question[i])),
                    None,
                )
            )
    return [_scores(mode, rule, ranks[rule]) for rule in spans]


def score(
    mode: str,
    questions: Sequence[Question],
    spans: Mapping[int, tuple[int, int]],
    retrieve: Callable[[str, int], Sequence[Located]],
    rule: Rule = "section",
) -> Scores:
    """Recall@k (a hit in the top k) and MRR@10 of ``retrieve`` over the questions."""
    return score_rules(mode, questions, {rule: spans}, retrieve)[0]


def table(scores: Sequence[Scores]) -> str:
    """A Markdown table of the scores."""
    lines = [
        "| run | hit rule | questions | recall@1 | recall@5 | recall@10 | MRR@10 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for s in scores:
        lines.append(
            f"| {s.mode} | {s.rule} | {s.questions} | {s.recall[1]:.3f} | {s.recall[5]:.3f} | "
            f"{s.recall[10]:.3f} | {s.mrr10:.3f} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Comparison:
    """``ours`` minus ``baseline`` on one metric, paired by question."""

    run: str
    rule: Rule
    metric: str
    ours: float
    baseline: float
    difference: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return "ours better"
        if self.high < 0:
            return "baseline better"
        return "no clear difference"


def paired_bootstrap(
    ours: Scores,
    baseline: Scores,
    metric: str = "mrr@10",
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """The mean per-question difference of ``metric`` and its percentile interval over
    ``resamples`` resamplings of the questions (with replacement), the same questions for
    both runs each time. Seeded, so a report is reproducible."""
    if ours.questions != baseline.questions or len(ours.ranks) != len(baseline.ranks):
        raise ValueError("paired comparison needs both runs on the same questions")
    diffs = ours.per_question(metric) - baseline.per_question(metric)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    means = diffs[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Comparison(
        ours.mode,
        ours.rule,
        metric,
        float(ours.per_question(metric).mean()),
        float(baseline.per_question(metric).mean()),
        float(diffs.mean()),
        float(low),
        float(high),
    )


def comparison_table(comparisons: Sequence[Comparison]) -> str:
    """A Markdown table of paired comparisons (95% interval of the difference)."""
    lines = [
        "| run | hit rule | metric | ours | baseline | difference | 95% interval | verdict |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for c in comparisons:
        lines.append(
            f"| {c.run} | {c.rule} | {c.metric} | {c.ours:.3f} | {c.baseline:.3f} | "
            f"{c.difference:+.3f} | [{c.low:+.3f}, {c.high:+.3f}] | {c.verdict} |"
        )
    return "\n".join(lines)


_BREAKS = ("\n\n", "\n", " ")


def fixed_size_spans(text: str, size: int = BASELINE_CHARS) -> list[tuple[int, int]]:
    """The naive baseline's chunks: consecutive spans of at most ``size`` characters covering
    ``text``, each cut at the last paragraph break in the window, else line break, else space
    (else at ``size``), whitespace at their ends left out. No headings, no structure."""
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        while start < n and text[start].isspace():
            start += 1
        if start >= n:
            break
        end = min(n, start + size)
        if end < n:
            for brk in _BREAKS:
                cut = text.rfind(brk, start + 1, end + len(brk) - 1)
                if cut > start:
                    end = cut
                    break
        stop = end
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        spans.append((start, stop))
        start = end
    return spans
