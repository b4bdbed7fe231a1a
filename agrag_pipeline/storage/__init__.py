"""Storage: the warehouse layout and atomic file writes (local paths or fsspec URIs)."""

from agrag_pipeline.storage.warehouse import Warehouse

__all__ = ["Warehouse"]
