"""Checks of what the spec promises, per document: plain functions the asset checks call.

Each returns ``CheckOutcome``s; a check that cannot run because the document's step failed or
its output is missing fails with that reason, never passes silently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agrag_pipeline.models import Chunk
from agrag_pipeline.parsing import quality
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.settings import QualitySettings
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.stored import current_document, load_chunks, load_parsed

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: ``parsing.quality.warn_below``'s default.
DEFAULT_WARN_BELOW = QualitySettings().warn_below
_MAX_EXAMPLES = 5
UNIT_NORM_TOLERANCE = 1e-3


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)
    #: "error": a broken promise; "warn": worth a look, the document is kept as it is.
    severity: str = "error"


CHUNK_CHECKS = (
    "chunk_offsets_reproduce_text",
    "chunk_indices_contiguous",
    "chunk_fingerprints_well_formed",
)
SECTION_CHECKS = ("section_spans_reproduce_text", "reading_quality")
EMBEDDING_CHECKS = (
    "embedding_per_chunk",
    "embedding_dimension",
    "embedding_finite_unit_norm",
)


def check_sections(
    warehouse: Warehouse, source_key: str, *, warn_below: float = DEFAULT_WARN_BELOW
) -> list[CheckOutcome]:
    def run() -> list[CheckOutcome]:
        parsed = load_parsed(warehouse, current_document(warehouse, source_key))
        problems = contract_violations(parsed)
        return [
            CheckOutcome(
                "section_spans_reproduce_text",
                not problems,
                "every section is a valid row whose span lies in the text layer, in order, "
                "covering all its text"
                if not problems
                else f"{len(problems)} problems, first: {problems[0]}",
                {"sections": len(parsed.sections), "problems": problems[:_MAX_EXAMPLES]},
            ),
            reading_quality_outcome(parsed.document.metadata, warn_below),
        ]

    return _guarded(SECTION_CHECKS, run)


def reading_quality_outcome(metadata: dict[str, Any], warn_below: float) -> CheckOutcome:
    """A warning (never a failure) when the parse's reading-quality score (``parsing.quality``,
    recorded in the document's metadata) is below ``warn_below``, with the reasons."""
    name = "reading_quality"
    recorded = metadata.get(quality.SCORE_KEY)
    if recorded is None:
        return CheckOutcome(name, True, "no score: the document has no text to read")
    score = float(recorded)
    reasons = str(metadata.get(quality.REASONS_KEY) or "")
    meta = {
        "score": score,
        "warn_below": warn_below,
        "language": metadata.get(quality.LANGUAGE_KEY),
        "reasons": reasons or None,
    }
    if score >= warn_below:
        return CheckOutcome(name, True, f"reading quality {score:.2f}", meta)
    return CheckOutcome(
        name,
        False,
        f"reading quality {score:.2f} is below {warn_below:g}: {reasons or 'no reason given'}",
        meta,
        severity="warn",
    )


def check_chunks(
    warehouse: Warehouse, source_key: str, *, expected_chunker_hash: str | None = None
) -> list[CheckOutcome]:
    def run() -> list[CheckOutcome]:
        document = current_document(warehouse, source_key)
        chunks = load_chunks(warehouse, document)
        assert document.id is not None
        layer = warehouse.get_text_layer(document.id, document.content_hash)
        return [
            _offsets(chunks, layer),
            _indices(chunks),
            _fingerprints(chunks, expected_chunker_hash),
        ]

    return _guarded(CHUNK_CHECKS, run)


def check_embeddings(
    warehouse: Warehouse, source_key: str, *, dimension: int
) -> list[CheckOutcome]:
    def run() -> list[CheckOutcome]:
        document = current_document(warehouse, source_key)
        assert document.id is not None
        chunks = load_chunks(warehouse, document)
        table = warehouse.read_table("embeddings", document.id)
        ids = table.column("chunk_id").to_pylist()
        vectors = (
            np.asarray(table.column("vector").to_pylist(), dtype=np.float64).reshape(len(ids), -1)
            if ids
            else np.zeros((0, dimension))
        )
        chunk_ids = [str(c.id) for c in chunks]
        dims = vectors.shape[1] if vectors.size else dimension
        finite = bool(np.isfinite(vectors).all())
        norms = np.linalg.norm(vectors, axis=1) if vectors.size else np.zeros(0)
        off_norm = [
            i for i, n in enumerate(norms) if not math.isclose(n, 1.0, abs_tol=UNIT_NORM_TOLERANCE)
        ]
        return [
            CheckOutcome(
                "embedding_per_chunk",
                ids == chunk_ids,
                f"{len(ids)} embeddings for {len(chunk_ids)} chunks"
                + ("" if ids == chunk_ids else " (ids or order differ)"),
                {"embeddings": len(ids), "chunks": len(chunk_ids)},
            ),
            CheckOutcome(
                "embedding_dimension",
                dims == dimension,
                f"vectors have dimension {dims}, the model's is {dimension}",
                {"dimension": int(dims), "expected": dimension},
            ),
            CheckOutcome(
                "embedding_finite_unit_norm",
                finite and not off_norm,
                "all values finite, every vector of unit norm"
                if finite and not off_norm
                else f"non-finite values: {not finite}; {len(off_norm)} vectors off unit norm",
                {"off_norm_rows": off_norm[:_MAX_EXAMPLES]},
            ),
        ]

    return _guarded(EMBEDDING_CHECKS, run)


def _offsets(chunks: list[Chunk], layer: str) -> CheckOutcome:
    bad = [c.index for c in chunks if c.provenance.extract(layer) != c.text]
    return CheckOutcome(
        "chunk_offsets_reproduce_text",
        not bad,
        "every chunk's provenance reproduces its text from the stored text layer"
        if not bad
        else f"{len(bad)} of {len(chunks)} chunks do not match their offsets",
        {"chunks": len(chunks), "bad_indices": bad[:_MAX_EXAMPLES]},
    )


def _indices(chunks: list[Chunk]) -> CheckOutcome:
    indices = [c.index for c in chunks]
    ok = indices == list(range(len(chunks)))
    return CheckOutcome(
        "chunk_indices_contiguous",
        ok,
        f"indices 0..{len(chunks) - 1} without gaps" if ok else f"indices are {indices[:20]}…",
        {"chunks": len(chunks)},
    )


def _fingerprints(chunks: list[Chunk], expected_chunker_hash: str | None) -> CheckOutcome:
    bad = []
    for c in chunks:
        fields = (c.chunker_hash, c.schema_fingerprint, c.extraction_fingerprint)
        if (
            not c.chunker
            or not all(f and _HEX64.match(f) for f in fields)
            or c.id is None
            or (expected_chunker_hash and c.chunker_hash != expected_chunker_hash)
        ):
            bad.append(c.index)
    return CheckOutcome(
        "chunk_fingerprints_well_formed",
        not bad,
        "chunker, chunker_hash, schema and extraction fingerprints present and well formed"
        if not bad
        else f"{len(bad)} chunks lack a fingerprint or carry another chunker's",
        {"bad_indices": bad[:_MAX_EXAMPLES]},
    )


def _guarded(names: tuple[str, ...], run: Callable[[], list[CheckOutcome]]) -> list[CheckOutcome]:
    try:
        return run()
    except Exception as exc:  # a missing or failed output is a failed check, with its reason
        return [CheckOutcome(n, False, f"cannot check: {exc}") for n in names]
