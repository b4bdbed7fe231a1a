"""``StructureChunker``: a parsed document's sections -> retrieval-sized ``Chunk`` rows.

Packing rules (in reading order):
- A text section that fits (its ``contextual_text`` within ``max_tokens``) is one chunk.
- Neighbouring small sections merge: a section joins the chunk before it when either is under
  ``min_tokens``, it is a sibling of the chunk's first section or a child of one of its
  sections, and the result stays within ``target_tokens``. A merged chunk spans the contiguous
  text of its sections; its ``heading_path`` is the longest common prefix of their heading paths
  (for siblings, their parent's path: their own headings stay visible in the text), and
  ``section_ids`` lists them all in reading order.
- A longer section is cut (``text_split``) at paragraph, then sentence, then word boundaries,
  fenced code blocks kept whole where they fit, and the pieces packed up to ``target_tokens``
  with ``overlap_tokens`` of whole words carried over (``packing``); a short lead-in (a
  definition term, a line ending in ``:``) never ends a chunk apart from the prose it
  introduces where they fit together within ``max_tokens`` (``packing.lead_in``).
- A table is never merged with text: ``content_kind="table"``, split between rows with the
  header repeated (``tables``).

Size guarantee, for every chunk: tokens(contextual_text) + special tokens <= ``max_tokens`` <=
the model's ``max_sequence_tokens``. The heading path label's tokens are reserved from each
chunk's budget. A heading path is cut only where its label would leave fewer than
``min_text_tokens`` for text (plus overlap): then the document's over-long headings (a whole
paragraph in a heading style) are cut to their first words and "…" in the chunks' paths, the
section rows keeping them whole (``_shorten_long_headings``); a path that does not fit even so
raises ``ChunkingError``.

Counting: every character is counted once (a section's blocks, in one batch); sizes of packed
chunks are sums of counted pieces, exact for a tokenizer that never joins across whitespace
(``TokenCounter.additive``). A chunk whose sum may be inexact (other tokenizers; pieces of one
over-long word) is counted again, and cut finer if over the limit. ``metadata["token_count"]``
is the count the embedder sees, special tokens included.
"""

from __future__ import annotations

import bisect
import copy
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter

from agrag_pipeline.chunking.errors import ChunkingError
from agrag_pipeline.chunking.markup import (
    Span,
    document_title,
    has_visible_text,
    heading_line,
    inline_spans,
    invisible_spans,
    merged,
    merged_touching,
    replaced_spans,
    trim_span,
    visible_blocks,
    within,
)
from agrag_pipeline.chunking.packing import pack
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tables import split_table
from agrag_pipeline.chunking.text_split import (
    Block,
    Piece,
    blocks,
    blocks_and_texts,
    fit_pieces,
    strip_span,
)
from agrag_pipeline.chunking.tokens import TokenCounter, rare_characters
from agrag_pipeline.fingerprints import chunker_hash
from agrag_pipeline.models import Chunk, PageBox, PageProvenance, Section, TextProvenance
from agrag_pipeline.models.base import utc_now
from agrag_pipeline.models.chunk import (
    LABEL_SEPARATOR,
    UNEMBEDDED_SPANS,
    _clean_heading,
    embedded_text,
)
from agrag_pipeline.models.document import PROJECT_NAMESPACE
from agrag_pipeline.models.provenance import HEADER_SEPARATOR, CharSpan
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.trusted import Uuid5Series, unvalidated

#: ``(start, end, shown)``: text a reader sees otherwise than written (``markup.replaced_spans``).
Replaced = tuple[int, int, str]

CHUNKER_NAME = "agrag-structure"
#: Bump whenever the same settings would give different chunks: it changes ``chunker_hash``.
#: 5: texts with the 361 code points tokie counts unlike HF tokenizers beside a word
#: (``tokens._DISPUTED_RANGES``) are counted with HF, so their chunks can end elsewhere.
#: 6: the text between the tags of a Markdown file's raw HTML blocks (a table's cells, a
#: figure's caption) is embedded, each block-level element on its own line; it was left out
#: with the tags (``markdown.scan``), and a tag whose quoted attribute holds ``<T>`` is markup.
#: 7: a Markdown link's or image's syntax is not embedded, its text is: ``[``,
#: ``](destination "title")``, ``][label]``, an autolink's ``<>`` (``markdown._link_markup``);
#: fewer tokens, so chunks of link-heavy files can end elsewhere. A notebook's text layer is
#: Markdown too: its markdown cells' markup (links, HTML, comments) is left out likewise. An
#: entity or numeric character reference outside code is embedded as its character
#: (``&amp;`` as ``&``: ``Chunk.metadata["unembedded_spans"]`` entries of three items), and an
#: escape's backslash is left out (``snake\_case`` as ``snake_case``).
#: 8: a table cut into row groups counts its rows and header as they are embedded, where
#: markup or replacements stand in it (an HTML table's tags, a link's destination, an image
#: tag in a pipe table): counted as written they took up to 3x the tokens, so an HTML table
#: went one row to a chunk and a long row was cut inside its tags.
#: 9: DeepSeek-OCR's grounding tags in Markdown (``<|ref|>text<|/ref|><|det|>[[...]]<|/det|>``)
#: are not embedded (``markdown._GROUNDING``).
CHUNKER_VERSION = "9"

