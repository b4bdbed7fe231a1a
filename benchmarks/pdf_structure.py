"""PDF structure against a reference: heading recall and precision (where each heading sits),
and footnote survival.

Run::

    .venv/bin/python -m benchmarks.pdf_structure                      # the corpus PDFs
    .venv/bin/python -m benchmarks.pdf_structure --manual gawk.pdf=gawk.txt ...
    .venv/bin/python -m benchmarks.pdf_structure --no-outline ...     # typography alone

References:
- a corpus PDF's docling conversion (``../shared/corpus/pdf/groundtruth/<name>.md``): its ``#``
  headings (no footnotes are marked there);
- a manual's HTML twin built from the same source (``X.pdf=X.html``: Sphinx's ``singlehtml``,
  ``makeinfo --html``): its ``h1``-``h6`` headings and its footnotes (``html_reference``);
- a manual's twin built from the same source: GNU texinfo's plain text or Info file
  (``makeinfo --plaintext``; ``.gz`` read as is): a heading is a line underlined with ``*``,
  ``=``, ``-`` or ``.`` of its length; a footnote is a ``(N) ...`` paragraph after a
  ``---------- Footnotes ----------`` line.

A heading of ours is scored by the text it *sits on* (the text layer between its mark's
offsets), not by the title it was given: a title put on a body sentence that starts with it is
a false heading. Both sides are compared as word bags without a leading section number
(``2.1.8 Widgets`` = ``Widgets``; ``fidelity.words``). A footnote survives when at least 80% of
its word trigrams (bigrams, words for shorter ones) are in our text. A line of a code example
with a trailing comment (``x = 1   # one``, indented in the twin) is whole when its words are
on one line of ours.

Paragraphs (texinfo twins): a prose paragraph of the twin (a blank-line block of at least eight
words, mostly words, ending a sentence) is found when its first six words open a paragraph of
our text layer (after a blank line); only paragraphs whose first six words are in our text at
all are counted (the twin words some cross-references otherwise). A break of ours inside a
sentence (a paragraph of running text that ends on a letter or comma before one that opens in
lower case; code and index lines aside) is counted apart: a paragraph split where the page has
none.

``--no-outline`` parses as if the PDF had no outline (the typographic headings alone).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from selectolax.lexbor import LexborHTMLParser as HTMLParser  # noqa: E402
from selectolax.lexbor import LexborNode  # noqa: E402

from agrag_pipeline.parsing import parse_document, pdf  # noqa: E402
from benchmarks.fidelity import CORPUS, reference_text, words  # noqa: E402

_UNDERLINE = re.compile(r"^([*=\-.])\1+$")
_LABEL = re.compile(
    r"^\s*(?:(?:chapter|appendix|section|part)\s+)?"
    r"(?:\d+(?:[.\-]\d+)*\.?|[A-Z](?:\.\d+)+\.?|[A-Z]\.|[IVXLC]+\.|"
    r"(?<=chapter )(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
    r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty))(?=\s)",
    re.I,
)
_APPENDIX = re.compile(r"^\s*appendix\s+[A-Z](?:\.\d+)*\.?(?=\s)", re.I)
_FOOTNOTE = re.compile(r"^\s*\((\d+)\)\s+(.*)$")
_TRAILING_COMMENT = re.compile(r"^[^#\s].*\S\s{2,}#\s*\w")


def heading_key(text: str) -> tuple[str, ...]:
    """A heading's words without its label (``2.1.8``, ``Appendix A``, ``IV.``; a number at
    the end, where docling's references put it)."""
    stripped = _APPENDIX.sub("", text, count=1)
    if stripped == text:
        stripped = _LABEL.sub("", text, count=1)
    stripped = re.sub(r"\s+\d{1,3}$", "", stripped)  # docling writes "Introduction 1"
    return tuple(sorted(words(stripped) or words(text)))


@dataclass
class Reference:
    headings: list[str]
    footnotes: list[str]
    #: Lines of code examples with a trailing comment (``x = 1   # one``).
    code: list[str] = field(default_factory=list)
    #: The first words of each prose paragraph.
    paragraphs: list[tuple[str, ...]] = field(default_factory=list)


def texinfo_reference(path: Path) -> Reference:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    lines = raw.decode("utf-8", "replace").replace("\x1f", "\n").splitlines()
    headings: list[str] = []
    for previous, line in itertools.pairwise(lines):
        text = previous.rstrip()
        underlined = _UNDERLINE.match(line.strip()) and len(line.strip()) == len(text)
        if text and underlined and text.strip() == text and "Footnotes" not in text:
            headings.append(text)
    footnotes: list[str] = []
    inside = False
    current: list[str] = []
    blank = False
    for line in lines:
        if "---------- Footnotes ----------" in line:
            inside, blank = True, False
            continue
        if not inside:
            continue
        match = _FOOTNOTE.match(line)
        if not line.strip():
            blank = True
            continue
        if match:
            if current:
                footnotes.append(" ".join(current))
            current = [match.group(2)]
        elif current and (not blank or line.startswith("   ")) and not line.startswith("File:"):
            current.append(line)  # the footnote's next line or paragraph
        else:
            inside = False  # past the footnotes: the next node
            if current:
                footnotes.append(" ".join(current))
            current = []
        blank = False
    if current:
        footnotes.append(" ".join(current))
    code = [
        line.strip()
        for line in lines
        if line.startswith("     ") and _TRAILING_COMMENT.match(line.strip())
    ]
    return Reference(headings, [f for f in footnotes if words(f)], code, _paragraphs(lines))


