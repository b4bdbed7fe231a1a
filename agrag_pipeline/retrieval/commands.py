"""What ``agrag index``, ``agrag search`` and ``agrag eval`` do (``cli.py`` only parses flags)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from agrag_pipeline.models import Document, Section
from agrag_pipeline.retrieval.evaluate import (
    BASELINE_CHARS,
    RULES,
    Comparison,
    EvalError,
    Question,
    Rule,
    Scores,
    answer_spans,
    comparison_table,
    fixed_size_spans,
    load_questions,
    paired_bootstrap,
    score_rules,
    table,
)
from agrag_pipeline.retrieval.search import MODES, Hit, HitProvenance, Mode, retriever, search
from agrag_pipeline.sinks.bm25_context import IndexSettings
from agrag_pipeline.sinks.index import IndexSync, SearchIndex
from agrag_pipeline.sinks.index import sync_index as sync_documents
from agrag_pipeline.storage.tables import sections_from_table

if TYPE_CHECKING:
    from agrag_pipeline.runtime import Runtime


def sync_index(runtime: Runtime) -> IndexSync:
    """Bring the index up to date with every document stored in the warehouse, one document
    at a time, and check it against their tables before and after (``sinks.index``)."""
    from agrag_pipeline.freshness import stored_source_keys

    return sync_documents(
        runtime.warehouse, runtime.search_index, stored_source_keys(runtime.warehouse)
    )


def index_command(runtime: Runtime) -> int:
    done = sync_index(runtime)
    print(
        f"agrag index: {done.documents} documents, {done.rows} chunks in {runtime.search_index.uri}"
    )
    for repair in done.repaired:
        print(f"REPAIRED {repair}")
    for problem in done.problems:
        print(f"SKIPPED {problem}")
    return 0 if done.documents or not done.problems else 1


#: How many other files a result's copies are named by, before "and N more".
COPIES_NAMED = 3


def search_command(
    runtime: Runtime,
    query: str,
    k: int,
    mode: Mode,
    copies: bool = False,
    as_json: bool = False,
) -> int:
    index = runtime.search_index
    if index.count() == 0:
        print(f"the index at {index.uri} is empty: run `agrag core` then `agrag index`")
        return 1
    embedder = runtime.embedder if mode != "bm25" else None
    hits = search(index, query, k=k, mode=mode, embedder=embedder, copies=copies)
    if as_json:
        provenance = HitProvenance(runtime.warehouse)
        for rank, h in enumerate(hits, start=1):
            print(json.dumps(_json_hit(rank, h, provenance(h)), ensure_ascii=False))
        return 0
    for rank, h in enumerate(hits, start=1):
        where = " > ".join(h.heading_path) or "(no heading)"
        pages = f" p.{','.join(map(str, h.pages))}" if h.pages else ""
        print(f"{rank:>2}. {h.score:.4f}  {h.source_key}{pages}  [{where}]  {h.chunk_id}")
        print(f"    {h.snippet}")
        if h.copies:
            print(f"    {_copies_line(h)}")
    if not hits:
        print("no results")
    return 0


def _json_hit(rank: int, hit: Hit, provenance: dict[str, str | None] | None) -> dict[str, Any]:
    """One result as ``agrag search --json`` writes it (a line each)."""
    return {
        "rank": rank,
        "score": hit.score,
        "chunk_id": hit.chunk_id,
        "document_id": hit.document_id,
        "source_key": hit.source_key,
        "heading_path": hit.heading_path,
        "pages": hit.pages,
        "char_start": hit.char_start,
        "char_end": hit.char_end,
        "text": hit.text,
        "copies": [{"source_key": c.source_key, "chunk_id": c.chunk_id} for c in hit.copies],
        "provenance": provenance,
    }


def _copies_line(hit: Hit) -> str:
    """The line under a result that names where else its text is: "same text also in: a.eml,
    b.eml and 2 more; 2 more times in this file"."""
    others = list(dict.fromkeys(c.source_key for c in hit.copies if c.source_key != hit.source_key))
    own = sum(1 for c in hit.copies if c.source_key == hit.source_key)
    parts = []
    if others:
        named = ", ".join(others[:COPIES_NAMED])
        more = len(others) - COPIES_NAMED
        parts.append(f"also in: {named}" + (f" and {more} more" if more > 0 else ""))
    if own:
        parts.append(f"{own} more time{'s' if own > 1 else ''} in this file")
    return "same text " + "; ".join(parts)


def _labelled(
    runtime: Runtime, questions_path: str | Path
) -> tuple[list[Question], dict[Rule, dict[int, tuple[int, int]]]]:
    """The questions and their answer spans under each hit rule."""
    warehouse = runtime.warehouse
    questions = load_questions(questions_path)

    @cache
    def sections_of(key: str) -> list[Section]:
        document_id = Document.node_id_for(key)
        if not warehouse.has_table("sections", document_id):
            raise EvalError(f"{questions_path}: {key} is not in the warehouse")
        return sections_from_table(warehouse.read_table("sections", document_id))

    @cache
    def text_of(key: str) -> str:
        from agrag_pipeline.pipeline import current_document, load_parsed

        sections_of(key)  # a document not in the warehouse is named as such
        return load_parsed(warehouse, current_document(warehouse, key)).text_layer

    return questions, {rule: answer_spans(questions, sections_of, rule, text_of) for rule in RULES}