#: Token caps tried in turn for the headings of a path too long to leave room for text.
_HEADING_CAPS = (64, 32, 16, 8, 4, 2, 1)

#: The retries allowed to cut an over-limit chunk finer before giving up (never hit with an
#: additive tokenizer such as WordPiece; a safety net for others).
_MAX_REPAIRS = 8


def heading_label(heading_path: list[str] | tuple[str, ...]) -> str | None:
    """The label ``Chunk.contextual_text`` puts above the text (``Chunk.section_label``)."""
    if not heading_path:
        return None
    return LABEL_SEPARATOR.join(_clean_heading(h) for h in heading_path)


def contextual(
    heading_path: tuple[str, ...], text: str, unembedded: Sequence[Sequence[Any]] | None = None
) -> str:
    """What ``Chunk.contextual_text`` returns for this heading path, text and left-out spans."""
    label = heading_label(heading_path)
    body = embedded_text(text, unembedded)
    return body if label is None else f"{label}\n\n{body}"


@dataclass
class _Group:
    """Sections that become chunks together: one whole chunk, a split section, or a table."""

    kind: Literal["whole", "split", "table"]
    sections: list[Section]
    spans: list[tuple[int, int]]
    tokens: list[int]
    heading_path: tuple[str, ...]
    #: Each section's blocks and their counts, when counted up front (additive counters).
    blocks: list[list[Block] | None]
    block_tokens: list[list[int] | None]
    slack: int = 0


@dataclass(slots=True)
class _Draft:
    start: int
    end: int
    header: tuple[int, int] | None
    heading_path: tuple[str, ...]
    sections: list[Section]
    kind: Literal["text", "table"]
    text: str
    #: Content tokens of ``text``, summed from counted pieces.
    tokens: int
    #: False where the sum may differ from the joined text's count: the draft is recounted.
    exact: bool
    #: Spans of ``text`` (offsets into it) left out of what is embedded.
    unembedded: list[Span] = field(default_factory=list)
    #: ``(start, end, shown)`` of ``text`` embedded as ``shown`` (entity references).
    replaced: list[Replaced] = field(default_factory=list)
    #: The counted pieces of the text layer ``tokens`` was summed from, in order (apart by
    #: whitespace unless ``exact`` is False); None where not known (tables).
    units: Sequence[Piece] | None = None


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


