"""The search index under concurrent writers and damage: two real processes running
``agrag index`` at once, rows a second writer duplicated or left behind, and LanceDB files cut
short or garbled. Each ends with an index whose rows are exactly each document's chunks.

The warehouse is built once per module by the real pipeline (``indexed.build_warehouse``),
then copied for each test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from agrag_pipeline.cli import main
from agrag_pipeline.models import Document
from agrag_pipeline.retrieval.search import search
from agrag_pipeline.sinks.index import PreparedUpdate, SearchIndex, index_uri
from agrag_pipeline.sinks.index_step import (
    check_index_documents,
    index_documents,
    prepare_index_document,
)
from agrag_pipeline.storage import Warehouse
from agrag_pipeline_tests.reliability.indexed import (
    assert_index_matches_tables,
    build_warehouse,
    indexed_rows,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = 24


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Raw files and a warehouse holding their chunks and embeddings (no index yet)."""
    root = tmp_path_factory.mktemp("index")
    build_warehouse(root, DOCUMENTS)
    return root


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    """A copy of the built raw root and warehouse, for one test to change."""
    for name in ("raw", "warehouse"):
        shutil.copytree(built / name, tmp_path / name)
    return tmp_path


def _roots(root: Path) -> list[str]:
    return ["--raw-root", str(root / "raw"), "--warehouse", str(root / "warehouse")]


def _warehouse(root: Path) -> str:
    return str(root / "warehouse")


def _keys(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "raw").iterdir())


def _versions_with_duplicates(root: Path) -> dict[int, int]:
    """Version -> duplicate rows, over every version the index table ever had (LanceDB keeps
    them all): what a reader could have seen at any moment, not only at the end."""
    import lancedb

    table = lancedb.connect(str(root / "warehouse" / "index")).open_table("chunks")
    found = {}
    for version in sorted(v["version"] for v in table.list_versions()):
        table.checkout(version)
        rows = table.search().select(["document_id", "chunk_id"]).limit(None).to_arrow()
        pairs = zip(
            rows.column("document_id").to_pylist(), rows.column("chunk_id").to_pylist(), strict=True
        )
        repeated = sum(n - 1 for n in Counter(pairs).values() if n > 1)
        if repeated:
            found[version] = repeated
    return found


#: Processes running ``agrag index`` at once, and how many times each runs it.
WRITERS, ROUNDS = 2, 3

WORKER = """
import sys, time
from pathlib import Path
import lancedb  # imported before the start signal, so both processes start indexing at once
from agrag_pipeline.cli import main
from agrag_pipeline.retrieval import commands
ready, go, rounds, argv = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
ready.touch()
deadline = time.monotonic() + 300
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit("no start signal")
    time.sleep(0.005)
for _ in range(rounds):
    status = main(argv)
    if status:
        sys.exit(status)
"""


