"""Text fidelity against the corpus ground truth: ours and peers, per file, in one process.

Run::

    .venv/bin/python -m benchmarks.fidelity                       # every folder with groundtruth/
    .venv/bin/python -m benchmarks.fidelity --formats pdf,ocr     # only these corpus folders
    .venv/bin/python -m benchmarks.fidelity --peers none          # ours only
    .venv/bin/python -m benchmarks.fidelity --write               # also BENCHMARKS.md "## Fidelity"
    .venv/bin/python -m benchmarks.fidelity --corpus DIR          # another corpus, same layout

It is generic over the corpus: every folder ``../shared/corpus/<format>/`` that has a
``groundtruth/`` holds ``<name>.md`` (docling's conversion of ``<name>.<ext>`` beside it), and
every such pair is scored. Ours is ``parse_document`` on the raw bytes (the text layer and its
section tree); a peer is a function ``Path -> PeerResult`` registered in ``PEERS`` for the
formats it reads (``PEER_FORMATS``): add one there for a new format (docx, pptx, …) and it is
run and tabled like the others. Peers run in the same process on the same files.

Scores (words: NFKC, case-folded, runs of letters/digits, so punctuation and Markdown syntax
never count; bags of words with counts):
- ``cov`` word coverage: share of the reference's words found in ours (counts matched);
- ``prec`` word precision: share of our words found in the reference;
- ``hP``/``hR``/``hF1``: our section headings against the reference's ``#`` headings, each
  compared as its bag of words (so "1 Introduction" matches "Introduction 1");
- ``cid`` ``(cid:N)`` placeholders, ``ctrl`` control/replacement characters (other than
  newline and tab) in our text;
- ``rtl`` right-to-left words (Arabic, Hebrew, …) of the reference found in ours as written
  (logical order), over those the reference has (``-`` when it has none);
- ``order`` reading-order agreement: over the words that occur exactly once in both texts, the
  longest run in the same relative order (longest increasing subsequence) over their number;
- ``pages/s`` (paged formats) or ``files/s``; ``tables`` table sections found;
- ``cellF1`` and ``rowF1``: tables against the reference's Markdown tables (``|`` rows), as
  bags over all of a file's tables: of non-empty cells (a cell's words) and of rows (each cell's
  words in order, trailing empty cells dropped). A cell split in two or two cells run together
  lose cells; a row shifted a column, or two rows read as one, lose rows. ``-`` where the
  reference has no table (docling missed some that we find: those are not scored) or the
  engine gives no table structure.
Figures are one pass (timing includes opening the file); ``--repeats`` takes the best of N.
Rates are CPU seconds of this process (``time.process_time``: one core, and steady when other
work shares the machine). ``--memory`` also parses PDFs of 50 to 500 pages (the corpus pages
repeated), each in a fresh process, and prints the peak resident memory of each.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import time
import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = (REPO_ROOT / ".." / "shared" / "corpus").resolve()
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from agrag_pipeline.chunking.markup import (  # noqa: E402
    inline_spans,
    invisible_spans,
    replaced_spans,
    within,
)
from agrag_pipeline.models.chunk import embedded_text  # noqa: E402
from agrag_pipeline.parsing import parse_document  # noqa: E402
from agrag_pipeline.parsing.errors import DocumentError  # noqa: E402
from agrag_pipeline.parsing.markdown import merged_touching  # noqa: E402

PAGED = {"pdf", "ocr"}
_WORD = re.compile(r"[^\W_]+")
_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<!--.*?-->", re.S)
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


@dataclass
class PeerResult:
    """What one engine gave for one file."""

    text: str
    headings: list[str] | None = None  # None: the engine gives no headings
    tables: int | None = None
    pages: int = 0
    seconds: float = 0.0
    error: str | None = None
    #: Each table's rows of cell texts (None: the engine gives no table structure).
    table_rows: list[list[list[str]]] | None = None


@dataclass
class Score:
    format: str
    file: str
    engine: str
    coverage: float = 0.0
    precision: float = 0.0
    heading_p: float | None = None
    heading_r: float | None = None
    heading_f1: float | None = None
    cid: int = 0
    control: int = 0
    rtl: float | None = None
    order: float = 0.0
    rate: float = 0.0  # pages/s or files/s
    tables: int | None = None
    cell_f1: float | None = None
    row_f1: float | None = None
    error: str | None = None
    extra: dict[str, float] = field(default_factory=dict)


def words(text: str) -> list[str]:
    """Normalised words in order: NFKC, case-folded runs of letters and digits."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _is_rule(line: str) -> bool:
    """Whether a Markdown line is a table's rule (``| - | - |``), not a row."""
    return bool(_TABLE_RULE.match(line)) and "-" in line