class StructureChunker:
    """Cuts ``ParsedDocument`` sections into chunks; see the module docstring for the rules."""

    def __init__(
        self, settings: ChunkerSettings, counter: TokenCounter, max_sequence_tokens: int = 256
    ) -> None:
        if settings.max_tokens > max_sequence_tokens:
            raise ValueError(
                f"chunker max_tokens ({settings.max_tokens}) exceeds the embedding model's "
                f"maximum sequence length ({max_sequence_tokens} tokens): chunks would be "
                "silently truncated"
            )
        floor = settings.min_text_tokens + settings.overlap_tokens + counter.special_tokens
        if floor > settings.max_tokens:
            raise ValueError(
                f"max_tokens ({settings.max_tokens}) leaves no room: min_text_tokens + "
                f"overlap_tokens + {counter.special_tokens} special tokens = {floor}"
            )
        self.settings = settings
        self.counter = counter
        self.max_sequence_tokens = max_sequence_tokens
        self.chunker = CHUNKER_NAME
        self.chunker_hash = chunker_hash(
            CHUNKER_NAME,
            CHUNKER_VERSION,
            {
                "settings": settings.model_dump(mode="json"),
                "tokenizer_sha256": counter.identity,
                "max_sequence_tokens": max_sequence_tokens,
            },
        )
        self._labels: dict[tuple[str, ...], int] = {(): 0}
        #: This chunker with the counter's ``trusting`` view (texts without disputed characters).
        self._trusting_worker: StructureChunker | None = None

    # -- public -----------------------------------------------------------------------------

    def chunk(
        self,
        parsed: ParsedDocument,
        *,
        schema_fingerprint: str | None,
        extraction_fingerprint: str | None,
    ) -> list[Chunk]:
        """The document's chunks, ``index`` 0..n-1 in reading order, ids deterministic."""
        text = parsed.text_layer
        rare = rare_characters(text)
        # Counts of parts apart by whitespace sum to the count of the parts joined where the
        # counter is additive and the text holds no whitespace it does not split at.
        sums_exact = self.counter.additive and rare.isdisjoint(_UNSPLIT_SPACE)
        trusting = self.counter.trusting(text, rare)
        if trusting is not self.counter:
            # Same settings and label cache; only the per-piece disputed-character check is off.
            if self._trusting_worker is None or self._trusting_worker.counter is not trusting:
                worker = copy.copy(self)
                worker.counter = trusting
                self._trusting_worker = worker
            return self._trusting_worker._chunk_counted(
                parsed, schema_fingerprint, extraction_fingerprint, sums_exact
            )
        return self._chunk_counted(parsed, schema_fingerprint, extraction_fingerprint, sums_exact)

    def _chunk_counted(
        self,
        parsed: ParsedDocument,
        schema_fingerprint: str | None,
        extraction_fingerprint: str | None,
        sums_exact: bool,
    ) -> list[Chunk]:
        text = parsed.text_layer
        invisible = invisible_spans(parsed)
        inline = inline_spans(parsed)
        # Text before the first heading gets the document's title as its heading, so no chunk
        # of a document with headings is without a heading path (nor merges into one that is).
        headed = any(s.heading is not None for s in parsed.sections)
        title = document_title(parsed, invisible) if headed else None
        sections: list[Section] = []
        spans: list[tuple[int, int]] = []
        for section in parsed.sections:
            s, e = strip_span(text, section.start, section.end)
            if invisible:
                # Markup at a section's edges belongs to no chunk; markup alone makes none.
                s, e = trim_span(text, s, e, invisible)
                if s < e and not has_visible_text(text, s, e, invisible):
                    s = e
            if s < e:
                if title is not None and not section.heading_path:
                    section = section.model_copy(update={"heading_path": [title]})
                sections.append(section)
                spans.append((s, e))
        section_blocks, block_tokens, counts = self._count_sections(text, sections, spans)
        self._count_labels([tuple(s.heading_path) for s in sections])
        shortened = self._shorten_long_headings(sections)
        if shortened:
            sections = [
                s.model_copy(update={"heading_path": [shortened.get(h, h) for h in s.heading_path]})
                if any(h in shortened for h in s.heading_path)
                else s
                for s in sections
            ]
            title = shortened.get(title, title) if title is not None else None
        self._check_labels(parsed, sections)
        groups = self._group(sections, spans, counts, section_blocks, block_tokens)
        # Heading paths some chunk's label will carry: those of sections with text of their own
        # beyond their heading, and every prefix (a heading-only section's heading lives on in
        # the paths of the sections under it).
        carried: set[tuple[str, ...]] = set()
        lines: dict[int, Span | None] = {}  # by id(section): each heading line found once
        for section, (s, e) in zip(sections, spans, strict=True):
            # A shortened heading is said whole by its line: the line stays embedded.
            own_shortened = section.heading is not None and section.heading in shortened
            line = lines[id(section)] = None if own_shortened else heading_line(text, section)
            if line is None or has_visible_text(text, max(line[1], s), e, invisible):
                path = tuple(section.heading_path)
                carried.update(path[:n] for n in range(1, len(path) + 1))
        drafts = self._drafts_within_limit(
            text,
            groups,
            parsed.document.source_key,
            _Context(
                invisible,
                carried,
                title,
                lines,
                sums_exact,
                replaced_spans(parsed),
                inline,
                merged_touching([*invisible, *inline]) if inline else invisible,
            ),
        )
        return self._chunks(parsed, drafts, schema_fingerprint, extraction_fingerprint)

    def _count_sections(
        self, text: str, sections: list[Section], spans: list[tuple[int, int]]
    ) -> tuple[list[list[Block] | None], list[list[int] | None], list[int]]:
        """Each section's tokens; with an additive counter, from its blocks, counted once.

        Blocks are what a long section is cut into first, and they are apart by whitespace, so
        their counts sum to the section's: every character is counted once, in one batch.
        """
        if not self.counter.additive:
            counts = self.counter.count_batch([text[s:e] for s, e in spans])
            return [None] * len(spans), [None] * len(spans), counts
        keep = self.settings.keep_code_blocks_whole
        section_blocks: list[list[Block] | None] = []
        texts: list[str] = []
        for section, (s, e) in zip(sections, spans, strict=True):
            if section.kind == "text":
                found, found_texts = blocks_and_texts(text, s, e, keep)
                section_blocks.append(found)
                texts.extend(found_texts)
            else:
                section_blocks.append([(s, e, "prose")])
                texts.append(text[s:e])
        flat = self.counter.count_batch(texts)
        block_tokens: list[list[int] | None] = []
        at = 0
        for bl in section_blocks:
            n = len(bl or ())
            block_tokens.append(flat[at : at + n])
            at += n
        return section_blocks, block_tokens, [sum(b or ()) for b in block_tokens]

    # -- labels -----------------------------------------------------------------------------

    def _count_labels(self, paths: list[tuple[str, ...]]) -> None:
        new = sorted({p for p in paths if p not in self._labels})
        if new:
            labels = [heading_label(p) or "" for p in new]
            for path, n in zip(new, self.counter.count_batch(labels), strict=True):
                self._labels[path] = n

    def _label_tokens(self, path: tuple[str, ...]) -> int:
        if path not in self._labels:
            self._count_labels([path])
        return self._labels[path]

    def _text_budget(self, path: tuple[str, ...]) -> int:
        """Content tokens a chunk under ``path`` may hold (label and specials reserved)."""
        return self.settings.max_tokens - self.counter.special_tokens - self._label_tokens(path)

    def _shorten_long_headings(self, sections: list[Section]) -> dict[str, str]:
        """Each over-long heading -> its first words and "…", where a heading path otherwise
        leaves a chunk too few tokens for text (``_check_labels``); else nothing.

        A heading of a paragraph's length (Word's heading style on a whole paragraph, a
        numbered clause of a contract) made the whole document fail. Every heading of the
        document over a cap is cut to it, the largest cap (64 tokens, then 32, 16, ...) at
        which every path fits, so a heading reads alike in every path; the section rows keep
        it whole, and its line stays embedded in the chunk that holds it."""
        paths = {tuple(s.heading_path) for s in sections}
        if all(map(self._leaves_room, paths)):
            return {}
        headings = {h for path in paths for h in path}
        for cap in _HEADING_CAPS:
            shortened = {h: c for h in headings if (c := self._cut_heading(h, cap)) != h}
            fitted = [tuple(shortened.get(h, h) for h in path) for path in paths]
            self._count_labels(fitted)
            if all(map(self._leaves_room, fitted)):
                return shortened
        return {}  # not even a word of each fits: ``_check_labels`` says so

    def _cut_heading(self, heading: str, cap: int) -> str:
        """``heading`` if its label takes at most ``cap`` tokens, else its longest start (at a
        space where one is, else at a character) that does with " …" after it."""
        if self._label_tokens((heading,)) <= cap:
            return heading
        count = self.counter.count
        low, high = 0, len(heading)  # the longest prefix that fits lies in [low, high)
        while high - low > 1:
            mid = (low + high) // 2
            if count(f"{heading[:mid].rstrip()} …") <= cap:
                low = mid
            else:
                high = mid
        space = heading.rfind(" ", 0, low + 1)
        end = space if space > 0 else low
        return f"{heading[:end].rstrip()} …" if end > 0 else "…"

    def _room_needed(self) -> int:
        """Tokens a chunk keeps for text beside its label: ``min_text_tokens`` plus overlap."""
        return self.settings.min_text_tokens + self.settings.overlap_tokens

    def _leaves_room(self, path: tuple[str, ...]) -> bool:
        return self._text_budget(path) >= self._room_needed()

    def _check_labels(self, parsed: ParsedDocument, sections: list[Section]) -> None:
        need = self._room_needed()
        for section in sections:
            path = tuple(section.heading_path)
            if not self._leaves_room(path):
                raise ChunkingError(
                    parsed.document.source_key,
                    f"the heading path {heading_label(path)!r} takes {self._label_tokens(path)} "
                    f"tokens, leaving fewer than min_text_tokens + overlap_tokens = {need} of "
                    f"max_tokens {self.settings.max_tokens} for text",
                )

    # -- grouping ---------------------------------------------------------------------------

    def _group(
        self,
        sections: list[Section],
        spans: list[tuple[int, int]],
        counts: list[int],
        section_blocks: list[list[Block] | None],
        block_tokens: list[list[int] | None],
    ) -> list[_Group]:
        st = self.settings
        groups: list[_Group] = []
        run: _Group | None = None
        for section, span, n, bl, bt in zip(
            sections, spans, counts, section_blocks, block_tokens, strict=True
        ):
            path = tuple(section.heading_path)
            if section.kind == "table":
                groups.append(_Group("table", [section], [span], [n], path, [bl], [bt]))
                run = None
                continue
            if n > self._text_budget(path):
                groups.append(_Group("split", [section], [span], [n], path, [bl], [bt]))
                run = None
                continue
            if run is not None and self._can_merge(run, section, n):
                run.sections.append(section)
                run.spans.append(span)
                run.tokens.append(n)
                run.blocks.append(bl)
                run.block_tokens.append(bt)
                run.heading_path = _common_prefix(run.heading_path, path)
                continue
            run = _Group("whole", [section], [span], [n], path, [bl], [bt])
            groups.append(run)
            if st.min_tokens == 0:
                run = None
        return groups

    def _can_merge(self, run: _Group, section: Section, n: int) -> bool:
        st = self.settings
        total = sum(run.tokens)
        if not (total < st.min_tokens or n < st.min_tokens):
            return False
        members = {s.id for s in run.sections}
        if section.parent_id != run.sections[0].parent_id and section.parent_id not in members:
            return False
        path = _common_prefix(run.heading_path, tuple(section.heading_path))
        if not path and (run.heading_path or section.heading):
            return False  # top-level siblings: merged, the chunk would lose its heading path
        size = self._label_tokens(path) + total + n + self.counter.special_tokens
        return size <= st.target_tokens

    # -- drafts -----------------------------------------------------------------------------

    def _drafts_within_limit(
        self, text: str, groups: list[_Group], source_key: str, context: _Context
    ) -> list[_Draft]:
        """Drafts of every group; any draft over the limit gets its group cut finer.

        A draft whose summed count is exact (additive tokenizer, pieces apart) is trusted;
        the others are counted again as the embedder will see them, from the blocks counted
        already where their sum is the count (``_embedded_tokens``).
        """
        per_group = [_finished(text, self._group_drafts(text, g, context), context) for g in groups]
        pending = list(range(len(groups)))
        specials = self.counter.special_tokens
        for _ in range(_MAX_REPAIRS + 1):
            checks: list[_Draft] = []
            summed: list[tuple[_Draft, int, list[Span], list[Span]]] = []
            for gi in pending:
                for d in per_group[gi]:
                    if d.exact:
                        continue
                    found = _embedded_tokens(text, d) if context.sums_exact else None
                    if found is None:
                        checks.append(d)
                    else:
                        summed.append((d, *found))
            counts = self.counter.count_batch(
                [contextual(d.heading_path, d.text, _left_out(d)) for d in checks]
            )
            for d, n in zip(checks, counts, strict=True):
                d.tokens, d.exact = n - self._label_tokens(d.heading_path), True
            parts = self.counter.count_batch(
                [text[a:b] for _, _, add, off in summed for a, b in (*add, *off)]
            )
            at = 0
            for d, known, add, off in summed:
                added = sum(parts[at : at + len(add)])
                at += len(add)
                d.tokens, d.exact = known + added - sum(parts[at : at + len(off)]), True
                at += len(off)
            over: dict[int, int] = {}
            label_tokens = self._label_tokens
            limit = self.settings.max_tokens - specials
            for gi in pending:
                for d in per_group[gi]:
                    excess = label_tokens(d.heading_path) + d.tokens - limit
                    if excess > 0:
                        over[gi] = max(over.get(gi, 0), excess)
            if not over:
                return [d for drafts in per_group for d in drafts]
            for gi, excess in over.items():
                group = groups[gi]
                if group.kind == "whole":
                    group.kind = "split"
                group.slack += excess
                per_group[gi] = _finished(text, self._group_drafts(text, group, context), context)
            pending = sorted(over)
        raise ChunkingError(source_key, "could not cut chunks within max_tokens (tokenizer?)")

    def _group_drafts(self, text: str, group: _Group, context: _Context) -> list[_Draft]:
        additive = self.counter.additive
        if group.kind == "whole":
            start, end = group.spans[0][0], group.spans[-1][1]
            touching = any(a[1] == b[0] for a, b in zip(group.spans, group.spans[1:], strict=False))
            units: list[Piece] | None = []
            for bl, bt in zip(group.blocks, group.block_tokens, strict=True):
                if bl is None or bt is None or units is None:
                    units = None
                    continue
                units.extend((s, e, n) for (s, e, _), n in zip(bl, bt, strict=True))
            return [
                _Draft(
                    start,
                    end,
                    None,
                    group.heading_path,
                    group.sections,
                    "text",
                    text[start:end],
                    sum(group.tokens),
                    additive and not touching,
                    units=units,
                )
            ]
        if group.kind == "table":
            return self._table_drafts(text, group, context)
        drafts: list[_Draft] = []
        for section, span, bl, bt in zip(
            group.sections, group.spans, group.blocks, group.block_tokens, strict=True
        ):
            drafts.extend(
                self._split_drafts(text, section, span, group.slack, bl, bt, context.invisible)
            )
        return drafts

    def _split_drafts(
        self,
        text: str,
        section: Section,
        span: tuple[int, int],
        slack: int,
        units: list[Block] | None,
        unit_tokens: list[int] | None,
        invisible: list[Span],
    ) -> list[_Draft]:
        st = self.settings
        path = tuple(section.heading_path)
        budget = max(self._text_budget(path) - slack, 1)
        target = max(min(budget, st.target_tokens - st.max_tokens + budget), 1)
        piece_budget = max(budget - st.overlap_tokens, 1)
        if units is None:
            units, unit_tokens = blocks(text, span[0], span[1], st.keep_code_blocks_whole), None
        if invisible:
            # A block of nothing but markup is no piece: it could end up a chunk's overlap.
            keep = visible_blocks(text, units, invisible)
            if len(keep) < len(units):
                units = [units[i] for i in keep]
                unit_tokens = None if unit_tokens is None else [unit_tokens[i] for i in keep]
        pieces = fit_pieces(text, units, piece_budget, self.counter, unit_tokens)
        packed = pack(text, pieces, target, st.overlap_tokens, self.counter, budget)
        additive = self.counter.additive
        return [
            _Draft(
                p.start,
                p.end,
                None,
                path,
                [section],
                "text",
                text[p.start : p.end],
                p.tokens,
                additive and not p.joined,
                units=p.units,
            )
            for p in packed
        ]

    def _table_drafts(self, text: str, group: _Group, context: _Context) -> list[_Draft]:
        st = self.settings
        section, (start, end), n = group.sections[0], group.spans[0], group.tokens[0]
        path = group.heading_path
        budget = max(self._text_budget(path) - group.slack, 1)
        rows_ok = (
            st.table_rows_per_chunk is None or len(section.table_rows) <= st.table_rows_per_chunk
        )
        if group.slack == 0 and n <= budget and rows_ok:
            draft = _Draft(
                start,
                end,
                None,
                path,
                [section],
                "table",
                text[start:end],
                n,
                self.counter.additive,
            )
            return [draft]
        target = max(min(budget, st.target_tokens - st.max_tokens + budget), 1)
        shown = _shown_in(text, start, end, context)
        drafts = []
        for g in split_table(
            text,
            section,
            start,
            end,
            budget=budget,
            target=target,
            rows_per_chunk=st.table_rows_per_chunk,
            repeat_header=st.repeat_table_header,
            min_text_tokens=st.min_text_tokens,
            counter=self.counter,
            shown=shown,
        ):
            body = text[g.start : g.end]
            if g.header is not None:
                body = text[g.header[0] : g.header[1]] + HEADER_SEPARATOR + body
            exact = self.counter.additive and not g.joined and shown is None
            drafts.append(
                _Draft(g.start, g.end, g.header, path, [section], "table", body, g.tokens, exact)
            )
        return drafts

    # -- rows -------------------------------------------------------------------------------

    def _chunks(
        self,
        parsed: ParsedDocument,
        drafts: list[_Draft],
        schema_fingerprint: str | None,
        extraction_fingerprint: str | None,
    ) -> list[Chunk]:
        document = parsed.document
        assert document.id is not None
        # The caller's values are validated once here, as ``Chunk(...)`` would validate them.
        schema_fingerprint = _FINGERPRINT.validate_python(schema_fingerprint)
        extraction_fingerprint = _FINGERPRINT.validate_python(extraction_fingerprint)
        # One creation time per document: a chunk's rows differ between runs only there.
        created_at = utc_now()
        specials = self.counter.special_tokens
        # Chunk.id_for(document.id, document.content_hash, self.chunker_hash, index), with the
        # shared prefix hashed once per document.
        chunk_id = Uuid5Series(
            PROJECT_NAMESPACE, f"chunk:{document.id}:{document.content_hash}:{self.chunker_hash}:"
        )
        chunks: list[Chunk] = []
        paged = parsed.paged
        labels = self._labels  # every draft's path is counted (``_count_labels``)
        for index, draft in enumerate(drafts):
            n = labels[draft.heading_path] + draft.tokens + specials
            header = (
                None
                if draft.header is None
                else CharSpan(start=draft.header[0], end=draft.header[1])
            )
            provenance: TextProvenance | PageProvenance
            if paged:
                pages, boxes = _locate(parsed, draft)
                provenance = PageProvenance(
                    start=draft.start,
                    end=draft.end,
                    repeated_header=header,
                    pages=pages,
                    boxes=boxes,
                )
            else:
                provenance = unvalidated(
                    TextProvenance,
                    {
                        "start": draft.start,
                        "end": draft.end,
                        "repeated_header": header,
                        "kind": "text",
                    },
                    _TEXT_PROVENANCE_GIVEN,
                )
            metadata: dict[str, object] = {"token_count": n}
            if draft.unembedded or draft.replaced:
                metadata[UNEMBEDDED_SPANS] = [list(span) for span in _left_out(draft)]
            chunk_fields = {
                "id": chunk_id(str(index)),
                "created_at": created_at,
                "metadata": metadata,
                "document_id": document.id,
                "content_hash": document.content_hash,
                "index": index,
                "text": draft.text,
                "provenance": provenance,
                "heading_path": list(draft.heading_path),
                "content_kind": draft.kind,
                "chunker": self.chunker,
                "chunker_hash": self.chunker_hash,
                "schema_fingerprint": schema_fingerprint,
                "extraction_fingerprint": extraction_fingerprint,
                "section_ids": [s.id for s in draft.sections if s.id is not None],
                "embedding": None,
            }
            # Values computed here from validated parts: built without re-validation (see
            # ``unvalidated``; the tests validate every row).
            chunks.append(unvalidated(Chunk, chunk_fields, _CHUNK_GIVEN))
        return chunks


