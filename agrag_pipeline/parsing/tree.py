"""Building the section tree from heading and table marks found by a format parser.

Every format parser reduces a document to a text layer plus, in reading order, *heading marks*
(span of the heading line, level, plain heading text) and *table marks* (span of the table, its
header row and body rows). This module turns them into ``Section`` rows, so the conventions are
the same for every format:

- A heading opens a section: its span starts at the heading line and runs up to the next
  heading or table (trailing whitespace trimmed). Its parent is the nearest earlier heading of a
  lower level; ``heading_path`` runs from the outermost heading to its own.
- Text before the first heading is a level-0 section with no heading and an empty path.
- A table is a ``kind="table"`` section, child of the heading it sits under (root when none),
  with that heading's ``heading_path`` and level, and ``heading=None``.
- Text *after* a table, still under the same heading, is a *continuation* section: ``kind="text"``,
  ``heading=None``, the heading's path and level, child of that heading. So a heading's own
  section is its heading line plus the text up to its first table (or sub-heading).
- Section spans are trimmed of surrounding whitespace (a heading section keeps its heading line
  start), ascending, non-overlapping, and together cover every non-whitespace character.
- ``tree_position`` (the id input) is the dotted path of child indices: root children are
  ``"0"``, ``"1"``, …; the children of ``"2"`` are ``"2.0"``, ``"2.1"``, …
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from agrag_pipeline.models import CharSpan, Document, PageBox, Section
from agrag_pipeline.models.base import utc_now
from agrag_pipeline.models.document import PROJECT_NAMESPACE
from agrag_pipeline.parsing.trusted import Uuid5Series, unvalidated

#: The fields ``_Builder.add`` gives a section (as ``Section(...)`` was given them).
_SECTION_GIVEN = frozenset(Section.model_fields) - {"created_at", "metadata"}

#: Given a span of the text layer, its pages and boxes (``ParsedDocument.locate``).
Locator = Callable[[int, int], tuple[list[int], list[PageBox]]]


@dataclass(frozen=True)
class HeadingMark:
    start: int
    end: int
    level: int
    text: str


#: The deepest section level (``Section.level``); deeper heading marks are read as this level.
MAX_HEADING_LEVEL = 6


@dataclass(frozen=True)
class TableMark:
    start: int
    end: int
    header: tuple[int, int] | None
    rows: tuple[tuple[int, int], ...]


@dataclass
class _Node:
    position: str
    level: int
    path: list[str]
    id: UUID | None
    parent_id: UUID | None = None
    children: int = 0

    def next_child_position(self) -> str:
        index = self.children
        self.children += 1
        return str(index) if not self.position else f"{self.position}.{index}"


@dataclass
class _Builder:
    text: str
    document: Document
    locate: Locator | None
    #: ``Section.node_id_for(document.id, document.content_hash, position)`` by position.
    section_id: Callable[[str], UUID]
    sections: list[Section] = field(default_factory=list)
    #: One creation time per document: a section's rows differ between runs only there.
    created_at: datetime = field(default_factory=utc_now)

    def add(
        self,
        position: str,
        start: int,
        end: int,
        *,
        level: int,
        path: list[str],
        parent: UUID | None,
        heading: str | None = None,
        table: TableMark | None = None,
        section_id: UUID | None = None,
    ) -> UUID:
        assert self.document.id is not None
        if section_id is None:
            section_id = self.section_id(position)
        pages: list[int] = []
        boxes: list[PageBox] = []
        if self.locate is not None:
            pages, boxes = self.locate(start, end)
        # Values computed here from validated parts: built without re-validation (see
        # ``trusted.unvalidated``; the tests validate every section of the corpus).
        values = {
            "id": section_id,
            "created_at": self.created_at,
            "metadata": {},
            "document_id": self.document.id,
            "content_hash": self.document.content_hash,
            "ordinal": len(self.sections),
            "heading": heading,
            "level": level,
            "heading_path": list(path),
            "kind": "table" if table else "text",
            "parent_id": parent,
            "start": start,
            "end": end,
            "table_header": CharSpan(start=table.header[0], end=table.header[1])
            if table and table.header
            else None,
            "table_rows": [CharSpan(start=s, end=e) for s, e in table.rows] if table else [],
            "pages": pages,
            "boxes": boxes,
        }
        self.sections.append(unvalidated(Section, values, _SECTION_GIVEN))
        return section_id


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without leading and trailing whitespace (empty: ``(start, start)``)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def listing_marks(
    title: str, lines: Iterable[str]
) -> tuple[str, list[HeadingMark], list[TableMark]]:
    """A table of contents' text and marks (a zip's, a tar's, a mailbox's): ``title`` as its
    level-1 heading, a blank line, then one line per entry, the lines one table of one-cell
    rows."""
    parts = [title, "\n\n"]
    pos = len(title) + 2
    rows: list[tuple[int, int]] = []
    for line in lines:
        rows.append((pos, pos + len(line)))
        parts += [line, "\n"]
        pos += len(line) + 1
    tables = [TableMark(rows[0][0], rows[-1][1], None, tuple(rows))] if rows else []
    return "".join(parts), [HeadingMark(0, len(title), 1, title)], tables


def build_sections(
    text: str,
    document: Document,
    headings: Sequence[HeadingMark],
    tables: Sequence[TableMark],
    locate: Locator | None = None,
) -> list[Section]:
    """Sections of ``text`` from heading and table marks (each list ascending, none overlapping)."""
    assert document.id is not None
    section_id = Uuid5Series(PROJECT_NAMESPACE, f"section:{document.id}:{document.content_hash}:")
    builder = _Builder(text, document, locate, section_id)
    root = _Node(position="", level=0, path=[], id=None)
    stack: list[_Node] = [root]
    owner = root  # the heading whose content we are in
    marks: list[HeadingMark | TableMark] = sorted([*headings, *tables], key=lambda m: m.start)

    pending: HeadingMark | None = None  # heading whose own section is still open
    pending_node: _Node | None = None
    pos = 0

    def flush_text(end: int) -> None:
        nonlocal pending, pending_node
        if pending is not None and pending_node is not None:
            _, own_end = trim(text, pending.start, max(end, pending.end))
            builder.add(
                pending_node.position,
                pending.start,
                max(own_end, pending.start),
                level=pending.level,
                path=pending_node.path,
                parent=pending_node.parent_id,
                heading=pending.text,
                section_id=pending_node.id,
            )
            pending, pending_node = None, None
            return
        start, stop = trim(text, pos, end)
        if stop > start:
            builder.add(
                owner.next_child_position(),
                start,
                stop,
                level=owner.level,
                path=owner.path,
                parent=owner.id,
            )

    for mark in marks:
        if mark.start < pos:  # overlapping mark: a parser bug; never emit overlapping spans
            continue
        flush_text(mark.start)
        if isinstance(mark, HeadingMark):
            if not 1 <= mark.level <= MAX_HEADING_LEVEL:
                # Word has nine heading levels (and a title above them): the deepest nest as
                # level 6, the model's deepest, instead of failing the document.
                mark = HeadingMark(
                    mark.start, mark.end, min(max(mark.level, 1), MAX_HEADING_LEVEL), mark.text
                )
            while len(stack) > 1 and stack[-1].level >= mark.level:
                stack.pop()
            parent = stack[-1]
            position = parent.next_child_position()
            node = _Node(
                position=position,
                level=mark.level,
                path=[*parent.path, mark.text],
                id=section_id(position),
                parent_id=parent.id,
            )
            stack.append(node)
            owner = node
            pending, pending_node = mark, node
            pos = mark.start
        else:
            mark = _trimmed_table(text, mark)
            start, stop = mark.start, mark.end
            if stop <= start:
                continue
            builder.add(
                owner.next_child_position(),
                start,
                stop,
                level=owner.level,
                path=owner.path,
                parent=owner.id,
                table=mark,
            )
            pos = mark.end
    flush_text(len(text))
    return builder.sections


def _trimmed_table(text: str, mark: TableMark) -> TableMark:
    """The table with its span, header and rows trimmed (a row may end in an empty cell)."""
    start, end = trim(text, mark.start, mark.end)
    header = trim(text, *mark.header) if mark.header else None
    rows = tuple(r for r in (trim(text, a, b) for a, b in mark.rows) if r[1] > r[0])
    return TableMark(start, end, header if header and header[1] > header[0] else None, rows)
