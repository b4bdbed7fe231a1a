"""BM25's context (``index.bm25_context_chars``): the neighbouring text of the same section is
searched with a chunk, within its budget, while the chunk's own text is what comes back."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.defs.code_versions import asset_code_versions
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import run_document
from agrag_pipeline.retrieval.search import search, to_hit
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings
from agrag_pipeline.sinks.bm25_context import IndexSettings, context_texts
from agrag_pipeline.sinks.index import SearchIndex, check_index, index_uri, sync_index

BUDGET = 160

#: Two sections; the first cut into a chunk per paragraph at 48 tokens. Only the first
#: paragraph names the reference crystal; the next one (the answer: warm it for ten minutes)
#: does not.
MANUAL = """# Frobnicator manual

## Calibrating the frobnicator

Before any measurement the frobnicator must be calibrated against the reference crystal, which
sits in the drawer below the bench, wrapped in its grey cloth, beside the spare fuses.

Warm the instrument for ten minutes. The display shows a steady green bar once the oven is at
its working temperature; a blinking bar means the oven is still heating.

Set the threshold dial to forty-two, then press the yellow button once and wait for the beep.
A second beep means the reading was accepted and written to the log.

## Cleaning

Wipe the glass with a dry lint-free cloth. Never use solvents on the glass, which clouds the
anti-glare coating, and keep water away from the connector at the back of the case.
"""

QUERY = "reference crystal drawer grey cloth"


def _runtime(root: Path, chars: int) -> Runtime:
    settings = load_settings(DEFAULT_SETTINGS_PATH).model_copy(
        update={
            "chunker": ChunkerSettings(target_tokens=48, max_tokens=64, min_tokens=8),
            "index": IndexSettings(bm25_context_chars=chars),
        }
    )
    return Runtime(settings=settings, raw_root=root / "raw", warehouse_root=str(root / "wh"))


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The manual through the pipeline (MiniLM), chunked small; its index not built yet."""
    root = tmp_path_factory.mktemp("bm25ctx")
    (root / "raw").mkdir()
    (root / "raw" / "manual.md").write_text(MANUAL)
    run_document(_runtime(root, 0), "manual.md")
    return root


def _chunks(rt: Runtime) -> list[dict]:
    table = rt.warehouse.read_table("chunks", Document.node_id_for("manual.md"))
    return sorted(table.to_pylist(), key=lambda r: r["index"])


def _indexed(rt: Runtime, folder: str) -> tuple[SearchIndex, dict[str, dict]]:
    index = SearchIndex(str(rt.warehouse_root) + f"/{folder}", settings=rt.settings.index)
    sync_index(rt.warehouse, index, ["manual.md"])
    table = index._open().search().limit(None).to_arrow().drop_columns(["vector"])
    return index, {r["chunk_id"]: r for r in table.to_pylist()}


def test_index_rows_carry_neighbouring_text_within_the_budget_and_the_section(manual) -> None:
    rt = _runtime(manual, BUDGET)
    chunks = _chunks(rt)
    calibrating = [c for c in chunks if c["heading_path"][-1:] == ["Calibrating the frobnicator"]]
    assert len(calibrating) >= 3  # the section is cut, so its chunks have neighbours in it
    _, rows = _indexed(rt, "index-context")
    extended = 0
    for at, chunk in enumerate(chunks):
        row = rows[chunk["id"]]
        own = chunk["contextual_text"]
        before, _, after = row["bm25_context_text"].partition(own)
        assert own in row["bm25_context_text"]
        # Never more than the budget each side, and only words of the same section's neighbour.
        assert len(before.strip()) <= BUDGET and len(after.strip()) <= BUDGET
        same = [
            n
            for n in (
                chunks[at - 1] if at else None,
                chunks[at + 1] if at + 1 < len(chunks) else None,
            )
            if n is not None and n["heading_path"] == chunk["heading_path"]
        ]
        for extra, neighbour in ((before.strip(), same[:1]), (after.strip(), same[-1:])):
            if extra:
                assert any(extra in n["text"] for n in same), (extra, neighbour)
        extended += bool(before.strip() or after.strip())
        # What a search returns of the chunk, and what is embedded, stay its own.
        assert row["text"] == chunk["text"] and row["contextual_text"] == own
    assert extended >= 2
    cleaning = next(c for c in chunks if c["heading_path"][-1:] == ["Cleaning"])
    # Nothing from another section.
    assert "threshold" not in rows[cleaning["id"]]["bm25_context_text"]
    assert "Wipe" not in "".join(rows[c["id"]]["bm25_context_text"] for c in calibrating)