@pytest.mark.slow
def test_agrag_index_runs_at_once_leave_each_document_exactly_its_chunks(copy: Path) -> None:
    """Three real processes each run ``agrag index`` four times, started together on a fresh
    index: every run exits 0, none needed a repair (the lock kept them apart), no version the
    index ever had held a row twice, and it ends with each document's chunks once."""
    processes = []
    for n in range(WRITERS):
        argv = [
            sys.executable,
            "-c",
            WORKER,
            str(copy / f"ready{n}"),
            str(copy / "go"),
            str(ROUNDS),
        ]
        processes.append(
            subprocess.Popen(
                [*argv, *_roots(copy), "index"],
                cwd=REPO_ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    deadline = time.monotonic() + 300
    while not all((copy / f"ready{n}").exists() for n in range(WRITERS)):
        assert time.monotonic() < deadline, "the workers never got ready"
        assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
        time.sleep(0.01)
    (copy / "go").touch()
    for process in processes:
        out, _ = process.communicate(timeout=600)
        assert process.returncode == 0, out
        assert out.count(f"agrag index: {DOCUMENTS} documents") == ROUNDS, out
        for bad in ("SKIPPED", "REPAIRED", "Traceback"):
            assert bad not in out, out
    assert _versions_with_duplicates(copy) == {}
    assert_index_matches_tables(_warehouse(copy), _keys(copy))


INJECT = """
import sys, uuid
import lancedb, pyarrow as pa
path, duplicated, stale, missing, gone = sys.argv[1:]
table = lancedb.connect(path).open_table("chunks")
def rows(document_id):
    return table.search().where(f"document_id = '{document_id}'").limit(None).to_arrow()
def replaced(rows, name, values):
    return rows.set_column(rows.schema.get_field_index(name), name, pa.array(values, pa.string()))
twice = rows(duplicated)
table.add(twice)  # every row of one document a second time
old = rows(stale)
table.delete(f"document_id = '{stale}'")  # one document's rows under ids of no current chunk
table.add(replaced(old, "chunk_id", [str(uuid.uuid4()) for _ in range(old.num_rows)]))
table.delete(f"document_id = '{missing}'")  # one document's rows gone
orphans = replaced(twice, "document_id", [gone] * twice.num_rows)  # rows of no document
table.add(replaced(orphans, "source_key", ["gone.md"] * twice.num_rows))
"""

#: The documents the second writer damages: duplicated, re-keyed (stale ids), emptied.
DUPLICATED, STALE, MISSING = "doc03.md", "doc07.md", "doc11.md"


def _second_writer_damages(root: Path) -> None:
    """A real second process writes the index with LanceDB directly (no lock, no check)."""
    ids = [str(Document.node_id_for(k)) for k in (DUPLICATED, STALE, MISSING, "gone.md")]
    path = str(root / "warehouse" / "index")
    subprocess.run([sys.executable, "-c", INJECT, path, *ids], check=True, cwd=REPO_ROOT)
    rows = indexed_rows(_warehouse(root))
    assert len(rows) != len(set(rows))  # the damage is there
    assert str(Document.node_id_for(MISSING)) not in {d for d, _ in rows}


def test_rows_another_writer_duplicated_or_left_behind_are_repaired_by_the_next_agrag_index(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_roots(copy), "index"]) == 0
    _second_writer_damages(copy)
    capsys.readouterr()
    assert main([*_roots(copy), "index"]) == 0
    out = capsys.readouterr().out
    assert f"agrag index: {DOCUMENTS} documents" in out
    assert_index_matches_tables(_warehouse(copy), _keys(copy))
    repaired = [line for line in out.splitlines() if line.startswith("REPAIRED")]
    assert any(f"{DUPLICATED}: " in r and "duplicate rows" in r for r in repaired), out
    assert any("gone.md: " in r and "no longer in the warehouse; removed" in r for r in repaired), (
        out
    )
    assert_index_matches_tables(_warehouse(copy), _keys(copy))


def test_the_check_names_and_repairs_each_document_that_disagrees_with_its_tables(
    copy: Path,
) -> None:
    """What a Dagster run does around its batch: ``check_index`` compares the whole index
    (duplicates, rows of documents gone) and the batch's documents with their chunks."""
    from agrag_pipeline.sinks.index import check_index

    assert main([*_roots(copy), "index"]) == 0
    _second_writer_damages(copy)
    warehouse = Warehouse(str(copy / "warehouse"))
    index = SearchIndex(index_uri(str(copy / "warehouse")))
    check = check_index(warehouse, index, [STALE, MISSING, "doc01.md"])
    assert check.problems == []
    found = {line.split(": ")[1]: line for line in check.repaired}
    assert set(found) == {DUPLICATED, STALE, MISSING, "gone.md"}, check.repaired
    assert "duplicate rows; rewritten from its tables" in found[DUPLICATED]
    assert "chunk ids differ from its chunks table" in found[STALE]
    assert "chunk ids differ from its chunks table" in found[MISSING]
    assert "no longer in the warehouse; removed" in found["gone.md"]
    assert warehouse.repairs == check.repaired  # logged and listed like other repairs
    assert_index_matches_tables(_warehouse(copy), _keys(copy))
    again = check_index(warehouse, index, [f"doc{i:02d}.md" for i in range(DOCUMENTS)])
    assert again.repaired == [] and again.problems == [] and again.rows == index.count()


def _newest(paths: list[Path]) -> Path:
    return max(paths, key=lambda p: p.stat().st_mtime_ns)


def _damage(table: Path, how: str) -> Path:
    """Damage the index table's folder as a crash, a full disk or a bad copy would."""
    if how == "truncated data file":
        path = _newest(list((table / "data").glob("*.lance")))  # the last add's: in use
        os.truncate(path, path.stat().st_size // 2)
    elif how == "truncated manifest":
        path = _newest(list((table / "_versions").glob("*.manifest")))
        os.truncate(path, path.stat().st_size // 3)
    elif how == "garbage manifest":
        path = _newest(list((table / "_versions").glob("*.manifest")))
        path.write_bytes(np.random.default_rng(1).bytes(path.stat().st_size))
    else:  # every manifest missing
        path = table / "_versions"
        for manifest in path.glob("*.manifest"):
            manifest.unlink()
    return path


@pytest.mark.parametrize(
    "how", ["truncated data file", "truncated manifest", "garbage manifest", "missing manifests"]
)
def test_a_damaged_index_is_set_aside_and_rebuilt_by_the_next_agrag_index(
    copy: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    import lancedb

    assert main([*_roots(copy), "index"]) == 0
    table = copy / "warehouse" / "index" / "chunks.lance"
    _damage(table, how)
    capsys.readouterr()
    assert main([*_roots(copy), "index"]) == 0
    out = capsys.readouterr().out
    assert f"agrag index: {DOCUMENTS} documents" in out and "SKIPPED" not in out, out
    [repaired] = [line for line in out.splitlines() if line.startswith("REPAIRED")]
    assert f"{table} is damaged: cannot be " in repaired, repaired
    [aside] = (copy / "warehouse").glob("index.corrupt-*")
    assert f"set aside as {aside} and rebuilt from the warehouse's tables" in repaired
    assert (aside / "chunks.lance").is_dir()  # kept for inspection
    assert_index_matches_tables(_warehouse(copy), _keys(copy))
    indices = lancedb.connect(str(copy / "warehouse" / "index")).open_table("chunks").list_indices()
    assert any("contextual_text" in i.columns for i in indices)  # BM25 works again
    index = SearchIndex(index_uri(str(copy / "warehouse")))
    assert search(index, "subject 75", k=3, mode="bm25")
    assert main([*_roots(copy), "index"]) == 0
    assert "REPAIRED" not in capsys.readouterr().out


def _table_version(root: Path) -> int:
    import lancedb

    return int(lancedb.connect(index_uri(_warehouse(root))).open_table("chunks").version)


def test_a_runs_documents_are_indexed_with_two_commits_and_checked_together(copy: Path) -> None:
    """The ``search_index`` step's way: every document of the run prepared under the index's
    lock, then written with one delete and one add (a commit per document before: two LanceDB
    versions, data files and manifests each), then each document checked."""
    warehouse = Warehouse(_warehouse(copy))
    index = SearchIndex(index_uri(_warehouse(copy)))
    keys = _keys(copy)
    first, rest = keys[:4], keys[4:]
    with index.writing():
        index_documents(
            index, {k: prepare_index_document(warehouse, k, index.settings) for k in first}
        )
    before = _table_version(copy)
    with index.writing():
        prepared = {
            k: prepare_index_document(warehouse, k, index.settings) for k in [*first, *rest]
        }
        written = index_documents(index, prepared)
    assert _table_version(copy) - before == 2
    assert all(not isinstance(w, Exception) and w.rows > 0 for w in written.values())
    assert_index_matches_tables(_warehouse(copy), keys)
    checked = check_index_documents(warehouse, index, keys)
    assert [o.passed for k in keys for o in checked[k]] == [True] * len(keys)


def test_a_document_whose_rows_cannot_join_the_batch_fails_alone(copy: Path) -> None:
    """One document's rows that the table cannot take (vectors of another dimension) fail that
    document, named; the other documents of the batch are written."""
    import pyarrow as pa

    warehouse = Warehouse(_warehouse(copy))
    index = SearchIndex(index_uri(_warehouse(copy)))
    keys = _keys(copy)
    with index.writing():
        prepared = {k: prepare_index_document(warehouse, k, index.settings) for k in keys}
    odd = keys[3]
    rows = prepared[odd].rows
    assert rows is not None
    short = pa.array([[0.5, 0.5, 0.5]] * rows.num_rows, pa.list_(pa.float32(), 3))
    odd_rows = rows.set_column(rows.schema.get_field_index("vector"), "vector", short)
    prepared[odd] = PreparedUpdate(prepared[odd].update, odd_rows)
    with index.writing():
        index_documents(index, {k: prepared[k] for k in keys[:2]})  # the table, 384 dims
        written = index_documents(index, prepared)
    assert isinstance(written[odd], Exception) and odd in str(written[odd])
    good = [k for k in keys if k != odd]
    assert all(not isinstance(written[k], Exception) for k in good)
    assert_index_matches_tables(_warehouse(copy), good)
    assert {d for d, _ in indexed_rows(_warehouse(copy))} == {
        str(Document.node_id_for(k)) for k in good
    }


_MAKING_THE_TABLE = """
import pathlib, shutil, sys, time
import pyarrow as pa
from agrag_pipeline.sinks.index import SearchIndex

root, ready = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
index = SearchIndex(str(root))
with index.writing():
    # What a writer making the table leaves for a moment: its folder and a data file, no version.
    data = root / f"{index.table_name}.lance" / "data"
    data.mkdir(parents=True)
    (data / "0.lance").write_bytes(b"being written")
    ready.touch()
    time.sleep(3.0)
    shutil.rmtree(data.parent)
    index.append(pa.table({"document_id": ["d1"], "chunk_id": ["c1"], "text": ["t"]}))
"""


def test_a_table_another_process_is_making_is_read_once_made_not_called_damaged(
    tmp_path: Path,
) -> None:
    """Three ``agrag index`` runs at once on a fresh index (a fresh clone's suite,
    2026-12-06): one found the table's folder while another run was making the table under the
    lock, before its first version, and stopped on "chunks.lance is damaged: Table 'chunks' was
    not found". A real second process holds the lock over that moment; the reader now waits for
    it and reads the table it made."""
    root, ready = tmp_path / "index", tmp_path / "ready"
    index = SearchIndex(str(root))
    assert index.all_rows().num_rows == 0  # no table yet (and LanceDB loaded before the race)
    maker = subprocess.Popen(
        [sys.executable, "-c", _MAKING_THE_TABLE, str(root), str(ready)], cwd=REPO_ROOT
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert maker.poll() is None, "the process making the table stopped"
            assert time.monotonic() < deadline, "the process making the table never got ready"
            time.sleep(0.01)
        assert maker.poll() is None  # still making it, the lock held
        rows = index.all_rows()
        assert rows.column("document_id").to_pylist() == ["d1"]
        assert index.settings_changed() is None
    finally:
        assert maker.wait(timeout=120) == 0


_MAKING_A_LARGE_TABLE = """
import sys
import numpy as np, pyarrow as pa
from agrag_pipeline.sinks.index import SearchIndex

rows = 100_000  # ~150 MB of vectors: LanceDB writes data files for a second before committing
vectors = np.random.default_rng(0).random((rows, 384), dtype=np.float32)
table = pa.table({
    "document_id": [f"d{i % 50}" for i in range(rows)],
    "chunk_id": [f"c{i}" for i in range(rows)],
    "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 384),
})
print("ready", flush=True)
SearchIndex(sys.argv[1]).append(table)
"""


def test_a_table_whose_making_was_killed_is_made_again_not_set_aside(copy: Path) -> None:
    """A fresh clone's suite (2026-12-07): one ``kill -9`` of the crash test landed while
    LanceDB was making the index's table, after its data files and before its first manifest.
    The next run called that damage and set the index aside as ``index.corrupt-…``. No version
    was ever committed, so no reader saw those rows: the next run now removes the folder and
    writes the index, with nothing set aside and nothing reported as repaired."""
    index_root = Path(index_uri(_warehouse(copy)))
    table = index_root / "chunks.lance"
    maker = subprocess.Popen(
        [sys.executable, "-c", _MAKING_A_LARGE_TABLE, str(index_root)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert maker.stdout is not None and maker.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 120
        while not any((table / "data").glob("*")):
            assert maker.poll() is None, "the table was made before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.002)
        maker.kill()  # SIGKILL, between the data and the first manifest
    finally:
        maker.wait(timeout=60)
    assert maker.returncode == -9
    assert any((table / "data").glob("*")) and not any(table.glob("_versions/*.manifest"))
    assert main([*_roots(copy), "index"]) == 0
    assert list((copy / "warehouse").glob("index.corrupt-*")) == []
    assert_index_matches_tables(_warehouse(copy), _keys(copy))