#: Words that open a paragraph, to find it in our text.
_OPENING = 6
_SENTENCE_END = re.compile(r"[.:!?][\"'”’)\]]*$")


def _paragraphs(lines: list[str]) -> list[tuple[str, ...]]:
    """The opening words of the twin's prose paragraphs (blank-line blocks of at least eight
    words, four in five of them words of letters, the last line ending a sentence)."""
    out: list[tuple[str, ...]] = []
    block: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            block.append(line.strip())
            continue
        if block:
            tokens = words(" ".join(block))
            alpha = sum(t.isalpha() for t in tokens)
            if (
                len(tokens) >= 8
                and alpha >= 0.8 * len(tokens)
                and _SENTENCE_END.search(block[-1])
                and not _FOOTNOTE.match(block[0])
            ):
                out.append(tuple(tokens[:_OPENING]))
        block = []
    return out


def paragraph_starts(text: str) -> tuple[set[tuple[str, ...]], int]:
    """The opening words of each paragraph of our text layer, and the breaks inside a
    sentence (a paragraph ending on a letter or comma before one opening in lower case)."""
    parts = [p.strip() for p in text.split("\n\n") if p.strip()]
    starts = {tuple(words(p)[:_OPENING]) for p in parts}
    inside = sum(
        1
        for a, b in itertools.pairwise(parts)
        if (a[-1].isalpha() or a[-1] == ",")
        and b[0].islower()
        and _prose(a.splitlines()[-1])
        and _prose(b.splitlines()[0])
    )
    return starts, inside


def _prose(line: str) -> bool:
    """A line of running text: six words or more, nine in ten of letters (no code, no index)."""
    tokens = line.split()
    return len(tokens) >= 6 and sum(t.isalpha() for t in tokens) >= 0.9 * len(tokens)


def html_reference(path: Path) -> Reference:
    """An HTML twin built from the same source (Sphinx's ``singlehtml``, ``makeinfo --html``):
    its ``h1``-``h6`` headings, permalink symbols left out, and its footnotes (docutils'
    ``aside.footnote`` or ``dl.footnote``, DPUB-ARIA ``doc-footnote``), their labels left out."""
    tree = HTMLParser(path.read_bytes())
    headings = []
    for node in tree.css("h1, h2, h3, h4, h5, h6"):
        if _generated(node):
            continue
        for link in node.css("a"):
            if not any(c.isalnum() for c in link.text(deep=True)):
                link.decompose()
        if text := " ".join(node.text(deep=True).split()):
            headings.append(text)
    footnotes = []
    for note in tree.css("aside.footnote, dl.footnote > dd, [role~=doc-footnote]"):
        for label in note.css("span.label, .fn-backref"):
            label.decompose()
        if text := " ".join(note.text(deep=True).split()):
            footnotes.append(text)
    return Reference(headings, footnotes)


def _generated(heading: LexborNode) -> bool:
    """A heading the HTML writer made, not the document: makeinfo's "Table of Contents" and
    its footnotes' "Footnotes" and "(1)" (classes ``contents-heading``, ``footnotes-heading``,
    ``footnote-body-heading``), and a sidebar's ("Navigation", "Related Topics": inside
    ``nav``/``aside`` or a navigation or complementary landmark). The PDF has none of them."""
    node: LexborNode | None = heading
    while node is not None:
        classes = (node.attributes.get("class") or "").split()
        roles = set((node.attributes.get("role") or "").split())
        if any("footnote" in c or "contents" in c for c in classes):
            return True
        if node.tag in ("nav", "aside") or roles & {"navigation", "complementary"}:
            return True
        node = node.parent
    return False


def markdown_reference(path: Path) -> Reference:
    _, headings = reference_text(path.read_text(encoding="utf-8"))
    return Reference(headings, [])


@dataclass
class Result:
    name: str
    pages: int
    ours: int
    ref: int
    hit: int
    footnotes: int
    kept: int
    code: int = 0
    code_whole: int = 0
    #: Ours that are an index's letter headings ("A", "B"; outline entries of texinfo PDFs,
    #: which the twins set as no heading), none of them a hit.
    letters: int = 0
    #: Twin paragraphs whose opening words are in our text, and those opening a paragraph.
    paragraphs: int = 0
    paragraphs_found: int = 0
    #: Our paragraph breaks inside a sentence.
    breaks_inside: int = 0

    @property
    def precision(self) -> float:
        return self.hit / self.ours if self.ours else 1.0

    @property
    def precision_no_letters(self) -> float:
        return self.hit / (self.ours - self.letters) if self.ours > self.letters else 1.0

    @property
    def recall(self) -> float:
        return self.hit / self.ref if self.ref else 1.0


