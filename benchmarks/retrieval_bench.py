"""Retrieval benchmark: our chunks vs a naive 1,000-character split, dense / BM25 / hybrid.

    .venv/bin/python -m benchmarks.retrieval_bench [--questions data/eval/rust-book-questions.tsv]
        [--cache-dir DIR] [--target-tokens N --min-tokens N --overlap-tokens N]
    .venv/bin/python -m benchmarks.retrieval_bench --scale 10000   # index build and latency

Both chunkings of the Rust book are embedded with the same model (all-MiniLM-L6-v2) through the
pipeline's content-addressed cache, so a second run embeds nothing; each goes into its own
LanceDB index and is scored on the labelled questions in the same run. ``--scale N`` builds an
index of N synthetic documents (real Rust book chunk texts, random unit vectors: the vector
values do not change LanceDB's build or search cost) and times the build, per-document updates
and queries.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from agrag_pipeline.chunking.chunker import StructureChunker
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.embedding.base import Embedder
from agrag_pipeline.embedding.cache import EmbeddingCache, embed_with_cache
from agrag_pipeline.models import Document
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.retrieval.evaluate import Scores, answer_spans, load_questions, score, table
from agrag_pipeline.retrieval.search import MODES, Hit, retriever, to_hit
from agrag_pipeline.runtime import PROJECT_ROOT, Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.sinks.bm25_context import IndexSettings, context_texts
from agrag_pipeline.sinks.index import SearchIndex

BOOK = PROJECT_ROOT.parent / "shared" / "corpus" / "markdown" / "rust-book"
QUESTIONS = PROJECT_ROOT / "data" / "eval" / "rust-book-questions.tsv"


def parse_book(root: Path) -> list[ParsedDocument]:
    return [
        parse_document(p.read_bytes(), p.name)
        for p in sorted(root.glob("*.md"))
        if p.name != "SUMMARY.md"
    ]


def _rows(items: list[dict[str, object]], vectors: np.ndarray) -> pa.Table:
    dim = vectors.shape[1]
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1), pa.float32())
    columns = {name: [it[name] for it in items] for name in items[0]}
    columns.setdefault("bm25_context_text", columns["contextual_text"])  # BM25 without context
    table = pa.table(columns)
    return table.append_column("vector", pa.FixedSizeListArray.from_arrays(flat, dim))


def ours(parsed: list[ParsedDocument], settings: ChunkerSettings) -> list[dict[str, object]]:
    chunker = StructureChunker(settings, TokenCounter())
    items: list[dict[str, object]] = []
    for p in parsed:
        for c in chunker.chunk(p, schema_fingerprint=None, extraction_fingerprint=None):
            items.append(
                _item(
                    p.document,
                    c.index,
                    c.heading_path,
                    c.provenance.start,
                    c.provenance.end,
                    c.text,
                    c.contextual_text,
                    str(c.id),
                    [str(s) for s in c.section_ids],
                )
            )
    return items


def naive(parsed: list[ParsedDocument]) -> list[dict[str, object]]:
    """LangChain's RecursiveCharacterTextSplitter at 1,000 characters, no headings."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=0, add_start_index=True
    )
    items: list[dict[str, object]] = []
    for p in parsed:
        for i, d in enumerate(splitter.create_documents([p.text_layer])):
            start = int(d.metadata["start_index"])
            text = d.page_content
            items.append(
                _item(
                    p.document, i, [], start, start + len(text), text, text, f"{p.document.id}:{i}"
                )
            )
    return items


def _item(
    doc: Document,
    index: int,
    path: list[str],
    start: int,
    end: int,
    text: str,
    contextual: str,
    chunk_id: str,
    section_ids: list[str] | None = None,
) -> dict[str, object]:
    return {
        "chunk_id": chunk_id,
        "document_id": str(doc.id),
        "source_key": doc.source_key,
        "index": index,
        "heading_path": list(path),
        "pages": [],
        "char_start": start,
        "char_end": end,
        "text": text,
        "contextual_text": contextual,
        "section_ids": list(section_ids or []),
    }


