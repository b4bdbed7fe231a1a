"""A benchmark corpus of any size, made from the reference corpus by deterministic variations.

Document ``i`` is base document ``i mod B`` (the reference corpus's B Markdown, HTML and PDF
files, in sorted order) with a variation seeded by ``i``: a numbered paragraph of words drawn
with ``random.Random(i)`` (Markdown, HTML) or a numbered comment line after ``%%EOF`` (PDF,
which readers ignore). So every document has its own content hash, the mix of formats and sizes
is the reference corpus's, and the same ``N`` always gives the same bytes. Files are written one
at a time, never held together in memory.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE_CORPUS = (REPO_ROOT / ".." / "shared" / "corpus").resolve()
SUFFIXES = (".md", ".html", ".pdf")
KINDS = {".md": "markdown", ".html": "html", ".pdf": "pdf"}

#: The words the variations draw from (the benchmarks' synthetic documents share them).
VOCABULARY = [
    "ownership",
    "borrow",
    "lifetime",
    "trait",
    "section",
    "chunk",
    "parser",
    "heading",
    "table",
    "token",
    "vector",
    "graph",
    "pipeline",
    "document",
    "version",
    "fingerprint",
    "warehouse",
    "partition",
    "sensor",
    "schedule",
    "backfill",
]


@dataclass
class CorpusSummary:
    """What was written: documents and bytes per kind (markdown, html, pdf)."""

    root: Path
    documents: int = 0
    files: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, size: int) -> None:
        self.documents += 1
        self.files[kind] = self.files.get(kind, 0) + 1
        self.bytes[kind] = self.bytes.get(kind, 0) + size

    def as_dict(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "documents": self.documents,
            "files": dict(self.files),
            "bytes": dict(self.bytes),
        }


def base_documents(reference: Path = REFERENCE_CORPUS) -> list[Path]:
    """The reference corpus's documents, shuffled with a fixed seed so that any prefix of the
    benchmark corpus mixes formats as the whole does (sorted paths would put the PDFs last)."""
    bases = sorted(p for p in reference.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    random.Random(0).shuffle(bases)
    return bases


#: Digits of the index in a key: 5 for corpora up to 100,000 documents (their keys, and the
#: chunk ids made from them, as recorded), more for larger ones (``key_width``).
KEY_DIGITS = 5


def key_width(n: int) -> int:
    """Digits the keys of an ``n``-document corpus need to sort in corpus order."""
    return max(KEY_DIGITS, len(str(max(n - 1, 0))))


def source_key(index: int, base: Path, width: int = KEY_DIGITS) -> str:
    """Zero-padded index first, so sorted keys are corpus order (Dagster ranges rely on it):
    ``width`` digits, ``key_width(n)`` for a corpus of ``n``."""
    if len(str(index)) > width:
        raise ValueError(f"document {index} needs more than {width} digits: use key_width(n)")
    return f"{index:0{width}d}-{base.stem}{base.suffix}"


def vary(raw: bytes, suffix: str, seed: int, generation: int = 0) -> bytes:
    """``raw`` with a variation that depends on ``seed`` and ``generation`` (0: the original)."""
    rng = random.Random(seed * 1_000_003 + generation)
    words = " ".join(rng.choice(VOCABULARY) for _ in range(24 + rng.randrange(24)))
    label = f"Variation {seed}" + (f" (edit {generation})" if generation else "")
    if suffix == ".pdf":
        return raw + f"\n% {label}\n".encode()
    if suffix == ".html":
        paragraph = f"<p>{label}: {words}.</p>\n".encode()
        at = raw.lower().rfind(b"</body>")
        return raw[:at] + paragraph + raw[at:] if at >= 0 else raw + paragraph
    return raw + f"\n\n{label}: {words}.\n".encode()


def iter_documents(n: int, reference: Path = REFERENCE_CORPUS) -> Iterator[tuple[str, str, bytes]]:
    """(source key, kind, bytes) of documents ``0 .. n-1``, one at a time."""
    bases = base_documents(reference)
    cache: dict[Path, bytes] = {}  # the reference corpus is ~3 MB: keep its bytes once
    width = key_width(n)
    for i in range(n):
        base = bases[i % len(bases)]
        raw = cache.get(base)
        if raw is None:
            raw = cache[base] = base.read_bytes()
        yield source_key(i, base, width), KINDS[base.suffix], vary(raw, base.suffix, i)


def write_corpus(root: Path, n: int, reference: Path = REFERENCE_CORPUS) -> CorpusSummary:
    """Write ``n`` documents under ``root`` (flat: ``root/<source key>``)."""
    root.mkdir(parents=True, exist_ok=True)
    summary = CorpusSummary(root)
    for key, kind, data in iter_documents(n, reference):
        (root / key).write_bytes(data)
        summary.add(kind, len(data))
    return summary


def corpus_files(root: Path, kind: str | None = None) -> list[Path]:
    """The corpus's files in key order, optionally of one kind (paths only: bytes stay on disk)."""
    suffixes = [s for s, k in KINDS.items() if kind in (None, k)]
    return sorted(p for p in root.iterdir() if p.suffix in suffixes)


