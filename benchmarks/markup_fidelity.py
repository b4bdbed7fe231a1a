"""E-books and marked-up text (EPUB, reStructuredText, LaTeX, Org, AsciiDoc): ours against pandoc.

Run::

    .venv/bin/python -m benchmarks.markup_fidelity        # needs pandoc (Debian: pandoc)

The files are the parsing tests' real fixtures (``agrag_pipeline_tests/fixtures``, sources and
licences in its README). Per file:
- ``headings``: the headings each reader gives against the headings read from the source itself
  (EPUB: its NCX/nav labels; RST: underlined titles; LaTeX: ``\\title`` and sectioning commands;
  Org: headlines and ``#+title``; AsciiDoc: ``=``/``#`` titles outside literal blocks), as
  precision/recall of their word bags (``hP``/``hR``);
- ``cov``/``prec`` (EPUB only, where an independent reference exists): word coverage and
  precision against the chapters' XHTML text read by lxml;
- ``agree``: for the other formats, the share of pandoc's words that ours holds and of ours that
  pandoc's holds (``a/b``): where they differ, one of the two kept markup or dropped text;
- ``files/s``: parse rate (ours: ``parse_document``; pandoc: the CLI, process start included).
Pandoc 2.17 reads no AsciiDoc: its columns are ``-`` there.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from lxml import etree

from agrag_pipeline.parsing import parse_document
from benchmarks.fidelity import words

FIXTURES = Path(__file__).resolve().parent.parent / "agrag_pipeline_tests" / "fixtures"
_PANDOC_FORMATS = {"epub": "epub", "rst": "rst", "latex": "latex", "org": "org"}


def _bag(text: str) -> Counter[str]:
    return Counter(words(text))


def _heading_key(text: str) -> tuple[str, ...]:
    return tuple(sorted(words(text)))


def _pr(found: list[str], expected: list[str]) -> tuple[float, float]:
    got = Counter(_heading_key(h) for h in found)
    want = Counter(_heading_key(h) for h in expected)
    matched = sum((got & want).values())
    return (matched / max(1, sum(got.values())), matched / max(1, sum(want.values())))


def _epub_headings(path: Path) -> list[str]:
    book = zipfile.ZipFile(path)
    ncx = next((n for n in book.namelist() if n.endswith(".ncx")), None)
    if ncx is not None:
        root = etree.fromstring(book.read(ncx))
        nav_map = next(e for e in root.iter() if etree.QName(e).localname == "navMap")
        return [
            " ".join("".join(t.itertext()).split())
            for t in nav_map.iter()
            if etree.QName(t).localname == "text"
        ]
    nav = next(n for n in book.namelist() if n.endswith("nav.xhtml"))
    root = etree.fromstring(book.read(nav))
    return [" ".join("".join(a.itertext()).split()) for a in root.iter("{*}a")]


def _epub_reference(path: Path) -> str:
    book = zipfile.ZipFile(path)
    texts = []
    for name in sorted(book.namelist()):
        if name.endswith((".htm.html", ".xhtml")) and not name.endswith("nav.xhtml"):
            body = etree.fromstring(book.read(name)).find("{*}body")
            if body is not None:
                texts.append(" ".join(body.itertext()))
    return "\n".join(texts)


def _rst_headings(source: str) -> list[str]:
    lines = source.splitlines()
    underline = re.compile(r"^([=\-~^\"'`#*+<>_:.])\1{2,}\s*$")
    return [
        lines[i - 1].strip()
        for i in range(1, len(lines))
        if underline.match(lines[i]) and lines[i - 1].strip() and not underline.match(lines[i - 1])
    ]


def _latex_headings(source: str) -> list[str]:
    source = re.sub(r"\\emph\{([^{}]*)\}", r"\1", source)
    found = re.findall(
        r"^\\(?:title|section|subsection|subsubsection|paragraph)\*?\{([^\\}]+)",
        source,
        re.MULTILINE,
    )
    defined = dict(re.findall(r"\\newcommand\\(\w+)\{([^{}]*)\}", source))
    title = re.search(r"^\\title\{\\(\w+)", source, re.MULTILINE)
    if title and title.group(1) in defined:
        found.insert(0, defined[title.group(1)])
    if "\\begin{abstract}" in source:
        found.insert(1, "Abstract")
    return found


def _org_headings(source: str) -> list[str]:
    title = re.findall(r"^#\+title:\s*(.+)$", source, re.MULTILINE | re.IGNORECASE)
    headlines = re.findall(r"^\*+ (?:TODO |DONE )?(.+?)(?:\s+:[\w:]+:)?$", source, re.MULTILINE)
    return title + headlines


def _adoc_headings(source: str) -> list[str]:
    out, fence = [], None
    for line in source.splitlines():
        stripped = line.strip()
        if fence is not None:
            fence = None if stripped == fence else fence
            continue
        if re.match(r"^(-{4,}|\.{4,}|\+{4,}|/{4,})$", stripped):
            fence = stripped
            continue
        match = re.match(r"^(?:={1,6}|#{1,6})\s+(\S.*)$", line)
        if match:
            out.append(match.group(1))
    return out


CASES: list[tuple[str, str, Callable[[str], list[str]] | None]] = [
    ("epub", "epub/winter-sports.epub", None),
    ("epub", "epub/eng_spa_mult.epub", None),
    ("rst", "rst/click_quickstart.rst", _rst_headings),
    ("rst", "rst/unstructured_README-w-include.rst", _rst_headings),
    ("latex", "latex/arxiv_template.tex", _latex_headings),
    ("latex", "latex/note_on_cam16.tex", _latex_headings),
    ("org", "org/doom_lang_python_README.org", _org_headings),
    ("org", "org/unstructured_README.org", _org_headings),
    ("asciidoc", "asciidoc/asciidoctor_mdbasics.adoc", _adoc_headings),
]


def _pandoc(path: Path, fmt: str) -> tuple[str, list[str], float]:
    started = time.perf_counter()
    plain = subprocess.run(
        ["pandoc", "-f", fmt, "-t", "plain", "--wrap=none", str(path)],
        capture_output=True,
        check=True,
        timeout=120,
        text=True,
    ).stdout
    elapsed = time.perf_counter() - started
    markdown = subprocess.run(
        ["pandoc", "-f", fmt, "-t", "markdown", "--markdown-headings=atx", str(path)],
        capture_output=True,
        check=True,
        timeout=120,
        text=True,
    ).stdout
    headings = re.findall(r"^#{1,6} (.+?)(?: \{[^}]*\})?$", markdown, re.MULTILINE)
    title = re.search(r"^title: (.+)$", markdown, re.MULTILINE)
    if title:
        headings.insert(0, title.group(1).strip("'\""))
    return plain, headings, elapsed


def run() -> str:
    have_pandoc = shutil.which("pandoc") is not None
    rows = [
        "| format | file | reader | headings | hP | hR | cov | prec | agree | files/s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, name, source_headings in CASES:
        path = FIXTURES / name
        raw = path.read_bytes()
        if source_headings is None:
            expected = _epub_headings(path)
            reference: Counter[str] | None = _bag(_epub_reference(path))
        else:
            expected = source_headings(raw.decode("utf-8"))
            reference = None
        started = time.perf_counter()
        parsed = parse_document(raw, name)
        ours_s = time.perf_counter() - started
        ours_text = parsed.text_layer
        ours_headings = [s.heading for s in parsed.sections if s.heading is not None]
        results: list[tuple[str, str, list[str], float]] = [
            ("ours", ours_text, ours_headings, ours_s)
        ]
        if have_pandoc and fmt in _PANDOC_FORMATS:
            plain, headings, pandoc_s = _pandoc(path, _PANDOC_FORMATS[fmt])
            results.append(("pandoc 2.17", plain, headings, pandoc_s))
        for reader, text, headings, seconds in results:
            hp, hr = _pr(headings, expected)
            bag = _bag(text)
            cov = prec = agree = "-"
            if reference is not None:
                matched = sum((bag & reference).values())
                cov = f"{matched / sum(reference.values()):.3f}"
                prec = f"{matched / max(1, sum(bag.values())):.3f}"
            elif len(results) == 2:
                other = _bag(results[1][1] if reader == "ours" else results[0][1])
                matched = sum((bag & other).values())
                theirs_in_ours = matched / max(1, sum(other.values()))
                agree = f"{theirs_in_ours:.3f}/{matched / max(1, sum(bag.values())):.3f}"
            rows.append(
                f"| {fmt} | {Path(name).name} | {reader} | {len(headings)} of {len(expected)} "
                f"| {hp:.2f} | {hr:.2f} | {cov} | {prec} | {agree} | {1 / seconds:.1f} |"
            )
        if len(results) == 1:
            rows.append(f"| {fmt} | {Path(name).name} | pandoc 2.17 | - | - | - | - | - | - | - |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(run())
