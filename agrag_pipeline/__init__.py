"""agrag_pipeline: traceable document ingestion for graph-RAG.

The core (models, fingerprints, settings, parsing, chunking, embedding, storage) is plain Python
and never imports Dagster; the Dagster shell lives in ``agrag_pipeline.defs`` and
``agrag_pipeline.definitions``.
"""

__version__ = "0.1.0"
