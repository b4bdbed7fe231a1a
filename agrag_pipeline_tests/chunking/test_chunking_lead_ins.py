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
