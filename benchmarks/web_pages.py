"""Saved web pages: how much of our text is the article, and how much of the article is in it.

Run::

    .venv/bin/python -m benchmarks.web_pages --readability READABILITY --zyte ZYTE [--ref REF]

- ``READABILITY``: mozilla/readability's ``test/test-pages`` (130 folders, each a page as saved,
  ``source.html``, and the article Readability extracts from it, ``expected.html``; Apache-2.0).
- ``ZYTE``: a checkout of scrapinghub/article-extraction-benchmark (181 news and blog pages,
  ``html/*.html.gz``, and the article text a person marked in each, ``ground-truth.json``; MIT).
  Its references hold the article's body only: no title, byline or captions.
- ``TRAFILATURA``: adbar/trafilatura's ``tests`` folder (``evaldata.json``, ``eval/``, ``cache/``;
  Apache-2.0): ~990 pages, each with a few snippets of the main text that a reader must keep and
  a few of the page's furniture that it must leave out. Scored as the share of "keep" snippets
  found and of "leave out" snippets not found (whitespace-normalised). trafilatura was tuned on
  this set.

Per page, word bags (``fidelity.words``) of each reader's text against the reference:
coverage (the reference's words found) and precision (ours that are the reference's). A page
read whole scores coverage 1 and a low precision; an extractor that cuts too much the reverse.
Readers: ours (``parse_document``), ours at ``--ref`` (a git ref, run from a ``git archive`` of
it in its own process), the whole page's text (lxml, the floor of precision), and trafilatura
(the ``bench`` extra; left out where not installed), with CPU seconds per set.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lxml.html
from lxml import etree

from benchmarks.chunking_bench import package_at
from benchmarks.fidelity import words

Pages = list[tuple[str, str, str]]  # (name, page HTML, reference text)
_UTF8 = lxml.html.HTMLParser(encoding="utf-8")


def _text_of(page: str) -> str:
    """All the text of an HTML page or fragment (scripts and styles left out)."""
    if not page.strip():
        return ""
    try:
        tree = lxml.html.fromstring(page.encode(), parser=_UTF8)
    except etree.ParserError:
        return ""
    for unseen in tree.xpath("//script|//style|//noscript|//template"):
        unseen.drop_tree()
    return " ".join(tree.itertext())


def readability_pages(root: Path) -> Pages:
    pages = []
    for folder in sorted(p for p in root.iterdir() if (p / "source.html").is_file()):
        source = (folder / "source.html").read_text(encoding="utf-8", errors="replace")
        expected = (folder / "expected.html").read_text(encoding="utf-8", errors="replace")
        pages.append((folder.name, source, _text_of(expected)))
    return pages


def zyte_pages(root: Path) -> Pages:
    truth = json.loads((root / "ground-truth.json").read_text())
    pages = []
    for key, item in sorted(truth.items()):
        path = root / "html" / f"{key}.html.gz"
        if path.is_file():
            source = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
            pages.append((key[:12], source, item.get("articleBody") or ""))
    return pages


Snippets = list[tuple[str, str, list[str], list[str]]]  # (name, page, keep, leave out)


def trafilatura_eval_pages(root: Path) -> Snippets:
    truth = json.loads((root / "evaldata.json").read_text())
    pages = []
    for item in truth.values():
        for folder in ("eval", "cache"):
            path = root / folder / item["file"]
            if path.is_file():
                source = path.read_bytes().decode("utf-8", errors="replace")
                pages.append((item["file"], source, item["with"], item["without"]))
                break
    return pages


def _normalised(text: str) -> str:
    return " ".join(text.split())


def report_snippets(pages: Snippets, readers: dict[str, tuple[list[str], float]]) -> None:
    keep_total = sum(len(keep) for _, _, keep, _ in pages)
    out_total = sum(len(out) for _, _, _, out in pages)
    print(f"\ntrafilatura's evaluation set: {len(pages)} pages, {keep_total} snippets to keep,")
    print(f"{out_total} to leave out")
    print("| reader | kept (recall) | left out | both | CPU s |")
    print("|---|---:|---:|---:|---:|")
    for reader, (texts, seconds) in readers.items():
        kept = left_out = 0
        for (_, _, keep, out), text in zip(pages, texts, strict=True):
            flat = _normalised(text)
            kept += sum(_normalised(snippet) in flat for snippet in keep)
            left_out += sum(_normalised(snippet) not in flat for snippet in out)
        print(
            f"| {reader} | {kept / keep_total:.3f} | {left_out / out_total:.3f} "
            f"| {(kept + left_out) / (keep_total + out_total):.3f} | {seconds:.2f} |"
        )


def ours(page: str, name: str) -> str:
    from agrag_pipeline.parsing import DocumentError, parse_document

    try:
        return parse_document(page.encode(), f"{name}.html").text_layer
    except DocumentError:
        return ""


def trafilatura_text(page: str, name: str) -> str:
    import trafilatura

    return trafilatura.extract(page, include_tables=True) or ""


def whole_page(page: str, name: str) -> str:
    return _text_of(page)


def score(reference: str, text: str) -> tuple[float, float]:
    want, got = Counter(words(reference)), Counter(words(text))
    common = sum((want & got).values())
    return common / max(1, sum(want.values())), common / max(1, sum(got.values()))


def run_reader(reader: Callable[[str, str], str], pages: Pages) -> tuple[list[str], float]:
    started = time.process_time()
    texts = [reader(page, name) for name, page, _ in pages]
    return texts, time.process_time() - started


def _at_ref(ref: str, pages: Pages) -> tuple[list[str], float]:
    """Our text of every page with the code of ``ref``, in a process of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        package_at(ref, Path(tmp))
        pages_file = Path(tmp) / "pages.json"
        pages_file.write_text(json.dumps([[name, page] for name, page, _ in pages]))
        script = (  # the ref's own parser (it may predate this benchmark)
            "import json, sys, time\n"
            "from agrag_pipeline.parsing import DocumentError, parse_document\n"
            "def ours(page, name):\n"
            "    try:\n"
            "        return parse_document(page.encode(), name + '.html').text_layer\n"
            "    except DocumentError:\n"
            "        return ''\n"
            "pages = json.load(open(sys.argv[1]))\n"
            "t = time.process_time()\n"
            "texts = [ours(page, name) for name, page in pages]\n"
            "print(json.dumps([texts, time.process_time() - t]))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(pages_file)],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": tmp},
        )
    texts, seconds = json.loads(done.stdout.splitlines()[-1])
    return texts, seconds