def reference_text(markdown: str) -> tuple[str, list[str]]:
    """The reference's plain text (Markdown syntax removed) and its ``#`` headings."""
    headings: list[str] = []
    lines: list[str] = []
    for line in _MD_IMAGE.sub(" ", markdown).splitlines():
        stripped = line.strip()
        match = re.match(r"^(#{1,6})\s+(.*)$", stripped)
        if match:
            headings.append(match.group(2).strip())
            stripped = match.group(2)
        elif _is_rule(stripped):
            continue
        lines.append(_MD_LINK.sub(r"\1", stripped))
    return "\n".join(lines), headings


def markdown_tables(markdown: str) -> list[list[list[str]]]:
    """The reference's Markdown tables: runs of ``|`` lines, each row's cells (rules left out;
    ``\\|`` inside a cell is a pipe, not a border)."""
    tables: list[list[list[str]]] = []
    previous_was_row = False
    for line in markdown.splitlines():
        stripped = line.strip()
        if not stripped.startswith("|"):
            previous_was_row = False
            continue
        if not previous_was_row:
            tables.append([])
        previous_was_row = True
        if _is_rule(stripped):
            continue
        tables[-1].append(table_cells(stripped))
    return [t for t in tables if t]


def table_cells(row: str) -> list[str]:
    """A table row's cells: ``| a | b |`` (Markdown, our PDF tables) or ``a | b`` (ours from
    HTML and Office formats)."""
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", row)]


def table_f1(ours: list[list[list[str]]], ref: list[list[list[str]]]) -> tuple[float, float]:
    """(cell F1, row F1) of ``ours`` against ``ref``, as bags over all tables (see the module
    docstring)."""

    def cells(tables: list[list[list[str]]]) -> Counter[str]:
        return Counter(
            key for t in tables for row in t for cell in row if (key := " ".join(words(cell)))
        )

    def rows(tables: list[list[list[str]]]) -> Counter[tuple[str, ...]]:
        out: Counter[tuple[str, ...]] = Counter()
        for t in tables:
            for row in t:
                keys = [" ".join(words(cell)) for cell in row]
                while keys and not keys[-1]:
                    keys.pop()
                if keys:
                    out[tuple(keys)] += 1
        return out

    def f1(a: Counter[Any], b: Counter[Any]) -> float:
        hit = sum(min(n, b[k]) for k, n in a.items())
        total = sum(a.values()) + sum(b.values())
        return 2 * hit / total if total else 1.0

    return f1(cells(ours), cells(ref)), f1(rows(ours), rows(ref))


def _bag_match(ours: Counter[str], ref: Counter[str]) -> int:
    return sum(min(n, ref[w]) for w, n in ours.items())


def _lis_length(sequence: list[int]) -> int:
    tails: list[int] = []
    for value in sequence:
        i = bisect_left(tails, value)
        if i == len(tails):
            tails.append(value)
        else:
            tails[i] = value
    return len(tails)


def order_agreement(ref_words: list[str], our_words: list[str]) -> float:
    ref_counts, our_counts = Counter(ref_words), Counter(our_words)
    our_pos = {w: i for i, w in enumerate(our_words) if our_counts[w] == 1}
    seq = [our_pos[w] for w in ref_words if ref_counts[w] == 1 and w in our_pos]
    return _lis_length(seq) / len(seq) if seq else 0.0


def _heading_key(text: str) -> tuple[str, ...]:
    return tuple(sorted(words(text)))


