"""Checks of the ``ParsedDocument`` contract, for tests and for per-document asset checks."""

from __future__ import annotations

from pydantic import ValidationError

from agrag_pipeline.models import Section
from agrag_pipeline.parsing.parsed import ParsedDocument


def contract_violations(parsed: ParsedDocument) -> list[str]:
    """What in ``parsed`` breaks the contract of ``parsed.py`` (empty when all holds).

    Every section is a valid ``Section`` row (parsers build them without re-validation, see
    ``trusted.unvalidated``); spans lie in the text layer, ascend without overlapping and cover
    every non-whitespace character; a table's header and rows lie inside its span in order;
    parents come before their children; paged documents give every section pages and boxes.
    """
    text = parsed.text_layer
    problems: list[str] = []
    covered = 0
    seen: set[object] = set()
    for index, section in enumerate(parsed.sections):
        name = f"section {index} [{section.start}:{section.end}]"
        invalid = _invalid_row(section)
        if invalid:
            problems.append(f"{name}: {invalid}")
        if not 0 <= section.start <= section.end <= len(text):
            problems.append(f"{name}: outside the text layer of {len(text)} chars")
            continue
        if section.start < covered:
            problems.append(f"{name}: overlaps the section before (ends at {covered})")
        gap = text[covered : section.start]
        if gap.strip():
            problems.append(f"{name}: text before it is in no section: {gap.strip()[:40]!r}")
        covered = max(covered, section.end)
        if section.parent_id is not None and section.parent_id not in seen:
            problems.append(f"{name}: parent {section.parent_id} is not an earlier section")
        seen.add(section.id)
        if section.heading is not None and section.heading_path[-1:] != [section.heading]:
            problems.append(f"{name}: heading {section.heading!r} ends no heading path")
        if section.kind == "table":
            spans = ([section.table_header] if section.table_header else []) + list(
                section.table_rows
            )
            if not spans:
                problems.append(f"{name}: a table with no header and no rows")
            previous = section.start
            for span in spans:
                if not (previous <= span.start <= span.end <= section.end):
                    problems.append(f"{name}: table row [{span.start}:{span.end}] out of order")
                previous = span.end
        if parsed.paged and not (section.pages and section.boxes):
            problems.append(f"{name}: a paged document's section without pages or boxes")
    tail = text[covered:]
    if tail.strip():
        problems.append(f"text after the last section is in no section: {tail.strip()[:40]!r}")
    return problems


def _invalid_row(section: Section) -> str | None:
    """Why ``section`` is not what validating its fields gives, or None."""
    try:
        validated = Section.model_validate(section.model_dump())
    except ValidationError as exc:
        return f"not a valid Section: {exc.errors()[0]['msg']}"
    return None if validated == section else "differs from its validated copy"
