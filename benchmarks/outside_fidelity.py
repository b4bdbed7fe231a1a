"""Outside documents: our PDF text against poppler's ``pdftotext``, and reading quality everywhere.

Run::

    nice .venv/bin/python -m benchmarks.outside_fidelity --root /work/mixed/raw
    nice .venv/bin/python -m benchmarks.outside_fidelity --root DIR --save /tmp/outside.json
    .venv/bin/python -m benchmarks.outside_fidelity --load /tmp/outside.json --write

Why: the corpus and its held-out twins read well against docling; real files from elsewhere
showed defects the corpus never had (issue 20). This reads every file under ``--root`` that we
have a parser for, as a user's folder would be read (``parse_document``, default settings), and
reports:

- **PDFs against ``pdftotext``** (poppler, run as a command, never imported: GPL): word coverage
  (share of pdftotext's words found in ours) and precision (share of ours found in pdftotext's),
  with ``fidelity.words`` and its bag matching; the ``ff`` count: words with ``ff``/``ffi``/``ffl``
  in pdftotext's text and how many of them ours misses (the ligature that lost an ``f``);
  the PDFs not in English (our ``language``) with the same figures. docling-parse is compared too
  when it is importable (``fidelity.docling_parse_text``);
- **reading quality** (``reading_quality``, ``parsing/quality.py``) over every document read: its
  distribution per format and overall, and the documents below ``warn_below`` with their reasons;
- **encodings**: the ``text_encoding`` our text parsers recorded, counted;
- **images**: how many were read, whether they carry a DPI tag, and coverage of ours against
  plain ``tesseract`` on the same image.

Affordable on a shared machine: each file is parsed in a forked child with a hard time cap
(``--timeout``); files over ``--max-mb`` or PDFs over ``--max-pages`` are skipped with a note.
Seconds are the child's CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.connection
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from agrag_pipeline.parsing import parse_document, quality  # noqa: E402
from agrag_pipeline.parsing.detect import detect_media_type  # noqa: E402
from agrag_pipeline.parsing.errors import DocumentError  # noqa: E402
from agrag_pipeline.settings import QualitySettings  # noqa: E402
from benchmarks.fidelity import _bag_match, docling_parse_text, words  # noqa: E402

WARN_BELOW = QualitySettings().warn_below
SECTION = "## Outside documents: PDFs against pdftotext, and reading quality"
#: The section's last subsection, written by hand after reading the worst files; kept on rewrite.
BY_HAND = "### Read by hand"
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp", ".gif"}
#: Words with a ligature pair; pdftotext keeps a ligature glyph (U+FB00-FB04), NFKC splits it.
_FF = re.compile(r"ff")
#: Fewer reference words than this: the PDF has no text layer to compare against (a scan).
MIN_REFERENCE_WORDS = 20
#: The metadata keys kept per document.
_KEPT = (
    quality.SCORE_KEY,
    quality.REASONS_KEY,
    quality.LANGUAGE_KEY,
    "text_encoding",
    "text_encoding_rule",
    quality.OCR_WORDS_KEY,
    quality.OCR_CONFIDENCE_KEY,
    quality.UNMAPPED_KEY,
    quality.GLYPHS_KEY,
)


@dataclass
class Compared:
    """One engine's text against a reference text (words, bags)."""

    coverage: float | None = None
    precision: float | None = None
    reference_words: int = 0
    ff_words: int = 0
    ff_missing: int = 0
    ff_examples: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class FileResult:
    path: str
    fmt: str
    media_type: str | None = None
    status: str = "ok"  # ok | no text | failed: <Error> | timeout | skipped: <why> | unsupported
    detail: str = ""
    seconds: float = 0.0
    pages: int = 0
    size: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    pdftotext: Compared | None = None
    docling_parse: Compared | None = None
    image_dpi: str | None = None
    tesseract: Compared | None = None