def score(fmt: str, name: str, engine: str, result: PeerResult, reference: str) -> Score:
    ref_text, ref_headings = reference_text(reference)
    ref_words, our_words = words(ref_text), words(result.text)
    ref_bag, our_bag = Counter(ref_words), Counter(our_words)
    matched = _bag_match(our_bag, ref_bag)
    out = Score(fmt, name, engine, error=result.error, tables=result.tables)
    out.coverage = matched / max(len(ref_words), 1)
    out.precision = matched / max(len(our_words), 1) if our_words else 0.0
    if result.headings is not None and (result.headings or ref_headings):
        ours_h = Counter(_heading_key(h) for h in result.headings if words(h))
        ref_h = Counter(_heading_key(h) for h in ref_headings if words(h))
        hit = sum(min(n, ref_h[k]) for k, n in ours_h.items())
        p = hit / sum(ours_h.values()) if ours_h else (1.0 if not ref_h else 0.0)
        r = hit / sum(ref_h.values()) if ref_h else (1.0 if not ours_h else 0.0)
        out.heading_p, out.heading_r = p, r
        out.heading_f1 = 2 * p * r / (p + r) if p + r else 0.0
    out.cid = result.text.count("(cid:")
    out.control = sum(
        1
        for c in result.text
        if c not in "\n\t" and (unicodedata.category(c) == "Cc" or c == "\ufffd")
    )
    rtl_ref = Counter({w: n for w, n in ref_bag.items() if _RTL.search(w)})
    if rtl_ref:
        out.rtl = _bag_match(Counter({w: our_bag[w] for w in rtl_ref}), rtl_ref) / sum(
            rtl_ref.values()
        )
    out.order = order_agreement(ref_words, our_words)
    ref_tables = markdown_tables(reference)
    if result.table_rows is not None and ref_tables:
        out.cell_f1, out.row_f1 = table_f1(result.table_rows, ref_tables)
    out.extra = {"units": float(result.pages if fmt in PAGED else 1), "seconds": result.seconds}
    if result.seconds > 0:
        out.rate = (result.pages if fmt in PAGED else 1) / result.seconds
    return out


# -- engines ------------------------------------------------------------------------------


def _page_count(path: Path) -> int:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(path)
    try:
        return len(pdf)
    finally:
        pdf.close()


def _shown(parsed: Any) -> Callable[[int, int], str]:
    """What a reader sees (and a chunk embeds) of a span of the text layer: for Markdown, whose
    text layer is the source, without its markup and with references as their characters (an
    HTML table's rows as pipe rows); for the other formats, the text itself."""
    text = parsed.text_layer
    hidden = merged_touching([*invisible_spans(parsed), *inline_spans(parsed)])
    replaced = replaced_spans(parsed)
    if not hidden and not replaced:
        return lambda a, b: text[a:b]

    def shown(a: int, b: int) -> str:
        spans: list[Any] = [(s - a, e - a) for s, e in within(hidden, a, b)]
        spans.extend((s - a, e - a, v) for s, e, v in replaced if a <= s and e <= b)
        return embedded_text(text[a:b], sorted(spans))

    return shown


def ours(path: Path, fmt: str) -> PeerResult:
    raw = path.read_bytes()
    key = f"{fmt}/{path.name}"
    started = time.process_time()
    try:
        parsed = parse_document(raw, key)
    except DocumentError as exc:
        return PeerResult("", [], 0, error=str(exc), seconds=time.process_time() - started)
    seconds = time.process_time() - started
    headings = [s.heading for s in parsed.sections if s.heading is not None]
    text = parsed.text_layer
    shown = _shown(parsed)
    table_rows = [
        [
            table_cells(line)
            for span in ([s.table_header] if s.table_header else []) + s.table_rows
            for line in shown(span.start, span.end).split("\n")
            if not _is_rule(line)
        ]
        for s in parsed.sections
        if s.kind == "table"
    ]
    pages = max((span.box.page for span in parsed.layout), default=0)
    if fmt in PAGED:
        pages = _page_count(path)
    return PeerResult(
        text, headings, len(table_rows), pages, seconds, table_rows=[t for t in table_rows if t]
    )


