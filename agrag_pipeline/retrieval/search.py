"""Asking the index a question: dense, BM25 or hybrid search, as plain Python.

Hybrid is reciprocal rank fusion (RRF, k=60) of the dense and BM25 rankings, each taken
``HYBRID_DEPTH`` deep: it needs no score calibration between a cosine similarity and a BM25
score, and it is what LanceDB's own default hybrid reranker does too (measured against it in
BENCHMARKS.md). Where the index holds BM25 context (``index.bm25_context_chars`` above 0), a
third ranking joins them: BM25 over each chunk with its section's neighbouring text, which
finds a chunk by the words of the paragraph beside it while BM25 over the chunk alone keeps
the chunk that holds the words first (BENCHMARKS.md, "BM25 context"). The query is embedded as
it is, with the same model as the chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agrag_pipeline.sinks.index import RawHit, SearchIndex

if TYPE_CHECKING:
    from agrag_pipeline.embedding.base import Embedder

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[Mode, ...] = ("dense", "bm25", "hybrid")
#: RRF's constant: ranks below ~60 weigh about alike, so one ranking cannot drown the other.
RRF_K = 60
#: How deep each ranking is read before fusing.
HYBRID_DEPTH = 50
SNIPPET_CHARS = 240


@dataclass(frozen=True)
class Hit:
    """One search result: which chunk, where it is, how well it scored, and a snippet."""

    chunk_id: str
    source_key: str
    heading_path: list[str]
    pages: list[int]
    score: float
    snippet: str
    document_id: str
    index: int
    char_start: int
    char_end: int


def search(
    index: SearchIndex,
    query: str,
    *,
    k: int = 10,
    mode: Mode = "hybrid",
    embedder: Embedder | None = None,
) -> list[Hit]:
    """The ``k`` best chunks for ``query``; ``embedder`` is needed for dense and hybrid."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}: use one of {', '.join(MODES)}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if mode == "bm25":
        return [to_hit(h, query) for h in index.bm25(query, k)]
    if embedder is None:
        raise ValueError(f"{mode} search needs the embedding model the chunks were embedded with")
    vector = embedder.embed([query])[0]
    if mode == "dense":
        return [to_hit(h, query) for h in index.dense(vector, k)]
    depth = max(k, HYBRID_DEPTH)
    rankings = [index.dense(vector, depth), index.bm25(query, depth)]
    if index.context_chars() > 0:
        rankings.append(index.bm25(query, depth, context=True))
    fused = rrf(rankings)
    return [to_hit(h, query) for h in fused[:k]]


def retriever(
    index: SearchIndex, mode: Mode, embedder: Embedder | None
) -> Callable[[str, int], list[Hit]]:
    """``search`` with the index, mode and model fixed: ``(query, k) -> hits``."""

    def run(query: str, k: int) -> list[Hit]:
        return search(index, query, k=k, mode=mode, embedder=embedder)

    return run


def rrf(rankings: Sequence[Sequence[RawHit]], k: int = RRF_K) -> list[RawHit]:
    """Reciprocal rank fusion: score = sum over rankings of 1 / (k + rank), rank from 1."""
    scores: dict[str, float] = {}
    rows: dict[str, RawHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            cid = hit.row["chunk_id"]
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
            rows.setdefault(cid, hit)
    ordered = sorted(scores, key=lambda c: (-scores[c], c))
    return [RawHit(rows[c].row, scores[c]) for c in ordered]


def to_hit(raw: RawHit, query: str) -> Hit:
    r = raw.row
    return Hit(
        chunk_id=r["chunk_id"],
        source_key=r.get("source_key") or "",
        heading_path=list(r.get("heading_path") or []),
        pages=list(r.get("pages") or []),
        score=round(raw.score, 6),
        snippet=snippet(r.get("text") or "", query),
        document_id=r["document_id"],
        index=int(r["index"]),
        char_start=int(r["char_start"]),
        char_end=int(r["char_end"]),
    )


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around the first query word found in it."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    words = sorted((w for w in query.lower().split() if len(w) > 3), key=len, reverse=True)
    at = next((i for i in (lower.find(w) for w in words) if i >= 0), 0)
    start = max(0, min(at - width // 3, len(flat) - width))
    cut = flat[start : start + width]
    return ("…" if start else "") + cut + ("…" if start + width < len(flat) else "")
