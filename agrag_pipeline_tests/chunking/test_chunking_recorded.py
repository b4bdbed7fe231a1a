"""Markdown and HTML of the corpus give the sections and chunks recorded before the speed work.

``chunking_recorded.json`` holds, per corpus document and chunker settings, the number of
chunks and a SHA-256 over every chunk row (id, text, offsets, heading path, token count,
left-out spans, section ids, what is embedded; the creation time aside), and a digest of the
document's sections. It was written by the code of ``main`` before parse and chunk were made
faster (issue 25), so a speed change that alters one chunk fails here, naming the document.

An intended output change bumps ``CHUNKER_VERSION`` (or ``PARSE_VERSION``); then record again:
``python -m agrag_pipeline_tests.chunking.test_chunking_recorded --record``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from agrag_pipeline.chunking.chunker import StructureChunker
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.models import Chunk, Section
from agrag_pipeline.parsing import parse_document

RECORDED = Path(__file__).with_name("chunking_recorded.json")
CORPUS = (Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus").resolve()
#: Formats whose parsers this record covers (the others' parsers change on their own).
FOLDERS = ("markdown", "html")
SETTINGS = {
    "defaults": ChunkerSettings(),
    "overlap": ChunkerSettings(overlap_tokens=32, min_tokens=0),
    "small": ChunkerSettings(
        max_tokens=128,
        target_tokens=100,
        min_tokens=20,
        overlap_tokens=8,
        table_rows_per_chunk=3,
        keep_code_blocks_whole=False,
        repeat_table_header=False,
    ),
}


def _digest(rows: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode("utf-8")).hexdigest()[:24]


def _chunk_rows(chunks: list[Chunk]) -> list[dict[str, Any]]:
    rows = []
    for c in chunks:
        row = c.model_dump(mode="json", exclude={"created_at"})
        row["contextual_text"] = c.contextual_text
        rows.append(row)
    return rows


def _section_rows(sections: list[Section]) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json", exclude={"created_at"}) for s in sections]


def current(counter: TokenCounter) -> dict[str, Any]:
    """What the code gives now, in the recorded file's shape."""
    chunkers = {name: StructureChunker(s, counter) for name, s in SETTINGS.items()}
    documents: dict[str, Any] = {}
    for folder in FOLDERS:
        for path in sorted((CORPUS / folder).rglob("*")):
            if not path.is_file():
                continue
            key = path.relative_to(CORPUS).as_posix()
            parsed = parse_document(path.read_bytes(), key)
            entry: dict[str, Any] = {"sections": _digest(_section_rows(parsed.sections))}
            for name, chunker in chunkers.items():
                chunks = chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
                entry[name] = [len(chunks), _digest(_chunk_rows(chunks))]
            documents[key] = entry
    assert documents, f"no corpus documents under {CORPUS}"
    return {
        "chunker_hash": {name: c.chunker_hash for name, c in chunkers.items()},
        "documents": documents,
    }


def test_corpus_sections_and_chunks_are_the_recorded_ones() -> None:
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    now = current(TokenCounter())
    assert now["chunker_hash"] == recorded["chunker_hash"], (
        "the chunker's fingerprint changed (version or settings): if intended, record again"
    )
    assert sorted(now["documents"]) == sorted(recorded["documents"])
    differing = [
        f"{key} {part}"
        for key, entry in recorded["documents"].items()
        for part, value in entry.items()
        if now["documents"][key][part] != value
    ]
    assert not differing, f"output differs from the recorded one: {differing[:20]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m agrag_pipeline_tests.chunking.test_chunking_recorded --record")
    text = json.dumps(current(TokenCounter()), indent=0, sort_keys=True) + "\n"
    RECORDED.write_text(text, encoding="utf-8")
    print(f"wrote {RECORDED}")