def report(name: str, pages: Pages, readers: dict[str, tuple[list[str], float]]) -> None:
    print(f"\n{name}: {len(pages)} pages")
    print("| reader | coverage | precision | F1 | precision < 0.5 | coverage < 0.95 | CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for reader, (texts, seconds) in readers.items():
        references = [reference for _, _, reference in pages]
        scores = [score(ref, text) for ref, text in zip(references, texts, strict=True)]
        coverage = [c for c, _ in scores]
        precision = [p for _, p in scores]
        f1 = [2 * c * p / (c + p) if c + p else 0.0 for c, p in scores]
        print(
            f"| {reader} | {statistics.mean(coverage):.3f} | {statistics.mean(precision):.3f} "
            f"| {statistics.mean(f1):.3f} | {sum(p < 0.5 for p in precision)} "
            f"| {sum(c < 0.95 for c in coverage)} | {seconds:.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readability", type=Path, help="mozilla/readability test/test-pages")
    parser.add_argument("--zyte", type=Path, help="scrapinghub/article-extraction-benchmark")
    parser.add_argument("--trafilatura-eval", type=Path, help="adbar/trafilatura's tests")
    parser.add_argument("--ref", help="our code at this git ref too (the commit before, say)")
    args = parser.parse_args()
    sets: list[tuple[str, Pages]] = []
    if args.readability:
        sets.append(("readability's test pages", readability_pages(args.readability)))
    if args.zyte:
        sets.append(("Zyte's article extraction benchmark", zyte_pages(args.zyte)))
    try:
        import trafilatura  # noqa: F401

        peers: dict[str, Callable[[str, str], str]] = {"trafilatura": trafilatura_text}
    except ImportError:
        print("trafilatura is not installed (the bench extra): left out")
        peers = {}
    for name, pages in sets:
        report(name, pages, _read_by_all(pages, args.ref, peers))
    if args.trafilatura_eval:
        snippets = trafilatura_eval_pages(args.trafilatura_eval)
        as_pages: Pages = [(name, page, "") for name, page, _, _ in snippets]
        report_snippets(snippets, _read_by_all(as_pages, args.ref, peers))


def _read_by_all(
    pages: Pages, ref: str | None, peers: dict[str, Callable[[str, str], str]]
) -> dict[str, tuple[list[str], float]]:
    """Every reader's text of ``pages`` and its CPU seconds: ours, ours at ``ref``, the whole
    page, the peers."""
    readers = {"ours": run_reader(ours, pages)}
    if ref:
        readers[f"ours at {ref}"] = _at_ref(ref, pages)
    readers["the whole page (lxml)"] = run_reader(whole_page, pages)
    for peer, reader in peers.items():
        readers[peer] = run_reader(reader, pages)
    return readers


if __name__ == "__main__":
    main()
