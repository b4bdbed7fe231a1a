"""Retrieval score on labelled questions: recall@1/5/10 and MRR@10 per search mode.

A question names its answer as a source key plus either the heading of the answering section
or a character span ``start:end`` of the document's text layer. A hit is a retrieved chunk of
that document whose character range overlaps the answer: the section's span including its
subsections (so a merged or split chunk counts wherever it holds part of the answer).
Headings are matched on their words only (case, backticks and punctuation aside).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agrag_pipeline.models import Section

KS = (1, 5, 10)
_SPAN = re.compile(r"^\s*(\d+)\s*[:-]\s*(\d+)\s*$")
_WORD = re.compile(r"\w+")


class EvalError(ValueError):
    """A questions file or label that cannot be scored (names the file, line and problem)."""


@dataclass(frozen=True)
class Question:
    query: str
    source_key: str
    #: The answering section's heading, or None when ``span`` is given.
    heading: str | None
    span: tuple[int, int] | None
    line: int = 0


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
        out: list[Question] = []
        for n, row in enumerate(reader, start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3 or not row[0].strip() or not row[1].strip() or not row[2].strip():
                raise EvalError(f"{path}:{n}: expected query, source key and heading or span")
            query, key, answer = row[0].strip(), row[1].strip(), row[2].strip()
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


def answer_spans(
    questions: Iterable[Question], sections_of: Callable[[str], Sequence[Section]]
) -> dict[int, tuple[int, int]]:
    """Each question's answer span (by position), its heading resolved in its document."""
    spans: dict[int, tuple[int, int]] = {}
    for i, q in enumerate(questions):
        if q.span is not None:
            spans[i] = q.span
            continue
        assert q.heading is not None
        found = section_span(sections_of(q.source_key), q.heading)
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

    def as_metadata(self) -> dict[str, float]:
        out = {f"{self.mode}/recall@{k}": round(v, 4) for k, v in self.recall.items()}
        out[f"{self.mode}/mrr@10"] = round(self.mrr10, 4)
        return out


def score(
    mode: str,
    questions: Sequence[Question],
    spans: Mapping[int, tuple[int, int]],
    retrieve: Callable[[str, int], Sequence[Located]],
) -> Scores:
    """Recall@k (a hit in the top k) and MRR@10 of ``retrieve`` over the questions."""
    depth = max(KS)
    hits_at = dict.fromkeys(KS, 0)
    rr = 0.0
    for i, q in enumerate(questions):
        results = retrieve(q.query, depth)
        rank = next(
            (r for r, h in enumerate(results[:depth], start=1) if is_hit(h, q, spans[i])), None
        )
        if rank is not None:
            rr += 1.0 / rank
            for k in KS:
                hits_at[k] += rank <= k
    n = len(questions)
    return Scores(mode, n, {k: hits_at[k] / n for k in KS}, rr / n)


def table(scores: Sequence[Scores]) -> str:
    """A Markdown table of the scores."""
    lines = [
        "| run | questions | recall@1 | recall@5 | recall@10 | MRR@10 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for s in scores:
        lines.append(
            f"| {s.mode} | {s.questions} | {s.recall[1]:.3f} | {s.recall[5]:.3f} | "
            f"{s.recall[10]:.3f} | {s.mrr10:.3f} |"
        )
    return "\n".join(lines)
