"""Sinks: where downstream retrievers and graph-RAG builders read the pipeline's output.

Each sink is updated per document (upsert and delete by document id), never rebuilt whole for
one changed file: ``index`` (vector and full-text search), ``graph`` (Document, Section and
Chunk nodes with their edges, in an embedded graph database or Neo4j).
"""