def test_a_query_in_the_neighbouring_paragraph_finds_the_chunk_by_bm25(manual) -> None:
    rt = _runtime(manual, BUDGET)
    chunks = _chunks(rt)
    answer = next(c for c in chunks if "ten minutes" in c["text"])
    assert not any(w in answer["contextual_text"].lower() for w in ("crystal", "drawer", "grey"))
    index, _ = _indexed(rt, "index-neighbour")
    assert index.context_chars() == BUDGET
    # BM25 over the chunk alone cannot find it; BM25 over it with its context does.
    assert answer["id"] not in [h.row["chunk_id"] for h in index.bm25(QUERY, 10)]
    found = {h.row["chunk_id"]: to_hit(h, QUERY) for h in index.bm25(QUERY, 10, context=True)}
    assert answer["id"] in found
    # The hit is the chunk itself: its offsets and its own words, not the neighbour's.
    hit = found[answer["id"]]
    assert (hit.char_start, hit.char_end) == (answer["char_start"], answer["char_end"])
    assert "ten minutes" in hit.snippet and "crystal" not in hit.snippet
    # Hybrid search takes that ranking in: the chunk scores higher than without context.
    scores = {}
    for chars in (0, BUDGET):
        one = _runtime(manual, chars)
        hybrid, _ = _indexed(one, f"index-hybrid-{chars}")
        hits = search(hybrid, QUERY, k=len(chunks), mode="hybrid", embedder=one.embedder)
        scores[chars] = next(h.score for h in hits if h.chunk_id == answer["id"])
        assert next(h for h in hits if h.chunk_id == answer["id"]).snippet == hit.snippet
    assert scores[BUDGET] > scores[0]


def test_a_changed_context_budget_rebuilds_the_index_and_its_code_version(manual) -> None:
    before, after = _runtime(manual, 0), _runtime(manual, BUDGET)
    index, rows = _indexed(before, "index-rebuilt")
    assert all(r["bm25_context_text"] == r["contextual_text"] for r in rows.values())
    assert index.recorded_settings() == {"bm25_context_chars": 0}
    assert check_index(before.warehouse, index).repaired == []  # same settings: left alone

    changed = SearchIndex(index.uri, settings=after.settings.index)
    check = check_index(after.warehouse, changed)
    assert len(check.repaired) == 1 and "index settings changed" in check.repaired[0]
    assert "rebuilt from the warehouse's tables (1 documents" in check.repaired[0]
    assert changed.recorded_settings() == {"bm25_context_chars": BUDGET}
    table = changed._open().search().limit(None).to_arrow()
    texts, own = (table.column(c).to_pylist() for c in ("bm25_context_text", "contextual_text"))
    assert table.num_rows == len(rows)
    assert sum(t != c for t, c in zip(texts, own, strict=True)) >= 2
    assert search(changed, QUERY, k=3, mode="bm25")  # BM25 is indexed again
    assert check_index(after.warehouse, changed).repaired == []

    # An index from before settings were recorded is rebuilt too.
    changed._fs.rm(changed.settings_path)
    assert "not recorded" in check_index(after.warehouse, changed).repaired[0]
    assert asset_code_versions(before)["search_index"] != asset_code_versions(after)["search_index"]
    assert asset_code_versions(before)["embeddings"] == asset_code_versions(after)["embeddings"]


def test_the_default_index_settings_are_in_the_settings_file() -> None:
    assert load_settings(DEFAULT_SETTINGS_PATH).index == IndexSettings()
    assert index_uri("/w") == "/w/index"


def test_the_context_is_cut_at_whitespace_and_never_crosses_a_document() -> None:
    rows = [
        {"document_id": "a", "index": 1, "heading_path": ["H"], "contextual_text": "H\n\nbeta"},
        {"document_id": "a", "index": 0, "heading_path": ["H"], "contextual_text": "H\n\none two"},
        {"document_id": "b", "index": 0, "heading_path": ["H"], "contextual_text": "H\n\ngamma"},
    ]
    # Rows in any order; the neighbour's heading path is not repeated, a word is not cut.
    assert context_texts(rows, 5) == ["two\n\nH\n\nbeta", "H\n\none two\n\nbeta", "H\n\ngamma"]
    assert context_texts(rows, 0) == [r["contextual_text"] for r in rows]
