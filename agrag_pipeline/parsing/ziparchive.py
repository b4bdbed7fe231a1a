"""A ``.zip`` archive as a document: its table of contents. Its members are documents of their
own (``agrag_pipeline.derived``), so the archive's own text is the listing a user would see
(``unzip -l``): which files it holds, under which paths, of what size, so a search for a file's
name finds the archive that holds it.

The archive is opened through ``archive.open_zip`` (the bomb checks: member count, declared
sizes, ratios, overlapping members), and no member is read here.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from agrag_pipeline.derived_keys import is_hidden_member, member_problem
from agrag_pipeline.models import Document
from agrag_pipeline.parsing.archive import member_problem as unpack_problem
from agrag_pipeline.parsing.archive import open_zip
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import build_sections, listing_marks

MEDIA_TYPE = "application/zip"


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The archive's listing: a heading naming it, then one line per member."""
    deadline = current_deadline(document.source_key)
    lines: list[str] = []
    with open_zip(raw, document.source_key, members_may_fail=True) as archive:
        for info in archive.infolist():
            deadline.tick(f"ZIP member {len(lines):,}")
            problem = member_problem(info.filename)
            if info.is_dir() or (problem is None and is_hidden_member(info.filename)):
                continue
            line = f"{info.filename} ({info.file_size:,} bytes)"
            if problem is None and unpack_problem(info) is not None:
                problem = f"it {unpack_problem(info)}"
            if problem is not None:
                line += f": not read, {problem}"
            lines.append(line)
    document.metadata["archive.members"] = str(len(lines))
    title = f"Archive {PurePosixPath(document.source_key).name}"
    text, headings, tables = listing_marks(title, lines)
    sections = build_sections(text, document, headings, tables)
    return ParsedDocument(document=document, text_layer=text, sections=sections)


__all__ = ["MEDIA_TYPE", "parse"]