def build_index(
    folder: Path, items: list[dict[str, object]], vectors: np.ndarray, context_chars: int = 0
) -> SearchIndex:
    """A LanceDB index of ``items``, its context BM25 with ``context_chars`` of each one's
    section's neighbours (``sinks.bm25_context``; ours is measured at the index's default)."""
    index = SearchIndex(str(folder), settings=IndexSettings(bm25_context_chars=context_chars))
    texts = context_texts(items, context_chars)
    rows = _rows(
        [dict(it, bm25_context_text=t) for it, t in zip(items, texts, strict=True)], vectors
    )
    by_doc: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        by_doc.setdefault(str(it["document_id"]), []).append(i)
    for doc_id, positions in by_doc.items():
        index.upsert_document(doc_id, rows.take(pa.array(positions)))
    index.ensure_fts_index()
    return index


def native(index: SearchIndex, embedder: Embedder) -> Callable[[str, int], list[Hit]]:
    """LanceDB's own hybrid query, as a retriever for scoring."""

    def run(query: str, k: int) -> list[Hit]:
        vector = embedder.embed([query])[0]
        return [to_hit(h, query) for h in index.hybrid_native(vector, query, k)]

    return run


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model`` / ``--model-dir``: measure another local sentence-transformers model."""
    parser.add_argument(
        "--model",
        help="model name (default: the pipeline's); a known one is checked against its"
        " published weights hash (embedding.settings.PUBLISHED_WEIGHTS_SHA256)",
    )
    parser.add_argument("--model-dir", help="its local sentence-transformers directory")


def model_embedder(rt: Runtime, args: argparse.Namespace) -> Embedder:
    """The pipeline's embedder, or the one ``--model``/``--model-dir`` name (same settings
    otherwise; the chunks are cut with the pipeline's tokenizer either way, so every model
    embeds the same texts)."""
    if not args.model and not args.model_dir:
        return rt.embedder
    from agrag_pipeline.embedding.factory import make_embedder
    from agrag_pipeline.embedding.settings import EmbeddingSettings

    data = rt.settings.embedding.model_dump(exclude={"weights_sha256", "model", "model_dir"})
    data.update(model=args.model or rt.settings.embedding.model, model_dir=args.model_dir)
    return make_embedder(EmbeddingSettings.model_validate(data), rt.embedding_cache_dir)


def evaluate(args: argparse.Namespace) -> None:
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH)
    embedder = model_embedder(rt, args)
    print(f"model: {args.model or rt.settings.embedding.model}, fingerprint {embedder.fingerprint}")
    cache = EmbeddingCache.in_dir(Path(args.cache_dir))
    parsed = parse_book(Path(args.book))
    base = rt.settings.chunker
    settings = base.model_copy(
        update={
            k: v
            for k, v in {
                "target_tokens": args.target_tokens,
                "min_tokens": args.min_tokens,
                "overlap_tokens": args.overlap_tokens,
            }.items()
            if v is not None
        }
    )
    settings = ChunkerSettings.model_validate(settings.model_dump())
    questions = load_questions(args.questions)
    sections = {p.document.source_key: p.sections for p in parsed}
    spans = answer_spans(questions, lambda key: sections[key])
    results: list[Scores] = []
    timings: list[str] = []
    runs = [("ours", ours(parsed, settings))]
    if not args.skip_naive:
        runs.append(("naive-1000", naive(parsed)))
    with tempfile.TemporaryDirectory() as tmp:
        for name, items in runs:
            started = time.perf_counter()
            vectors, stats = embed_with_cache(
                embedder, [str(it["contextual_text"]) for it in items], cache
            )
            embedded = time.perf_counter() - started
            started = time.perf_counter()
            index = build_index(Path(tmp) / name, items, vectors)
            built = time.perf_counter() - started
            timings.append(
                f"{name}: {len(items)} chunks, embedded in {embedded:.1f}s "
                f"({stats.misses} new, {stats.hits} cached), index built in {built:.1f}s"
            )
            for mode in MODES:
                results.append(
                    score(f"{name} {mode}", questions, spans, retriever(index, mode, embedder))
                )
            if args.native_hybrid:
                results.append(
                    score(f"{name} lancedb-hybrid", questions, spans, native(index, embedder))
                )
    print(f"chunker settings: {settings.model_dump()}")
    for line in timings:
        print(line)
    print(table(results))


def scale(args: argparse.Namespace) -> None:
    """Index build, per-document update and query latency at ``args.scale`` documents."""
    parsed = parse_book(Path(args.book))
    chunker = StructureChunker(ChunkerSettings(), TokenCounter())
    texts = [
        c.contextual_text
        for p in parsed
        for c in chunker.chunk(p, schema_fingerprint=None, extraction_fingerprint=None)
    ]
    rng = np.random.default_rng(0)
    per_doc = args.chunks_per_document
    n_docs = args.scale
    items: list[dict[str, object]] = []
    for d in range(n_docs):
        doc = Document(
            source_key=f"synthetic/{d:05d}.md",
            media_type="text/markdown",
            size_bytes=1,
            content_hash=f"{d:064x}",
        )
        for i in range(per_doc):
            text = texts[(d * per_doc + i) % len(texts)]
            items.append(_item(doc, i, ["Synthetic"], 0, len(text), text, text, f"{d}:{i}"))
    vectors = rng.normal(size=(len(items), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = _rows(items, vectors)
    with tempfile.TemporaryDirectory() as tmp:
        index = SearchIndex(str(Path(tmp) / "index"))
        started = time.perf_counter()
        index.upsert_document("bulk", rows)  # first load: one write
        index.ensure_fts_index()
        bulk = time.perf_counter() - started
        updates = []
        for d in rng.choice(n_docs, size=20, replace=False):
            one = rows.slice(int(d) * per_doc, per_doc)
            started = time.perf_counter()
            index.upsert_document(str(one.column("document_id")[0]), one)
            updates.append(time.perf_counter() - started)
        queries = [t.split("\n\n", 1)[-1][:80] for t in texts[:30]]
        latency: dict[str, list[float]] = {str(m): [] for m in MODES}
        for q in queries:
            qv = rng.normal(size=384).astype(np.float32)
            for mode in latency:
                started = time.perf_counter()
                if mode == "bm25":
                    index.bm25(q, 10)
                elif mode == "dense":
                    index.dense(qv, 10)
                else:
                    from agrag_pipeline.retrieval.search import HYBRID_DEPTH, rrf

                    rrf([index.dense(qv, HYBRID_DEPTH), index.bm25(q, HYBRID_DEPTH)])
                latency[mode].append(time.perf_counter() - started)
        started = time.perf_counter()
        index.optimize()
        optimized = time.perf_counter() - started
        started = time.perf_counter()
        index.build_vector_index()
        ann_built = time.perf_counter() - started
        ann: list[float] = []
        for _ in queries:
            qv = rng.normal(size=384).astype(np.float32)
            started = time.perf_counter()
            index.dense(qv, 10)
            ann.append(time.perf_counter() - started)
        print(f"{n_docs} documents, {len(items)} chunks (384-d random unit vectors)")
        print(f"initial build (one write + BM25 index): {bulk:.1f}s")
        print(
            f"per-document update (delete + add {per_doc} rows): median "
            f"{statistics.median(updates) * 1000:.0f} ms over {len(updates)}"
        )
        print(f"optimize (compaction, fold new rows into the BM25 index): {optimized:.1f}s")
        ann.sort()
        print(
            f"IVF-PQ vector index built in {ann_built:.1f}s; dense top-10 with it: median "
            f"{statistics.median(ann) * 1000:.1f} ms, p90 {ann[int(len(ann) * 0.9)] * 1000:.1f} ms"
        )
        for mode, values in latency.items():
            values.sort()
            print(
                f"{mode} top-10 query: median {statistics.median(values) * 1000:.1f} ms, "
                f"p90 {values[int(len(values) * 0.9)] * 1000:.1f} ms (after 20 updates)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--book", default=str(BOOK))
    parser.add_argument("--questions", default=str(QUESTIONS))
    parser.add_argument("--cache-dir", default=str(PROJECT_ROOT / "data" / "cache"))
    parser.add_argument("--target-tokens", type=int)
    parser.add_argument("--min-tokens", type=int)
    parser.add_argument("--overlap-tokens", type=int)
    parser.add_argument("--skip-naive", action="store_true")
    add_model_arguments(parser)
    parser.add_argument(
        "--native-hybrid", action="store_true", help="also score LanceDB's own hybrid query"
    )
    parser.add_argument("--scale", type=int, help="time the index at this many documents")
    parser.add_argument("--chunks-per-document", type=int, default=5)
    args = parser.parse_args()
    if args.scale:
        scale(args)
    else:
        evaluate(args)


if __name__ == "__main__":
    main()