def pdfplumber_text(path: Path, fmt: str) -> PeerResult:
    import pdfplumber

    started = time.process_time()
    with pdfplumber.open(path) as pdf:
        texts = [page.extract_text() or "" for page in pdf.pages]
        pages = len(pdf.pages)
    return PeerResult("\n\n".join(texts), None, None, pages, time.process_time() - started)


def pypdfium2_text(path: Path, fmt: str) -> PeerResult:
    import pypdfium2

    started = time.process_time()
    pdf = pypdfium2.PdfDocument(path)
    texts = []
    try:
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        pages = len(pdf)
    finally:
        pdf.close()
    return PeerResult("\n\n".join(texts), None, None, pages, time.process_time() - started)


def docling_parse_text(path: Path, fmt: str) -> PeerResult:
    from docling_core.types.doc.page import TextCellUnit
    from docling_parse.pdf_parser import DoclingPdfParser

    started = time.process_time()
    doc = DoclingPdfParser(loglevel="fatal").load(io.BytesIO(path.read_bytes()))
    texts = []
    for _, page in doc.iterate_pages():
        texts.append("\n".join(c.text for c in page.iterate_cells(unit_type=TextCellUnit.LINE)))
    pages = doc.number_of_pages()
    doc.unload()
    return PeerResult("\n\n".join(texts), None, None, pages, time.process_time() - started)


def docling_converter(path: Path, fmt: str) -> PeerResult:
    """docling's own converter (the reference's maker): for formats that need no models."""
    from docling.document_converter import DocumentConverter

    started = time.process_time()
    document = DocumentConverter().convert(path).document
    markdown = document.export_to_markdown()
    text, headings = reference_text(markdown)
    seconds = time.process_time() - started
    tables = markdown_tables(markdown)
    return PeerResult(text, headings, len(document.tables), 0, seconds, table_rows=tables)


Engine = Callable[[Path, str], PeerResult]
PEERS: dict[str, Engine] = {
    "pdfplumber": pdfplumber_text,
    "pypdfium2-raw": pypdfium2_text,
    "docling-parse": docling_parse_text,
    "docling": docling_converter,
}
#: Which peers read which corpus folders by default (``--peers all`` runs every one that can).
PEER_FORMATS: dict[str, set[str]] = {
    "pdfplumber": {"pdf", "ocr"},
    "pypdfium2-raw": {"pdf", "ocr"},
    "docling-parse": {"pdf", "ocr"},
    "docling": {"docx", "pptx", "xlsx", "csv", "jats", "html"},
}
DEFAULT_PEERS = ("pdfplumber", "pypdfium2-raw", "docling-parse")


def corpus_pairs(
    formats: Iterable[str] | None = None, corpus: Path = CORPUS
) -> list[tuple[str, Path, Path]]:
    """(format folder, source file, reference Markdown) for every scored file.

    Two layouts: ours (``<format>/<name>.<ext>`` beside ``<format>/groundtruth/<name>.md``) and
    docling's test data (``<format>/sources/<name>.<ext>`` and
    ``<format>/groundtruth/<name>.<ext>.md``), so a user can score against either."""
    wanted = set(formats) if formats else None
    pairs = []
    for folder in sorted(p for p in corpus.iterdir() if (p / "groundtruth").is_dir()):
        if wanted is not None and folder.name not in wanted:
            continue
        beside = [p for p in folder.iterdir() if p.is_file()]
        if (folder / "sources").is_dir():
            beside += [p for p in (folder / "sources").iterdir() if p.is_file()]
        for reference in sorted((folder / "groundtruth").glob("*.md")):
            sources = [p for p in beside if p.name == reference.stem] or [
                p for p in beside if p.stem == reference.stem and p.suffix != ".md"
            ]
            if sources:
                pairs.append((folder.name, sorted(sources)[0], reference))
    return pairs


