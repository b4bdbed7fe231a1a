"""The reading-quality score (``parsing.quality``) over the corpus and on each defect of issue 20.

Run::

    .venv/bin/python -m benchmarks.quality_bench            # both parts, Markdown tables
    .venv/bin/python -m benchmarks.quality_bench --corpus   # only the corpus

Parts:
- ``corpus``: every file of ``../shared/corpus`` (docling's ground-truth conversions included;
  READMEs and licences left out), parsed with the default settings (OCR with
  ``auto_languages``): the score's distribution, the documents below ``warn_below``, the lowest
  ten with their reasons, and the seconds the score costs per document;
- ``defects``: each defect of issue 20 against the same text read right (the cases the tests in
  ``agrag_pipeline_tests/parsing/test_parsing_quality.py`` assert on): a ligature that lost its
  second ``f``, two lines interleaved letter by letter, Polish decoded with the wrong code page,
  OCR in the wrong language (Polish, Chinese, Arabic pages read with ``eng`` only), a scan shrunk
  by a wrong resolution tag.
"""

from __future__ import annotations

import argparse
import io
import itertools
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = (REPO_ROOT / ".." / "shared" / "corpus").resolve()
FIXTURES = REPO_ROOT / "agrag_pipeline_tests" / "fixtures"
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import pypdfium2  # noqa: E402

from agrag_pipeline.parsing import ParsedDocument, parse_document, quality  # noqa: E402
from agrag_pipeline.parsing.errors import DocumentError  # noqa: E402
from agrag_pipeline.settings import (  # noqa: E402
    OcrSettings,
    ParsingSettings,
    QualitySettings,
)

WARN_BELOW = QualitySettings().warn_below
ENGLISH_ONLY = ParsingSettings(ocr=OcrSettings(auto_languages=False))


def _score(parsed: ParsedDocument) -> float | None:
    value = parsed.document.metadata.get(quality.SCORE_KEY)
    return float(value) if value is not None else None


def _reasons(parsed: ParsedDocument) -> str:
    return str(parsed.document.metadata.get(quality.REASONS_KEY, "")).replace("|", "\\|")


def corpus() -> None:
    rows: list[tuple[float, str, str, str]] = []
    seconds: list[float] = []
    empty: list[str] = []
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.name.startswith(("README", "LICENSE")):
            continue
        key = path.relative_to(CORPUS).as_posix()
        try:
            parsed = parse_document(path.read_bytes(), key)
        except DocumentError as exc:
            print(f"<!-- {key}: not parsed: {exc} -->")
            continue
        started = time.perf_counter()
        quality.assess(parsed.text_layer, parsed.document.metadata)
        seconds.append(time.perf_counter() - started)
        score = _score(parsed)
        if score is None:
            empty.append(key)
            continue
        language = str(parsed.document.metadata.get(quality.LANGUAGE_KEY, "-"))
        rows.append((score, key, language, _reasons(parsed)))
    scores = [r[0] for r in rows]
    ordered = sorted(scores)
    print(f"{len(rows)} documents scored ({len(empty)} without text: {', '.join(empty) or '-'})")
    print()
    print("| min | p5 | p10 | median | mean | = 1.00 | 0.95-0.99 | 0.80-0.94 | < 0.80 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    bands = (
        sum(s >= 0.995 for s in scores),
        sum(0.95 <= s < 0.995 for s in scores),
        sum(WARN_BELOW <= s < 0.95 for s in scores),
        sum(s < WARN_BELOW for s in scores),
    )
    print(
        f"| {ordered[0]:.2f} | {ordered[len(ordered) // 20]:.2f} | "
        f"{ordered[len(ordered) // 10]:.2f} | {statistics.median(scores):.2f} | "
        f"{statistics.mean(scores):.3f} | " + " | ".join(str(b) for b in bands) + " |"
    )
    print()
    print("| folder | documents | min | median |")
    print("|---|---:|---:|---:|")
    folders: dict[str, list[float]] = {}
    for score, key, _, _ in rows:
        folders.setdefault(key.split("/")[0], []).append(score)
    for folder, values in sorted(folders.items()):
        print(f"| {folder} | {len(values)} | {min(values):.2f} | {statistics.median(values):.2f} |")
    print()
    print(f"Flagged (below {WARN_BELOW:g}) and the lowest others:")
    print()
    print("| score | document | language | reasons |")
    print("|---:|---|---|---|")
    for score, key, language, reasons in sorted(rows)[:12]:
        print(f"| {score:.2f} | {key} | {language} | {reasons or '-'} |")
    print()
    print(
        f"Seconds the score costs per document: median {statistics.median(seconds):.3f}, "
        f"max {max(seconds):.2f} (word lists already loaded)"
    )


