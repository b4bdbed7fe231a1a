"""``Chunk``: one retrieval-sized piece of a Document (see shared/spec/chunk-api-reference.txt)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any, Literal
from uuid import UUID

from pydantic import Field, FiniteFloat, ValidationError

from agrag_pipeline.models.base import DataPoint
from agrag_pipeline.models.document import PROJECT_NAMESPACE
from agrag_pipeline.models.node_record import NodeRecord
from agrag_pipeline.models.provenance import PageProvenance, TextProvenance

_WHITESPACE_RUN = re.compile(r"\s+")
_DASH_RUN = re.compile(r"-{3,}")

#: A cut that holds a block-level HTML tag parts what it stood between by a line, as a browser
#: shows it (table cells, list items, paragraphs of raw HTML in Markdown); one that holds
#: whitespace outside its comments and tags, by a space.
_BLOCK_TAG = re.compile(
    r"<\/?(?:address|article|aside|blockquote|br|caption|dd|details|div|dl|dt|figcaption"
    r"|figure|footer|h[1-6]|header|hr|li|main|nav|ol|p|pre|section|summary|table|tbody|td"
    r"|tfoot|th|thead|tr|ul)\b",
    re.IGNORECASE,
)
_COMMENT_OR_TAG = re.compile(r"<!--.*?(?:-->|\Z)|<[^<>]*>", re.DOTALL)

#: How the headings of a path are joined into one line by ``section_label``.
LABEL_SEPARATOR = " > "

#: ``metadata`` key the chunker sets: ``[start, end]`` offsets into ``text`` of what
#: ``contextual_text`` leaves out (markup that renders to nothing, a heading the label repeats),
#: and ``[start, end, shown]`` for what it shows otherwise than written (a Markdown entity
#: reference, ``&amp;``, by its character).
UNEMBEDDED_SPANS = "unembedded_spans"

#: Properties that ``to_node_record`` writes as JSON text, because graph stores hold no maps.
_JSON_TEXT_PROPERTIES = ("provenance", "metadata")


class Chunk(DataPoint):
    """One retrieval-sized piece of a Document.

    ``id`` is deterministic (``Chunk.id_for``): the same document version, chunker settings and
    index give the same id on any machine, in any run.
    """

    document_id: UUID
    content_hash: str = Field(min_length=64, max_length=64, pattern="^[0-9a-f]{64}$")
    index: int = 0
    text: str
    provenance: TextProvenance | PageProvenance = Field(discriminator="kind")
    heading_path: list[str] = Field(default_factory=list)
    content_kind: Literal["text", "table"] = "text"
    chunker: str | None = None
    chunker_hash: str | None = None
    schema_fingerprint: str | None = None
    extraction_fingerprint: str | None = None
    section_ids: list[UUID] = Field(default_factory=list)
    # Finite floats only: NaN or infinity cannot be written as JSON (to_node_record promises
    # JSON-safe properties) and is never a usable vector.
    embedding: list[FiniteFloat] | None = None

    @staticmethod
    def id_for(document_id: UUID, content_hash: str, chunker_hash: str, index: int) -> UUID:
        """The chunk id: UUIDv5 of document id, content hash, chunker hash and index."""
        return uuid.uuid5(
            PROJECT_NAMESPACE, f"chunk:{document_id}:{content_hash}:{chunker_hash}:{index}"
        )

    @property
    def contextual_text(self) -> str:
        """The text with its heading path above it, for embedding.

        The stored text and its offsets do not change. A chunk with no heading path returns its
        text. Spans of the text that ``metadata["unembedded_spans"]`` names (markup no reader
        sees, a heading the label already says) are left out.
        """
        label = self.section_label()
        text = embedded_text(self.text, self.metadata.get(UNEMBEDDED_SPANS))
        if label is None:
            return text
        return f"{label}\n\n{text}"

    def section_label(self) -> str | None:
        """Return the heading path as one line, or None when the path is empty.

        Whitespace runs in a heading become one space, and runs of three or more dashes become
        one dash, so a heading cannot end the text block of the extraction prompt.
        """
        return label_for(self.heading_path)

    def to_node_record(self) -> NodeRecord:
        """Return this chunk as a GraphStore write record.

        Provenance is flattened to a plain JSON-safe dict via model_dump and written as JSON
        text (so is ``metadata``): graph stores hold no nested maps, and GraphStore's own
        serialize.node_params only converts UUIDs and walks containers.

        Raises:
            ValueError: id is None.
        """
        if self.id is None:
            raise ValueError("a Chunk without an id cannot be written as a node record")
        properties = self.model_dump(mode="json", exclude={"id"})
        for name in _JSON_TEXT_PROPERTIES:
            properties[name] = _json_text(properties[name])
        return NodeRecord(label="Chunk", id=str(self.id), properties=properties)

    @classmethod
    def from_node(cls, properties: Mapping[str, Any]) -> Chunk:
        """Build a Chunk from the flat properties of a stored Chunk node.

        ``properties`` includes ``id`` as the node id string (``to_node_record().properties``
        omits it; merge it in first). ``provenance`` and ``metadata`` may be the JSON text that
        ``to_node_record`` writes or the decoded mapping. Records written before chunkers and
        runs were recorded load with those fields as None.

        Raises:
            ValueError: a property is missing, is not JSON when it should be, or does not
                validate. Pydantic's ValidationError is a ValueError.
        """
        if not isinstance(properties, Mapping):
            raise ValueError(f"node properties must be a mapping, got {type(properties).__name__}")
        data = dict(properties)
        if "id" not in data or data["id"] is None:
            raise ValueError("node properties have no 'id': merge the record's id in first")
        if "provenance" not in data:
            raise ValueError("node properties have no 'provenance'")
        for name in _JSON_TEXT_PROPERTIES:
            if isinstance(data.get(name), str | bytes | bytearray):
                try:
                    data[name] = json.loads(data[name])
                except (ValueError, RecursionError) as exc:
                    raise ValueError(f"property {name!r} is not valid JSON: {exc}") from exc
        try:
            return cls.model_validate(data)
        except ValidationError:
            raise
        except (TypeError, RecursionError, OverflowError) as exc:
            raise ValueError(f"node properties do not validate as a Chunk: {exc}") from exc


def label_for(heading_path: list[str]) -> str | None:
    """``Chunk.section_label`` of a heading path (None when empty), for code holding rows."""
    if not heading_path:
        return None
    return LABEL_SEPARATOR.join(_clean_heading(h) for h in heading_path)


def embedded_text(text: str, spans: Any) -> str:
    """``text`` without ``spans`` (``[[start, end], ...]``, ascending); whitespace at each cut
    becomes one blank line, one newline or one space, the widest it was, counting what the cut
    itself showed (``_cut_separator``). A span ``[start, end, shown]`` is replaced by ``shown``
    where it stands (no cut)."""
    if not spans:
        return text
    parts: list[str] = []
    shown: list[str] = []
    current: list[str] = []
    at = 0
    for span in spans:
        start, end = span[0], span[1]
        current.append(text[at:start])
        if len(span) > 2:
            current.append(span[2])
        else:
            parts.append("".join(current))
            current = []
            shown.append(_cut_separator(text[start:end]))
        at = max(at, end)
    current.append(text[at:])
    parts.append("".join(current))
    out = parts[0]
    for part, cut in zip(parts[1:], shown, strict=True):
        out = _join(out, part, cut)
    return out.strip()


def _cut_separator(cut: str) -> str:
    """What a left-out span still shows between its neighbours: a line break, a space or
    nothing (an inline comment or tag)."""
    if "<" not in cut:
        return ""
    cut = _COMMENT_OR_TAG.sub(lambda m: "\n" if _BLOCK_TAG.match(m.group()) else "", cut)
    return "\n" if "\n" in cut else " " if _WHITESPACE_RUN.search(cut) else ""


def _join(left: str, right: str, cut: str = "") -> str:
    ws = left[len(left.rstrip()) :] + right[: len(right) - len(right.lstrip())] + cut
    left, right = left.rstrip(), right.lstrip()
    if not left:
        return right
    if not right:
        # A part of nothing but whitespace (between two cuts, as between a link's pieces):
        # the whitespace it and the cut showed goes on to the next join.
        return left + _separator(ws)
    return left + _separator(ws) + right


def _separator(ws: str) -> str:
    return "\n\n" if ws.count("\n") >= 2 else "\n" if "\n" in ws else " " if ws else ""


def _clean_heading(heading: str) -> str:
    return _DASH_RUN.sub("-", _WHITESPACE_RUN.sub(" ", heading)).strip()


def _json_text(value: Any) -> str:
    # allow_nan=False: "NaN"/"Infinity" are not JSON, and other readers would choke on them.
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
