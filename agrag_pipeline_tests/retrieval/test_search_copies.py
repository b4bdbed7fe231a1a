"""What a search result gives: copies of one passage (a file saved twice, a mail reply quoting
the message before it) as one result that names where else it is, and with ``--json`` the
chunk's whole text and the provenance it was made with."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from uuid import UUID

import numpy as np
import pyarrow as pa
import pytest

from agrag_pipeline.cli import main
from agrag_pipeline.pipeline import run_document
from agrag_pipeline.retrieval.search import Copy, HitProvenance, distinct, search
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.sinks.index import RawHit, SearchIndex, index_uri, update_document

CHAPTER = "ch03-04-comments.md"
COPY = "backup/ch03-04-comments (copy).md"
OTHER = "ch01-03-hello-cargo.md"
QUESTION = "How do I write a comment in Rust code?"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path):
    """A Rust book chapter, the same file saved again in another folder, and another chapter,
    through the whole pipeline (MiniLM) into the index."""
    root = tmp_path_factory.mktemp("copies")
    book = corpus_dir / "markdown" / "rust-book"
    (root / "raw" / "backup").mkdir(parents=True)
    shutil.copy(book / CHAPTER, root / "raw" / CHAPTER)
    shutil.copy(book / CHAPTER, root / "raw" / COPY)
    shutil.copy(book / OTHER, root / "raw" / OTHER)
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH, root / "raw", str(root / "warehouse"))
    index = SearchIndex(index_uri(rt.warehouse_root))
    for key in (CHAPTER, COPY, OTHER):
        run_document(rt, key)
        update_document(rt.warehouse, index, key)
    return rt, index


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_a_file_saved_twice_is_one_result_naming_the_other(indexed, mode) -> None:
    rt, index = indexed
    every = search(index, QUESTION, k=6, mode=mode, embedder=rt.embedder, copies=True)
    assert {h.source_key for h in every[:4]} >= {CHAPTER, COPY}  # each copy ranks alone
    hits = search(index, QUESTION, k=6, mode=mode, embedder=rt.embedder)
    assert len(hits) == 6 and len({h.chunk_id for h in hits}) == 6
    twins = {CHAPTER: COPY, COPY: CHAPTER}
    places = [(h.char_start, h.char_end) for h in hits if h.source_key in twins]
    assert len(places) >= 2  # the chapter's other chunks still rank
    assert len(set(places)) == len(places)  # each place of the chapter once, from either file
    for hit in hits:
        if hit.source_key in twins:
            # Whichever file ranked first (BM25 ties them) names the other.
            assert [c.source_key for c in hit.copies] == [twins[hit.source_key]], hit
    assert OTHER in {h.source_key for h in hits}  # the next distinct chunks took their places


def test_agrag_search_prints_where_else_a_results_text_is(indexed, capsys) -> None:
    rt, _ = indexed
    roots = ["--raw-root", str(rt.raw_root), "--warehouse", rt.warehouse_root]
    assert main([*roots, "search", QUESTION, "-k", "3", "--mode", "bm25"]) == 0
    out = capsys.readouterr().out
    assert f"same text also in: {COPY}" in out, out
    assert main([*roots, "search", QUESTION, "-k", "3", "--mode", "bm25", "--copies"]) == 0
    out = capsys.readouterr().out
    assert "same text" not in out and COPY in out, out


def _hit(chunk_id: str, text: str, source_key: str = "a.md") -> RawHit:
    return RawHit({"chunk_id": chunk_id, "source_key": source_key, "text": text}, 0.0)


MESSAGE = (
    "The new build server is in the north rack. Log in with your usual account, run the "
    "nightly job by hand once, and tell me if the cache directory fills up again this week."
)


def test_a_quoted_and_rewrapped_message_is_a_copy_of_the_message() -> None:
    """A reply's quote: ``>`` marks, other line breaks, a lost comma. Still the same words."""
    cut = MESSAGE.index(" ", 60)
    quoted = "> " + MESSAGE[:cut] + "\n>" + MESSAGE[cut:].replace(",", "") + "\n"
    kept = distinct([_hit("m", MESSAGE), _hit("q", quoted, "re.eml"), _hit("x", "Other " * 9)], 5)
    assert [(h.row["chunk_id"], found) for h, found in kept] == [
        ("m", [Copy("re.eml", "q")]),
        ("x", []),
    ]


def test_a_chunk_that_adds_to_a_better_one_is_no_copy_and_short_texts_never_are() -> None:
    reply = "Thanks, that fixed it, and the cache stayed small all week. " * 3 + MESSAGE
    kept = distinct(
        [_hit("m", MESSAGE), _hit("r", reply), _hit("s", "See below."), _hit("t", "See below.")], 5
    )
    assert [h.row["chunk_id"] for h, _ in kept] == ["m", "r", "s", "t"]
    assert all(found == [] for _, found in kept)
    # The other way round: the shorter message is all inside the better-ranked reply.
    kept = distinct([_hit("r", reply), _hit("m", MESSAGE)], 5)
    assert [(h.row["chunk_id"], found) for h, found in kept] == [("r", [Copy("a.md", "m")])]


