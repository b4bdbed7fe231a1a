"""The search index's per-document step and its check, as the ``search_index`` asset runs them.

Why a step beside ``sinks.index.update_document``: that function takes a document without
chunks for one that left (its rows are deleted, ``removed``). A document that is still there but
failed before its embeddings is not a deletion: indexing it fails, naming the upstream failure,
and its old rows stay until it succeeds.

A run's documents are written together (``prepare_index_document`` for each, then
``index_documents`` for them all: two LanceDB commits for the batch, not two per document) and
checked together (``check_index_documents``: one query for the batch's rows); a document that
fails is named on its own, as when they were written one at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agrag_pipeline.models import Document
from agrag_pipeline.sinks.bm25_context import IndexSettings
from agrag_pipeline.sinks.index import (
    IndexUpdate,
    PreparedUpdate,
    SearchIndex,
    prepare_update,
    update_document,
    write_updates,
)
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.stored import require_stored
from agrag_pipeline.validation import CheckOutcome

INDEX_CHECKS = ("index_matches_embeddings",)


def index_document(warehouse: Warehouse, index: SearchIndex, source_key: str) -> IndexUpdate:
    """Bring the document's rows in the index up to date; fail if it has no embeddings."""
    _require_embeddings(warehouse, source_key)
    return update_document(warehouse, index, source_key)


def prepare_index_document(
    warehouse: Warehouse, source_key: str, settings: IndexSettings
) -> PreparedUpdate:
    """``index_document`` up to the write: fails as it does (no embeddings of a document that
    is still there), else the document's rows (BM25's text made under ``settings``, the
    index's), for ``index_documents`` to write with others.
    Call it under the index's lock (``SearchIndex.writing``), held until they are written."""
    _require_embeddings(warehouse, source_key)
    return prepare_update(warehouse, source_key, settings)


def index_documents(
    index: SearchIndex, prepared: Mapping[str, PreparedUpdate]
) -> dict[str, IndexUpdate | Exception]:
    """Write the prepared documents' rows together; source key -> its update, or its error."""
    return write_updates(index, prepared)


def _require_embeddings(warehouse: Warehouse, source_key: str) -> None:
    document = warehouse.get_document(Document.node_id_for(source_key))
    if document is not None:
        require_stored(warehouse, document, "embeddings")


def check_index_document(
    warehouse: Warehouse, index: SearchIndex, source_key: str
) -> list[CheckOutcome]:
    """Does the index hold exactly one row per chunk of the document's embeddings?"""
    return check_index_documents(warehouse, index, [source_key])[source_key]


def check_index_documents(
    warehouse: Warehouse, index: SearchIndex, source_keys: Iterable[str]
) -> dict[str, list[CheckOutcome]]:
    """``check_index_document`` for many documents, with one query for all their rows."""
    keys = list(source_keys)
    ids = {key: str(Document.node_id_for(key)) for key in keys}
    try:
        indexed = index.documents_rows(ids.values())
    except Exception as exc:  # a check reports; it never fails the step
        return {key: [_unchecked(exc)] for key in keys}
    return {key: _check(warehouse, key, set(indexed.get(ids[key], []))) for key in keys}


def _unchecked(exc: Exception) -> CheckOutcome:
    return CheckOutcome(
        INDEX_CHECKS[0], False, f"could not be checked: {type(exc).__name__}: {exc}"
    )


def _check(warehouse: Warehouse, source_key: str, indexed: set[str]) -> list[CheckOutcome]:
    name = INDEX_CHECKS[0]
    document_id = Document.node_id_for(source_key)
    try:
        if not warehouse.has_table("embeddings", document_id):
            return [CheckOutcome(name, False, "no embeddings are stored for this document")]
        expected = {
            str(c) for c in warehouse.read_table("embeddings", document_id).column("chunk_id")
        }
    except Exception as exc:  # a check reports; it never fails the step
        return [_unchecked(exc)]
    missing, extra = expected - indexed, indexed - expected
    counts = {"expected_rows": len(expected), "missing": len(missing), "unexpected": len(extra)}
    if missing or extra:
        return [
            CheckOutcome(
                name,
                False,
                f"{len(missing)} chunks of its embeddings are not in the index, "
                f"{len(extra)} rows in the index are not its chunks",
                {**counts, "missing_examples": sorted(missing)[:5]},
            )
        ]
    return [CheckOutcome(name, True, f"the index holds exactly its {len(expected)} chunks", counts)]
