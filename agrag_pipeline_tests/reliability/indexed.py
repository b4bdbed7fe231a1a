"""A warehouse ready for the search index, and what the index must hold: shared by the index
tests on a local disk and on ``s3://``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from agrag_pipeline.embedding.settings import EmbeddingSettings, StaticSettings
from agrag_pipeline.models import Document
from agrag_pipeline.pipeline import run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings
from agrag_pipeline.sinks.index import index_uri
from agrag_pipeline.storage import Warehouse


def document_text(i: int) -> str:
    parts = [
        f"## Part {j}\n\n" + f"Paragraph {j} of document {i} on subject {i * 7 + j}. " * 40
        for j in range(4)
    ]
    return f"# Document {i}\n\n" + "\n\n".join(parts) + "\n"


def build_warehouse(root: Path, documents: int) -> list[str]:
    """``root/raw`` with ``documents`` Markdown files and ``root/warehouse`` with their chunks
    and embeddings, made by the real pipeline with a tiny static (model2vec) model: the index
    takes whatever vectors the embeddings hold, and MiniLM would only make this slower."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from agrag_pipeline.embedding.sentence_transformer import packaged_minilm_dir

    tokenizer = Tokenizer.from_file(str(packaged_minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    vectors = np.random.default_rng(0).standard_normal((tokenizer.get_vocab_size(), 16))
    model = StaticModel(vectors=vectors.astype(np.float32), tokenizer=tokenizer, normalize=True)
    model.save_pretrained(str(root / "static"))
    static = StaticSettings(model_dir=str(root / "static"))
    settings = load_settings(DEFAULT_SETTINGS_PATH).model_copy(
        update={"embedding": EmbeddingSettings(backend="model2vec", static=static)}
    )
    raw = root / "raw"
    raw.mkdir()
    keys = [f"doc{i:02d}.md" for i in range(documents)]
    for i, key in enumerate(keys):
        (raw / key).write_text(document_text(i), encoding="utf-8")
    runtime = Runtime(settings=settings, raw_root=raw, warehouse_root=str(root / "warehouse"))
    for key in keys:
        result = run_document(runtime, key)
        assert len(result.chunks) >= 3, result
    return keys


def indexed_rows(warehouse_root: str) -> list[tuple[str, str]]:
    """Every row's (document_id, chunk_id), read by a fresh LanceDB connection."""
    import lancedb

    table = lancedb.connect(index_uri(warehouse_root)).open_table("chunks")
    rows = table.search().select(["document_id", "chunk_id"]).limit(None).to_arrow()
    document_ids = rows.column("document_id").to_pylist()
    return list(zip(document_ids, rows.column("chunk_id").to_pylist(), strict=True))


def assert_index_matches_tables(warehouse_root: str, keys: list[str]) -> None:
    """No duplicate row, no row of another document, every document's chunk ids exactly."""
    warehouse = Warehouse(warehouse_root)
    rows = indexed_rows(warehouse_root)
    repeated = {row: n for row, n in Counter(rows).items() if n > 1}
    assert not repeated, f"{sum(repeated.values()) - len(repeated)} duplicate rows: {repeated}"
    found: dict[str, set[str]] = {}
    for document_id, chunk_id in rows:
        found.setdefault(document_id, set()).add(chunk_id)
    expected: dict[str, set[str]] = {}
    for key in keys:
        document_id = Document.node_id_for(key)
        ids = warehouse.read_table("chunks", document_id).column("id").to_pylist()
        expected[str(document_id)] = {str(i) for i in ids}
    wrong = [k for k in keys if found.get(_id(k)) != expected[_id(k)]]
    assert not wrong, f"{len(wrong)} documents indexed unlike their chunks table: {wrong}"
    assert set(found) == set(expected), "rows of documents not in the warehouse"


def _id(key: str) -> str:
    return str(Document.node_id_for(key))
