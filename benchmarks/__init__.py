"""Benchmarks: per-area modules (``*_bench``) and the suite (``python -m benchmarks``)."""
