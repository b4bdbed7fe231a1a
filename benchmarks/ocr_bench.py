"""OCR engines on scanned pages: word coverage, precision, reading order and seconds per page.

Run::

    .venv/bin/python -m benchmarks.ocr_bench                    # corpus scans, 150/200/300 dpi
    .venv/bin/python -m benchmarks.ocr_bench --rasterised       # also the text-layer PDFs, scanned
    .venv/bin/python -m benchmarks.ocr_bench --dpi 200 --engines tesseract

Sets:
- ``corpus``: ``../shared/corpus/ocr/*.pdf`` (image-only pages, turned 0/90/180 degrees by
  their ``/Rotate``) against ``groundtruth/<name>.md`` beside them;
- ``rasterised`` (``--rasterised``): every English PDF of ``../shared/corpus/pdf`` (its
  reference mostly ASCII words: Tesseract here has only ``eng``) rendered to
  a 300-dpi image-only PDF (no text layer), upright and with its raster turned 90 degrees (a
  sideways scan with no ``/Rotate`` to help), against the same ground truth as the original.

Engines (each on the same rendered pages, in this process):
- ``tesseract``: ours, ``agrag_pipeline.parsing.ocr.ocr_page`` (render, orientation by OSD,
  turn, recognise; words with boxes);
- ``tesseract-no-osd``: the same without orientation detection;
- ``rapidocr``: RapidOCR 3 (PP-OCR ONNX models carried in its wheel; needs ``onnxruntime``, which
  the project does not install: reported as unavailable without it) on the page as rendered.
  Its model load is timed apart (``load s``) and not counted per page.

Scores are those of ``benchmarks.fidelity`` (NFKC, case-folded words; bags with counts):
``cov`` share of the reference's words found, ``prec`` share of ours in the reference,
``order`` reading-order agreement; ``s/page`` the wall seconds per page (render included),
``cpu s/page`` the CPU seconds (this process and Tesseract's) per page: the steadier figure on
a shared machine. Every Tesseract call runs with one thread (``OMP_THREAD_LIMIT=1``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = (REPO_ROOT / ".." / "shared" / "corpus").resolve()
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import pypdfium2  # noqa: E402

from agrag_pipeline.parsing.ocr import engine_fingerprint, ocr_page  # noqa: E402
from agrag_pipeline.settings import OcrSettings  # noqa: E402
from benchmarks.fidelity import order_agreement, reference_text, words  # noqa: E402

#: A reference whose words are less than this share ASCII is in a script the default
#: languages (``eng``) do not read (the corpus has Arabic and Korean PDFs): not scanned.
MIN_ASCII_SHARE = 0.8


def _english(reference: str) -> bool:
    found = words(reference_text(reference)[0])
    return bool(found) and sum(w.isascii() for w in found) >= MIN_ASCII_SHARE * len(found)


@dataclass
class Case:
    set: str
    name: str
    pdf: Path
    reference: str  # the ground-truth Markdown


@dataclass
class Reading:
    text: str
    pages: int
    seconds: float
    rotations: list[int]


def corpus_cases() -> list[Case]:
    folder = CORPUS / "ocr"
    return [
        Case("corpus", p.stem, p, (folder / "groundtruth" / f"{p.stem}.md").read_text("utf-8"))
        for p in sorted(folder.glob("*.pdf"))
        if (folder / "groundtruth" / f"{p.stem}.md").is_file()
    ]


def rasterised_cases(workdir: Path, dpi: int = 300) -> list[Case]:
    """Each English corpus PDF as an image-only PDF, upright and with its raster turned 90."""
    folder = CORPUS / "pdf"
    cases = []
    for path in sorted(folder.glob("*.pdf")):
        reference = folder / "groundtruth" / f"{path.stem}.md"
        if not reference.is_file() or not _english(reference.read_text("utf-8")):
            continue
        images = [
            page.render(scale=dpi / 72, grayscale=True).to_pil()
            for page in pypdfium2.PdfDocument(path)
        ]
        for turn in (0, 90):
            turned = [im.rotate(-turn, expand=True) if turn else im for im in images]
            out = workdir / f"{path.stem}_scan{turn}.pdf"
            turned[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=turned[1:])
            cases.append(Case("rasterised", out.stem, out, reference.read_text("utf-8")))
    return cases


def _tesseract(detect: bool) -> Callable[[Path, int], Reading]:
    def run(path: Path, dpi: int) -> Reading:
        settings = OcrSettings(dpi=dpi, detect_orientation=detect)
        started = time.perf_counter()
        pdf = pypdfium2.PdfDocument(path)
        pages = [ocr_page(pdf[i], i, settings) for i in range(len(pdf))]
        seconds = time.perf_counter() - started
        text = "\n\n".join(p.text for p in pages)
        return Reading(text, len(pages), seconds, [p.rotation for p in pages])

    return run


_RAPID: list[object] = []


def _rapidocr_engine() -> object:
    if not _RAPID:
        from rapidocr import RapidOCR

        _RAPID.append(RapidOCR())
    return _RAPID[0]


def _rapidocr(path: Path, dpi: int) -> Reading:
    import numpy

    engine = _rapidocr_engine()
    started = time.perf_counter()
    pdf = pypdfium2.PdfDocument(path)
    texts = []
    for page in pdf:
        image = numpy.asarray(page.render(scale=dpi / 72).to_pil().convert("RGB"))
        result = engine(image)  # type: ignore[operator]
        texts.append("\n".join(result.txts or ()))
    seconds = time.perf_counter() - started
    return Reading("\n\n".join(texts), len(pdf), seconds, [])


def rapidocr_available() -> str | None:
    """None when RapidOCR can run here, else why not."""
    try:
        import onnxruntime  # noqa: F401
        import rapidocr  # noqa: F401
    except ImportError as exc:
        return f"unavailable ({exc.name} not installed)"
    return None


ENGINES: dict[str, Callable[[Path, int], Reading]] = {
    "tesseract": _tesseract(True),
    "tesseract-no-osd": _tesseract(False),
    "rapidocr": _rapidocr,
}


def score(reading: Reading, reference: str) -> tuple[float, float, float]:
    ref_words = words(reference_text(reference)[0])
    ours = words(reading.text)
    ref_bag, our_bag = Counter(ref_words), Counter(ours)
    matched = sum(min(n, ref_bag[w]) for w, n in our_bag.items())
    coverage = matched / max(len(ref_words), 1)
    precision = matched / len(ours) if ours else 0.0
    return coverage, precision, order_agreement(ref_words, ours)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpi", default="150,200,300", help="comma-separated (corpus set)")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--rasterised", action="store_true", help="also scan the text PDFs")
    args = parser.parse_args(argv)
    dpis = [int(d) for d in args.dpi.split(",")]
    engines = [e for e in args.engines.split(",") if e]
    unknown = set(engines) - set(ENGINES)
    if unknown:
        parser.error(f"unknown engines {sorted(unknown)}; known: {', '.join(ENGINES)}")
    fp = engine_fingerprint(OcrSettings())
    print(f"tesseract {fp.get('version')} (languages {fp['languages']}, OMP_THREAD_LIMIT=1)")
    rapid_missing = rapidocr_available()
    if "rapidocr" in engines and rapid_missing is None:
        started = time.perf_counter()
        _rapidocr_engine()
        print(f"rapidocr load s: {time.perf_counter() - started:.2f}")

    with tempfile.TemporaryDirectory(prefix="ocr-bench-") as tmp:
        plan = [(case, dpi) for case in corpus_cases() for dpi in dpis]
        if args.rasterised:
            plan += [(case, 200) for case in rasterised_cases(Path(tmp))]
        print()
        print("| set | file | engine | dpi | cov | prec | order | s/page | cpu s/page | rotation |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
        totals: dict[tuple[str, str, int], list[tuple[float, float, float, float]]] = {}
        for case, dpi in plan:
            for engine in engines:
                if engine == "rapidocr" and rapid_missing:
                    if (case, dpi) == plan[0]:
                        print(f"| - | - | rapidocr | - | - | - | - | - | - | {rapid_missing} |")
                    continue
                cpu_before = _cpu()
                reading = ENGINES[engine](case.pdf, dpi)
                cpu = (_cpu() - cpu_before) / max(reading.pages, 1)
                cov, prec, order = score(reading, case.reference)
                per_page = reading.seconds / max(reading.pages, 1)
                rotation = ",".join(str(r) for r in reading.rotations) or "-"
                print(
                    f"| {case.set} | {case.name} | {engine} | {dpi} | {cov:.3f} | {prec:.3f} "
                    f"| {order:.3f} | {per_page:.2f} | {cpu:.2f} | {rotation} |",
                    flush=True,
                )
                totals.setdefault((case.set, engine, dpi), []).append((cov, prec, per_page, cpu))
        print()
        print(
            "| set | engine | dpi | files | mean cov | min cov | mean prec | s/page | cpu s/page |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for (set_name, engine, dpi), rows in sorted(totals.items()):
            n = len(rows)
            covs = [r[0] for r in rows]
            print(
                f"| {set_name} | {engine} | {dpi} | {n} | {sum(covs) / n:.3f} | {min(covs):.3f} "
                f"| {sum(r[1] for r in rows) / n:.3f} | {sum(r[2] for r in rows) / n:.2f} "
                f"| {sum(r[3] for r in rows) / n:.2f} |"
            )


def _cpu() -> float:
    """CPU seconds of this process and its finished children (Tesseract runs as a child)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


if __name__ == "__main__":
    main()
