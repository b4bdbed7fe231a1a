"""PDF layout cost per page: the worst page against the median page of the same size.

Run: ``.venv/bin/python -m benchmarks.pdf_pages [--root DIR ...] [--profile N] [--peers]``.

Each page is laid out by ``pdf_layout.read_page`` (characters, rows, columns, tables; no OCR)
and timed in CPU seconds of this process (``time.process_time``), so other jobs on a shared
machine do not enter the figure. Pages are grouped by their character count (a factor of two
per group: "the same size"); per group the median and the worst page, and the worst's ratio to
the median. A page whose work grew with the square of its characters shows as a worst page many
times its group's median. ``--profile N`` lays out the N costliest pages again under cProfile
and prints where the layout's time went. ``--peers`` compares pages/s of the whole parse
(``parse_document``: layout, headings, sections) with plain text extraction by pypdfium2 and
pdfplumber, and with docling-parse when ``--docling-python`` names an interpreter that has it
(never a dependency of this project). ``--fingerprint FILE`` writes each PDF's text layer,
warnings and sections (hashed) to FILE, to compare two versions of the code on the same PDFs.
``--baseline FILE`` times another version of ``pdf_layout.py`` (``git show REV:agrag_pipeline/
parsing/pdf_layout.py > FILE``) on the same pages in the same process, interleaved (each page read
once untimed first: PDFium's loading of it is charged to neither), and checks that each page reads
the same (every field of its lines and tables). Without it a page's time includes that loading.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import hashlib
import importlib.util
import io
import json
import math
import os
import pstats
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import pypdfium2  # noqa: E402

from agrag_pipeline.parsing import parse_document, pdf_layout  # noqa: E402

DEFAULT_ROOTS = (REPO_ROOT / ".." / "shared" / "corpus", Path("/work/mixed/raw"))


@dataclass
class PageCost:
    pdf: str
    page: int
    chars: int
    seconds: float
    #: The baseline version's seconds on the same page (``--baseline``), and whether it read
    #: the page differently.
    baseline: float | None = None
    differs: bool = False


def pdf_files(roots: list[Path]) -> list[tuple[str, Path]]:
    """Non-empty PDFs under the roots, named relative to their root (the same file found under
    two roots is timed once per name)."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.pdf")):
            if path.is_file() and path.stat().st_size > 0:
                found.append((f"{root.name}/{path.relative_to(root).as_posix()}", path))
    return found


def page_costs(
    path: Path, name: str, max_pages: int, baseline: ModuleType | None = None
) -> list[PageCost]:
    """Each page's layout cost in CPU seconds (an unreadable or encrypted PDF gives none)."""
    try:
        pdf = pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError:
        return []
    costs = []
    try:
        for index in range(min(len(pdf), max_pages)):
            page = pdf[index]
            try:
                if baseline is not None:
                    # PDFium loads a page's content and fonts on first use: read it once
                    # untimed, so that neither version is charged for it.
                    pdf_layout.read_page(page, index + 1)
                ours, seconds = _timed(pdf_layout, page, index)
                cost = PageCost(name, index + 1, ours.chars, seconds)
                if baseline is not None:
                    theirs, cost.baseline = _timed(baseline, page, index)
                    cost.differs = _items(theirs) != _items(ours)
            finally:
                page.close()
            costs.append(cost)
    finally:
        pdf.close()
    return costs


def _timed(module: Any, page: pypdfium2.PdfPage, index: int) -> tuple[Any, float]:
    gc.collect()  # the garbage of the page before is not charged to this one
    started = time.process_time()
    read = module.read_page(page, index + 1)
    return read, time.process_time() - started


def _items(read: Any) -> list[Any]:
    """A page read as plain values, every field of every line and table (the two versions'
    classes differ)."""
    return [(type(item).__name__, dataclasses.astuple(item)) for item in read.items]


