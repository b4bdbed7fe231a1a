"""The search index's per-document step and its check, as the ``search_index`` asset runs them.

Why a step beside ``sinks.index.update_document``: that function takes a document without
chunks for one that left (its rows are deleted, ``removed``). A document that is still there but
failed before its embeddings is not a deletion: indexing it fails, naming the upstream failure,
and its old rows stay until it succeeds.
"""

from __future__ import annotations

from agrag_pipeline.models import Document
from agrag_pipeline.sinks.index import IndexUpdate, SearchIndex, update_document
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.stored import require_stored
from agrag_pipeline.validation import CheckOutcome

INDEX_CHECKS = ("index_matches_embeddings",)


def index_document(warehouse: Warehouse, index: SearchIndex, source_key: str) -> IndexUpdate:
    """Bring the document's rows in the index up to date; fail if it has no embeddings."""
    document = warehouse.get_document(Document.node_id_for(source_key))
    if document is not None:
        require_stored(warehouse, document, "embeddings")
    return update_document(warehouse, index, source_key)


def check_index_document(
    warehouse: Warehouse, index: SearchIndex, source_key: str
) -> list[CheckOutcome]:
    """Does the index hold exactly one row per chunk of the document's embeddings?"""
    name = INDEX_CHECKS[0]
    document_id = Document.node_id_for(source_key)
    try:
        if not warehouse.has_table("embeddings", document_id):
            return [CheckOutcome(name, False, "no embeddings are stored for this document")]
        expected = {
            str(c) for c in warehouse.read_table("embeddings", document_id).column("chunk_id")
        }
        indexed = index.document_chunk_ids(str(document_id))
    except Exception as exc:  # a check reports; it never fails the step
        return [CheckOutcome(name, False, f"could not be checked: {type(exc).__name__}: {exc}")]
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