def _best(engine: Engine, path: Path, fmt: str, repeats: int) -> PeerResult:
    best: PeerResult | None = None
    for _ in range(repeats):
        try:
            result = engine(path, fmt)
        except Exception as exc:  # a peer failing on a file is a figure, not a crash
            result = PeerResult("", None, None, error=f"{type(exc).__name__}: {exc}")
        if best is None or (result.seconds and result.seconds < best.seconds):
            best = result
    assert best is not None
    return best


def run(
    formats: Iterable[str] | None = None,
    peers: Iterable[str] = DEFAULT_PEERS,
    repeats: int = 1,
    files: str | None = None,
    corpus: Path = CORPUS,
) -> list[Score]:
    scores = []
    for fmt, source, reference in corpus_pairs(formats, corpus):
        if files and files not in source.name:
            continue
        ref = reference.read_text(encoding="utf-8")
        engines: list[tuple[str, Engine]] = [("ours", ours)]
        engines += [(n, PEERS[n]) for n in peers if fmt in PEER_FORMATS.get(n, set())]
        for name, engine in engines:
            result = _best(engine, source, fmt, repeats)
            scores.append(score(fmt, source.name, name, result, ref))
    return scores


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _rate(group: list[Score]) -> str:
    units = sum(s.extra.get("units", 0.0) for s in group)
    seconds = sum(s.extra.get("seconds", 0.0) for s in group)
    unit = "pages/s" if group[0].format in PAGED else "files/s"
    return f"{units / seconds:.1f} {unit}" if seconds > 0 else "-"


def table(scores: list[Score]) -> str:
    head = (
        "| format | file | engine | cov | prec | hP | hR | hF1 | cid | ctrl | rtl | order "
        "| rate | tables | cellF1 | rowF1 |"
    )
    lines = [head, "|" + "---|" * 16]
    for s in scores:
        unit = "p/s" if s.format in PAGED else "f/s"
        rate = f"{s.rate:.1f} {unit}" if s.rate else "-"
        note = f" (error: {s.error[:60]})" if s.error else ""
        lines.append(
            f"| {s.format} | {s.file}{note} | {s.engine} | {_f(s.coverage)} | {_f(s.precision)} "
            f"| {_f(s.heading_p, 2)} | {_f(s.heading_r, 2)} | {_f(s.heading_f1, 2)} | {s.cid} "
            f"| {s.control} | {_f(s.rtl, 2)} | {_f(s.order, 2)} | {rate} "
            f"| {'-' if s.tables is None else s.tables} | {_f(s.cell_f1, 2)} "
            f"| {_f(s.row_f1, 2)} |"
        )
    lines += ["", "Means by format and engine (rate: total pages or files over total seconds):", ""]
    lines += [
        "| format | engine | files | mean cov | min cov | mean prec | min prec | mean hF1 "
        "| cid | ctrl | mean rtl | mean order | rate | mean cellF1 | mean rowF1 |",
        "|" + "---|" * 15,
    ]
    groups: dict[tuple[str, str], list[Score]] = {}
    for s in scores:
        groups.setdefault((s.format, s.engine), []).append(s)
    for (fmt, engine), group in groups.items():
        lines.append(
            f"| {fmt} | {engine} | {len(group)} | {_f(_mean([s.coverage for s in group]))} "
            f"| {_f(min(s.coverage for s in group))} "
            f"| {_f(_mean([s.precision for s in group]))} "
            f"| {_f(min(s.precision for s in group))} "
            f"| {_f(_mean([s.heading_f1 for s in group]), 2)} "
            f"| {sum(s.cid for s in group)} | {sum(s.control for s in group)} "
            f"| {_f(_mean([s.rtl for s in group]), 2)} "
            f"| {_f(_mean([s.order for s in group]), 2)} | {_rate(group)} "
            f"| {_f(_mean([s.cell_f1 for s in group]), 2)} "
            f"| {_f(_mean([s.row_f1 for s in group]), 2)} |"
        )
    return "\n".join(lines)


_INTRO = (
    "Text fidelity against the corpus ground truth (docling's conversions), ours and peers in "
    "one process, rates in CPU seconds of one core. Columns: see `benchmarks/fidelity.py`; "
    "each subsection is one run, named by its formats."
)


