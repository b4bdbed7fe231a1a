"""The pipeline's configured parts, built once per process from the settings file.

``Runtime`` turns ``PipelineSettings`` into the objects the steps need (warehouse, chunker,
embedder, cache) and into the fingerprints that identify them. The embedder is loaded lazily:
building a Runtime (which the Dagster definitions do at load, to compute code versions) must
stay cheap.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agrag_pipeline.fingerprints import fingerprint, short
from agrag_pipeline.raw_files import file_kind
from agrag_pipeline.settings import PipelineSettings, load_settings
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.versions import PARSE_VERSION, SNAPSHOT_VERSION

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


#: What is wrong with a root (``RootError.problem``); the CLI gives each its own exit status.
RootProblem = Literal[
    "raw_root_missing",
    "raw_root_not_a_folder",
    "raw_root_unreadable",
    "output_not_a_folder",
    "output_unusable",
]

#: The command-line flag of each root, to say where a path came from.
ROOT_FLAGS = {
    "raw_root": "--raw-root",
    "warehouse_root": "--warehouse",
    "settings_path": "--settings",
    "cache_dir": "--cache-dir",
}


class RootError(ValueError):
    """A root that cannot be used as it is given. ``str()`` is one line naming the root, its
    path, where the path came from and what is wrong; ``problem`` says which kind it is."""

    def __init__(self, problem: RootProblem, message: str) -> None:
        super().__init__(message)
        self.problem: RootProblem = problem


def check_roots(
    roots: Roots,
    *,
    raw_root: bool,
    warehouse: Literal["read", "write"] | None,
    cache: bool,
) -> None:
    """Refuse, before any work starts, a local root the command cannot use (``RootError``).

    ``raw_root``: the raw root must be a folder that can be listed. ``warehouse``: "read", it
    must be a folder that can be listed where it exists; "write", it must also be writable, or
    creatable where it does not exist yet. ``cache`` (the embedding cache is written): the
    cache folder must be writable or creatable, and so must the warehouse when the cache lives
    in it (no ``cache_dir``). URIs (``s3://...``) are left to the run: checking them means
    reaching the store.
    """
    if raw_root and not _is_uri(roots.raw_root):
        _check_raw_root(roots)
    if cache and roots.cache_dir is None:
        warehouse = "write"
    if warehouse is not None and not _is_uri(roots.warehouse_root):
        check_output_folder(
            "warehouse", Path(roots.warehouse_root), _origin(roots, "warehouse_root"), warehouse
        )
    if cache and roots.cache_dir is not None and not _is_uri(roots.cache_dir):
        check_output_folder(
            "embedding cache", Path(roots.cache_dir), _origin(roots, "cache_dir"), "write"
        )


def _is_uri(value: str) -> bool:
    return "://" in value  # as ``resolve_roots`` tells them from paths


def _origin(roots: Roots, attr: str) -> str:
    source = roots.sources.get(attr, "default")
    if source == "flag":
        return f"given by {ROOT_FLAGS[attr]}"
    if source == "default":
        return "the default"
    return f"given by {source}"


def _check_raw_root(roots: Roots) -> None:
    path = Path(roots.raw_root)
    said = f"raw root {path} ({_origin(roots, 'raw_root')})"
    try:
        info = path.stat()
    except FileNotFoundError:
        raise RootError("raw_root_missing", f"{said}: does not exist") from None
    except NotADirectoryError:
        ancestor, _ = _existing_ancestor(path)
        raise RootError(
            "raw_root_missing", f"{said}: does not exist ({ancestor} is not a folder)"
        ) from None
    except OSError as exc:
        raise RootError("raw_root_unreadable", f"{said}: cannot be read: {_why(exc)}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise RootError("raw_root_not_a_folder", f"{said}: is {_kind(info)}, not a folder")
    try:
        with os.scandir(path) as listing:
            next(listing, None)
    except OSError as exc:
        raise RootError("raw_root_unreadable", f"{said}: cannot be listed: {_why(exc)}") from None


def check_output_folder(
    label: str, path: Path, origin: str, mode: Literal["read", "write"] = "write"
) -> None:
    """``path`` is a folder this process can use (``mode``: list it, and write in it); a
    missing one is created for writing (a missing folder is fine to read: nothing is stored
    yet). Else ``RootError`` naming ``label``, ``path`` and the problem."""
    said = f"{label} {path} ({origin})"
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        ancestor, found = _existing_ancestor(path)
        if not stat.S_ISDIR(found.st_mode):
            raise RootError(
                "output_not_a_folder",
                f"{said}: cannot be created: {ancestor} is {_kind(found)}, not a folder",
            ) from None
        if mode == "read":
            return  # nothing stored yet
        try:  # the run would create it next: the one honest test that it can
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RootError("output_unusable", f"{said}: cannot be created: {_why(exc)}") from None
        return
    except OSError as exc:
        raise RootError("output_unusable", f"{said}: cannot be used: {_why(exc)}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise RootError("output_not_a_folder", f"{said}: is {_kind(info)}, not a folder")
    try:
        with os.scandir(path) as listing:
            next(listing, None)
    except OSError as exc:
        raise RootError("output_unusable", f"{said}: cannot be listed: {_why(exc)}") from None
    if mode == "write" and not os.access(path, os.W_OK | os.X_OK):
        raise RootError("output_unusable", f"{said}: cannot be written: permission denied")


def _existing_ancestor(path: Path) -> tuple[Path, os.stat_result]:
    """The nearest ancestor of the missing ``path`` that exists (a folder, or the file in the
    way), and its stat. The root folder always exists."""
    ancestor = path.parent
    while True:
        try:
            return ancestor, ancestor.stat()
        except (FileNotFoundError, NotADirectoryError):
            if ancestor == ancestor.parent:
                raise
            ancestor = ancestor.parent


def _kind(info: os.stat_result) -> str:
    return file_kind(info.st_mode)


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _default_settings_path() -> Path:
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

    return DEFAULT_SETTINGS_PATH


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
        """Fingerprint of how documents are parsed: the parse version, the OCR engine, and
        whether this machine has fonts for the CJK text a PDF names and does not embed (PDFium
        drops it where none is installed: ``parsing.pdf_fonts``)."""
        from agrag_pipeline.parsing.pdf_fonts import sets_vertical_cjk

        return fingerprint(
            {
                "parse_version": PARSE_VERSION,
                "ocr": self.ocr_engine,
                "cjk_fonts": sets_vertical_cjk(),
            }
        )

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
        A local model in its own directory (``embedding.model_dir``) brings its own tokenizer and
        limit (sentence-transformers' ``sentence_bert_config.json``); the static (model2vec)
        backend is distilled from the default MiniLM and shares its tokenizer; an HTTP backend
        names its tokenizer and limit in its settings.
        """
        from agrag_pipeline.chunking.tokens import default_tokenizer_path

        embedding = self.settings.embedding
        if embedding.backend == "openai":
            path = embedding.openai.tokenizer
            return (
                Path(path) if path else default_tokenizer_path()
            ), embedding.openai.max_sequence_tokens
        if embedding.backend == "sentence-transformers" and embedding.model_dir:
            return _model_dir_tokenizer(Path(embedding.model_dir))
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
        if self.graph_store is not None:
            from agrag_pipeline.sinks.graph.entities import EntityGraphSink

            relation_types = [r.name for r in self.settings.graph_schema.relation_types]
            sinks.append(EntityGraphSink(self.graph_store, self.warehouse, relation_types))
        return [*sinks, self.search_index]

    @cached_property
    def search_index(self) -> SearchIndex:
        """The LanceDB search index under the warehouse root (``sinks.index``)."""
        from agrag_pipeline.sinks.index import SearchIndex, index_uri

        return SearchIndex(index_uri(self.warehouse_root), settings=self.settings.index)

    @cached_property
    def embedding_cache(self) -> EmbeddingCache:
        from agrag_pipeline.embedding.cache import EmbeddingCache

        return EmbeddingCache.in_dir(self.embedding_cache_dir)


def _model_dir_tokenizer(model_dir: Path) -> tuple[Path, int]:
    """A local sentence-transformers model's ``tokenizer.json`` and ``max_seq_length``.

    Raises:
        ValueError: the directory lacks a tokenizer.json (chunks would be counted with another
            model's tokenizer and cut at another model's limit).
    """
    import json

    tokenizer = model_dir / "tokenizer.json"
    if not tokenizer.is_file():
        raise ValueError(f"embedding.model_dir {str(model_dir)!r} holds no tokenizer.json")
    limit = DEFAULT_MAX_SEQUENCE_TOKENS
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        limit = int(json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", limit))
    return tokenizer, limit