def our_headings(path: Path, outline: bool) -> tuple[list[str], str, int]:
    """The text each heading of ours sits on, the text layer, and the page count."""
    captured: list[tuple[str, list[tuple[int, int]]]] = []
    original_build, original_outline = pdf.build_sections, pdf._outline

    def capturing(text, document, headings, tables, **kwargs):
        captured.append((text, [(m.start, m.end) for m in headings]))
        return original_build(text, document, headings, tables, **kwargs)

    pdf.build_sections = capturing  # type: ignore[assignment]
    if not outline:
        pdf._outline = lambda _pdf: []  # type: ignore[assignment]
    try:
        parsed = parse_document(path.read_bytes(), f"pdf/{path.name}")
    finally:
        pdf.build_sections, pdf._outline = original_build, original_outline
    text, spans = captured[-1] if captured else (parsed.text_layer, [])
    pages = max((span.box.page for span in parsed.layout), default=0)
    return [" ".join(text[s:e].split()) for s, e in spans], parsed.text_layer, pages


def _grams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def survived(footnote: str, ours: dict[int, set[tuple[str, ...]]]) -> bool:
    tokens = words(footnote)
    n = 3 if len(tokens) >= 6 else 2 if len(tokens) >= 3 else 1
    grams = _grams(tokens, n)
    return sum(g in ours[n] for g in grams) >= 0.8 * len(grams)


def measure(name: str, path: Path, reference: Reference, outline: bool) -> Result:
    headings, text, pages = our_headings(path, outline)
    ours_h = Counter(heading_key(h) for h in headings if words(h))
    ref_h = Counter(heading_key(h) for h in reference.headings if words(h))
    hit = sum(min(n, ref_h[k]) for k, n in ours_h.items())
    letters = sum(n for k, n in ours_h.items() if len(k) == 1 and len(k[0]) == 1 and not ref_h[k])
    tokens = words(text)
    grams = {n: set(_grams(tokens, n)) for n in (1, 2, 3)}
    kept = sum(survived(f, grams) for f in reference.footnotes)
    our_lines = {" ".join(words(line)) for line in text.splitlines()}
    whole = sum(any(" ".join(words(c)) in line for line in our_lines) for c in reference.code)
    starts, inside = paragraph_starts(text)
    six = set(_grams(tokens, _OPENING))
    eligible = [p for p in reference.paragraphs if len(p) == _OPENING and p in six]
    return Result(
        name,
        pages,
        sum(ours_h.values()),
        sum(ref_h.values()),
        hit,
        len(reference.footnotes),
        kept,
        len(reference.code),
        whole,
        letters,
        len(eligible),
        sum(p in starts for p in eligible),
        inside,
    )


def table(results: list[Result]) -> str:
    rows = [
        "| file | pages | headings (ours / ref) | hP | hP, index letters aside | hR "
        "| footnotes kept | code lines with their comment | paragraphs found "
        "| breaks inside a sentence |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        notes = f"{r.kept} / {r.footnotes}" if r.footnotes else "-"
        code = f"{r.code_whole} / {r.code}" if r.code else "-"
        paragraphs = f"{r.paragraphs_found} / {r.paragraphs}" if r.paragraphs else "-"
        rows.append(
            f"| {r.name} | {r.pages} | {r.ours} / {r.ref} | {r.precision:.2f} "
            f"| {r.precision_no_letters:.2f} | {r.recall:.2f} | {notes} | {code} "
            f"| {paragraphs} | {r.breaks_inside} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--manual",
        action="append",
        default=[],
        help="PDF=REFERENCE: a PDF and its texinfo plain text or Info twin, or its HTML twin",
    )
    parser.add_argument("--no-corpus", action="store_true", help="skip the corpus PDFs")
    parser.add_argument("--no-outline", action="store_true", help="ignore PDF outlines")
    args = parser.parse_args(argv)
    results: list[Result] = []
    if not args.no_corpus:
        for reference in sorted((CORPUS / "pdf" / "groundtruth").glob("*.md")):
            source = CORPUS / "pdf" / f"{reference.stem}.pdf"
            if source.exists():
                ref = markdown_reference(reference)
                results.append(measure(source.name, source, ref, not args.no_outline))
    for spec in args.manual:
        source_s, _, ref_s = spec.partition("=")
        source, ref_path = Path(source_s), Path(ref_s)
        twin = (
            html_reference(ref_path)
            if ref_path.suffix in (".html", ".htm")
            else texinfo_reference(ref_path)
        )
        results.append(measure(source.name, source, twin, not args.no_outline))
    print(table(results))


if __name__ == "__main__":
    main()
