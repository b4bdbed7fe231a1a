"""Chunking throughput: ours against LangChain, chonkie and docling on one Markdown corpus.

Run by hand (peers come from the ``bench`` extra)::

    .venv/bin/python -m benchmarks.chunking_bench [--passes 5] [--docling-files 4]

Every contender reads the same files (the Rust book, 1.2 MB of Markdown) in one process; each
figure is the median of ``passes`` passes, in MB/s of source bytes. The passes are interleaved
(each pass times every contender once, after one warm-up call each), so a load that comes and
goes on a shared machine weighs on all of them alike and the ratios stay meaningful. docling's
HybridChunker is ~200x slower than the rest, so it runs on ``docling_files`` chapters spread
over the size range and its rate (MB/s) is taken from them (said so in its entry). What each
one does differs, which is the point: ours parses Markdown into a section tree and emits full
``Chunk`` rows (token-exact sizes with the MiniLM tokenizer, heading paths, exact offsets, ids,
fingerprints); LangChain's splitters emit strings sized in characters; chonkie emits
token-sized strings with offsets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agrag_pipeline.chunking.chunker import StructureChunker
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter, default_tokenizer_path
from agrag_pipeline.parsing import parse_document

DEFAULT_CORPUS = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus" / "markdown" / "rust-book"
)
HEADERS = [("#" * i, f"h{i}") for i in range(1, 7)]


def _interleaved_medians(
    contenders: dict[str, Callable[[], int]], passes: int
) -> dict[str, tuple[float, int]]:
    """Median seconds and output count of each contender, timed in turn within every pass."""
    produced = {name: fn() for name, fn in contenders.items()}  # warm-up: lazy state, caches
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(passes):
        for name, fn in contenders.items():
            start = time.perf_counter()
            produced[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(times[name]), produced[name]) for name in contenders}


def _median_seconds(fn: Callable[[], int], passes: int) -> tuple[float, int]:
    times, produced = [], 0
    for _ in range(passes):
        start = time.perf_counter()
        produced = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), produced


def _entry(seconds: float, nbytes: int, chunks: int, what: str) -> dict[str, Any]:
    return {
        "mb_per_s": round(nbytes / 1e6 / seconds, 3),
        "seconds": round(seconds, 4),
        "bytes": nbytes,
        "chunks": chunks,
        "what": what,
    }


def run(
    corpus: Path = DEFAULT_CORPUS,
    passes: int = 5,
    docling_files: int = 4,
    peers: bool = True,
) -> dict[str, Any]:
    """Figures for every contender: MB/s, chunks, and ours (parse+chunk) / peer ratios."""
    files = sorted(corpus.resolve().glob("*.md"))
    raws = [(p.name, p.read_bytes()) for p in files]
    texts = [raw.decode("utf-8") for _, raw in raws]
    nbytes = sum(len(raw) for _, raw in raws)
    counter = TokenCounter()
    chunker = StructureChunker(ChunkerSettings(), counter, max_sequence_tokens=256)
    results: dict[str, Any] = {
        "corpus": str(corpus.resolve()),
        "files": len(files),
        "passes": passes,
    }
    figures: dict[str, dict[str, Any]] = {}

    def ours_parse_chunk() -> int:
        n = 0
        for key, raw in raws:
            parsed = parse_document(raw, key)
            n += len(chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None))
        return n

    parsed_docs = [parse_document(raw, key) for key, raw in raws]

    def ours_chunk() -> int:
        return sum(
            len(chunker.chunk(p, schema_fingerprint=None, extraction_fingerprint=None))
            for p in parsed_docs
        )

    contenders: dict[str, Callable[[], int]] = {
        "ours: parse + chunk": ours_parse_chunk,
        "ours: chunk only": ours_chunk,
    }
    what = {
        "ours: parse + chunk": (
            "Markdown -> sections -> Chunk rows (256 MiniLM tokens, exact offsets, ids)"
        ),
        "ours: chunk only": "sections already parsed -> Chunk rows",
    }
    if peers:
        for name, (chunk_text, emits) in peer_contenders().items():

            def peer_run(chunk_text: Callable[[str], int] = chunk_text) -> int:
                return sum(chunk_text(t) for t in texts)

            contenders[name] = peer_run
            what[name] = emits
    for name, (seconds, n) in _interleaved_medians(contenders, passes).items():
        figures[name] = _entry(seconds, nbytes, n, what[name])
    if peers:
        figures.update(_docling(files, passes, docling_files))
    ours = figures["ours: parse + chunk"]["mb_per_s"]
    for entry in figures.values():
        entry["ours_parse_chunk_over_this"] = round(ours / entry["mb_per_s"], 2)
    results["figures"] = figures
    return results


def peer_contenders() -> dict[str, tuple[Callable[[str], int], str]]:
    """The fast peers, each as (text -> number of chunks, what it emits), ready to time."""
    import tokie
    from chonkie import RecursiveChunker
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    header_splitter = MarkdownHeaderTextSplitter(headers_to_split_on=HEADERS)
    recursive = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=0)
    fast = tokie.Tokenizer.from_json(str(default_tokenizer_path()))
    fast.no_truncation()
    fast.no_padding()
    # chonkie wraps a tokie.Tokenizer itself (TokieAutoTokenizer); its stubs do not say so.
    chonkie_chunker = RecursiveChunker(tokenizer=fast, chunk_size=256)  # type: ignore[arg-type,unused-ignore]
    return {
        "langchain: MarkdownHeader -> RecursiveCharacter(1000 chars)": (
            lambda t: len(recursive.split_documents(header_splitter.split_text(t))),
            "strings with header metadata, sized in characters",
        ),
        "langchain: RecursiveCharacter(1000 chars)": (
            lambda t: len(recursive.split_text(t)),
            "strings sized in characters",
        ),
        "chonkie: RecursiveChunker(256, MiniLM via tokie)": (
            lambda t: len(chonkie_chunker.chunk(t)),
            "token-sized strings with offsets",
        ),
    }


DOCLING_NAME = "docling: Markdown -> DoclingDocument -> HybridChunker(256, MiniLM)"


def docling_contender() -> Callable[[Path], int]:
    """docling's Markdown conversion and HybridChunker: a Markdown file -> number of chunks."""
    from docling.datamodel.base_models import InputFormat
    from docling.document_converter import DocumentConverter
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from transformers import AutoTokenizer

    converter = DocumentConverter(allowed_formats=[InputFormat.MD])
    hf = AutoTokenizer.from_pretrained(str(default_tokenizer_path().parent))
    chunker = HybridChunker(tokenizer=HuggingFaceTokenizer(tokenizer=hf, max_tokens=256))

    def chunk_file(path: Path) -> int:
        return len(list(chunker.chunk(dl_doc=converter.convert(path).document)))

    return chunk_file


