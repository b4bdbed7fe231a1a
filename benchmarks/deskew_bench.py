"""Skewed scans: OCR word coverage and CPU per page with and without straightening (deskew).

Run::

    .venv/bin/python -m benchmarks.deskew_bench                 # skews 0, 3 and -10 degrees
    .venv/bin/python -m benchmarks.deskew_bench --skews 0 10

Pages: the upright corpus scan (``../shared/corpus/ocr/ocr_test.pdf``) and every English PDF of
``../shared/corpus/pdf`` rendered at 200 dpi (``ocr_bench``'s *rasterised* set, upright), each
turned counter-clockwise by the skew in its raster (corners in the page's own shade) and saved
as an image-only PDF.
Each is read by ``ocr_page`` twice in this process, one reading after the other: as shipped
("deskew") and with straightening switched off ("as is": the code before it). Coverage as in
``ocr_bench``; CPU s/page counts this process and Tesseract's. ``estimate ms/page`` is the CPU
time of ``estimate_skew`` alone (this process), what a straight page pays more.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pypdfium2
from PIL import Image

from agrag_pipeline.parsing import ocr
from agrag_pipeline.settings import OcrSettings
from benchmarks.ocr_bench import CORPUS, Reading, _cpu, _english, score

DPI = 200


def _documents() -> list[tuple[str, list[Image.Image], str]]:
    """(name, page images at 200 dpi, ground-truth Markdown) of each document."""
    found = []
    scan = CORPUS / "ocr" / "ocr_test.pdf"
    sources = [(scan, CORPUS / "ocr" / "groundtruth" / "ocr_test.md")]
    for path in sorted((CORPUS / "pdf").glob("*.pdf")):
        reference = CORPUS / "pdf" / "groundtruth" / f"{path.stem}.md"
        if reference.is_file() and _english(reference.read_text("utf-8")):
            sources.append((path, reference))
    for path, reference in sources:
        pdf = pypdfium2.PdfDocument(path)
        images = [page.render(scale=DPI / 72, grayscale=True).to_pil() for page in pdf]
        pdf.close()
        found.append((path.stem, images, reference.read_text("utf-8")))
    return found


def _skewed(image: Image.Image, degrees: float) -> Image.Image:
    """The page laid askew on a scanner whose lid is the paper's colour: turned counter-clockwise
    by ``degrees``, the corners filled with the page's most common shade (white corners around
    a grey page make Tesseract read no word, skewed or not)."""
    if not degrees:
        return image
    histogram = image.histogram()
    paper = max(range(256), key=histogram.__getitem__)
    return image.rotate(degrees, expand=True, fillcolor=paper)


def _read(path: Path, deskew: bool) -> tuple[Reading, float]:
    straighten = ocr._straighten
    if not deskew:
        ocr._straighten = lambda image: (image, None)
    try:
        started = _cpu()
        pdf = pypdfium2.PdfDocument(path)
        pages = [ocr.ocr_page(pdf[i], i, OcrSettings(dpi=DPI)) for i in range(len(pdf))]
        pdf.close()
        cpu = _cpu() - started
    finally:
        ocr._straighten = straighten
    text = "\n\n".join(p.text for p in pages)
    return Reading(text, len(pages), 0.0, [p.rotation for p in pages]), cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skews", type=float, nargs="+", default=[0.0, 3.0, -10.0])
    args = parser.parse_args(argv)
    documents = _documents()
    # One reading first, not counted: Tesseract's version and languages (cached) and the
    # modules a first page imports would otherwise fall on the first row's first reading.
    _read(CORPUS / "ocr" / "ocr_test.pdf", deskew=True)
    estimates: list[float] = []
    print(
        "| document | pages | skew | measured | cov as is | cov deskew | CPU s/page as is "
        "| CPU s/page deskew |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, images, reference in documents:
            for skew in args.skews:
                turned = [_skewed(im, skew) for im in images]
                measured = []
                for im in turned:
                    started = time.process_time()
                    measured.append(ocr.estimate_skew(im))
                    estimates.append(time.process_time() - started)
                out = Path(tmp) / f"{name}_{skew:g}.pdf"
                turned[0].save(out, "PDF", resolution=DPI, save_all=True, append_images=turned[1:])
                plain, plain_cpu = _read(out, deskew=False)
                straight, straight_cpu = _read(out, deskew=True)
                n = len(images)
                shown = ", ".join(f"{m:g}" for m in sorted(set(measured)))
                print(
                    f"| {name} | {n} | {skew:g} | {shown} | {score(plain, reference)[0]:.3f} "
                    f"| {score(straight, reference)[0]:.3f} | {plain_cpu / n:.2f} "
                    f"| {straight_cpu / n:.2f} |",
                    flush=True,
                )
    estimates.sort()
    median = estimates[len(estimates) // 2] * 1000
    print(
        f"\nestimate_skew: {len(estimates)} pages, median {median:.0f} ms, "
        f"max {estimates[-1] * 1000:.0f} ms CPU"
    )


if __name__ == "__main__":
    main()
