"""Legacy Office, OpenDocument and RTF: the LibreOffice route measured on the corpus.

Run::

    .venv/bin/python -m benchmarks.legacy_office_bench            # prints the Markdown table
    .venv/bin/python -m benchmarks.legacy_office_bench --folder DIR   # real files, no reference

Every corpus DOCX is saved by LibreOffice as .doc, .odt and .rtf, every PPTX as .ppt and .odp,
every XLSX as .xls and .ods (one ``soffice`` batch per target, real files written by the real
application). Each derived file is then read by ``parse_document`` (ours: checks, conversion
back to OOXML by LibreOffice, our OOXML parser) and scored against the source document's
docling ground truth with ``benchmarks.fidelity.score``; the source OOXML read by ours is the
ceiling row. A direct ODF reading (every text node of ``content.xml`` in document order, no
structure) is the alternative route's ceiling on speed and words. Rates are wall-clock files per
second (the conversion runs in a child process, which CPU time of this process would miss).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from lxml import etree  # noqa: E402

from agrag_pipeline.parsing import parse_document  # noqa: E402
from agrag_pipeline.parsing.errors import DocumentError  # noqa: E402
from benchmarks.fidelity import PeerResult, Score, corpus_pairs, score  # noqa: E402

#: Corpus folder -> the formats LibreOffice saves its documents as.
DERIVED = {"docx": ("doc", "odt", "rtf"), "pptx": ("ppt", "odp"), "xlsx": ("xls", "ods")}


def save_as(sources: list[Path], target: str, out_dir: Path) -> None:
    """LibreOffice saves every source as ``target`` into ``out_dir`` (one process)."""
    profile = (out_dir / "profile").as_uri()
    subprocess.run(
        ["soffice", "--headless", "--norestore", f"-env:UserInstallation={profile}"]
        + ["--convert-to", target, "--outdir", str(out_dir)]
        + [str(s) for s in sources],
        check=True,
        capture_output=True,
        timeout=1800,
    )


def ours(path: Path) -> PeerResult:
    started = time.perf_counter()
    try:
        parsed = parse_document(path.read_bytes(), f"bench/{path.name}")
    except DocumentError as exc:
        return PeerResult("", [], 0, error=str(exc), seconds=time.perf_counter() - started)
    seconds = time.perf_counter() - started
    headings = [s.heading for s in parsed.sections if s.heading is not None]
    tables = sum(1 for s in parsed.sections if s.kind == "table")
    return PeerResult(parsed.text_layer, headings, tables, 1, seconds)


def odf_content_text(path: Path) -> PeerResult:
    """Every text node of ``content.xml``, a line per paragraph: a direct reader's ceiling."""
    started = time.perf_counter()
    with zipfile.ZipFile(path) as archive:
        root = etree.fromstring(archive.read("content.xml"))
    lines = ["".join(node.itertext()) for node in root.iter("{*}p", "{*}h")]
    return PeerResult("\n".join(lines), None, None, 1, time.perf_counter() - started)


def run() -> list[tuple[str, Score]]:
    results: list[tuple[str, Score]] = []
    pairs = [p for p in corpus_pairs(DERIVED) if p[1].suffix.lower() in (".docx", ".pptx", ".xlsx")]
    with tempfile.TemporaryDirectory(prefix="agrag-legacy-bench-") as tmp:
        out = Path(tmp)
        for folder, targets in DERIVED.items():
            sources = [source for fmt, source, _ in pairs if fmt == folder]
            for target in targets:
                save_as(sources, target, out / target)
        for folder, source, reference in pairs:
            ref = reference.read_text(encoding="utf-8")
            results.append(
                (folder, score(folder, source.name, "ours (OOXML source)", ours(source), ref))
            )
            for target in DERIVED[folder]:
                derived = out / target / f"{source.stem}.{target}"
                engines: list[tuple[str, Callable[[Path], PeerResult]]] = [("ours", ours)]
                if target.startswith("od"):
                    engines.append(("ODF content.xml text", odf_content_text))
                for name, engine in engines:
                    if not derived.exists():
                        result = PeerResult("", None, None, error="LibreOffice did not save it")
                    else:
                        result = engine(derived)
                    results.append((target, score(target, derived.name, name, result, ref)))
    return results


def table(results: list[tuple[str, Score]]) -> str:
    groups: dict[tuple[str, str], list[Score]] = {}
    for fmt, s in results:
        groups.setdefault((fmt, s.engine), []).append(s)
    lines = [
        "| format | engine | files | errors | mean cov | min cov | mean prec | min prec "
        "| mean hF1 | files/s (wall) |",
        "|" + "---|" * 10,
    ]
    for (fmt, engine), group in groups.items():
        ok = [s for s in group if not s.error]
        seconds = sum(s.extra.get("seconds", 0.0) for s in group)
        f1 = [s.heading_f1 for s in ok if s.heading_f1 is not None]

        def mean(values: list[float]) -> str:
            return f"{sum(values) / len(values):.3f}" if values else "-"

        lines.append(
            f"| {fmt} | {engine} | {len(group)} | {len(group) - len(ok)} "
            f"| {mean([s.coverage for s in ok])} "
            f"| {min((s.coverage for s in ok), default=0):.3f} "
            f"| {mean([s.precision for s in ok])} "
            f"| {min((s.precision for s in ok), default=0):.3f} | {mean(f1)} "
            f"| {len(group) / seconds if seconds else 0:.2f} |"
        )
    notes = [f"- {s.file} ({s.engine}): {s.error}" for _, s in results if s.error]
    notes += [
        f"- {s.file} ({s.engine}): coverage {s.coverage:.3f}, precision {s.precision:.3f}"
        for _, s in results
        if not s.error and s.engine.startswith("ours") and min(s.coverage, s.precision) < 0.9
    ]
    return "\n".join(lines + (["", "Files under 0.9 (or failed):", "", *notes] if notes else []))


def folder_run(folder: Path) -> str:
    """Every file under ``folder`` read by ours: per extension, how many were read, how many
    refused (with the error's first words) and files/s. For real files without a reference."""
    rows: dict[str, list[tuple[float, str | None]]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        result = ours(path)
        rows.setdefault(path.suffix.lower(), []).append((result.seconds, result.error))
    lines = ["| extension | files | read | refused | files/s (wall) |", "|---|---|---|---|---|"]
    notes = []
    for suffix, results in sorted(rows.items()):
        refused = [e for _, e in results if e]
        seconds = sum(t for t, _ in results)
        lines.append(
            f"| {suffix} | {len(results)} | {len(results) - len(refused)} | {len(refused)} "
            f"| {len(results) / seconds if seconds else 0:.2f} |"
        )
        notes += [f"- {e[:160]}" for e in refused]
    return "\n".join(lines + (["", "Refused:", "", *notes] if notes else []))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--folder", type=Path, help="read every file under this folder instead")
    args = parser.parse_args(argv)
    print(folder_run(args.folder) if args.folder else table(run()))


if __name__ == "__main__":
    main()