def compare(ours_text: str, reference_text: str) -> Compared:
    """Coverage and precision of ``ours_text`` against ``reference_text``, and the ff count."""
    ref_words, our_words = words(reference_text), words(ours_text)
    ref_bag, our_bag = Counter(ref_words), Counter(our_words)
    out = Compared(reference_words=len(ref_words))
    if len(ref_words) >= MIN_REFERENCE_WORDS:
        matched = _bag_match(our_bag, ref_bag)
        out.coverage = matched / len(ref_words)
        out.precision = matched / len(our_words) if our_words else 0.0
    for word, count in ref_bag.items():
        if _FF.search(word):
            out.ff_words += count
            missing = max(0, count - our_bag[word])
            if missing:
                out.ff_missing += missing
                if len(out.ff_examples) < 3:
                    out.ff_examples.append(word)
    return out


# -- parsing, one forked child per file ----------------------------------------------------


def _parse_child(raw: bytes, key: str, budget: float, conn: Any) -> None:
    started = time.process_time()
    try:
        parsed = parse_document(raw, key, time_budget_s=budget)
    except DocumentError as exc:
        conn.send(("failed: " + type(exc).__name__, str(exc), time.process_time() - started))
        return
    except BaseException as exc:
        conn.send((f"crashed: {type(exc).__name__}", str(exc), time.process_time() - started))
        return
    seconds = time.process_time() - started
    metadata = {k: parsed.document.metadata[k] for k in _KEPT if k in parsed.document.metadata}
    if quality.SCORE_KEY in metadata:  # recorded as a string, as the sections table keeps it
        metadata[quality.SCORE_KEY] = float(metadata[quality.SCORE_KEY])
    pages = max((span.box.page for span in parsed.layout), default=0)
    status = "ok" if parsed.text_layer.strip() else "no text"
    conn.send((status, parsed.text_layer, seconds, metadata, pages, parsed.warnings[:3]))


