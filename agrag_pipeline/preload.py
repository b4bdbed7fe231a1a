"""Load once, before forking workers, what every worker would otherwise load for itself.

Why: the core imports some libraries (pandas, the PDF, spreadsheet and reStructuredText readers,
torch and sentence-transformers) and reads the reading-quality word lists only when a document
first needs them, so ``agrag`` and each spawned process start quickly. A process that forks its
workers (the Dagster run forkserver, ``defs/run_forkserver.py``) loads them once instead, and
each worker it forks inherits them: a forked run worker read its first English document in 1.7
CPU seconds without this, 0.7 with it, and a run that embeds no longer spends 4.6 CPU seconds
importing torch and sentence-transformers (BENCHMARKS.md, "Run workers forked from a loaded code
location").

Nothing here keeps a file open or leaves a Python thread running, and torch runs on one thread
only, which starts no thread pool (a pool started before a fork does not survive it): each
child forked afterwards gets torch's thread count back and starts its own pool at its first
batch (a test forks a preloaded process and embeds in the child). It parses and chunks a short
English text in memory, which reads the English word lists and warms the parsers' and the
chunker's caches; imports the libraries the other readers, the embedder and the search index
load on first use (lancedb's import starts an event loop thread, stopped again before any
fork); and builds the embedding model the settings file names, so that a run that embeds uses
it instead of building its own (0.12-0.17 CPU s a run).

Core module: no Dagster.
"""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger(__name__)

#: Libraries the readers, table writers and embedder import on first use, and the module that
#: reads a document's raw bytes back (those installed are loaded).
LAZY_LIBRARIES = (
    "pandas",
    "pyarrow.parquet",
    "pyarrow.dataset",
    "fsspec.implementations.chained",
    "agrag_pipeline.storage.raw_remote",
    "wordfreq",
    "regex",
    "ftfy.badness",
    "msgpack",
    "charset_normalizer",
    "pypdfium2",
    "pdfplumber",
    "openpyxl",
    "PIL.Image",
    "docutils.core",
    "docutils.parsers.rst",
    "torch",
    "sentence_transformers",
    # lancedb's namespace client; lancedb itself is imported by ``import_lancedb_for_forking``,
    # as its import starts a thread.
    "lance_namespace",
)

#: A short English document in the shapes the chunker handles (headings, prose, a list, code,
#: a table): enough words for the reading-quality score to identify its language.
SAMPLE_MARKDOWN = """# Keeping a document collection searchable

A team that answers questions from its own documents needs every page read well, cut into
passages of a useful size and stored with the settings that produced them. When a document
changes, only that document should be read again; when the settings change, the passages they
shaped are made again and the others are kept.

## What happens to each file

1. The file is copied into the warehouse with the hash of its bytes.
2. Its text and headings are read by the reader for its format.
3. The sections are cut into chunks that fit the embedding model.

```python
def chunk_count(sections, limit):
    return sum(len(section) // limit + 1 for section in sections)
```

| Step | Output | Kept when |
| --- | --- | --- |
| snapshot | raw bytes | the bytes are unchanged |
| sections | text and headings | the reader is unchanged |
| chunks | passages | the chunker settings are unchanged |

Each passage remembers the heading path above it, so an answer found in the middle of a long
manual can still be traced to the chapter and the section that hold it.
"""


def preload() -> None:
    """Import the lazily loaded libraries and read, chunk and tabulate the sample in memory."""
    for name in LAZY_LIBRARIES:
        try:
            importlib.import_module(name)
        except ImportError:  # a reader of an optional extra that is not installed
            continue
    from agrag_pipeline.embedding.sentence_transformer import prepare_loading_in_forked_workers
    from agrag_pipeline.sinks.index import import_lancedb_for_forking

    import_lancedb_for_forking()
    prepare_loading_in_forked_workers()
    _build_the_embedding_model()
    from agrag_pipeline.chunking.chunker import StructureChunker
    from agrag_pipeline.chunking.tokens import TokenCounter
    from agrag_pipeline.parsing import parse_document
    from agrag_pipeline.settings import ChunkerSettings
    from agrag_pipeline.storage.tables import chunks_to_table, sections_to_table

    parsed = parse_document(SAMPLE_MARKDOWN.encode("utf-8"), "preload/sample.md", "text/markdown")
    sections_to_table(parsed.sections)
    chunks = StructureChunker(ChunkerSettings(), TokenCounter()).chunk(
        parsed, schema_fingerprint=None, extraction_fingerprint=None
    )
    chunks_to_table(chunks, "preload/sample.md")


def _build_the_embedding_model() -> None:
    """Build the model the settings file names (``AGRAG_SETTINGS``, else the default), as the
    runs will: each run that embeds then uses it instead of building its own. A run that names
    other settings builds its own; whatever fails here is left for the run that needs the
    model, which reports it."""
    from agrag_pipeline.embedding.sentence_transformer import build_model_for_forked_workers
    from agrag_pipeline.runtime import resolve_roots
    from agrag_pipeline.settings import load_settings

    try:
        settings = load_settings(resolve_roots().settings_path).embedding
        if settings.backend == "sentence-transformers":
            build_model_for_forked_workers(settings)
    except Exception as exc:  # the run that needs the model reports it, with its context
        log.info("the embedding model is left for each run to build: %s", exc)
