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


def source_key(index: int, base: Path) -> str:
    """Zero-padded index first, so sorted keys are corpus order (Dagster ranges rely on it)."""
    return f"{index:05d}-{base.stem}{base.suffix}"


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
    for i in range(n):
        base = bases[i % len(bases)]
        raw = cache.get(base)
        if raw is None:
            raw = cache[base] = base.read_bytes()
        yield source_key(i, base), KINDS[base.suffix], vary(raw, base.suffix, i)


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
