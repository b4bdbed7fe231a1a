"""The ``search_index`` asset (LanceDB, per document) and the ``retrieval_score`` asset.

``search_index`` is downstream of ``embeddings``, partitioned and batched like the others: the
run's documents' rows are replaced in the index together (one delete of them all, then one add,
under the index's lock), never a rebuild; a document without embeddings fails (it is not a
deletion); the index is checked against the tables before and after, what disagrees is
repaired and logged as a warning, and each indexed document is checked
(``index_matches_embeddings``).
``retrieval_score`` scores the index on a labelled questions file and reports recall@1/5/10 and
MRR@10 per mode as numeric metadata, which the UI plots over materialisations: a settings
change shows up as a step in those plots. The logic is in ``sinks.index`` and ``retrieval``.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg

from agrag_pipeline.defs import metadata as md
from agrag_pipeline.defs.assets import (
    OWNERS,
    Batch,
    StepConfig,
    _materialize,
    per_document_asset,
)
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.retrieval.commands import evaluate_index
from agrag_pipeline.retrieval.evaluate import table
from agrag_pipeline.runtime import PROJECT_ROOT
from agrag_pipeline.sinks.index import IndexCheck, IndexUpdate, check_index
from agrag_pipeline.sinks.index_step import (
    check_index_documents,
    index_documents,
    prepare_index_document,
)
from agrag_pipeline.storage import Warehouse

#: The search_index asset's own code version (``code_versions.py`` adds what is upstream).
INDEX_CODE_VERSION = "index-1"
DEFAULT_QUESTIONS = PROJECT_ROOT / "data" / "eval" / "rust-book-questions.tsv"


def index_metadata(result: IndexUpdate, warehouse: Warehouse) -> dict[str, Any]:
    return {
        "agrag/status": "removed from the index" if result.removed else "ok",
        "dagster/row_count": result.rows,
        "source_key": result.source_key,
        "document_id": result.document_id,
    }


def _log_check(context: dg.AssetExecutionContext, check: IndexCheck) -> None:
    for line in check.repaired + check.problems:
        context.log.warning(line)


class RetrievalScoreConfig(dg.Config):
    questions: str = str(DEFAULT_QUESTIONS)


def build_index_assets(code_version: str) -> list[dg.AssetsDefinition]:
    """``search_index`` (with its code version, ``code_versions.py``) and ``retrieval_score``
    (built inside the definitions' warning filter)."""

    @dg.asset(
        deps=["embeddings"],
        **per_document_asset(
            "search_index",
            code_version,
            md.definition_metadata("search_index"),
            stage="index",
        ),
        kinds={"python", "lancedb"},
        description="Each document's chunks and vectors in the LanceDB index under the warehouse "
        "(index/): dense and BM25 search; replaced per document, never rebuilt.",
    )
    def search_index(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        index = rt.search_index
        # Before: a damaged index rebuilt, duplicates and rows of documents gone repaired;
        # after: this run's documents compared with their tables (``sinks.index.check_index``).
        _log_check(context, check_index(rt.warehouse, index))
        try:
            # The run's documents written together (two commits) and checked together.
            yield from _materialize(
                context,
                rt,
                "search_index",
                lambda key: prepare_index_document(rt.warehouse, key, index.settings),
                index_metadata,
                upstream="embeddings",
                batch=Batch(
                    commit=lambda prepared: index_documents(index, prepared),
                    around=index.writing,
                    evaluate=lambda keys: check_index_documents(rt.warehouse, index, keys),
                ),
            )
        finally:  # also when the step ends by naming the documents it could not index
            _log_check(context, check_index(rt.warehouse, index, context.partition_keys))
            index.ensure_fts_index()

    @dg.asset(
        name="retrieval_score",
        deps=[search_index],
        # Not partitioned, so not in the partitioned ingestion job: materialised on its own.
        group_name="evaluation",
        owners=OWNERS,
        tags={"agrag/stage": "evaluation"},
        kinds={"python"},
        description="Recall@1/5/10 and MRR@10 of dense, BM25 and hybrid search on a labelled "
        "questions file, as numeric metadata the UI plots over time.",
    )
    def retrieval_score(
        context: dg.AssetExecutionContext, config: RetrievalScoreConfig, pipeline: PipelineResource
    ) -> dg.MaterializeResult:
        rt = pipeline.runtime()
        results = evaluate_index(rt, Path(config.questions))
        metadata: dict[str, Any] = {"questions_file": config.questions}
        for scores in results:
            metadata.update(scores.as_metadata())
        metadata["questions"] = results[0].questions if results else 0
        metadata["scores"] = dg.MetadataValue.md(table(results))
        context.log.info(table(results))
        return dg.MaterializeResult(metadata=metadata, tags=rt.fingerprint_tags())

    return [search_index, retrieval_score]
