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
  with ``overlap_tokens`` of whole words carried over (``packing``).
- A table is never merged with text: ``content_kind="table"``, split between rows with the
  header repeated (``tables``).

Size guarantee, for every chunk: tokens(contextual_text) + special tokens <= ``max_tokens`` <=
the model's ``max_sequence_tokens``. The heading path label's tokens are reserved from each
chunk's budget. Heading paths are data and are never cut: a label that leaves fewer than
``min_text_tokens`` for text (plus overlap) raises ``ChunkingError``.

Counting: every character is counted once (a section's blocks, in one batch); sizes of packed
chunks are sums of counted pieces, exact for a tokenizer that never joins across whitespace
(``TokenCounter.additive``). A chunk whose sum may be inexact (other tokenizers; pieces of one
over-long word) is counted again, and cut finer if over the limit. ``metadata["token_count"]``
is the count the embedder sees, special tokens included.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal

from pydantic import TypeAdapter

from agrag_pipeline.chunking.errors import ChunkingError
from agrag_pipeline.chunking.packing import pack
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tables import split_table
from agrag_pipeline.chunking.text_split import (
    Block,
    blocks,
    blocks_and_texts,
    fit_pieces,
    strip_span,
)
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.fingerprints import chunker_hash
from agrag_pipeline.models import Chunk, PageBox, PageProvenance, Section, TextProvenance
from agrag_pipeline.models.base import utc_now
from agrag_pipeline.models.chunk import LABEL_SEPARATOR, _clean_heading
from agrag_pipeline.models.document import PROJECT_NAMESPACE
from agrag_pipeline.models.provenance import HEADER_SEPARATOR, CharSpan
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.trusted import Uuid5Series, unvalidated

CHUNKER_NAME = "agrag-structure"
#: Bump whenever the same settings would give different chunks: it changes ``chunker_hash``.
CHUNKER_VERSION = "1"

#: The retries allowed to cut an over-limit chunk finer before giving up (never hit with an
#: additive tokenizer such as WordPiece; a safety net for others).
_MAX_REPAIRS = 8


def heading_label(heading_path: list[str] | tuple[str, ...]) -> str | None:
    """The label ``Chunk.contextual_text`` puts above the text (``Chunk.section_label``)."""
    if not heading_path:
        return None
    return LABEL_SEPARATOR.join(_clean_heading(h) for h in heading_path)


def contextual(heading_path: tuple[str, ...], text: str) -> str:
    """What ``Chunk.contextual_text`` returns for this heading path and text."""
    label = heading_label(heading_path)
    return text if label is None else f"{label}\n\n{text}"


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
        trusting = self.counter.trusting(text)
        if trusting is not self.counter:
            # Same settings and label cache; only the per-piece disputed-character check is off.
            worker = copy.copy(self)
            worker.counter = trusting
            return worker._chunk_counted(parsed, schema_fingerprint, extraction_fingerprint)
        return self._chunk_counted(parsed, schema_fingerprint, extraction_fingerprint)

    def _chunk_counted(
        self,
        parsed: ParsedDocument,
        schema_fingerprint: str | None,
        extraction_fingerprint: str | None,
    ) -> list[Chunk]:
        text = parsed.text_layer
        sections: list[Section] = []
        spans: list[tuple[int, int]] = []
        for section in parsed.sections:
            s, e = strip_span(text, section.start, section.end)
            if s < e:
                sections.append(section)
                spans.append((s, e))
        section_blocks, block_tokens, counts = self._count_sections(text, sections, spans)
        self._count_labels([tuple(s.heading_path) for s in sections])
        self._check_labels(parsed, sections)
        groups = self._group(sections, spans, counts, section_blocks, block_tokens)
        drafts = self._drafts_within_limit(text, groups, parsed.document.source_key)
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

    def _check_labels(self, parsed: ParsedDocument, sections: list[Section]) -> None:
        need = self.settings.min_text_tokens + self.settings.overlap_tokens
        for section in sections:
            path = tuple(section.heading_path)
            if self._text_budget(path) < need:
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
        size = self._label_tokens(path) + total + n + self.counter.special_tokens
        return size <= st.target_tokens

    # -- drafts -----------------------------------------------------------------------------

    def _drafts_within_limit(
        self, text: str, groups: list[_Group], source_key: str
    ) -> list[_Draft]:
        """Drafts of every group; any draft over the limit gets its group cut finer.

        A draft whose summed count is exact (additive tokenizer, pieces apart) is trusted;
        the others are counted again as the embedder will see them.
        """
        per_group = [self._group_drafts(text, g) for g in groups]
        pending = list(range(len(groups)))
        specials = self.counter.special_tokens
        for _ in range(_MAX_REPAIRS + 1):
            checks = [(gi, d) for gi in pending for d in per_group[gi] if not d.exact]
            counts = self.counter.count_batch(
                [contextual(d.heading_path, d.text) for _, d in checks]
            )
            for (_, d), n in zip(checks, counts, strict=True):
                d.tokens, d.exact = n - self._label_tokens(d.heading_path), True
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
                per_group[gi] = self._group_drafts(text, group)
            pending = sorted(over)
        raise ChunkingError(source_key, "could not cut chunks within max_tokens (tokenizer?)")

    def _group_drafts(self, text: str, group: _Group) -> list[_Draft]:
        additive = self.counter.additive
        if group.kind == "whole":
            start, end = group.spans[0][0], group.spans[-1][1]
            touching = any(a[1] == b[0] for a, b in zip(group.spans, group.spans[1:], strict=False))
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
                )
            ]
        if group.kind == "table":
            return self._table_drafts(text, group)
        drafts: list[_Draft] = []
        for section, span, bl, bt in zip(
            group.sections, group.spans, group.blocks, group.block_tokens, strict=True
        ):
            drafts.extend(self._split_drafts(text, section, span, group.slack, bl, bt))
        return drafts

    def _split_drafts(
        self,
        text: str,
        section: Section,
        span: tuple[int, int],
        slack: int,
        units: list[Block] | None,
        unit_tokens: list[int] | None,
    ) -> list[_Draft]:
        st = self.settings
        path = tuple(section.heading_path)
        budget = max(self._text_budget(path) - slack, 1)
        target = max(min(budget, st.target_tokens - st.max_tokens + budget), 1)
        piece_budget = max(budget - st.overlap_tokens, 1)
        if units is None:
            units, unit_tokens = blocks(text, span[0], span[1], st.keep_code_blocks_whole), None
        pieces = fit_pieces(text, units, piece_budget, self.counter, unit_tokens)
        packed = pack(text, pieces, target, st.overlap_tokens, self.counter)
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
            )
            for p in packed
        ]

    def _table_drafts(self, text: str, group: _Group) -> list[_Draft]:
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
        ):
            body = text[g.start : g.end]
            if g.header is not None:
                body = text[g.header[0] : g.header[1]] + HEADER_SEPARATOR + body
            exact = self.counter.additive and not g.joined
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
        for index, draft in enumerate(drafts):
            n = self._label_tokens(draft.heading_path) + draft.tokens + specials
            header = (
                None
                if draft.header is None
                else CharSpan(start=draft.header[0], end=draft.header[1])
            )
            provenance: TextProvenance | PageProvenance
            if parsed.paged:
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
            chunk_fields = {
                "id": chunk_id(str(index)),
                "created_at": created_at,
                "metadata": {"token_count": n},
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