#: The fields ``_chunks`` gives a row (the others keep their defaults), as in ``Chunk(...)``.
#: ``Chunk.schema_fingerprint`` and ``Chunk.extraction_fingerprint``'s type.
_FINGERPRINT: TypeAdapter[str | None] = TypeAdapter(str | None)
_CHUNK_GIVEN = frozenset(Chunk.model_fields) - {"embedding"}
_TEXT_PROVENANCE_GIVEN = frozenset({"start", "end", "repeated_header"})
#: Whitespace to Python that a BERT-style tokenizer does not split at (control characters it
#: deletes, line and paragraph separators): around one, counts of parts may not add up.
_UNSPLIT_SPACE = frozenset(
    chr(c)
    for c in range(sys.maxunicode + 1)
    if chr(c).isspace() and chr(c) not in " \t\n\r" and unicodedata.category(chr(c)) != "Zs"
)


def _embedded_tokens(text: str, d: _Draft) -> tuple[int, list[Span], list[Span]] | None:
    """Tokens of what draft ``d`` embeds, from the units it was counted from.

    Returns the sum of the units it keeps whole or cuts, and the parts of units to count and
    add (what a cut unit keeps) or to count and take off (what it loses, where that is
    shorter and apart from the rest by whitespace). None where a sum might differ from the
    count: units unknown (a table's repeated header), parts that would join into one word,
    visible text outside every unit. Sound where the tokens of parts apart by whitespace sum
    to the tokens of the parts joined (``_Context.sums_exact``).
    """
    units = d.units
    if units is None or d.replaced:
        return None  # a replacement's tokens are not a unit's
    start, end = d.start, d.end
    hidden = [(a + start, b + start) for a, b in d.unembedded]
    for a, b in hidden:
        if a > start and b < end and not (text[a - 1].isspace() or text[b].isspace()):
            return None  # the text either side would join into one word
    total = 0
    add: list[Span] = []
    take_off: list[Span] = []
    at = start  # end of the last unit taken
    h = 0  # the first hidden span that may reach the unit
    for us, ue, n in units:
        if ue <= start:
            continue
        if us >= end:
            break
        if us <= at and at > start:
            return None  # touches the unit before it
        if us > at and not text[at:us].isspace() and has_visible_text(text, at, us, hidden):
            return None
        at = ue
        cs, ce = max(us, start), min(ue, end)
        while h < len(hidden) and hidden[h][1] <= cs:
            h += 1
        lost: list[Span] = [(us, cs)] if cs > us else []
        j = h
        while j < len(hidden) and hidden[j][0] < ce:
            a, b = hidden[j]
            lost.append((a if a > cs else cs, b if b < ce else ce))
            j += 1
        if ce < ue:
            lost.append((ce, ue))
        if not lost:
            total += n
            continue
        kept: list[Span] = []
        k = us
        for a, b in lost:
            if a > k:
                kept.append((k, a))
            k = b
        if k < ue:
            kept.append((k, ue))
        kept = [(a, b) for a, b in kept if not text[a:b].isspace()]
        if sum(b - a for a, b in lost) < sum(b - a for a, b in kept) and all(
            (a == us or text[a - 1].isspace() or text[a].isspace())
            and (b == ue or text[b - 1].isspace() or text[b].isspace())
            for a, b in lost
        ):
            total += n
            take_off.extend(lost)
        else:
            add.extend(kept)
    if end > at and has_visible_text(text, max(at, start), end, hidden):
        return None
    return total, add, take_off


