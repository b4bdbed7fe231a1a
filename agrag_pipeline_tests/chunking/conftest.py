"""Fixtures and the invariant checks shared by the chunking tests."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from agrag_pipeline.chunking.chunker import StructureChunker, heading_label
from agrag_pipeline.chunking.markup import heading_line, invisible_spans
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.models import Chunk
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument

_WORD = re.compile(r"\S+")


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return TokenCounter()


@pytest.fixture(scope="session")
def corpus_parsed(corpus_dir: Path) -> list[ParsedDocument]:
    """Every corpus document the parser accepts, parsed once per session."""
    parsed = []
    for path in sorted(corpus_dir.rglob("*")):
        if path.suffix.lower() not in {".md", ".html", ".pdf", ".txt"}:
            continue
        try:
            parsed.append(
                parse_document(path.read_bytes(), path.relative_to(corpus_dir).as_posix())
            )
        except DocumentError:
            continue  # a file the parser refuses (scan, corrupt) is the parser's tests' business
    return parsed


def expected_overlap_start(
    text: str, start: int, end: int, overlap: int, counter: TokenCounter
) -> int:
    """Independent reading of the overlap rule: the longest whole-word suffix of
    ``text[start:end]`` whose own token count is at most ``overlap`` (``end`` when none).
    An ``overlap`` of 0 means no overlap at all (not even words that count zero tokens)."""
    best = end
    for word in reversed(list(_WORD.finditer(text, start, end))):
        if counter.count(text[word.start() : end]) > overlap:
            break
        best = word.start()
    return best


def _assert_word_too_long(text: str, cut: int, room: int, counter: TokenCounter) -> None:
    """A cut inside a word is allowed only where that word alone exceeds a chunk's room."""
    start = cut
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    end = cut
    while end < len(text) and not text[end].isspace():
        end += 1
    assert counter.count(text[start:end]) > room, ("word cut", text[start:end][:80])


def _says(label: Sequence[str], path: Sequence[str]) -> bool:
    """A chunk's heading path ``label`` names the section path ``path``: the same headings, an
    over-long one cut to its first words and " …" where the path left no room for text."""
    if len(label) != len(path):
        return False
    pairs = zip(label, path, strict=True)
    return all(a == b or _cut_from(a, b) for a, b in pairs)


def _cut_from(cut: str, heading: str) -> bool:
    """``cut`` is ``heading`` cut as the chunker cuts: a shorter start of it and " …", or "…"."""
    return cut == "…" or (
        cut.endswith(" …") and len(cut) - 2 < len(heading) and heading.startswith(cut[:-2])
    )


def _carries(label: Sequence[str], path: Sequence[str]) -> bool:
    """``label`` names the section ``path`` and says its own heading whole, so the section's
    heading line is not said again (a cut last heading is said whole by its line)."""
    return bool(path) and _says(label, path) and label[-1] == path[-1]


