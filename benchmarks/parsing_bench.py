"""Parsing throughput over the reference corpus: MB/s for Markdown and HTML, pages/s for PDF.

Run: ``.venv/bin/python -m benchmarks.parsing_bench`` (or ``python benchmarks/parsing_bench.py``).
Each figure is the median of ``repeats`` passes over the whole folder, in one process; every
pass parses every file from bytes (decoding, section tree and ``Section`` models included).
"""

from __future__ import annotations

import io
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = (REPO_ROOT / ".." / "shared" / "corpus").resolve()
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import pdfplumber  # noqa: E402

from agrag_pipeline.parsing import parse_document  # noqa: E402


def _files(folder: Path, suffix: str) -> list[tuple[str, bytes]]:
    return [
        (p.relative_to(CORPUS).as_posix(), p.read_bytes())
        for p in sorted(folder.rglob(f"*{suffix}"))
    ]


def _median_seconds(files: list[tuple[str, bytes]], repeats: int) -> tuple[float, int]:
    times = []
    sections = 0
    for _ in range(repeats):
        started = time.perf_counter()
        sections = sum(len(parse_document(raw, key).sections) for key, raw in files)
        times.append(time.perf_counter() - started)
    return statistics.median(times), sections


def run(repeats: int = 5) -> dict[str, dict[str, float]]:
    """Figures per corpus folder: bytes, seconds (median), MB/s, and pages/s for PDFs."""
    results: dict[str, dict[str, float]] = {}
    for name, folder, suffix in (
        ("markdown/rust-book", CORPUS / "markdown" / "rust-book", ".md"),
        ("markdown/docling", CORPUS / "markdown" / "docling", ".md"),
        ("html", CORPUS / "html", ".html"),
    ):
        files = _files(folder, suffix)
        size = sum(len(raw) for _, raw in files)
        seconds, sections = _median_seconds(files, repeats)
        results[name] = {
            "files": len(files),
            "mb": size / 1e6,
            "seconds": seconds,
            "mb_per_s": size / 1e6 / seconds,
            "sections": sections,
        }
    pdfs = _files(CORPUS / "pdf", ".pdf")
    pages = 0
    for _, raw in pdfs:
        with pdfplumber.open(io.BytesIO(raw)) as pdf:
            pages += len(pdf.pages)
    seconds, sections = _median_seconds(pdfs, max(1, min(repeats, 3)))
    results["pdf"] = {
        "files": len(pdfs),
        "mb": sum(len(raw) for _, raw in pdfs) / 1e6,
        "seconds": seconds,
        "pages": pages,
        "pages_per_s": pages / seconds,
        "sections": sections,
    }
    return results


def main() -> None:
    results = run()
    print(f"{'corpus':<20} {'files':>5} {'MB':>7} {'sections':>8} {'s (median)':>10} {'rate':>14}")
    for name, row in results.items():
        rate = (
            f"{row['pages_per_s']:.1f} pages/s"
            if "pages_per_s" in row
            else f"{row['mb_per_s']:.2f} MB/s"
        )
        print(
            f"{name:<20} {int(row['files']):>5} {row['mb']:>7.2f} {int(row['sections']):>8} "
            f"{row['seconds']:>10.3f} {rate:>14}"
        )


if __name__ == "__main__":
    main()