def _interleaved(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()][:60]
    return "\n".join(
        "".join(a + b for a, b in itertools.zip_longest(x, y, fillvalue=""))
        for x, y in zip(lines[::2], lines[1::2], strict=False)
    )


def _page_scan(pdf_path: Path, dpi_rendered: int, dpi_tagged: int, part: float) -> bytes:
    pdf = pypdfium2.PdfDocument(pdf_path)
    try:
        image = pdf[0].render(scale=dpi_rendered / 72, grayscale=True).to_pil()
    finally:
        pdf.close()
    out = io.BytesIO()
    image.crop((0, 0, image.width, int(image.height * part))).save(
        out, "PNG", dpi=(dpi_tagged, dpi_tagged)
    )
    return out.getvalue()


def _text(text: str, name: str) -> ParsedDocument:
    return parse_document(text.encode("utf-8"), name)


def defects() -> None:
    invoice = (FIXTURES / "invoice_pl.txt").read_text("utf-8")
    paper = parse_document((CORPUS / "jats" / "pone.0234687.nxml").read_bytes(), "paper.nxml")
    page = parse_document((CORPUS / "pdf" / "multi_page.pdf").read_bytes(), "page.pdf")
    first_lines = "\n".join([ln for ln in page.text_layer.splitlines() if ln.strip()][:60])
    polish_ids = (FIXTURES / "glyph_id_cid_pl.pdf").read_bytes()
    zh = (FIXTURES / "scan_zh.png").read_bytes()
    arabic = _page_scan(CORPUS / "pdf" / "right_to_left_01.pdf", 200, 200, 1 / 3)
    handbook = CORPUS / "pdf" / "amt_handbook_sample.pdf"
    cases = [
        (
            "ligature loses its second f (JATS paper, 54 ff words)",
            lambda: paper,
            lambda: _text(paper.text_layer.replace("ff", "f"), "p.txt"),
        ),
        (
            "two lines interleaved letter by letter (a PDF page's first 60 lines)",
            lambda: _text(first_lines, "p.txt"),
            lambda: _text(_interleaved(first_lines), "p.txt"),
        ),
        (
            "Polish written in cp1250, decoded as cp1252",
            lambda: _text(invoice, "f.txt"),
            lambda: _text(invoice.encode("cp1250").decode("cp1252"), "f.txt"),
        ),
        (
            "Polish written in UTF-8, decoded as cp1252",
            lambda: _text(invoice, "f.txt"),
            lambda: _text(invoice.encode("utf-8").decode("cp1252", "replace"), "f.txt"),
        ),
        (
            "Polish page, OCR in English (auto_languages off) vs ours",
            lambda: parse_document(polish_ids, "f.pdf"),
            lambda: parse_document(polish_ids, "f.pdf", parsing=ENGLISH_ONLY),
        ),
        (
            "Chinese page, OCR in English vs ours",
            lambda: parse_document(zh, "zh.png"),
            lambda: parse_document(zh, "zh.png", parsing=ENGLISH_ONLY),
        ),
        (
            "Arabic page (a third), OCR in English vs ours",
            lambda: parse_document(arabic, "ar.png"),
            lambda: parse_document(arabic, "ar.png", parsing=ENGLISH_ONLY),
        ),
        (
            "96-dpi page export (half) tagged 96 vs wrongly tagged 300 dpi",
            lambda: parse_document(_page_scan(handbook, 96, 96, 0.5), "x.png"),
            lambda: parse_document(_page_scan(handbook, 96, 300, 0.5), "x.png"),
        ),
    ]
    print("| defect | read right | with the defect | reasons it gives |")
    print("|---|---:|---:|---|")
    for name, right, wrong in cases:
        good, bad = right(), wrong()
        print(f"| {name} | {_score(good):.2f} | {_score(bad):.2f} | {_reasons(bad)[:220]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", action="store_true", help="only the corpus")
    parser.add_argument("--defects", action="store_true", help="only the defects")
    args = parser.parse_args()
    if not args.defects:
        corpus()
        print()
    if not args.corpus:
        defects()


if __name__ == "__main__":
    main()