@dataclass(frozen=True, slots=True)
class _Context:
    """Per document: spans of markup no reader sees, and the heading paths labels carry."""

    invisible: list[Span]
    carried: set[tuple[str, ...]]
    #: The document's title (``markup.document_title``); None for a document without headings.
    title: str | None
    #: Each section's ``heading_line``, by ``id(section)``.
    lines: dict[int, Span | None]
    #: Counts of parts apart by whitespace sum to the count of the parts joined: the counter
    #: is additive and the text holds no whitespace it does not split at.
    sums_exact: bool = False
    #: ``markup.replaced_spans``: what a reader sees otherwise than written, sorted.
    replaced: list[Replaced] = field(default_factory=list)
    #: ``markup.inline_spans``: left out of what is embedded, never trimmed off a chunk.
    inline: list[Span] = field(default_factory=list)
    #: ``invisible`` and ``inline`` joined: what a table draft leaves out (never trimmed).
    in_tables: list[Span] = field(default_factory=list)


def _finished(text: str, drafts: list[_Draft], context: _Context) -> list[_Draft]:
    """Drafts with what their embedded text must not hold trimmed off or marked as left out.

    Left out: markup no reader sees, and the heading line of a section whose heading the
    chunk's label already ends with (the embedded text never says a heading twice). A draft
    with nothing else is dropped where its heading lives on in the heading paths of the
    chunks under it; a heading with nothing under it at all stays a chunk of its own, under
    its parent's label (at the top, the document title's; a document that is one heading
    and nothing else keeps its own).
    A table draft is never trimmed (its text may join a repeated header to rows); markup in
    its cells is left out of what is embedded.
    """
    invisible = context.invisible
    out: list[_Draft] = []
    for d in drafts:
        if d.kind == "table":
            if context.in_tables or context.replaced:
                _mark_table_markup(d, context.in_tables, context.replaced)
            out.append(d)
            continue
        markup = within(invisible, d.start, d.end) if invisible else []
        hidden = list(markup)
        for section in d.sections:
            if section.heading is not None and tuple(section.heading_path) == d.heading_path:
                line = context.lines[id(section)]
                if line is not None and line[0] < d.end and line[1] > d.start:
                    hidden.append((max(line[0], d.start), min(line[1], d.end)))
        if not hidden:
            _mark_inline(d, context, d.start, d.end, [])
            out.append(d)
            continue
        hidden = merged(text, hidden)
        start, end = trim_span(text, d.start, d.end, hidden)
        if start >= end or not has_visible_text(text, start, end, hidden):
            if d.heading_path in context.carried:
                continue
            # Only a heading, which no other chunk carries: keep it, said once.
            hidden = markup
            start, end = trim_span(text, d.start, d.end, hidden)
            if start >= end:
                continue
            if len(d.heading_path) > 1:
                d.heading_path = d.heading_path[:-1]
            elif context.title is not None and (context.title,) != d.heading_path:
                d.heading_path = (context.title,)
        if (start, end) != (d.start, d.end):
            d.start, d.end, d.text = start, end, text[start:end]
        d.unembedded = [(a - start, b - start) for a, b in within(hidden, start, end)]
        d.exact = False
        _mark_inline(d, context, start, end, hidden)
        out.append(d)
    return out