def parse_in_child(raw: bytes, key: str, timeout: float) -> tuple[str, str, float, dict, int]:
    """(status, text or error, CPU seconds, metadata, pages); killed past ``timeout`` wall s."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_parse_child, args=(raw, key, timeout, sender), daemon=True)
    child.start()
    sender.close()
    try:
        # A child that dies without sending closes its end: ``poll`` is then true and recv fails.
        if not receiver.poll(timeout + 30):
            child.kill()
            child.join()
            return "timeout", f"no result in {timeout + 30:.0f} s (killed)", timeout, {}, 0
        try:
            message = receiver.recv()
        except EOFError:
            child.join()
            return "crashed", f"child exited with {child.exitcode}", 0.0, {}, 0
    finally:
        receiver.close()
    child.join()
    if len(message) == 3:
        status, detail, seconds = message
        return status, detail, seconds, {}, 0
    status, text, seconds, metadata, pages, warnings = message
    if warnings:
        metadata["warnings"] = warnings
    return status, text, seconds, metadata, pages


# -- peers -------------------------------------------------------------------------------------


def pdftotext(path: Path, timeout: float) -> tuple[str | None, str | None]:
    """poppler's text of the PDF (reading order, no layout), or None and why."""
    try:
        done = subprocess.run(
            ["pdftotext", "-q", "-enc", "UTF-8", str(path), "-"],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"pdftotext over {timeout:.0f} s"
    if done.returncode != 0:
        return None, f"pdftotext exit {done.returncode}"
    return done.stdout.decode("utf-8", errors="replace"), None


def tesseract_text(path: Path, timeout: float) -> tuple[str | None, str | None]:
    """Plain ``tesseract IMAGE stdout`` (eng, its defaults), or None and why."""
    try:
        done = subprocess.run(
            ["tesseract", str(path), "stdout"],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"tesseract over {timeout:.0f} s"
    if done.returncode != 0:
        return None, f"tesseract exit {done.returncode}"
    return done.stdout.decode("utf-8", errors="replace"), None


def image_dpi(path: Path) -> str:
    """The image's resolution tag as Pillow reads it ("none" when untagged)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            dpi = image.info.get("dpi")
            size = f"{image.width}x{image.height}"
    except Exception as exc:
        return f"unreadable ({type(exc).__name__})"
    if not dpi:
        return f"none ({size})"
    return f"{round(float(dpi[0]))} ({size})"


def pdf_pages(path: Path) -> int | None:
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(path)
    except Exception:
        return None
    try:
        return len(pdf)
    finally:
        pdf.close()


def docling_parse_available() -> bool:
    try:
        import docling_parse  # noqa: F401
    except ImportError:
        return False
    return True


# -- the run -----------------------------------------------------------------------------------


def read_one(path: Path, root: Path, args: argparse.Namespace, with_docling: bool) -> FileResult:
    rel = path.relative_to(root).as_posix()
    result = FileResult(rel, path.suffix.lower() or "(none)", size=path.stat().st_size)
    raw = path.read_bytes()
    result.media_type = detect_media_type(rel, raw[:8192])
    if result.media_type is None:
        result.status = "unsupported"
        return result
    if result.size > args.max_mb * 1024 * 1024:
        result.status = f"skipped: over {args.max_mb} MB"
        return result
    is_pdf = result.media_type == "application/pdf"
    if is_pdf:
        pages = pdf_pages(path)
        if pages is not None and pages > args.max_pages:
            result.status = f"skipped: {pages} pages"
            result.pages = pages
            return result
    status, text, seconds, metadata, pages = parse_in_child(raw, rel, args.timeout)
    result.status, result.seconds, result.metadata, result.pages = status, seconds, metadata, pages
    if status not in ("ok", "no text"):
        result.detail = text[:200]
        text = ""
    if is_pdf:
        reference, why = pdftotext(path, args.timeout)
        result.pdftotext = (
            compare(text, reference) if reference is not None else Compared(error=why)
        )
        if with_docling:
            peer = docling_parse_text(path, "pdf")
            result.docling_parse = (
                Compared(error=peer.error) if peer.error else compare(peer.text, reference or "")
            )
    if path.suffix.lower() in IMAGE_EXTENSIONS:
        result.image_dpi = image_dpi(path)
        reference, why = tesseract_text(path, args.timeout)
        result.tesseract = (
            compare(text, reference) if reference is not None else Compared(error=why)
        )
    return result


def run(args: argparse.Namespace) -> list[FileResult]:
    root = args.root.resolve()
    if shutil.which("pdftotext") is None:
        raise SystemExit("pdftotext not found: apt-get install poppler-utils (benchmark only)")
    with_docling = docling_parse_available()
    # Warm the word lists once in this process: every forked child then finds them loaded.
    parse_document(b"This is a short English note about the different offices.\n" * 5, "w.txt")
    files = sorted(p for p in root.rglob("*") if p.is_file() and "groundtruth" not in p.parts)
    if args.only:
        files = [p for p in files if args.only in p.as_posix()]
    results = []
    for index, path in enumerate(files, 1):
        result = read_one(path, root, args, with_docling)
        results.append(result)
        score = result.metadata.get(quality.SCORE_KEY)
        cov = result.pdftotext.coverage if result.pdftotext else None
        print(
            f"[{index}/{len(files)}] {result.path}: {result.status} {result.seconds:.1f}s"
            + (f" q={score:.2f}" if score is not None else "")
            + (f" cov={cov:.3f}" if cov is not None else ""),
            file=sys.stderr,
            flush=True,
        )
    return results


# -- the report --------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _quartiles(values: list[float]) -> tuple[float, float, float, float, float]:
    ordered = sorted(values)
    if len(ordered) == 1:
        return (ordered[0],) * 5
    q1, median, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return ordered[0], q1, median, q3, ordered[-1]


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _group(path: str) -> str:
    return path.split("/", 1)[0]


def report(results: list[FileResult], command: str, with_docling: bool) -> str:
    out: list[str] = [SECTION, ""]
    out.append(
        f"Reproduce: `{command}` (poppler-utils' `pdftotext`, benchmark only, never in setup)."
    )
    out.append("")
    statuses = Counter(
        r.status.split(":")[0] if r.status.startswith("skipped") else r.status for r in results
    )
    read = [r for r in results if r.status != "unsupported"]
    unsupported = Counter(r.fmt for r in results if r.status == "unsupported")
    out.append(
        f"{len(results)} files under the root; {len(read)} of a format we read "
        f"({', '.join(f'{n} {s}' for s, n in statuses.most_common() if s != 'unsupported')}); "
        f"{statuses['unsupported']} of no format we read "
        f"({', '.join(f'{n} {e}' for e, n in unsupported.most_common(12))}"
        f"{', …' if len(unsupported) > 12 else ''})."
    )
    out.append("")
    empty = [r for r in read if r.status == "failed: EmptyDocumentError"]
    if empty:
        out.append(
            f"{len(empty)} files are empty (0 bytes) in this copy, each refused with a clear "
            "error: " + ", ".join(r.path for r in empty) + "."
        )
        out.append("")
    not_ok = [r for r in read if r.status not in ("ok", "no text") and r not in empty]
    if not_ok:
        out += ["Not read (skipped for the run's caps, or failed):", ""]
        out += ["| file | status | detail |", "|---|---|---|"]
        for r in not_ok:
            out.append(f"| {r.path} | {r.status} | {_cell(r.detail, 140)} |")
        out.append("")

    pdfs = [r for r in read if r.media_type == "application/pdf"]
    compared = [r for r in pdfs if r.pdftotext and r.pdftotext.coverage is not None]
    no_layer = [
        r for r in pdfs if r.pdftotext and r.pdftotext.coverage is None and not r.pdftotext.error
    ]
    out += ["### PDFs against pdftotext", ""]
    out.append(
        f"{len(pdfs)} PDFs; {len(compared)} with a text layer pdftotext reads "
        f"({MIN_REFERENCE_WORDS}+ words) are compared; {len(no_layer)} with fewer words there "
        "(scans ours reads by OCR, figures with a few labels). CPU s: this process's seconds "
        "(OCR's Tesseract and LibreOffice run in child processes and are not counted)."
        + (
            ""
            if with_docling
            else " docling-parse is not installed here (installing docling is too heavy for "
            "this machine now), so only pdftotext is the peer."
        )
    )
    out.append("")
    out += [
        "| source | PDFs | median cov | mean cov | min cov | median prec | mean prec | min prec "
        "| ff words (pdftotext) | ff words missing in ours | CPU s (ours) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    groups: dict[str, list[FileResult]] = {}
    for r in compared:
        groups.setdefault(_group(r.path), []).append(r)
    for name, group in [*sorted(groups.items()), ("all", compared)]:
        if not group:
            continue
        covs = [r.pdftotext.coverage or 0.0 for r in group if r.pdftotext]
        precs = [r.pdftotext.precision or 0.0 for r in group if r.pdftotext]
        ff = sum(r.pdftotext.ff_words for r in group if r.pdftotext)
        ff_missing = sum(r.pdftotext.ff_missing for r in group if r.pdftotext)
        label = f"**{name}**" if name == "all" else name
        out.append(
            f"| {label} | {len(group)} | {_f(statistics.median(covs))} "
            f"| {_f(statistics.mean(covs))} | {_f(min(covs))} | {_f(statistics.median(precs))} "
            f"| {_f(statistics.mean(precs))} | {_f(min(precs))} | {ff} | {ff_missing} "
            f"| {sum(r.seconds for r in group):.0f} |"
        )
    out.append("")
    ff_files = [r for r in compared if r.pdftotext and r.pdftotext.ff_words]
    ff_missing_files = [r for r in ff_files if r.pdftotext and r.pdftotext.ff_missing]
    out.append(
        f"`ff`: {len(ff_files)} PDFs have words with ff/ffi/ffl in pdftotext's text; ours misses "
        f"some in {len(ff_missing_files)}"
        + (
            ": "
            + "; ".join(
                f"{r.path} {r.pdftotext.ff_missing} of {r.pdftotext.ff_words} "
                f"({', '.join(r.pdftotext.ff_examples)})"
                for r in ff_missing_files
                if r.pdftotext
            )
            if ff_missing_files
            else ""
        )
        + "."
    )
    out.append("")

    def pdf_row(r: FileResult) -> str:
        assert r.pdftotext is not None
        c = r.pdftotext
        meta = r.metadata
        return (
            f"| {r.path} | {r.pages} | {_f(c.coverage)} | {_f(c.precision)} | {c.reference_words} "
            f"| {c.ff_missing}/{c.ff_words} | {meta.get(quality.LANGUAGE_KEY, '-')} "
            f"| {_f(meta.get(quality.SCORE_KEY), 2)} | {r.seconds:.1f} |"
        )

    head = [
        "| PDF | pages | cov | prec | words (pdftotext) | ff missing/all | language | quality "
        "| CPU s |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    worst = sorted(
        compared,
        key=lambda r: (
            min(r.pdftotext.coverage or 0.0, r.pdftotext.precision or 0.0) if r.pdftotext else 0.0
        ),
    )[:12]
    out += ["The twelve lowest (by the lower of coverage and precision):", "", *head]
    out += [pdf_row(r) for r in worst]
    out.append("")
    foreign = [r for r in compared if r.metadata.get(quality.LANGUAGE_KEY, "en") != "en"]
    unknown_language = [r for r in compared if quality.LANGUAGE_KEY not in r.metadata]
    out += [
        f"PDFs not in English (our `language`; {len(unknown_language)} more have no language "
        "recognised):",
        "",
        *head,
    ]
    out += [pdf_row(r) for r in sorted(foreign, key=lambda r: r.path)]
    out.append("")
    if no_layer:
        out.append(
            f"Not compared (pdftotext reads under {MIN_REFERENCE_WORDS} words): "
            + "; ".join(
                f"{r.path} ({r.metadata.get(quality.OCR_WORDS_KEY, 0)} OCR words, quality "
                f"{_f(r.metadata.get(quality.SCORE_KEY), 2)})"
                for r in no_layer
            )
            + "."
        )
        out.append("")
    out += ["<details><summary>Every compared PDF</summary>", "", *head]
    out += [pdf_row(r) for r in sorted(compared, key=lambda r: r.path)]
    out += ["", "</details>", ""]

    scored = [r for r in read if quality.SCORE_KEY in r.metadata]
    out += ["### Reading quality over the outside documents", ""]
    no_score = [r for r in read if r.status in ("ok", "no text") and r not in scored]
    out.append(
        f"{len(scored)} documents scored (every format we read); {len(no_score)} read with no "
        f"words to score. Flagged: below `warn_below` {WARN_BELOW}."
    )
    out.append("")
    out += [
        "| format | documents | min | q1 | median | q3 | max | < 0.8 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    by_format: dict[str, list[float]] = {}
    for r in scored:
        by_format.setdefault(r.fmt, []).append(float(r.metadata[quality.SCORE_KEY]))
    all_scores = [s for values in by_format.values() for s in values]
    for name, values in [*sorted(by_format.items()), ("**all**", all_scores)]:
        if not values:
            continue
        lo, q1, med, q3, hi = _quartiles(values)
        flagged = sum(1 for v in values if v < WARN_BELOW)
        out.append(
            f"| {name} | {len(values)} | {lo:.2f} | {q1:.2f} | {med:.2f} | {q3:.2f} | {hi:.2f} "
            f"| {flagged} |"
        )
    out.append("")
    flagged_docs = sorted(
        (r for r in scored if float(r.metadata[quality.SCORE_KEY]) < WARN_BELOW),
        key=lambda r: float(r.metadata[quality.SCORE_KEY]),
    )
    out += [
        f"Flagged ({len(flagged_docs)}):",
        "",
        "| score | document | language | reasons |",
        "|---:|---|---|---|",
    ]
    for r in flagged_docs:
        out.append(
            f"| {float(r.metadata[quality.SCORE_KEY]):.2f} | {r.path} "
            f"| {r.metadata.get(quality.LANGUAGE_KEY, '-')} "
            f"| {_cell(r.metadata.get(quality.REASONS_KEY, ''), 220)} |"
        )
    out.append("")

    encoded = [r for r in read if "text_encoding" in r.metadata]
    encodings = Counter(str(r.metadata["text_encoding"]) for r in encoded)
    out += ["### Encodings", ""]
    out.append(
        f"`text_encoding` recorded for {len(encoded)} text, HTML and markup documents: "
        + ", ".join(f"{name} {n}" for name, n in encodings.most_common())
        + "."
    )
    legacy = [r for r in encoded if str(r.metadata["text_encoding"]).lower() not in ("utf-8",)]
    if legacy:
        out += ["", "| document | encoding | rule | quality |", "|---|---|---|---:|"]
        for r in sorted(legacy, key=lambda r: r.path):
            out.append(
                f"| {r.path} | {r.metadata['text_encoding']} "
                f"| {r.metadata.get('text_encoding_rule', '-')} "
                f"| {_f(r.metadata.get(quality.SCORE_KEY), 2)} |"
            )
    out.append("")

    images = [r for r in read if r.image_dpi is not None]
    out += ["### Images", ""]
    untagged = [r for r in images if r.image_dpi and r.image_dpi.startswith("none")]
    read_ok = [r for r in images if r.status in ("ok", "no text")]
    out.append(
        f"{len(images)} images, {len(untagged)} without a DPI tag; {len(read_ok)} read "
        f"({sum(1 for r in images if r.status == 'ok')} with words, "
        f"{sum(1 for r in images if r.status == 'no text')} without: pictures). Coverage and "
        f"precision of ours against plain `tesseract IMAGE stdout` (eng, where it reads "
        f"{MIN_REFERENCE_WORDS}+ words):"
    )
    out += [
        "",
        "| image | DPI tag (size) | status | words (tesseract) | cov | prec | language "
        "| quality | CPU s |",
        "|---|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in sorted(images, key=lambda r: r.path):
        t = r.tesseract or Compared()
        out.append(
            f"| {r.path} | {r.image_dpi} | {r.status} | {t.reference_words} | {_f(t.coverage)} "
            f"| {_f(t.precision)} | {r.metadata.get(quality.LANGUAGE_KEY, '-')} "
            f"| {_f(r.metadata.get(quality.SCORE_KEY), 2)} | {r.seconds:.1f} |"
        )
    out.append("")
    return "\n".join(out)


def write_section(rendered: str, path: Path) -> None:
    """Replace (or append) this section of ``path``, keeping the rest as it is."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", flags=re.S | re.M)
    old = pattern.search(text)
    if old:
        # What was read by hand stays: only the measured part is replaced.
        kept = re.search(rf"^{re.escape(BY_HAND)}\n.*", old.group(0), flags=re.S | re.M)
        new = rendered.rstrip("\n") + "\n\n" + (kept.group(0).rstrip("\n") + "\n\n" if kept else "")
        text = text[: old.start()] + new + text[old.end() :]
    else:
        text = text.rstrip("\n") + "\n\n" + rendered
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")


def _from_json(data: dict[str, Any]) -> FileResult:
    for key in ("pdftotext", "docling_parse", "tesseract"):
        if data.get(key) is not None:
            data[key] = Compared(**data[key])
    return FileResult(**data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, help="folder of outside documents (read-only)")
    parser.add_argument("--only", help="only files whose path contains this")
    parser.add_argument("--timeout", type=float, default=90.0, help="parse budget per file, s")
    parser.add_argument("--max-mb", type=float, default=4.0, help="skip larger files")
    parser.add_argument("--max-pages", type=int, default=100, help="skip longer PDFs")
    parser.add_argument("--save", type=Path, help="also write the per-file results as JSON")
    parser.add_argument("--load", type=Path, help="report from saved results; parse nothing")
    parser.add_argument("--write", action="store_true", help="write the section into --out")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "BENCHMARKS.md")
    args = parser.parse_args(argv)
    if args.load:
        saved = json.loads(args.load.read_text(encoding="utf-8"))
        results = [_from_json(item) for item in saved["results"]]
        command, with_docling = saved["command"], saved["docling_parse"]
    elif args.root:
        results = run(args)
        command = (
            f"nice .venv/bin/python -m benchmarks.outside_fidelity --root {args.root} "
            f"--timeout {args.timeout:g} --max-mb {args.max_mb:g} --max-pages {args.max_pages}"
        )
        with_docling = docling_parse_available()
        if args.save:
            payload = {
                "command": command.strip(),
                "docling_parse": with_docling,
                "results": [asdict(r) for r in results],
            }
            args.save.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    else:
        parser.error("--root or --load is required")
    rendered = report(results, command.strip(), with_docling)
    print(rendered)
    if args.write:
        write_section(rendered, args.out)
        print(f"\nwrote {SECTION!r} into {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