def write_section(markdown_table: str, command: str, path: Path, formats: str) -> None:
    """Write this run's table as the ``### <formats>`` subsection of ``## Fidelity`` in ``path``.

    A run for other formats (docx, pptx, …) replaces only its own subsection, so every format's
    figures stay side by side.
    """
    sub = f"### {formats}\n\nReproduce: `{command}`.\n\n{markdown_table}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    match = re.search(r"^## Fidelity\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
    section = match.group(0) if match else f"## Fidelity\n\n{_INTRO}\n"
    own = re.search(rf"^### {re.escape(formats)}\n.*?(?=^### |\Z)", section, flags=re.S | re.M)
    if own:
        section = section[: own.start()] + sub + "\n" + section[own.end() :]
    else:
        section = section.rstrip("\n") + "\n\n" + sub + "\n"
    section = section.rstrip("\n") + "\n\n"
    if match:
        text = text[: match.start()] + section + text[match.end() :]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")


def memory_profile(page_counts: tuple[int, ...] = (50, 200, 500)) -> str:
    """Peak RSS of parsing an N-page PDF (multi_page.pdf repeated), one fresh process each.

    Peak from the child's own ``VmHWM`` (``ru_maxrss`` would count the forked parent's pages).
    """
    import logging
    import subprocess
    import tempfile

    import pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)

    source = CORPUS / "pdf" / "multi_page.pdf"
    rows = ["| pages | peak RSS (MiB) | parse CPU s | pages/s |", "|---|---|---|---|"]
    script = (
        "import sys, time\n"
        "from agrag_pipeline.parsing import parse_document\n"
        "raw = open(sys.argv[1], 'rb').read()\n"
        "t = time.process_time()\n"
        "parse_document(raw, 'big.pdf')\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(time.process_time() - t, hwm)\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        for count in page_counts:
            reader = pypdf.PdfReader(source)
            writer = pypdf.PdfWriter()
            while len(writer.pages) < count:
                for page in reader.pages:
                    if len(writer.pages) < count:
                        writer.add_page(page)
            path = Path(folder) / f"{count}.pdf"
            with path.open("wb") as out:
                writer.write(out)
            done = subprocess.run(
                [sys.executable, "-c", script, str(path)],
                capture_output=True,
                text=True,
                check=True,
                cwd=REPO_ROOT,
            )
            seconds, peak_kb = done.stdout.split()
            rows.append(
                f"| {count} | {int(peak_kb) / 1024:.0f} | {float(seconds):.2f} "
                f"| {count / float(seconds):.1f} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--formats", help="comma-separated corpus folders (default: all)")
    parser.add_argument(
        "--peers",
        default=",".join(DEFAULT_PEERS),
        help=f"comma-separated peers, 'all' or 'none' (known: {', '.join(PEERS)})",
    )
    parser.add_argument("--files", help="only files whose name contains this")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        help="folder of <format>/ folders with groundtruth/ (default: ../shared/corpus; "
        "docling's tests/data layout, sources/ beside groundtruth/, is read too)",
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="write BENCHMARKS.md ## Fidelity")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "BENCHMARKS.md")
    parser.add_argument("--memory", action="store_true", help="peak memory vs PDF page count")
    args = parser.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f] if args.formats else None
    if args.peers == "all":
        peers: list[str] = list(PEERS)
    elif args.peers == "none":
        peers = []
    else:
        peers = [p for p in args.peers.split(",") if p]
        unknown = set(peers) - set(PEERS)
        if unknown:
            parser.error(f"unknown peers: {', '.join(sorted(unknown))}")
    scores = run(formats, peers, args.repeats, args.files, args.corpus)
    rendered = table(scores)
    if args.memory:
        rendered += "\n\nPeak memory of one PDF parse against its page count (fresh process):\n\n"
        rendered += memory_profile()
    print(rendered)
    if args.write:
        command = ".venv/bin/python -m benchmarks.fidelity " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:]) if a != "--write"
        )
        key = ", ".join(formats) if formats else "all formats"
        write_section(rendered, command.strip(), args.out, key)
        print(f"\nwrote ## Fidelity into {args.out}")


if __name__ == "__main__":
    main()
