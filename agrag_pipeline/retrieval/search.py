"""Asking the index a question: dense, BM25 or hybrid search, as plain Python.

Hybrid is reciprocal rank fusion (RRF, k=60) of the dense and BM25 rankings, each taken
``HYBRID_DEPTH`` deep: it needs no score calibration between a cosine similarity and a BM25
score, and it is what LanceDB's own default hybrid reranker does too (measured against it in
BENCHMARKS.md). Where the index holds BM25 context (``index.bm25_context_chars`` above 0), a
third ranking joins them: BM25 over each chunk with its section's neighbouring text, which
finds a chunk by the words of the paragraph beside it while BM25 over the chunk alone keeps
the chunk that holds the words first (BENCHMARKS.md, "BM25 context"). The query is embedded as
it is, with the same model as the chunks.

Copies are folded (``distinct``): a real folder holds the same text many times (a file saved
twice, each reply of a mail thread quoting the messages before it, a policy's two versions), and
ten results that are one passage five times are five results. A hit whose word triples are
nine tenths or more in the better-ranked hits' is listed as a copy (``Hit.copies`` of the one it
shares most with: where else it is), and the next distinct chunk takes its place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from uuid import UUID

from agrag_pipeline.sinks.index import RawHit, SearchIndex

if TYPE_CHECKING:
    import numpy as np

    from agrag_pipeline.embedding.base import Embedder
    from agrag_pipeline.storage import Warehouse

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[Mode, ...] = ("dense", "bm25", "hybrid")
#: RRF's constant: ranks below ~60 weigh about alike, so one ranking cannot drown the other.
RRF_K = 60
#: How deep each ranking is read before fusing.
HYBRID_DEPTH = 50
SNIPPET_CHARS = 240
#: A hit whose word triples are this share or more in the better-ranked hits' adds nothing.
COPY_SHARE = 0.9
#: Fewer words than this is too little to call a copy ("See the table below.").
COPY_MIN_WORDS = 8
#: How many more chunks dense or BM25 search alone reads, so that folding copies still gives k.
COPY_MARGIN = 10
#: The deepest a ranking is read to find k distinct chunks among copies.
MAX_COPY_DEPTH = 1000

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Copy:
    """Where else a hit's text is: another document's chunk, or another place in its own."""

    source_key: str
    chunk_id: str


@dataclass(frozen=True)
class Hit:
    """One search result: which chunk, where it is, how well it scored, a snippet and the
    chunk's text (what a RAG prompt is given) with its document version (``content_hash``);
    ``copies``: the chunks with the same text that ranked below it, folded into it."""

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
    copies: tuple[Copy, ...] = ()
    text: str = ""
    content_hash: str = ""


#: What ``HitProvenance`` gives from the footer of a document's chunks table.
PROVENANCE_KEYS = (
    "content_hash",
    "media_type",
    "parse_version",
    "chunker",
    "chunker_hash",
    "schema_fingerprint",
    "extraction_fingerprint",
)


class HitProvenance:
    """What made a hit's chunk: the document version, parser, chunker, schema, extraction and
    embedding fingerprints, read from the footers of its document's chunks and embeddings
    tables (once per document). None where the warehouse holds another version now (the index
    is behind: ``agrag index``) or none at all. ``HitProvenance(warehouse)(hit)``."""

    def __init__(self, warehouse: Warehouse) -> None:
        self._warehouse = warehouse
        self._footers: dict[str, tuple[dict[str, str] | None, dict[str, str] | None]] = {}

    def __call__(self, hit: Hit) -> dict[str, str | None] | None:
        if hit.document_id not in self._footers:
            document_id = UUID(hit.document_id)
            self._footers[hit.document_id] = (
                self._warehouse.table_metadata("chunks", document_id),
                self._warehouse.table_metadata("embeddings", document_id),
            )
        chunks, embeddings = self._footers[hit.document_id]
        if chunks is None or chunks.get("content_hash") != hit.content_hash:
            return None
        found: dict[str, str | None] = {key: chunks.get(key) for key in PROVENANCE_KEYS}
        embedded = embeddings or {}
        same = embedded.get("content_hash") == hit.content_hash
        found["embedding_fingerprint"] = embedded.get("embedding_fingerprint") if same else None
        return found


def search(
    index: SearchIndex,
    query: str,
    *,
    k: int = 10,
    mode: Mode = "hybrid",
    embedder: Embedder | None = None,
    copies: bool = False,
) -> list[Hit]:
    """The ``k`` best distinct chunks for ``query``, each with its copies folded in (``copies``:
    every chunk, copies as results of their own); ``embedder`` is needed for dense and hybrid.

    Where copies leave fewer than ``k`` distinct chunks in what was read and the rankings had
    more to give (a passage saved a hundred times), they are read again four times deeper, up
    to ``MAX_COPY_DEPTH``."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}: use one of {', '.join(MODES)}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    vector = None
    if mode != "bm25":
        if embedder is None:
            raise ValueError(
                f"{mode} search needs the embedding model the chunks were embedded with"
            )
        vector = embedder.embed([query])[0]
    depth = max(k, HYBRID_DEPTH) if mode == "hybrid" else k if copies else k + COPY_MARGIN
    while True:
        rankings = _rankings(index, query, mode, vector, depth)
        ranked = rankings[0] if len(rankings) == 1 else rrf(rankings)
        if copies:
            return [to_hit(h, query) for h in ranked[:k]]
        found = distinct(ranked, k)
        more = any(len(ranking) >= depth for ranking in rankings)
        if len(found) >= k or not more or depth >= MAX_COPY_DEPTH:
            return [to_hit(h, query, copied) for h, copied in found]
        depth = min(depth * 4, MAX_COPY_DEPTH)


