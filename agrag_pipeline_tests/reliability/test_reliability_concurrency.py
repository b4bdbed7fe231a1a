"""Two ``agrag materialize`` and two ``agrag core`` at once (real processes, one warehouse, one
``DAGSTER_HOME``), first on a fresh instance, then on the existing one, while a document is
added and another edited: no process fails (no ``table ... already exists``, no ``UNIQUE
constraint``), and every document's stored tables belong to one version, the current one after
a quiet rerun.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Document
from agrag_pipeline.storage import Warehouse

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_INSTANCE = REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml"
TABLES = ("sections", "chunks", "embeddings")


def _start(command: str, raw: Path, warehouse: Path, cache: Path, home: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "agrag_pipeline.cli", command]
    argv += ["--raw-root", str(raw), "--warehouse", str(warehouse), "--cache-dir", str(cache)]
    if command == "core":
        argv += ["--workers", "1"]
    env = {**os.environ, "DAGSTER_HOME": str(home), "AGRAG_AUTOMATION": "off"}
    return subprocess.Popen(
        argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _versions(warehouse: Warehouse, key: str) -> dict[str, str | None]:
    """The content hash each stored part of ``key`` belongs to."""
    document_id = Document.node_id_for(key)
    document = warehouse.get_document(document_id)
    found: dict[str, str | None] = {"document": document.content_hash if document else None}
    for table in TABLES:
        meta = warehouse.table_metadata(table, document_id)
        found[table] = meta.get("content_hash") if meta else None
        if meta is not None:
            rows = set(warehouse.read_table(table, document_id).column("content_hash").to_pylist())
            assert rows == {meta["content_hash"]}, (key, table, "rows of another version")
    if found["chunks"] is not None and found["embeddings"] is not None:
        chunks = warehouse.read_table("chunks", document_id)
        embeddings = warehouse.read_table("embeddings", document_id)
        assert embeddings.column("chunk_id").to_pylist() == chunks.column("id").to_pylist(), key
    return found


def _round(tmp: Path, raw: Path, home: Path, add: str, edit: str) -> list[str]:
    warehouse, cache = tmp / "warehouse", tmp / "cache"
    procs = [
        _start(c, raw, warehouse, cache, home)
        for c in ("materialize", "core", "materialize", "core")
    ]
    time.sleep(1.5)  # the scans are under way: change the raw root under them
    (raw / add).write_text(f"# Added {add}\n\nA document added meanwhile.\n", encoding="utf-8")
    (raw / edit).write_text(f"# Edited {edit}\n\nThis is the edited version.\n", encoding="utf-8")
    outputs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        outputs.append(out)
        assert proc.returncode == 0, out
    for out in outputs:
        for bad in ("already exists", "UNIQUE constraint", "Traceback", "database is locked"):
            assert bad not in out, out
    return outputs


@pytest.mark.slow
def test_two_materialize_and_two_core_at_once_on_a_fresh_then_existing_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for i in range(6):
        (raw / f"doc{i}.md").write_text(
            f"# Document {i}\n\n" + "\n\n".join(f"Paragraph {j}." for j in range(5)),
            encoding="utf-8",
        )
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(SHIPPED_INSTANCE, home / "dagster.yaml")

    _round(tmp_path, raw, home, add="added-fresh.md", edit="doc1.md")  # fresh instance
    _round(tmp_path, raw, home, add="added-existing.md", edit="doc4.md")  # existing one

    # A document added after every process had finished its scan is in none of their runs: it
    # has no stored tables yet (all ``None``), which is one version too; the quiet rerun below
    # must then ingest it.
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    keys = sorted(p.name for p in raw.iterdir())
    mixed = {}
    for key in keys:
        versions = _versions(warehouse, key)
        if len(set(versions.values())) != 1:
            mixed[key] = versions
    assert not mixed, f"tables of different versions side by side: {mixed}"

    # A quiet rerun brings every document to its current version, the instance knows them all.
    final = _start("materialize", raw, tmp_path / "warehouse", tmp_path / "cache", home)
    out, _ = final.communicate(timeout=600)
    assert final.returncode == 0, out
    for key in keys:
        current = content_hash((raw / key).read_bytes())
        assert set(_versions(warehouse, key).values()) == {current}, key
    import dagster as dg

    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = dg.DagsterInstance.from_config(str(home))
    assert sorted(instance.get_dynamic_partitions("documents")) == keys
    for edited in ("doc1.md", "doc4.md"):
        table = pq.read_table(warehouse.table_path("chunks", Document.node_id_for(edited)))
        assert any("This is the edited version." in t for t in table.column("text").to_pylist())
