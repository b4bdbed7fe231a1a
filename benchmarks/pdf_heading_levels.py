"""PDF heading levels from typography, scored against the PDF's own outline.

    .venv/bin/python -m benchmarks.pdf_heading_levels FILE.pdf ... [--json OUT]

A PDF without an outline (bookmarks) gets its heading levels from typography alone. A PDF
with one is the reference to measure that: each file is read twice, as shipped (headings and
levels from the outline) and with its outline hidden (typography alone), and the typographic
headings that sit on an outline heading's line are compared with it. Per file: the outline's
headings, the typographic ones, those matched, and **nesting**: of the matched headings, how
many have the same parent in both readings (the nearest matched heading before it at a lower
level, or none). Nesting is what a chunk's heading path is made of; the level numbers
themselves may differ by a constant (a title page counted or not).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from agrag_pipeline.models import Section
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing import pdf as pdf_parser

_WORD = re.compile(r"\w+")


def headings(path: Path, *, outline: bool) -> list[Section]:
    """The document's heading sections, in order: from its outline, or typography alone."""
    if outline:
        parsed = parse_document(path.read_bytes(), path.name)
    else:
        with mock.patch.object(pdf_parser, "_outline", return_value=[]):
            parsed = parse_document(path.read_bytes(), path.name)
    return [s for s in parsed.sections if s.heading]


def _tail(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower())[-2:])


def matched(reference: Sequence[Section], found: Sequence[Section]) -> list[tuple[int, int]]:
    """Pairs (reference index, found index) in order: the same first page, and the found
    heading ends with the reference's last two words (a chapter's ``CHAPTER ONE QUICKSTART``
    is the outline's ``QUICKSTART``)."""
    pairs: list[tuple[int, int]] = []
    start = 0
    for i, ref in enumerate(reference):
        tail = _tail(ref.heading or "")
        for j in range(start, len(found)):
            candidate = found[j]
            if candidate.pages[:1] == ref.pages[:1] and _tail(candidate.heading or "") == tail:
                pairs.append((i, j))
                start = j + 1
                break
    return pairs


def parents(levels: Sequence[int]) -> list[int | None]:
    """Each heading's parent (the index of the nearest before it at a lower level), or None."""
    out: list[int | None] = []
    stack: list[int] = []
    for k, level in enumerate(levels):
        while stack and levels[stack[-1]] >= level:
            stack.pop()
        out.append(stack[-1] if stack else None)
        stack.append(k)
    return out


@dataclass(frozen=True)
class FileScore:
    file: str
    outline_headings: int
    typographic_headings: int
    matched: int
    same_parent: int
    levels_used: list[int]


def score(path: Path) -> FileScore | None:
    """The file's figures, or None when it has no outline headings."""
    reference = headings(path, outline=True)
    if not reference:
        return None
    found = headings(path, outline=False)
    pairs = matched(reference, found)
    ref_parents = parents([reference[i].level for i, _ in pairs])
    found_parents = parents([found[j].level for _, j in pairs])
    same = sum(a == b for a, b in zip(ref_parents, found_parents, strict=True))
    return FileScore(
        path.name, len(reference), len(found), len(pairs), same, sorted({s.level for s in found})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    rows = []
    for path in args.files:
        row = score(path)
        if row is None:
            continue
        rows.append(row)
        print(
            f"{row.file[:40]:40} outline {row.outline_headings:4} typography "
            f"{row.typographic_headings:4} matched {row.matched:4} same parent "
            f"{row.same_parent:4}"
        )
    total_matched = sum(r.matched for r in rows)
    total_same = sum(r.same_parent for r in rows)
    print(f"all: {total_same} of {total_matched} matched headings under the same parent")
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))


if __name__ == "__main__":
    main()
