"""Lead-ins travel with what they introduce (issue 24): a definition term (``<dt>``:
``--ignore-case``, ``w filename``, ``Function: ffi_status ffi_prep_cif (...)``) never ends a
chunk apart from its description. Read from the GNU grep, GNU sed and libffi manuals as
``makeinfo --html`` writes them (``data/eval/pdf-manuals``), chunked at the pipeline's
defaults; the terms are taken from the HTML's own ``<dt>`` elements."""

from __future__ import annotations

import itertools
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agrag_pipeline.chunking.chunker import StructureChunker
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.models import Chunk
from agrag_pipeline.parsing import parse_document

MANUALS = Path(__file__).resolve().parents[2] / "data" / "eval" / "pdf-manuals"


class _Terms(HTMLParser):
    """The text of every ``<dt>`` (texinfo's ``@item``/``@itemx``/``@deffn`` lines)."""

    def __init__(self) -> None:
        super().__init__()
        self.terms: set[str] = set()
        self._open: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "dt":
            self._open = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "dt" and self._open is not None:
            term = " ".join("".join(self._open).split())
            if term:
                self.terms.add(term)
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open.append(data)


def _terms(name: str) -> set[str]:
    reader = _Terms()
    reader.feed((MANUALS / name).read_text(encoding="utf-8"))
    return reader.terms


def _chunks(name: str, counter: TokenCounter) -> list[Chunk]:
    parsed = parse_document((MANUALS / name).read_bytes(), name)
    chunker = StructureChunker(ChunkerSettings(), counter)
    return chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)


@pytest.mark.parametrize("name", ["grep.html", "sed.html", "libffi.html"])
def test_definition_term_never_ends_a_chunk_apart_from_its_description(
    name: str, counter: TokenCounter
) -> None:
    terms = _terms(name)
    assert len(terms) > 10
    chunks = _chunks(name, counter)
    parted = []
    for a, b in itertools.pairwise(chunks):
        last_line = " ".join(a.text.rstrip().split("\n")[-1].split())
        # A term of a letter or two ("h", "\\n") is also a line of the sed scripts shown.
        if last_line in terms and len(last_line) > 2 and a.section_ids[-1] == b.section_ids[0]:
            parted.append((last_line, b.text[:60]))
    assert parted == []


def test_grep_options_open_the_chunk_of_their_description(counter: TokenCounter) -> None:
    chunks = _chunks("grep.html", counter)
    for term, description in (
        ("--word-regexp", "Select only those lines containing matches that form whole words"),
        ("--label=LABEL", "Display input actually coming from standard input"),
        ("--exclude-dir=glob", "Skip any command-line directory with a name suffix"),
    ):
        holder = [c for c in chunks if description in c.text]
        assert len(holder) == 1, description
        assert term in holder[0].text.split(description)[0], (term, holder[0].text[:200])


def test_a_terms_names_parted_by_a_page_break_stay_together_with_its_description(
    counter: TokenCounter,
) -> None:
    """Wget's PDF manual sets ``‘-np’`` at the foot of a page and ``‘--no-parent’`` at the top
    of the next, so they come as two paragraphs; wherever the chunk boundary falls, both names
    open the chunk of their description."""
    names = "‘-np’\n\n‘--no-parent’\n\n"
    description = "Do not ever ascend to the parent directory when retrieving recursively."
    met_the_term = 0
    after = "\n\n".join(f"Retry {i} waits a second." for i in range(40))
    for sentences in range(20, 45):
        filler = "\n\n".join(f"Option {i} sets the count." for i in range(sentences))
        text = f"{filler}\n\n{names}{description} This is a useful option.\n\n{after}\n"
        parsed = parse_document(text.encode(), f"wget-{sentences}.txt")
        chunks = StructureChunker(ChunkerSettings(), counter).chunk(
            parsed, schema_fingerprint=None, extraction_fingerprint=None
        )
        holder = [c for c in chunks if description in c.text]
        assert len(holder) == 1
        assert "‘-np’\n\n‘--no-parent’" in holder[0].text, (
            sentences,
            [c.text[-40:] for c in chunks],
        )
        met_the_term += holder[0].text.startswith("‘-np’")
    assert met_the_term > 0  # some fillers put the boundary at the term's names
