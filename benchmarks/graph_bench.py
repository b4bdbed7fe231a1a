"""Graph sink load time: N documents' nodes and edges into the embedded graph database.

    .venv/bin/python -m benchmarks.graph_bench --documents 10000
    .venv/bin/python -m benchmarks.graph_bench --step WAREHOUSE [--passes 5]

``--step``: the graph step as the ``graph`` asset runs it (``build_graph`` forced, then
``check_graph``) over every document with embeddings in a copy of WAREHOUSE (made by ``agrag
core``), one open store; CPU ms per document for each part, the median of the passes after a
first one that fills the store.

The documents are real: every Markdown and HTML file of ../shared/corpus is parsed and chunked
by the pipeline once, and its graph (with 384-dimension vectors on the chunks, as the default
model gives) is given fresh ids per copy, so N copies are N distinct documents of the corpus's
real shapes (sections, nesting, chunk counts). Timed: building the graph records, writing the
two Parquet tables per document, and loading into LadybugDB document by document through the
same ``write_document`` the asset uses (one open session, one transaction per document), then
re-writing 1% of the documents (the incremental case) and the README's two queries.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.sinks.graph.ladybug_store import LadybugGraphStore
from agrag_pipeline.sinks.graph.model import (
    DocumentGraph,
    GraphEdge,
    GraphNode,
    document_graph,
    edges_table,
    nodes_table,
)
from agrag_pipeline.sinks.graph.step import build_graph, check_graph
from agrag_pipeline.storage import Warehouse
from benchmarks.corpus import REFERENCE_CORPUS

_NAMESPACE = uuid.UUID("6f9a3c1e-2b4d-4e8f-9a7b-1c2d3e4f5a6b")
_REPO = Path(__file__).resolve().parents[1]


def base_graphs(dimension: int = 384) -> list[DocumentGraph]:
    """The graph of every Markdown and HTML corpus file, chunked with the default settings."""
    runtime = Runtime.from_files(DEFAULT_SETTINGS_PATH)
    rng = random.Random(0)
    graphs = []
    for path in sorted(REFERENCE_CORPUS.rglob("*")):
        if path.suffix not in (".md", ".html") or "groundtruth" in path.parts:
            continue
        key = path.relative_to(REFERENCE_CORPUS).as_posix()
        try:
            parsed = parse_document(path.read_bytes(), key)
        except Exception:  # a file the parsers refuse is not a benchmark input
            continue
        chunks = runtime.chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
        vectors = {str(c.id): [rng.uniform(-1, 1) for _ in range(dimension)] for c in chunks}
        graphs.append(document_graph(parsed.document, parsed.sections, chunks, vectors))
    return graphs


def copy_graph(graph: DocumentGraph, copy: int) -> DocumentGraph:
    """``graph`` with every id replaced by a fresh deterministic one for copy number ``copy``."""
    ids: dict[str, str] = {}

    def new(old: str) -> str:
        if old not in ids:
            ids[old] = str(uuid.uuid5(_NAMESPACE, f"{copy}:{old}"))
        return ids[old]

    document_id = new(graph.document_id)
    nodes = []
    for node in graph.nodes:
        props = dict(node.properties)
        props["document_id"] = document_id
        if node.label == "Document":
            props["source_key"] = f"{copy:05d}/{props['source_key']}"
        if props.get("parent_id"):
            props["parent_id"] = new(props["parent_id"])
        if node.label == "Chunk":
            props["section_ids"] = [new(s) for s in props["section_ids"]]
        nodes.append(GraphNode(node.label, new(node.id), props))
    edges = [GraphEdge(e.type, new(e.source_id), new(e.target_id)) for e in graph.edges]
    return DocumentGraph(document_id, graph.content_hash, nodes, edges)


def run(documents: int, work: Path) -> dict[str, float | int]:
    started = time.perf_counter()
    bases = base_graphs()
    prepare_s = time.perf_counter() - started
    warehouse = Warehouse(str(work / "warehouse"))
    store = LadybugGraphStore(work / "graph.lbdb")
    figures: dict[str, float | int] = {"documents": documents, "base_documents": len(bases)}
    records_s = tables_s = load_s = 0.0
    nodes = edges = 0
    with store.session():
        store.ensure_schema()
        for i in range(documents):
            t0 = time.perf_counter()
            graph = copy_graph(bases[i % len(bases)], i)
            t1 = time.perf_counter()
            doc_uuid = uuid.UUID(graph.document_id)
            warehouse.write_table("graph_nodes", doc_uuid, nodes_table(graph))
            warehouse.write_table("graph_edges", doc_uuid, edges_table(graph))
            t2 = time.perf_counter()
            store.write_document(graph)
            t3 = time.perf_counter()
            records_s += t1 - t0
            tables_s += t2 - t1
            load_s += t3 - t2
            nodes += len(graph.nodes)
            edges += len(graph.edges)
        changed = max(documents // 100, 1)
        t0 = time.perf_counter()
        for i in range(changed):
            store.write_document(copy_graph(bases[i % len(bases)], i))
        incremental_s = time.perf_counter() - t0
        sample = copy_graph(bases[0], 0)
        chunk_id = next(n.id for n in sample.nodes if n.label == "Chunk")
        readme = (_REPO / "README.md").read_text()
        queries = [b.split("```")[0] for b in readme.split("```cypher\n")[1:3]]
        t0 = time.perf_counter()
        for _ in range(20):
            store.query(queries[0], {"chunk_id": chunk_id})
        chunk_query_ms = (time.perf_counter() - t0) / 20 * 1000
        source_key = next(n for n in sample.nodes if n.label == "Document").properties["source_key"]
        t0 = time.perf_counter()
        for _ in range(20):
            store.query(queries[1], {"source_key": source_key})
        document_query_ms = (time.perf_counter() - t0) / 20 * 1000
    figures.update(
        {
            "nodes": nodes,
            "edges": edges,
            "prepare_s": round(prepare_s, 2),
            "records_s": round(records_s, 2),
            "parquet_tables_s": round(tables_s, 2),
            "graph_load_s": round(load_s, 2),
            "graph_docs_per_s": round(documents / load_s, 1),
            "graph_nodes_edges_per_s": round((nodes + edges) / load_s, 0),
            "incremental_1pct_s": round(incremental_s, 2),
            "chunk_to_section_path_query_ms": round(chunk_query_ms, 2),
            "document_to_chunks_query_ms": round(document_query_ms, 2),
        }
    )
    return figures


def run_step(source: Path, passes: int, work: Path) -> dict[str, object]:
    """CPU ms per document of the graph step (build forced, then its check) on a copy of
    ``source``'s warehouse, graph tables and database left out of the copy."""
    shutil.copytree(source, work / "warehouse", ignore=shutil.ignore_patterns("_graph"))
    warehouse = Warehouse(str(work / "warehouse"))
    documents = [warehouse.get_document(i) for i in sorted(warehouse.ids_with_tables("embeddings"))]
    store = LadybugGraphStore(work / "graph.lbdb")
    build_ms: list[float] = []
    check_ms: list[float] = []
    chunks = 0
    with store.session():
        for _ in range(passes + 1):
            build = check = 0.0
            chunks = 0
            for document in documents:
                assert document is not None
                started = time.process_time()
                result = build_graph(warehouse, document, store, force=True)
                built = time.process_time()
                outcome = check_graph(warehouse, document.source_key, store)
                check += time.process_time() - built
                build += built - started
                chunks += result.counts["Chunk"]
                if not outcome[0].passed:
                    raise RuntimeError(f"{document.source_key}: {outcome[0].description}")
            build_ms.append(build / len(documents) * 1000)
            check_ms.append(check / len(documents) * 1000)
    return {
        "documents": len(documents),
        "chunks": chunks,
        "passes": passes,
        "build_cpu_ms_per_document": round(statistics.median(build_ms[1:]), 2),
        "check_cpu_ms_per_document": round(statistics.median(check_ms[1:]), 2),
        "build_ms_each_pass": [round(x, 1) for x in build_ms[1:]],
        "check_ms_each_pass": [round(x, 1) for x in check_ms[1:]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--step", type=Path, help="time the graph step on this warehouse")
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agrag-graph-bench-") as work:
        if args.step is not None:
            print(json.dumps(run_step(args.step, args.passes, Path(work)), indent=2))
        else:
            print(json.dumps(run(args.documents, Path(work)), indent=2))


if __name__ == "__main__":
    main()
