"""The search index on an ``s3://`` warehouse against a real S3 server (SeaweedFS on
loopback), where no lock exists: rows a second writer duplicated are repaired by the next
``agrag index``, and a garbled manifest is set aside (each object copied, then removed; the
empty folders SeaweedFS keeps are no table) and the index rebuilt from the tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import s3fs

from agrag_pipeline.cli import main
from agrag_pipeline.models import Document
from agrag_pipeline_tests.reliability.indexed import (
    assert_index_matches_tables,
    build_warehouse,
    indexed_rows,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

DUPLICATE = """
import sys
import lancedb
table = lancedb.connect(sys.argv[1]).open_table("chunks")
table.add(table.search().where(f"document_id = '{sys.argv[2]}'").limit(None).to_arrow())
"""


def test_an_s3_index_is_repaired_and_rebuilt_by_the_next_agrag_index(
    bucket_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = build_warehouse(tmp_path, 4)
    warehouse = f"{bucket_uri}/warehouse"
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    for folder in ("documents", "chunks", "embeddings"):
        fs.put(str(tmp_path / "warehouse" / folder), f"{warehouse}/{folder}", recursive=True)
    roots = ["--raw-root", str(tmp_path / "raw"), "--warehouse", warehouse]
    assert main([*roots, "index"]) == 0
    assert_index_matches_tables(warehouse, keys)

    # A second process adds one document's rows again, as an interleaved writer would.
    document_id = str(Document.node_id_for(keys[1]))
    index = f"{warehouse}/index"
    subprocess.run([sys.executable, "-c", DUPLICATE, index, document_id], check=True, cwd=REPO_ROOT)
    assert len(indexed_rows(warehouse)) > len(set(indexed_rows(warehouse)))
    capsys.readouterr()
    assert main([*roots, "index"]) == 0
    out = capsys.readouterr().out
    assert f"REPAIRED search index {index}: {keys[1]}: " in out and "duplicate rows" in out, out
    assert_index_matches_tables(warehouse, keys)

    # The latest manifest garbled: set aside, rebuilt.
    versions = f"{index}/chunks.lance/_versions"
    manifests = [e for e in fs.ls(versions, detail=True) if e["name"].endswith(".manifest")]
    latest = max(manifests, key=lambda e: e["LastModified"])["name"]
    fs.pipe_file(latest, os.urandom(512))
    assert main([*roots, "index"]) == 0
    out = capsys.readouterr().out
    assert f"REPAIRED {index}/chunks.lance is damaged: cannot be opened" in out, out
    assert f"set aside as {warehouse}/index.corrupt-" in out, out
    assert_index_matches_tables(warehouse, keys)
    fs.invalidate_cache()
    [aside] = [p for p in fs.ls(warehouse.removeprefix("s3://")) if ".corrupt-" in p]
    assert fs.find(f"{aside}/chunks.lance/_versions")  # kept for inspection
    assert main([*roots, "index"]) == 0
    assert "REPAIRED" not in capsys.readouterr().out