def _docling(files: list[Path], passes: int, docling_files: int) -> dict[str, dict[str, Any]]:
    # A spread of chapter sizes (every k-th by size), so the rate is not that of tiny files.
    by_size = sorted(files, key=lambda p: p.stat().st_size)
    step = max(1, len(by_size) // max(docling_files, 1))
    subset = by_size[step // 2 :: step][:docling_files]
    subset_bytes = sum(p.stat().st_size for p in subset)
    chunk_file = docling_contender()

    def docling_run() -> int:
        return sum(chunk_file(path) for path in subset)

    docling_run()  # first conversion loads the pipeline
    s, n = _median_seconds(docling_run, max(1, min(passes, 3)))
    entry = _entry(s, subset_bytes, n, "DoclingDocument chunks with headings")
    entry["scope"] = (
        f"run on {len(subset)} chapters spread over the size range ({subset_bytes} bytes: "
        f"{', '.join(p.name for p in subset)}), MB/s taken from them (rate scales by bytes)"
    )
    return {DOCLING_NAME: entry}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--docling-files", type=int, default=4)
    parser.add_argument("--no-peers", action="store_true", help="measure ours only")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    results = run(args.corpus, args.passes, args.docling_files, peers=not args.no_peers)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{results['files']} files of {results['corpus']}, median of {results['passes']} passes")
    print(f"{'contender':<66} {'MB/s':>8} {'chunks':>7} {'ours/this':>9}")
    for name, entry in results["figures"].items():
        print(
            f"{name:<66} {entry['mb_per_s']:>8.3f} {entry['chunks']:>7} "
            f"{entry['ours_parse_chunk_over_this']:>9.2f}"
        )
        if "scope" in entry:
            print(f"    ({entry['scope']})")


if __name__ == "__main__":
    main()
