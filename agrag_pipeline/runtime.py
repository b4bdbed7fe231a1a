"""The pipeline's configured parts, built once per process from the settings file.

``Runtime`` turns ``PipelineSettings`` into the objects the steps need (warehouse, chunker,
embedder, cache) and into the fingerprints that identify them. The embedder is loaded lazily:
building a Runtime (which the Dagster definitions do at load, to compute code versions) must
stay cheap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from agrag_pipeline.fingerprints import fingerprint, short
from agrag_pipeline.settings import PipelineSettings, load_settings
from agrag_pipeline.storage import Warehouse

if TYPE_CHECKING:
    from agrag_pipeline.chunking.chunker import StructureChunker
    from agrag_pipeline.embedding.base import Embedder
    from agrag_pipeline.embedding.cache import EmbeddingCache
    from agrag_pipeline.freshness import DocumentSink
    from agrag_pipeline.sinks.graph.store import GraphStore
    from agrag_pipeline.sinks.index import SearchIndex

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RAW_ROOT = PROJECT_ROOT / "data" / "raw"
DEFAULT_WAREHOUSE_ROOT = PROJECT_ROOT / "data" / "warehouse"

#: The environment variables that name the roots (a flag wins over them, they over defaults).
ROOT_VARIABLES = {
    "raw_root": "AGRAG_RAW_ROOT",
    "warehouse_root": "AGRAG_WAREHOUSE_ROOT",
    "settings_path": "AGRAG_SETTINGS",
    "cache_dir": "AGRAG_CACHE_DIR",
}


@dataclass(frozen=True)
class Roots:
    """Where documents come from, where outputs go, which settings and cache apply, and where
    each choice came from (``flag``, the variable's name, or ``default``)."""

    raw_root: str
    warehouse_root: str
    settings_path: str
    cache_dir: str | None
    sources: dict[str, str] = field(default_factory=dict)

    def describe(self) -> list[str]:
        """One line per root, e.g. ``raw root: /data/raw (AGRAG_RAW_ROOT)``."""
        names = {
            "raw_root": "raw root",
            "warehouse_root": "warehouse",
            "settings_path": "settings",
            "cache_dir": "embedding cache",
        }
        lines = []
        for attr, label in names.items():
            value = getattr(self, attr)
            source = self.sources.get(attr, "default")
            shown = value if value is not None else "(beside the warehouse)"
            lines.append(f"{label}: {shown} ({source})")
        return lines


def resolve_roots(
    raw_root: str | Path | None = None,
    warehouse_root: str | None = None,
    settings_path: str | Path | None = None,
    cache_dir: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Roots:
    """Each root from its flag (an argument that is not None), else its environment variable
    (when set and not empty), else the project default: the one precedence rule of the CLI,
    ``dagster dev`` and the benchmarks. Local paths are made absolute."""
    env = os.environ if environ is None else environ
    flags = {
        "raw_root": raw_root,
        "warehouse_root": warehouse_root,
        "settings_path": settings_path,
        "cache_dir": cache_dir,
    }
    defaults: dict[str, str | None] = {
        "raw_root": str(DEFAULT_RAW_ROOT),
        "warehouse_root": str(DEFAULT_WAREHOUSE_ROOT),
        "settings_path": str(_default_settings_path()),
        "cache_dir": None,
    }
    values: dict[str, str | None] = {}
    sources: dict[str, str] = {}
    for attr, flag in flags.items():
        variable = ROOT_VARIABLES[attr]
        if flag is not None and str(flag) != "":
            value: str | None = str(flag)
            sources[attr] = "flag"
        elif env.get(variable):
            value = env[variable]
            sources[attr] = variable
        else:
            value = defaults[attr]
            sources[attr] = "default"
        if value is not None and "://" not in value:
            value = str(Path(value).expanduser().resolve())
        values[attr] = value
    return Roots(
        raw_root=values["raw_root"] or "",
        warehouse_root=values["warehouse_root"] or "",
        settings_path=values["settings_path"] or "",
        cache_dir=values["cache_dir"],
        sources=sources,
    )


def _default_settings_path() -> Path:
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

    return DEFAULT_SETTINGS_PATH


#: Bumped when the snapshot or parse steps change what they write for the same input.
SNAPSHOT_VERSION = "1"
#: 2: PDFs read with PDFium (words, columns, headings, OCR); 3: PDF compound hyphens kept;
#: 4: every parse scored for reading quality, PDF text in Unicode codes without a map kept.
PARSE_VERSION = "4"
#: all-MiniLM-L6-v2 reads at most 256 word pieces (special tokens included).
DEFAULT_MAX_SEQUENCE_TOKENS = 256


@dataclass
class Runtime:
    settings: PipelineSettings
    raw_root: Path = DEFAULT_RAW_ROOT
    warehouse_root: str = str(DEFAULT_WAREHOUSE_ROOT)
    cache_dir: Path | None = None
    _embedder: Embedder | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_files(
        cls,
        settings_path: str | Path,
        raw_root: str | Path = DEFAULT_RAW_ROOT,
        warehouse_root: str = str(DEFAULT_WAREHOUSE_ROOT),
        cache_dir: str | Path | None = None,
    ) -> Runtime:
        return cls(
            settings=load_settings(settings_path),
            raw_root=Path(raw_root),
            warehouse_root=str(warehouse_root),
            cache_dir=Path(cache_dir) if cache_dir else None,
        )

    @cached_property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.warehouse_root)

    @property
    def embedding_cache_dir(self) -> Path:
        if self.cache_dir is not None:
            return self.cache_dir
        if "://" in self.warehouse_root:
            return PROJECT_ROOT / "data" / "cache"
        return Path(self.warehouse_root) / "_cache"

    # -- fingerprints (cheap: no model is loaded) ----------------------------------------------
    @property
    def schema_fingerprint(self) -> str:
        return self.settings.schema_fingerprint

    @property
    def extraction_fingerprint(self) -> str:
        return self.settings.extraction_fingerprint

    @cached_property
    def embedding_settings_fingerprint(self) -> str:
        """Fingerprint of the embedding settings, known without loading the model.

        It folds into ``code_version``; the loaded model's own fingerprint (weights hash
        included) is what each embeddings file records and what decides reuse.
        """
        # batch_size, batch_tokens and the device change how fast vectors are made, not what
        # they are (batch_tokens: within float rounding, measured in test_embedding_batching).
        speed_only = {"batch_size", "batch_tokens", "device", "half_precision", "threads"}
        return fingerprint(self.settings.embedding.model_dump(mode="json", exclude=speed_only))

    @property
    def embedding_fingerprint(self) -> str:
        """The loaded embedder's fingerprint (loads the model)."""
        return self.embedder.fingerprint

    @property
    def chunker_hash(self) -> str:
        return self.chunker.chunker_hash

    @cached_property
    def ocr_engine(self) -> dict[str, str]:
        """The OCR engine, its version and settings: part of what the sections' parse records."""
        from agrag_pipeline.parsing.ocr import engine_fingerprint

        return engine_fingerprint(self.settings.parsing.ocr)

    @cached_property
    def parse_fingerprint(self) -> str:
        """Fingerprint of how documents are parsed: the parse version and the OCR engine."""
        return fingerprint({"parse_version": PARSE_VERSION, "ocr": self.ocr_engine})

    def code_versions(self) -> dict[str, str]:
        """Code versions of the assets: a changed setting marks the affected assets stale."""
        return {
            "raw_documents": f"snapshot-{SNAPSHOT_VERSION}",
            "sections": f"parse-{PARSE_VERSION}-{short(self.parse_fingerprint)}",
            "chunks": "-".join(
                [
                    "chunk",
                    short(self.chunker_hash),
                    short(self.schema_fingerprint),
                    short(self.extraction_fingerprint),
                ]
            ),
            "embeddings": f"embed-{short(self.embedding_settings_fingerprint)}",
        }

    def fingerprint_tags(self) -> dict[str, str]:
        """Shortened fingerprints as Dagster tags (values of at most 63 [A-Za-z0-9_.-])."""
        return {
            "agrag/chunker_hash": short(self.chunker_hash),
            "agrag/schema_fingerprint": short(self.schema_fingerprint),
            "agrag/extraction_fingerprint": short(self.extraction_fingerprint),
            "agrag/embedding_settings": short(self.embedding_settings_fingerprint),
        }

    # -- parts -------------------------------------------------------------------------------
    @cached_property
    def chunker(self) -> StructureChunker:
        from agrag_pipeline.chunking.chunker import StructureChunker
        from agrag_pipeline.chunking.tokens import TokenCounter

        tokenizer_path, max_sequence_tokens = self.tokenizer()
        return StructureChunker(
            self.settings.chunker,
            TokenCounter(tokenizer_path),
            max_sequence_tokens=max_sequence_tokens,
        )

    def tokenizer(self) -> tuple[Path, int]:
        """The embedding model's tokenizer.json and maximum sequence length (no model load).

        The chunker's token limits come from these, so nothing is truncated when embedding.
        The static (model2vec) backend is distilled from the default MiniLM and shares its
        tokenizer; an HTTP backend names its tokenizer and limit in its settings.
        """
        from agrag_pipeline.chunking.tokens import default_tokenizer_path

        embedding = self.settings.embedding
        if embedding.backend == "openai":
            path = embedding.openai.tokenizer
            return (
                Path(path) if path else default_tokenizer_path()
            ), embedding.openai.max_sequence_tokens
        return default_tokenizer_path(), DEFAULT_MAX_SEQUENCE_TOKENS

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from agrag_pipeline.embedding import make_embedder

            self._embedder = make_embedder(self.settings.embedding, self.embedding_cache_dir)
        return self._embedder

    @cached_property
    def graph_store(self) -> GraphStore | None:
        """The configured graph sink (opened lazily on first use), or None when turned off."""
        from agrag_pipeline.sinks.graph.step import make_graph_store

        return make_graph_store(self.settings.graph, self.warehouse_root)

    def document_sinks(self) -> list[DocumentSink]:
        """Every sink that holds per-document output and must forget a deleted document."""
        sinks: list[DocumentSink] = [self.graph_store] if self.graph_store is not None else []
        return [*sinks, self.search_index]

    @cached_property
    def search_index(self) -> SearchIndex:
        """The LanceDB search index under the warehouse root (``sinks.index``)."""
        from agrag_pipeline.sinks.index import SearchIndex, index_uri

        return SearchIndex(index_uri(self.warehouse_root))

    @cached_property
    def embedding_cache(self) -> EmbeddingCache:
        from agrag_pipeline.embedding.cache import EmbeddingCache

        return EmbeddingCache.in_dir(self.embedding_cache_dir)