def _left_out(d: _Draft) -> list[Span | Replaced]:
    """What the draft's embedded text leaves out or shows otherwise, in order."""
    if not d.replaced:
        return list(d.unembedded)
    return sorted([*d.unembedded, *d.replaced])


def _replaced_within(
    replaced: list[Replaced],
    start: int,
    end: int,
    hidden: Sequence[Span],
    cut: list[Span] | None = None,
) -> list[Replaced]:
    """The replacements wholly inside ``[start, end)`` and outside every ``hidden`` span.

    Where ``cut`` is given, the parts inside ``[start, end)`` of the replacements the range
    cuts go to it: a table row too long for a chunk is cut at a space, which may fall among the
    tags between an HTML table's cells; what of them stands this side of the cut has no
    replacement of its own, and is left out."""
    i = bisect.bisect_left(replaced, (start,))
    if cut is not None and i:
        i -= 1  # the one before may reach into the range (replacements are disjoint)
    out: list[Replaced] = []
    while i < len(replaced) and replaced[i][0] < end:
        a, b, shown = replaced[i]
        i += 1
        if a >= start and b <= end:
            if not within(hidden, a, b):
                out.append((a, b, shown))
        elif cut is not None and b > start:
            cut.append((max(a, start), min(b, end)))
    return out