def _rankings(
    index: SearchIndex, query: str, mode: Mode, vector: np.ndarray | None, depth: int
) -> list[list[RawHit]]:
    """The ranking(s) ``mode`` fuses, each ``depth`` deep."""
    if mode == "bm25":
        return [index.bm25(query, depth)]
    assert vector is not None
    if mode == "dense":
        return [index.dense(vector, depth)]
    rankings = [index.dense(vector, depth), index.bm25(query, depth)]
    if index.context_chars() > 0:
        rankings.append(index.bm25(query, depth, context=True))
    return rankings


def retriever(
    index: SearchIndex, mode: Mode, embedder: Embedder | None
) -> Callable[[str, int], list[Hit]]:
    """``search`` with the index, mode and model fixed: ``(query, k) -> hits``."""

    def run(query: str, k: int) -> list[Hit]:
        return search(index, query, k=k, mode=mode, embedder=embedder)

    return run


def distinct(ranked: Sequence[RawHit], k: int) -> list[tuple[RawHit, list[Copy]]]:
    """The first ``k`` hits of ``ranked`` that are no copy of better-ranked ones, each with
    the copies of it found anywhere in ``ranked``.

    A copy: ``COPY_SHARE`` of its word triples (lower case, punctuation and quote marks left
    out, so a reply's ``>`` lines and another wrapping match) are in the hits kept before it,
    together: a quoted message chunked at other places than the message itself is still
    shown already. It is listed under the kept hit it shares most with. Measured one way only:
    a chunk holding a kept one and more besides is no copy (it adds the more).
    """
    kept: list[tuple[RawHit, set[int], list[Copy]]] = []
    shown: set[int] = set()
    for hit in ranked:
        triples = _triples(hit.row.get("text") or "")
        if triples is not None and len(triples & shown) >= COPY_SHARE * len(triples):
            _, _, found = max(kept, key=lambda entry: len(triples & entry[1]))
            found.append(Copy(hit.row.get("source_key") or "", hit.row["chunk_id"]))
        elif len(kept) < k:
            kept.append((hit, triples or set(), []))
            shown |= triples or set()
    return [(hit, found) for hit, _, found in kept]


def _triples(text: str) -> set[int] | None:
    """The hashes of a text's word triples; None for a text too short to call a copy."""
    words = _WORD.findall(text.lower())
    if len(words) < COPY_MIN_WORDS:
        return None
    return {hash((a, b, c)) for a, b, c in zip(words, words[1:], words[2:], strict=False)}


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


def to_hit(raw: RawHit, query: str, copies: Sequence[Copy] = ()) -> Hit:
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
        copies=tuple(copies),
        text=r.get("text") or "",
        content_hash=r.get("content_hash") or "",
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
