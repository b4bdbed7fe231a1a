"""The chunks and embeddings Parquet files describe themselves, and the README's loaders run."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from agrag_pipeline.embedding.table import embeddings_table
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import current_document, load_chunks, run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.storage.tables import column_descriptions

ROWS = "\n".join(f"| crate-{i} | version {i}.0 | a helper for task number {i} |" for i in range(60))
GUIDE = f"""# Crates guide

Some crates the guide mentions, and what each one is for.

## Table of crates

| name | version | purpose |
|---|---|---|
{ROWS}

## Closing words

Pick the crates you need and no more.
"""


@pytest.fixture(scope="module")
def warehouse_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project folder whose data/warehouse holds one document's chunks and embeddings."""
    root = tmp_path_factory.mktemp("project")
    raw = root / "raw"
    raw.mkdir()
    (raw / "guide.md").write_text(GUIDE)
    rt = Runtime.from_files(DEFAULT_SETTINGS_PATH, raw, str(root / "data" / "warehouse"))
    run_document(rt, "guide.md", embed=False)
    document = current_document(rt.warehouse, "guide.md")
    chunks = load_chunks(rt.warehouse, document)
    vectors = np.random.default_rng(0).normal(size=(len(chunks), 8)).astype(np.float32)
    table = embeddings_table(chunks, vectors, "e" * 64, source_key="guide.md", model="test-model")
    assert document.id is not None
    rt.warehouse.write_table("embeddings", document.id, table)
    return root


def _table(root: Path, name: str) -> Path:
    doc_id = Document.node_id_for("guide.md")
    return root / "data" / "warehouse" / name / f"{doc_id}.parquet"


def test_chunk_rows_carry_source_key_embedded_text_and_header_spans(warehouse_root: Path) -> None:
    rows = pq.read_table(_table(warehouse_root, "chunks")).to_pylist()
    text = GUIDE
    assert {r["source_key"] for r in rows} == {"guide.md"}
    tables = [r for r in rows if r["content_kind"] == "table"]
    assert len(tables) > 1  # the 60-row table is split, its header repeated
    for r in rows:
        body = text[r["char_start"] : r["char_end"]]
        if r["header_start"] is None:
            assert body == r["text"]
        else:
            header = text[r["header_start"] : r["header_end"]]
            assert header.startswith("| name | version | purpose |")
            assert header + "\n" + body == r["text"]
        label = " > ".join(r["heading_path"])
        assert r["contextual_text"].startswith(label + "\n\n")
    assert tables[1]["header_start"] is not None
    closing = next(r for r in rows if r["heading_path"][-1] == "Closing words")
    assert closing["contextual_text"] == (
        "Crates guide > Closing words\n\nPick the crates you need and no more."
    )


def test_every_column_is_described_in_the_parquet_schema(warehouse_root: Path) -> None:
    chunks = pq.read_schema(_table(warehouse_root, "chunks"))
    described = column_descriptions(chunks)
    assert set(described) == set(chunks.names)
    assert "exactly what is embedded" in described["contextual_text"]
    assert "raw root" in described["source_key"]
    embeddings = pq.read_schema(_table(warehouse_root, "embeddings"))
    assert {"chunk_id", "document_id", "source_key", "index", "model", "vector"} <= set(
        embeddings.names
    )
    assert set(column_descriptions(embeddings)) == set(embeddings.names)


def test_readme_duckdb_and_polars_examples_run_as_written(
    warehouse_root: Path, repo_root: Path
) -> None:
    readme = (repo_root / "README.md").read_text()
    blocks = [
        b for b in re.findall(r"```python\n(.*?)```", readme, re.DOTALL) if "data/warehouse" in b
    ]
    assert any("import duckdb" in b for b in blocks) and any("import polars" in b for b in blocks)
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(warehouse_root)
    try:
        with contextlib.redirect_stdout(out):
            for block in blocks:
                exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    printed = out.getvalue()
    assert "guide.md" in printed and "test-model" in printed
    assert "Crates guide > Closing words" in printed