def check_invariants(
    parsed: ParsedDocument,
    chunks: list[Chunk],
    chunker: StructureChunker,
    counter: TokenCounter,
) -> None:
    """Everything issue 4 promises of one document's chunks."""
    text = parsed.text_layer
    settings: ChunkerSettings = chunker.settings
    doc = parsed.document
    assert doc.id is not None
    # What a chunk may leave out: markup no reader sees, and the heading line of a section
    # whose heading a chunk's label carries.
    left_out = bytearray(len(text))
    for a, b in invisible_spans(parsed):
        left_out[a:b] = b"\x01" * (b - a)
    labels = {tuple(c.heading_path[:n]) for c in chunks for n in range(len(c.heading_path) + 1)}
    for section in parsed.sections:
        line = heading_line(text, section)
        if line is not None and any(_carries(label, section.heading_path) for label in labels):
            left_out[line[0] : line[1]] = b"\x01" * (line[1] - line[0])
    headed = any(s.heading is not None for s in parsed.sections)
    order = {s.id: i for i, s in enumerate(parsed.sections)}
    covered = bytearray(len(text))
    last_first_section = -1
    for i, c in enumerate(chunks):
        assert c.index == i
        assert Chunk.model_validate(c.model_dump()) == c  # a valid row, field for field
        # Rows are built without re-validation: they are what the constructor would build.
        given = {name: getattr(c, name) for name in c.model_fields_set}
        validated = Chunk(**given)
        assert validated == c and repr(validated) == repr(c)
        assert validated.model_fields_set == c.model_fields_set
        assert c.id == Chunk.id_for(doc.id, doc.content_hash, chunker.chunker_hash, i)
        assert c.document_id == doc.id and c.content_hash == doc.content_hash
        assert c.chunker == "agrag-structure" and c.chunker_hash == chunker.chunker_hash
        assert c.provenance.extract(text) == c.text, (c.index, c.text[:80])
        assert c.text and c.text == c.text.strip()
        # Every chunk has a heading path where its document has any heading; what is embedded
        # under the label holds reader-visible text and never starts by repeating the label's
        # last heading.
        assert bool(c.heading_path) == headed, (doc.source_key, c.index, c.text[:80])
        label = heading_label(c.heading_path)
        body = c.contextual_text[len(label) + 2 :] if label else c.contextual_text
        assert body.strip(), (doc.source_key, c.index)
        if label:
            assert c.contextual_text.startswith(label + "\n\n")
            # "Repeating the label's heading" is a matter of position, not of words: a chunk that
            # starts at the heading line of the very section its label names. (A subsection that
            # happens to share its parent's title, "# the / ## the", is content of its own.)
            # The one exception: a top-level heading with nothing under it in a document whose
            # title it is (no other chunk carries it).
            first_line = body.split("\n", 1)[0].lstrip("# ").strip()
            alone = len(c.heading_path) == 1 and body.strip().lstrip("# ") == first_line
            own_heading_starts = {
                line[0]
                for line in (
                    heading_line(text, s)
                    for s in parsed.sections
                    if _carries(c.heading_path, s.heading_path)
                )
                if line is not None
            }
            assert c.provenance.start not in own_heading_starts or alone, (
                doc.source_key,
                first_line,
            )
        assert c.provenance.kind == ("page" if parsed.paged else "text")
        tokens = counter.count(c.contextual_text) + counter.special_tokens
        assert tokens <= settings.max_tokens, (tokens, c.contextual_text[:120])
        assert c.metadata["token_count"] == tokens
        positions = [order[s] for s in c.section_ids]
        assert positions == sorted(positions) and len(set(positions)) == len(positions)
        assert positions[0] >= last_first_section
        last_first_section = positions[0]
        covered[c.provenance.start : c.provenance.end] = b"\x01" * (
            c.provenance.end - c.provenance.start
        )
        if c.content_kind == "text":
            own = [parsed.sections[p] for p in positions]
            start, end = c.provenance.start, c.provenance.end
            label = c.section_label()
            room = settings.max_tokens - counter.special_tokens - settings.overlap_tokens
            room -= counter.count(label) if label else 0
            if (
                text[own[0].start : start].strip()
                and not text[start - 1].isspace()
                and not left_out[start - 1]
            ):
                _assert_word_too_long(text, start, room, counter)
            if text[end : own[-1].end].strip() and not text[end].isspace() and not left_out[end]:
                _assert_word_too_long(text, end, room, counter)
    for section in parsed.sections:
        lost = [
            j
            for j in range(section.start, section.end)
            if not covered[j] and not text[j].isspace() and not left_out[j]
        ]
        assert not lost, (section.heading_path, text[lost[0] : lost[0] + 40])
    for prev, c in itertools.pairwise(chunks):
        same_split = (
            c.content_kind == prev.content_kind == "text"
            and len(c.section_ids) == len(prev.section_ids) == 1
            and c.section_ids == prev.section_ids
        )
        if same_split and settings.overlap_tokens > 0:
            # The previous chunk may have had markup trimmed off its end: its overlap run then
            # ended at a word end inside that markup. A run starts past markup it begins with.
            ends = [prev.provenance.end]
            at = prev.provenance.end
            while at < len(text) and (text[at].isspace() or left_out[at]):
                at += 1
                if left_out[at - 1] and (at == len(text) or text[at].isspace()):
                    ends.append(at)
            wants = set()
            for end in ends:
                want = expected_overlap_start(
                    text, prev.provenance.start, end, settings.overlap_tokens, counter
                )
                while want < end and (text[want].isspace() or left_out[want]):
                    want += 1
                wants.add(want if want < end else None)
            if None in wants and c.provenance.start >= prev.provenance.end:
                continue
            start = c.provenance.start
            # Or its run began inside markup cut between characters (an over-long "word" of
            # HTML): it then starts right after that markup, within the previous chunk's run.
            trimmed = left_out[start - 1] and start > min(w for w in wants if w is not None)
            assert start in wants or trimmed, (start, wants)
        else:
            assert c.provenance.start >= prev.provenance.end


def _rows_without_time(chunks: list[Chunk]) -> list[dict[str, object]]:
    return [c.model_dump(mode="json", exclude={"created_at"}) for c in chunks]


@pytest.fixture(scope="session")
def rows_without_time() -> Callable[[list[Chunk]], list[dict[str, object]]]:
    """Chunk rows as stored, ``created_at`` aside (the one field allowed to differ by run)."""
    return _rows_without_time


@pytest.fixture(scope="session")
def invariants() -> Callable[..., None]:
    return check_invariants
