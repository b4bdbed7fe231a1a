"""What a run reports about a document: previews and statistics, as plain Python values.

The Dagster layer wraps these into metadata values; the CLI prints them. Kept here so the shell
holds no formatting logic and the same summary reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from agrag_pipeline.models import Chunk

PREVIEW_CHUNKS = 3
PREVIEW_CHARS = 240


def chunk_preview_markdown(chunks: Sequence[Chunk], limit: int = PREVIEW_CHUNKS) -> str:
    """A Markdown table of the first chunks: index, kind, heading path, tokens, text start."""
    lines = ["| # | kind | heading path | tokens | text |", "|---|---|---|---|---|"]
    for chunk in chunks[:limit]:
        text = " ".join(chunk.text.split())
        if len(text) > PREVIEW_CHARS:
            text = text[: PREVIEW_CHARS - 1] + "…"
        lines.append(
            "| {} | {} | {} | {} | {} |".format(
                chunk.index,
                chunk.content_kind,
                _cell(chunk.section_label() or ""),
                chunk.metadata.get("token_count", ""),
                _cell(text),
            )
        )
    if len(chunks) > limit:
        lines.append(f"\n…and {len(chunks) - limit} more chunks.")
    return "\n".join(lines)


def column_schema(schema: pa.Schema) -> list[tuple[str, str]]:
    """(name, Arrow type) for each column, for a column-schema display."""
    return [(f.name, str(f.type)) for f in schema]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