def _mark_inline(
    d: _Draft, context: _Context, start: int, end: int, hidden: Sequence[Span]
) -> None:
    """Add to a text draft spanning ``[start, end)`` (its left-out ``hidden`` spans marked)
    the inline markup inside it and its replacements; neither trims its text."""
    inline = within(context.inline, start, end) if context.inline else []
    if inline:
        if d.unembedded:
            absolute = [(a + start, b + start) for a, b in d.unembedded]
            inline = merged_touching(absolute + inline)
        d.unembedded = [(a - start, b - start) for a, b in inline]
        d.exact = False
    found = _replaced_within(context.replaced, start, end, hidden) if context.replaced else []
    if found:
        d.replaced = [(a - start, b - start, shown) for a, b, shown in found]
        d.exact = False


def _shown_in(text: str, start: int, end: int, context: _Context) -> Any:
    """What the spans of the table ``text[start:end]`` embed, for counting its rows as the
    embedder sees them (an HTML table's tags are most of its text); None where it holds no
    markup and no replacement, so its text is what it embeds."""
    hidden = within(context.in_tables, start, end) if context.in_tables else []
    found = _replaced_within(context.replaced, start, end, hidden) if context.replaced else []
    if not hidden and not found:
        return None

    def shown(a: int, b: int) -> str:
        spans: list[Span | Replaced] = [(s - a, e - a) for s, e in within(hidden, a, b)]
        spans.extend((s - a, e - a, v) for s, e, v in _replaced_within(found, a, b, ()))
        return embedded_text(text[a:b], sorted(spans))

    return shown