def change_documents(
    root: Path, fraction: float, generation: int = 1, reference: Path = REFERENCE_CORPUS
) -> list[str]:
    """Edit every ``1/fraction``-th document in place (a new variation); return their keys."""
    bases = base_documents(reference)
    files = corpus_files(root)
    step = max(1, round(1 / fraction))
    changed = []
    for path in files[step // 2 :: step]:
        index = int(path.name.split("-", 1)[0])
        base = bases[index % len(bases)]
        path.write_bytes(vary(base.read_bytes(), base.suffix, index, generation))
        changed.append(path.name)
    return changed


# -- small documents: excerpts of the reference corpus, for runs of 100,000 -------------------

#: Sizes of a small document's excerpt (bytes of source text, before its heading and variation).
SMALL_MIN_BYTES = 1000
SMALL_MAX_BYTES = 3000
#: Every fifth small document is HTML, the rest Markdown (about the reference corpus's mix).
SMALL_HTML_EVERY = 5
#: The HTML elements an excerpt is cut along (the outermost of them; nested ones come along).
_HTML_BLOCKS = frozenset(
    {"h1", "h2", "h3", "h4", "h5", "h6", "p", "pre", "ul", "ol", "dl", "table", "blockquote"}
)


def markdown_blocks(text: str) -> list[str]:
    """The text's blocks (split at blank lines, a fenced code block kept whole)."""
    blocks: list[str] = []
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        if fence is None and not line.strip():
            if lines:
                blocks.append("\n".join(lines))
                lines = []
            continue
        lines.append(line)
    if lines:
        blocks.append("\n".join(lines))
    return blocks


def html_blocks(text: str) -> list[str]:
    """The outermost block elements of the page (headings, paragraphs, lists, tables, code)."""
    from selectolax.lexbor import LexborHTMLParser

    blocks = []
    for node in LexborHTMLParser(text).css(",".join(sorted(_HTML_BLOCKS))):
        parent = node.parent
        while parent is not None and parent.tag not in _HTML_BLOCKS:
            parent = parent.parent
        if parent is None and node.text(strip=True):
            blocks.append(node.html or "")
    return blocks


def small_pools(reference: Path = REFERENCE_CORPUS) -> dict[str, list[tuple[str, list[str]]]]:
    """(base name, its blocks of at most ``SMALL_MAX_BYTES``) per kind, from the reference
    corpus's Markdown and HTML files that have any."""
    pools: dict[str, list[tuple[str, list[str]]]] = {"markdown": [], "html": []}
    for path in sorted(reference.rglob("*")):
        if not path.is_file() or path.suffix not in (".md", ".html"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        kind = KINDS[path.suffix]
        cut = markdown_blocks(text) if kind == "markdown" else html_blocks(text)
        blocks = [b for b in cut if len(b.encode()) <= SMALL_MAX_BYTES]
        if blocks:
            pools[kind].append((path.stem, blocks))
    return pools


def small_key(index: int, base: str, kind: str) -> str:
    """100 folders of 1,000 at 100,000 (``042/042017-ch04-01.md``): key order is corpus order."""
    suffix = ".md" if kind == "markdown" else ".html"
    return f"{index // 1000:03d}/{index:06d}-{base}{suffix}"


def small_document(
    index: int, pools: dict[str, list[tuple[str, list[str]]]]
) -> tuple[str, str, bytes]:
    """(source key, kind, bytes) of small document ``index``: consecutive blocks of one
    reference document (1-3 KB, start and length seeded by ``index``) under a heading, with a
    variation sentence, so every document is real text of its own."""
    rng = random.Random(index)
    kind = "html" if index % SMALL_HTML_EVERY == SMALL_HTML_EVERY - 1 else "markdown"
    base, blocks = pools[kind][rng.randrange(len(pools[kind]))]
    target = rng.randrange(SMALL_MIN_BYTES, SMALL_MAX_BYTES)
    at = rng.randrange(len(blocks))
    chosen: list[str] = []
    size = 0
    while size < target and len(chosen) < len(blocks):
        block = blocks[(at + len(chosen)) % len(blocks)]
        if chosen and size + len(block.encode()) > SMALL_MAX_BYTES:
            break
        chosen.append(block)
        size += len(block.encode())
    words = " ".join(rng.choice(VOCABULARY) for _ in range(12 + rng.randrange(12)))
    title = f"{base} (excerpt {index})"
    if kind == "markdown":
        text = "\n\n".join([f"# {title}", *chosen, f"Variation {index}: {words}."]) + "\n"
    else:
        body = "\n".join([f"<h1>{title}</h1>", *chosen, f"<p>Variation {index}: {words}.</p>"])
        head = f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n"
        text = f"{head}{body}\n</body></html>\n"
    return small_key(index, base, kind), kind, text.encode()


def write_small_corpus(root: Path, n: int, reference: Path = REFERENCE_CORPUS) -> CorpusSummary:
    """Write ``n`` small documents under ``root`` (``root/<folder>/<key>``), one at a time."""
    pools = small_pools(reference)
    summary = CorpusSummary(root)
    for index in range(n):
        key, kind, data = small_document(index, pools)
        path = root / key
        if index % 1000 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        summary.add(kind, len(data))
    return summary