def load_baseline(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("baseline_pdf_layout", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def size_groups(costs: list[PageCost]) -> dict[int, list[PageCost]]:
    """Pages with text grouped by character count: group k holds 2^k to 2^(k+1) - 1."""
    groups: dict[int, list[PageCost]] = {}
    for cost in costs:
        if cost.chars > 0:
            groups.setdefault(int(math.log2(cost.chars)), []).append(cost)
    return groups


def report(costs: list[PageCost]) -> str:
    versus = all(c.baseline is not None for c in costs)
    head = "| characters on the page | pages | median ms | worst ms | worst / median | worst page |"
    rule = "|---|---:|---:|---:|---:|---|"
    if versus:
        head += " baseline median ms | baseline worst ms | baseline worst / median |"
        rule += "---:|---:|---:|"
    lines = [head, rule]
    for k, group in sorted(size_groups(costs).items()):
        median = statistics.median(c.seconds for c in group)
        worst = max(group, key=lambda c: c.seconds)
        ratio = worst.seconds / median if median > 0 else float("inf")
        row = (
            f"| {2**k}-{2 ** (k + 1) - 1} | {len(group)} | {median * 1e3:.1f} | "
            f"{worst.seconds * 1e3:.1f} | {ratio:.1f} | {worst.pdf} p{worst.page} |"
        )
        if versus:
            times = [c.baseline or 0.0 for c in group]
            b_median, b_worst = statistics.median(times), max(times)
            row += f" {b_median * 1e3:.1f} | {b_worst * 1e3:.1f} | {b_worst / b_median:.1f} |"
        lines.append(row)
    total = sum(c.seconds for c in costs)
    per_char = sorted(
        (c for c in costs if c.chars >= 100), key=lambda c: c.seconds / c.chars, reverse=True
    )[:5]
    lines.append("")
    lines.append(
        f"{len(costs)} pages, {sum(c.chars for c in costs)} characters, {total:.2f} CPU s "
        f"({len(costs) / total:.1f} pages/s of layout). Costliest per character: "
        + "; ".join(
            f"{c.pdf} p{c.page} ({c.chars} chars, {c.seconds * 1e3:.0f} ms, "
            f"{c.seconds / max(c.chars, 1) * 1e6:.0f} us/char)"
            for c in per_char
        )
    )
    if versus:
        baseline = sum(c.baseline or 0.0 for c in costs)
        differing = [f"{c.pdf} p{c.page}" for c in costs if c.differs]
        lines.append(
            f"Baseline: {baseline:.2f} CPU s ({baseline / total:.2f}x); pages read differently: "
            f"{len(differing)}" + (f" ({', '.join(differing[:20])})" if differing else "")
        )
    return "\n".join(lines)


def profile(costs: list[PageCost], paths: dict[str, Path], count: int) -> str:
    """Where the layout of the ``count`` costliest pages spent its time."""
    worst = sorted(costs, key=lambda c: c.seconds, reverse=True)[:count]
    profiler = cProfile.Profile()
    for cost in worst:
        pdf = pypdfium2.PdfDocument(paths[cost.pdf])
        page = pdf[cost.page - 1]
        profiler.enable()
        pdf_layout.read_page(page, cost.page)
        profiler.disable()
        page.close()
        pdf.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(r"pdf_layout|pdfplumber", 25)
    return out.getvalue()


def fingerprints(files: list[tuple[str, Path]]) -> dict[str, str]:
    """Per PDF: a hash of its text layer, warnings, sections and layout spans (or its error);
    the sections' ``created_at`` (the parse's clock) left out."""
    out = {}
    for name, path in files:
        try:
            parsed = parse_document(path.read_bytes(), name)
            sections = [s.model_dump(mode="json", exclude={"created_at"}) for s in parsed.sections]
            record = json.dumps(
                [
                    parsed.text_layer,
                    parsed.warnings,
                    sections,
                    [str(span) for span in parsed.layout],
                ],
                sort_keys=True,
                default=str,
            )
        except Exception as exc:  # the error is the output to compare
            record = f"{type(exc).__name__}: {exc}"
        out[name] = hashlib.sha256(record.encode()).hexdigest()
    return out


_DOCLING_WORKER = """
import io, sys, time, json
from docling_parse.pdf_parser import DoclingPdfParser
from docling_core.types.doc.page import TextCellUnit
pages, failed = 0, []
started = time.process_time()
for path in sys.argv[1:]:
    try:
        doc = DoclingPdfParser(loglevel="fatal").load(io.BytesIO(open(path, "rb").read()))
        for _, page in doc.iterate_pages():
            "\\n".join(c.text for c in page.iterate_cells(unit_type=TextCellUnit.LINE))
            pages += 1
        doc.unload()
    except Exception as exc:
        failed.append(f"{path} ({exc})")
print(json.dumps({"pages": pages, "seconds": time.process_time() - started, "failed": failed}))
"""


def peers(files: list[tuple[str, Path]], docling_python: str | None) -> str:
    """Pages/s (CPU) of the whole parse and of plain text extraction on the same text PDFs
    (every page with a text layer: no OCR in the figure)."""
    import pdfplumber

    paths = [path for _, path in files]

    counts = {name: _page_count(path) for name, path in files}
    failed: dict[str, list[str]] = {}

    def ours() -> int:
        pages = 0
        for name, path in files:
            parse_document(path.read_bytes(), name)
            pages += counts[name]
        return pages

    def pdfium_text() -> int:
        pages = 0
        for path in paths:
            pdf = pypdfium2.PdfDocument(path)
            for page in pdf:
                textpage = page.get_textpage()
                textpage.get_text_range()
                textpage.close()
                page.close()
                pages += 1
            pdf.close()
        return pages

    def plumber_text() -> int:
        pages = 0
        for name, path in files:
            try:
                with pdfplumber.open(path) as pdf:
                    for page in pdf.pages:
                        page.extract_text()
                        pages += 1
            except Exception as exc:  # pdfminer gives up on some files: count what it read
                failed.setdefault("pdfplumber", []).append(f"{name} ({exc})")
        return pages

    if files:  # imports and word lists loaded once, before the clock (as in a long-running worker)
        parse_document(files[0][1].read_bytes(), files[0][0])
    rows = []
    for label, run in (
        ("ours: parse_document (layout, headings, sections)", ours),
        ("pypdfium2: raw text", pdfium_text),
        ("pdfplumber: extract_text", plumber_text),
    ):
        started = time.process_time()
        pages = run()
        rows.append((label, pages, time.process_time() - started))
    if docling_python:
        result = subprocess.run(
            [docling_python, "-c", _DOCLING_WORKER, *map(str, paths)],
            capture_output=True,
            text=True,
            check=True,
        )
        measured = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append(("docling-parse: text lines", measured["pages"], measured["seconds"]))
        if measured["failed"]:
            failed["docling-parse"] = measured["failed"]
    ours_rate = rows[0][1] / rows[0][2]
    lines = ["| engine | pages | CPU s | pages/s | ours / this |", "|---|---:|---:|---:|---:|"]
    for label, pages, seconds in rows:
        rate = pages / seconds
        lines.append(f"| {label} | {pages} | {seconds:.2f} | {rate:.1f} | {ours_rate / rate:.2f} |")
    for engine, names in failed.items():
        lines.append(f"{engine} failed on {len(names)} PDF(s): {'; '.join(names)}")
    return "\n".join(lines)


def _page_count(path: Path) -> int:
    """Pages of the PDF; 0 when it cannot be opened (encrypted, damaged)."""
    try:
        pdf = pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError:
        return 0
    try:
        return len(pdf)
    finally:
        pdf.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, action="append", help="folders of PDFs")
    parser.add_argument("--max-pages", type=int, default=100, help="pages per PDF at most")
    parser.add_argument("--max-mb", type=float, default=20.0, help="skip larger PDFs")
    parser.add_argument("--profile", type=int, default=0, help="profile the N costliest pages")
    parser.add_argument("--peers", action="store_true", help="pages/s against text extraction")
    parser.add_argument("--docling-python", help="an interpreter with docling-parse installed")
    parser.add_argument("--fingerprint", type=Path, help="write each PDF's output hash here")
    parser.add_argument("--baseline", type=Path, help="another pdf_layout.py to time alongside")
    args = parser.parse_args(argv)
    roots = [root.resolve() for root in (args.root or DEFAULT_ROOTS) if root.exists()]
    counted = [
        (name, path, _page_count(path))
        for name, path in pdf_files(roots)
        if path.stat().st_size <= args.max_mb * 1e6
    ]
    # Page costs: the first ``max_pages`` of every PDF; whole parses: the PDFs within the cap.
    files = [(name, path) for name, path, count in counted if 0 < count <= args.max_pages]
    print(f"{len(counted)} PDFs under {', '.join(map(str, roots))}; load {os.getloadavg()}")
    if args.fingerprint:
        args.fingerprint.write_text(json.dumps(fingerprints(files), indent=1, sort_keys=True))
        print(f"fingerprints of {len(files)} PDFs written to {args.fingerprint}")
        return
    baseline = load_baseline(args.baseline) if args.baseline else None
    costs = [
        cost
        for name, path, count in counted
        if count > 0
        for cost in page_costs(path, name, args.max_pages, baseline)
    ]
    print(report(costs))
    if args.profile:
        print(profile(costs, {name: path for name, path, _ in counted}, args.profile))
    if args.peers:
        scanned = {c.pdf for c in costs if c.chars < 20}
        print(peers([f for f in files if f[0] not in scanned], args.docling_python))


if __name__ == "__main__":
    main()
