"""The ``graph`` asset: each document's nodes and edges, in Parquet and in the graph database.

Downstream of ``embeddings`` (the vectors go on the Chunk nodes), partitioned and batched like
the other assets, reported per document (node and edge counts, the store, the tables) and checked
per document: ``graph_matches_tables`` compares what the database holds with the tables.
The store is opened once per run step and closed at its end, so a concurrent run waits for the
embedded database's lock for at most one batch.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from agrag_pipeline.defs import metadata as md
from agrag_pipeline.defs.assets import StepConfig, _materialize, per_document_asset
from agrag_pipeline.defs.resources import PipelineResource
from agrag_pipeline.pipeline import current_document
from agrag_pipeline.sinks.graph.model import EDGE_TYPES, NODE_PROPERTIES
from agrag_pipeline.sinks.graph.step import GRAPH_VERSION, GraphResult, build_graph, check_graph
from agrag_pipeline.storage import Warehouse


def graph_metadata(result: GraphResult, warehouse: Warehouse) -> dict[str, Any]:
    counts = result.counts
    return {
        "agrag/status": "reused" if result.reused else "ok",
        "dagster/row_count": sum(counts[label] for label in NODE_PROPERTIES),
        "source_key": result.document.source_key,
        "content_hash": result.document.content_hash,
        "graph_store": result.store,
        "nodes": dg.MetadataValue.json({label: counts[label] for label in NODE_PROPERTIES}),
        "edges": dg.MetadataValue.json({kind: counts[kind] for kind in EDGE_TYPES}),
        "superseded_nodes_removed": result.superseded,
        "dagster/uri": dg.MetadataValue.path(warehouse.uri(result.nodes_path)),
        "edges_path": dg.MetadataValue.path(warehouse.uri(result.edges_path)),
    }


#: The graph asset's own code version (``code_versions.py`` adds what is upstream).
GRAPH_CODE_VERSION = f"graph-{GRAPH_VERSION}"


def build_graph_asset(code_version: str) -> dg.AssetsDefinition:
    """The graph asset (built where the definitions are, inside their BetaWarning filter), with
    its code version (``code_versions.py``: ``GRAPH_CODE_VERSION`` and what is upstream)."""

    @dg.asset(
        deps=["embeddings"],
        **per_document_asset(
            "graph",
            code_version,
            md.definition_metadata("graph"),
        ),
        kinds={"python", "parquet", "graph"},
        description="Document, Section and Chunk nodes with HAS_SECTION, SUBSECTION_OF, HAS_CHUNK, "
        "FROM_SECTION and NEXT_CHUNK edges: graph_nodes/graph_edges Parquet tables, and the graph "
        "database (LadybugDB embedded, or Neo4j) made to hold exactly them.",
    )
    def graph(
        context: dg.AssetExecutionContext, config: StepConfig, pipeline: PipelineResource
    ) -> Iterator:
        rt = pipeline.runtime()
        store = rt.graph_store
        vectors = rt.settings.graph.vectors
        try:
            yield from _materialize(
                context,
                rt,
                "graph",
                lambda key: build_graph(
                    rt.warehouse,
                    current_document(rt.warehouse, key),
                    store,
                    with_vectors=vectors,
                    force=config.force,
                ),
                graph_metadata,
                upstream="embeddings",
                evaluate=lambda key: check_graph(rt.warehouse, key, store),
            )
        finally:
            if store is not None:
                store.close()

    return graph