def test_copies_below_the_kth_result_are_still_named() -> None:
    kept = distinct([_hit("m", MESSAGE), _hit("o", "Other words " * 9), _hit("c", MESSAGE)], 1)
    assert [(h.row["chunk_id"], found) for h, found in kept] == [("m", [Copy("a.md", "c")])]


def test_a_quote_chunked_at_other_places_is_a_copy_of_the_chunks_it_spans() -> None:
    """A reply quoting a long message is chunked at other places than the message: a quote
    chunk holding the end of one message chunk and the start of the next is shown already."""
    first = MESSAGE
    second = (
        "After that the old server can be switched off for good. Keep its disks for a month in "
        "case we find something missing, then wipe them and send the machine back to stores."
    )
    half, other_half = first.split(". ", 1)[1], second.split(". ", 1)[0]
    straddling = "> " + half + "\n> " + other_half + ".\n"
    kept = distinct([_hit("1", first), _hit("2", second), _hit("q", straddling, "re.eml")], 5)
    assert [h.row["chunk_id"] for h, _ in kept] == ["1", "2"]
    [(_, one), (_, two)] = kept
    assert one + two == [Copy("re.eml", "q")]  # under the chunk it shares most with


def test_agrag_search_json_gives_each_chunks_text_and_the_provenance_it_was_made_with(
    indexed, capsys
) -> None:
    rt, _ = indexed
    roots = ["--raw-root", str(rt.raw_root), "--warehouse", rt.warehouse_root]
    assert main([*roots, "search", QUESTION, "-k", "3", "--json"]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["rank"] for r in results] == [1, 2, 3]
    for result in results:
        chunks = rt.warehouse.read_table("chunks", UUID(result["document_id"])).to_pylist()
        [row] = [c for c in chunks if c["id"] == result["chunk_id"]]
        assert result["text"] == row["text"]  # the whole chunk, not a snippet
        made = result["provenance"]
        assert made["content_hash"] == row["content_hash"]
        assert made["chunker_hash"] == row["chunker_hash"]
        assert made["schema_fingerprint"] == row["schema_fingerprint"]
        assert made["extraction_fingerprint"] == row["extraction_fingerprint"]
        assert made["parse_version"] and made["embedding_fingerprint"]
    assert any(
        r["copies"] == [{"source_key": COPY, "chunk_id": r["copies"][0]["chunk_id"]}]
        for r in results
        if r["source_key"] == CHAPTER
    )
    # A hit of another version than the warehouse holds (an index behind its documents) has
    # no provenance to give: the warehouse no longer says what made it.
    [hit] = search(rt.search_index, QUESTION, k=1, mode="bm25")
    stale = dataclasses.replace(hit, content_hash="0" * 64)
    assert HitProvenance(rt.warehouse)(stale) is None


def _index_rows(texts: list[tuple[str, str]]) -> pa.Table:
    """Index rows as ``index_rows`` writes them: one chunk a document (key, text)."""
    vectors = np.random.default_rng(3).standard_normal((len(texts), 8)).astype(np.float32)
    return pa.table(
        {
            "chunk_id": [f"c{i}" for i in range(len(texts))],
            "document_id": [f"d{i}" for i in range(len(texts))],
            "source_key": [key for key, _ in texts],
            "content_hash": ["0" * 64] * len(texts),
            "index": pa.array([0] * len(texts), pa.int32()),
            "heading_path": [[]] * len(texts),
            "pages": pa.array([[]] * len(texts), pa.list_(pa.int32())),
            "char_start": pa.array([0] * len(texts), pa.int64()),
            "char_end": pa.array([len(text) for _, text in texts], pa.int64()),
            "content_kind": ["text"] * len(texts),
            "text": [text for _, text in texts],
            "contextual_text": [text for _, text in texts],
            "bm25_context_text": [text for _, text in texts],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8),
        }
    )


def test_a_passage_saved_a_hundred_times_still_leaves_k_distinct_results(tmp_path: Path) -> None:
    """80 copies of one notice outrank every other chunk: the rankings are read deeper until
    k distinct chunks are found (before, the first read held the notice alone)."""
    notice = (
        "The backup server rotates the nightly archive every Sunday at noon and keeps four "
        "weeks of archives on its second disk."
    )
    others = [
        f"Note {n}: the nightly job on the build server writes its log to the shared disk "
        f"{n} and mails the team when it fails, number {n}."
        for n in range(5)
    ]
    rows = [(f"mail/copy{i:02d}.eml", notice) for i in range(80)]
    rows += [(f"notes/other{n}.md", text) for n, text in enumerate(others)]
    index = SearchIndex(str(tmp_path / "index"))
    index.append(_index_rows(rows))
    index.ensure_fts_index()
    hits = search(index, "backup server rotates nightly archive", k=5, mode="bm25")
    assert len(hits) == 5
    assert hits[0].source_key.startswith("mail/copy") and len(hits[0].copies) == 79
    assert {h.source_key for h in hits[1:]} < {f"notes/other{n}.md" for n in range(5)}