def _mark_table_markup(d: _Draft, invisible: list[Span], replaced: list[Replaced]) -> None:
    """Left-out and replaced spans of a table draft, whose text is ``[header +
    HEADER_SEPARATOR +] rows``."""
    spans: list[Span] = []
    shown: list[Replaced] = []
    offset = 0
    if d.header is not None:
        hs, he = d.header
        cut: list[Span] = []
        spans.extend((a - hs, b - hs) for a, b in within(invisible, hs, he))
        shown.extend((a - hs, b - hs, t) for a, b, t in _replaced_within(replaced, hs, he, (), cut))
        spans.extend((a - hs, b - hs) for a, b in cut)
        offset = he - hs + len(HEADER_SEPARATOR)
    spans.extend(
        (a - d.start + offset, b - d.start + offset) for a, b in within(invisible, d.start, d.end)
    )
    cut = []
    shown.extend(
        (a - d.start + offset, b - d.start + offset, t)
        for a, b, t in _replaced_within(replaced, d.start, d.end, (), cut)
    )
    spans.extend((a - d.start + offset, b - d.start + offset) for a, b in cut)
    spans.sort()
    if spans:
        d.unembedded, d.exact = spans, False
    if shown:
        d.replaced, d.exact = shown, False


def _locate(parsed: ParsedDocument, draft: _Draft) -> tuple[list[int], list[PageBox]]:
    """Pages and boxes of a chunk's span (and its repeated header), with fallbacks.

    A span the layout does not cover (e.g. text a parser added between lines) falls back to its
    sections' pages, then to the page of the nearest layout span before it.
    """
    pages, boxes = parsed.locate(draft.start, draft.end)
    if draft.header is not None:
        h_pages, h_boxes = parsed.locate(*draft.header)
        pages = sorted(set(pages) | set(h_pages))
        boxes = h_boxes + boxes
    if not pages:
        pages = sorted({p for s in draft.sections for p in s.pages})
    if not pages:
        before = [span for span in parsed.layout if span.start <= draft.start]
        pages = [(before[-1] if before else parsed.layout[0]).box.page]
    boxes = [b for b in boxes if b.page in pages]
    return pages, boxes
