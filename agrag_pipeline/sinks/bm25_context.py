"""The second text BM25 reads of a chunk: its embedded text plus a bounded window of its
section's neighbouring text; and the index settings that decide it.

Why: a question often uses the words of the paragraph beside its answer (the function named
one paragraph up, the option a definition line earlier). A 1,000-character split holds that
paragraph; our structure-bounded chunks do not, so BM25 ranked the split higher (BENCHMARKS.md,
"Chunk boundaries"). The established answers add context to what is indexed: LlamaIndex's
sentence window keeps the neighbouring sentences beside each node, Anthropic's contextual BM25
indexes each chunk with text situating it. Here the context is the tail of the previous chunk
and the head of the next, only where they are of the same section (they share a section, or
the heading path), never across a document, at most ``bm25_context_chars`` characters each
side, cut at whitespace. It is a field of its own (``bm25_context_text``), a third ranking of
hybrid search: as the only BM25 field it let a neighbour holding the answer's words in its
context outrank the answer itself (BM25 alone lost 0.13 MRR under the strict rule). The vector
and the text a search returns stay the chunk's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agrag_pipeline.models.chunk import label_for

#: The index column the context BM25 reads (``SearchIndex.bm25(..., context=True)``).
CONTEXT_TEXT = "bm25_context_text"


class IndexSettings(BaseModel):
    """Settings of the search index (``index:`` in the pipeline settings). The index records
    them beside its table; an index made with other settings is rebuilt from the warehouse."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Characters of the previous and of the next chunk of the same section that the context
    #: BM25 reads with a chunk (each side); 0: no context ranking (dense and BM25 only). 600
    #: measured best of 0-1,000 on the Rust book and two manuals, confirmed on two others.
    bm25_context_chars: int = Field(default=600, ge=0, le=4000)


def context_texts(rows: Sequence[Mapping[str, Any]], context_chars: int) -> list[str]:
    """The BM25 text of each row (``document_id``, ``index``, ``heading_path``,
    ``section_ids``, ``contextual_text``), in the rows' order: its ``contextual_text`` with up
    to ``context_chars`` characters of its same-section neighbours' text before and after."""
    if context_chars <= 0:
        return [str(r["contextual_text"]) for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (str(rows[i]["document_id"]), rows[i]["index"]))
    out = [str(r["contextual_text"]) for r in rows]
    for at, i in enumerate(order):
        before = after = ""
        if at > 0 and _same_section(rows[order[at - 1]], rows[i]):
            before = _tail(_body(rows[order[at - 1]]), context_chars)
        if at + 1 < len(order) and _same_section(rows[i], rows[order[at + 1]]):
            after = _head(_body(rows[order[at + 1]]), context_chars)
        out[i] = "\n\n".join(part for part in (before, out[i], after) if part)
    return out


def _same_section(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Neighbours of one document that hold part of the same section, or sit under the same
    headings (a section cut into several chunks)."""
    if a["document_id"] != b["document_id"]:
        return False
    if set(a.get("section_ids") or ()) & set(b.get("section_ids") or ()):
        return True
    return list(a.get("heading_path") or []) == list(b.get("heading_path") or [])


def _body(row: Mapping[str, Any]) -> str:
    """What is embedded of a chunk without its heading path (the chunk's own words)."""
    text = str(row["contextual_text"])
    label = label_for(list(row.get("heading_path") or []))
    if label is not None and text.startswith(label + "\n\n"):
        return text[len(label) + 2 :]
    return text


def _tail(text: str, chars: int) -> str:
    """The last ``chars`` characters of ``text``, without a word cut at the start."""
    if len(text) <= chars:
        return text.strip()
    cut = text[-chars:]
    if not text[-chars - 1].isspace():
        space = next((n for n, c in enumerate(cut) if c.isspace()), None)
        cut = cut[space:] if space is not None else ""
    return cut.strip()


def _head(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, without a word cut at the end."""
    if len(text) <= chars:
        return text.strip()
    cut = text[:chars]
    if not text[chars].isspace():
        space = next((n for n in range(len(cut) - 1, -1, -1) if cut[n].isspace()), None)
        cut = cut[:space] if space is not None else ""
    return cut.strip()