def evaluate_index(
    runtime: Runtime, questions_path: str | Path, modes: Sequence[Mode] = MODES
) -> list[Scores]:
    """Recall@1/5/10 and MRR@10 of each mode under each hit rule on the questions, over the
    current index."""
    questions, spans = _labelled(runtime, questions_path)
    index = runtime.search_index
    embedder = runtime.embedder if any(m != "bm25" for m in modes) else None
    return [
        s
        for mode in modes
        for s in score_rules(mode, questions, spans, retriever(index, mode, embedder))
    ]


@dataclass(frozen=True)
class BaselineReport:
    """Ours against the fixed-size baseline over the same documents, model and questions."""

    ours: list[Scores]
    baseline: list[Scores]
    comparisons: list[Comparison]
    documents: int
    baseline_chunks: int


def build_baseline_index(runtime: Runtime, folder: Path) -> tuple[SearchIndex, int, int]:
    """An index of every stored document's text layer cut by ``fixed_size_spans`` (no
    headings, no structure), embedded with the same model as ours (through the embedding
    cache), in ``folder``: (index, documents, chunks). No BM25 context: a plain splitter's
    hybrid search is dense and BM25 over its text."""
    from agrag_pipeline.embedding.cache import embed_with_cache
    from agrag_pipeline.freshness import stored_source_keys
    from agrag_pipeline.pipeline import current_document, load_parsed

    warehouse = runtime.warehouse
    index = SearchIndex(str(folder), settings=IndexSettings(bm25_context_chars=0))
    documents = chunks = 0
    for key, document_id in sorted(stored_source_keys(warehouse).items()):
        if not warehouse.has_table("sections", document_id):
            continue  # failed or not parsed yet: not in our index either
        text = load_parsed(warehouse, current_document(warehouse, key)).text_layer
        spans = fixed_size_spans(text)
        if not spans:
            continue
        texts = [text[a:b] for a, b in spans]
        vectors, _ = embed_with_cache(runtime.embedder, texts, runtime.embedding_cache)
        flat = np.ascontiguousarray(vectors, dtype=np.float32)
        rows = pa.table(
            {
                "chunk_id": [
                    f"{document_id}:fixed-{BASELINE_CHARS}:{i}" for i in range(len(spans))
                ],
                "document_id": [str(document_id)] * len(spans),
                "source_key": [key] * len(spans),
                "index": list(range(len(spans))),
                "heading_path": [[] for _ in spans],
                "pages": [[] for _ in spans],
                "char_start": [a for a, _ in spans],
                "char_end": [b for _, b in spans],
                "text": texts,
                "contextual_text": texts,
                "bm25_context_text": texts,  # the baseline's BM25 reads its own text only
            }
        ).append_column(
            "vector",
            pa.FixedSizeListArray.from_arrays(
                pa.array(flat.reshape(-1), pa.float32()), flat.shape[1]
            ),
        )
        index.upsert_document(str(document_id), rows)
        documents += 1
        chunks += len(spans)
    index.ensure_fts_index()
    return index, documents, chunks


def compare_with_baseline(
    runtime: Runtime, questions_path: str | Path, modes: Sequence[Mode] = MODES
) -> BaselineReport:
    """Each mode of our index and of the fixed-size baseline under both hit rules, and the
    paired bootstrap of MRR@10 and recall@5 (ours minus baseline) per mode and rule."""
    questions, spans = _labelled(runtime, questions_path)
    embedder = runtime.embedder if any(m != "bm25" for m in modes) else None
    ours = [
        s
        for mode in modes
        for s in score_rules(
            mode, questions, spans, retriever(runtime.search_index, mode, embedder)
        )
    ]
    with tempfile.TemporaryDirectory(prefix="agrag-baseline-") as tmp:
        index, documents, chunks = build_baseline_index(runtime, Path(tmp))
        baseline = [
            s
            for mode in modes
            for s in score_rules(
                f"fixed-{BASELINE_CHARS} {mode}", questions, spans, retriever(index, mode, embedder)
            )
        ]
    comparisons = [
        paired_bootstrap(a, b, metric)
        for a, b in zip(ours, baseline, strict=True)
        for metric in ("mrr@10", "recall@5")
    ]
    return BaselineReport(ours, baseline, comparisons, documents, chunks)


def eval_command(runtime: Runtime, questions_path: str, baseline: bool = True) -> int:
    if runtime.search_index.count() == 0:
        print("the index is empty: run `agrag core` then `agrag index`")
        return 1
    try:
        if not baseline:
            print(table(evaluate_index(runtime, questions_path)))
            return 0
        report = compare_with_baseline(runtime, questions_path)
    except EvalError as exc:
        print(f"agrag eval: {exc}")
        return 1
    print(table(report.ours + report.baseline))
    print()
    print(
        f"Ours against a fixed-size baseline ({BASELINE_CHARS:,}-character chunks of the same "
        f"{report.documents} documents, {report.baseline_chunks} chunks, same model), paired "
        "by question; 95% bootstrap interval of the difference:"
    )
    print(comparison_table(report.comparisons))
    return 0
