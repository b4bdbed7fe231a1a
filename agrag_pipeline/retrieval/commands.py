"""What ``agrag index``, ``agrag search`` and ``agrag eval`` do (``cli.py`` only parses flags)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from agrag_pipeline.models import Document, Section
from agrag_pipeline.retrieval.evaluate import (
    EvalError,
    Scores,
    answer_spans,
    load_questions,
    score,
    table,
)
from agrag_pipeline.retrieval.search import MODES, Mode, retriever, search
from agrag_pipeline.sinks.index import IndexSync
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


def search_command(runtime: Runtime, query: str, k: int, mode: Mode) -> int:
    index = runtime.search_index
    if index.count() == 0:
        print(f"the index at {index.uri} is empty: run `agrag core` then `agrag index`")
        return 1
    embedder = runtime.embedder if mode != "bm25" else None
    hits = search(index, query, k=k, mode=mode, embedder=embedder)
    for rank, h in enumerate(hits, start=1):
        where = " > ".join(h.heading_path) or "(no heading)"
        pages = f" p.{','.join(map(str, h.pages))}" if h.pages else ""
        print(f"{rank:>2}. {h.score:.4f}  {h.source_key}{pages}  [{where}]  {h.chunk_id}")
        print(f"    {h.snippet}")
    if not hits:
        print("no results")
    return 0


def evaluate_index(
    runtime: Runtime, questions_path: str | Path, modes: Sequence[Mode] = MODES
) -> list[Scores]:
    """Recall@1/5/10 and MRR@10 of each mode on the questions, over the current index."""
    warehouse = runtime.warehouse
    questions = load_questions(questions_path)

    @cache
    def sections_of(key: str) -> list[Section]:
        document_id = Document.node_id_for(key)
        if not warehouse.has_table("sections", document_id):
            raise EvalError(f"{questions_path}: {key} is not in the warehouse")
        return sections_from_table(warehouse.read_table("sections", document_id))

    spans = answer_spans(questions, sections_of)
    index = runtime.search_index
    embedder = runtime.embedder if any(m != "bm25" for m in modes) else None
    return [score(mode, questions, spans, retriever(index, mode, embedder)) for mode in modes]


def eval_command(runtime: Runtime, questions_path: str) -> int:
    if runtime.search_index.count() == 0:
        print("the index is empty: run `agrag core` then `agrag index`")
        return 1
    try:
        results = evaluate_index(runtime, questions_path)
    except EvalError as exc:
        print(f"agrag eval: {exc}")
        return 1
    print(table(results))
    return 0
