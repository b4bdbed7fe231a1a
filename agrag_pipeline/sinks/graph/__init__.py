"""The graph sink: Document, Section and Chunk nodes with their edges, per document.

``model`` turns a document version into nodes and edges (and the ``graph_nodes``/``graph_edges``
Parquet tables); ``store`` is the one interface and the Cypher every backend sends;
``ladybug_store`` (embedded default) and ``neo4j_store`` are the backends; ``step`` is the
pipeline step the Dagster ``graph`` asset calls.
"""

from agrag_pipeline.sinks.graph.model import DocumentGraph, GraphEdge, GraphNode, document_graph
from agrag_pipeline.sinks.graph.settings import GraphSettings, Neo4jSettings
from agrag_pipeline.sinks.graph.store import GraphStore, WriteStats

__all__ = [
    "DocumentGraph",
    "GraphEdge",
    "GraphNode",
    "GraphSettings",
    "GraphStore",
    "Neo4jSettings",
    "WriteStats",
    "document_graph",
]
