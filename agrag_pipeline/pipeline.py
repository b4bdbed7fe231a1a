"""The pipeline's steps as plain functions: snapshot -> sections -> chunks -> embeddings.

Each step reads its input from the warehouse, calls the core, writes its output atomically and
returns a small result the caller reports (the Dagster assets turn it into metadata; the CLI
prints it). A step for a document whose upstream output belongs to another version refuses to
run rather than mix versions.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agrag_pipeline.chunking.chunker import CHUNKER_NAME
from agrag_pipeline.extraction.step import build_extractions, llm_parts
from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Chunk, Document
from agrag_pipeline.parsing import image, parse_document, pdf
from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import (
    chunks_to_table,
    layout_to_table,
    sections_to_table,
    with_metadata,
)
from agrag_pipeline.storage.warehouse import DOCUMENT, DamagedFileError, InputChangedError
from agrag_pipeline.stored import (
    PARSER_METADATA,
    StaleInputError,
    current_document,
    load_chunks,
    load_chunks_table,
    load_parsed,
    require_stored,
)
from agrag_pipeline.versions import PARSE_VERSION

if TYPE_CHECKING:
    from agrag_pipeline.chunking.chunker import StructureChunker
    from agrag_pipeline.embedding.base import Embedder
    from agrag_pipeline.embedding.cache import EmbeddingCache
    from agrag_pipeline.runtime import Runtime
    from agrag_pipeline.settings import OcrSettings


@dataclass(frozen=True)
class SnapshotResult:
    document: Document
    raw_path: str
    changed: bool


@dataclass(frozen=True)
class SectionsResult:
    document: Document
    parsed: ParsedDocument
    path: str
    text_layer_path: str
    reused: bool = False


@dataclass(frozen=True)
class ChunksResult:
    document: Document
    chunks: list[Chunk]
    path: str
    token_counts: list[int] = field(default_factory=list)
    reused: bool = False

    def token_stats(self) -> dict[str, float]:
        counts = self.token_counts or [0]
        return {
            "min": float(min(counts)),
            "median": float(statistics.median(counts)),
            "mean": round(statistics.fmean(counts), 1),
            "max": float(max(counts)),
        }


@dataclass(frozen=True)
class EmbeddingsResult:
    document: Document
    rows: int
    path: str
    fingerprint: str
    cache_hits: int
    cache_misses: int
    truncated: int
    reused: bool = False


def snapshot_document(warehouse: Warehouse, raw_root: Path, source_key: str) -> SnapshotResult:
    """Copy a document's current bytes into the warehouse, so later steps never see a change.

    Refused before anything is stored: a key that is not a source key or leads outside the raw
    root (``../outside.md``, a symlink out), a file that is not regular (never opened in a way
    that blocks), one over the size limit (not read past it), and one no parser reads. An
    unchanged version keeps its record (and ``created_at``) as it was.
    """
    from agrag_pipeline.derived import is_derived
    from agrag_pipeline.parsing import DEFAULT_MAX_BYTES
    from agrag_pipeline.parsing.errors import DocumentTooLargeError
    from agrag_pipeline.sources import (
        FileTooLargeError,
        OutsideRootError,
        SourceKeyError,
        read_regular_file,
        resolve_in_root,
    )
    from agrag_pipeline.storage.raw_remote import object_root_uri, object_uri, read_object

    if is_derived(source_key):  # an attachment, an archive member: read from its container
        return _store_snapshot(warehouse, source_key, _read_derived(raw_root, source_key))
    remote = object_root_uri(raw_root)  # a bucket: the object is read through fsspec
    try:
        path = resolve_in_root(raw_root, source_key) if remote is None else None
        uri = object_uri(remote, source_key) if remote is not None else str(path)
    except SourceKeyError as exc:
        raise DocumentError(source_key, f"refused: {exc}") from None
    try:
        raw = (
            read_regular_file(path, DEFAULT_MAX_BYTES, root=raw_root)
            if path is not None
            else read_object(uri, DEFAULT_MAX_BYTES)
        )
    except OutsideRootError as exc:  # a symlink out swapped in since the check above
        raise DocumentError(source_key, f"refused: {exc}") from None
    except FileTooLargeError as exc:
        raise DocumentTooLargeError(source_key, f"{exc}; nothing was stored") from None
    except FileNotFoundError:
        raise DocumentError(source_key, f"the file {uri} no longer exists") from None
    except OSError as exc:
        raise DocumentError(source_key, f"the file {uri} cannot be read: {exc}") from exc
    return _store_snapshot(warehouse, source_key, raw)


def _store_snapshot(warehouse: Warehouse, source_key: str, raw: bytes) -> SnapshotResult:
    """Store ``raw`` as the current version of ``source_key`` (unchanged: its record kept).

    A derived document's record names the document it was found in (``container_key``,
    ``container_document_id``) and the real file holding it (``container_file``)."""
    from agrag_pipeline.derived_keys import container_of, outermost_container

    container = container_of(source_key)
    document = Document(
        source_key=source_key,
        media_type=_detected_media_type(source_key, raw),
        size_bytes=len(raw),
        content_hash=content_hash(raw),
        metadata={}
        if container is None
        else {
            "container_key": container,
            "container_document_id": str(Document.node_id_for(container)),
            "container_file": outermost_container(source_key),
        },
    )
    assert document.id is not None
    previous = warehouse.get_document(document.id)
    raw_path = warehouse.put_raw(document.id, document.content_hash, raw)
    if previous is not None and (
        previous.content_hash,
        previous.media_type,
        previous.size_bytes,
    ) == (document.content_hash, document.media_type, document.size_bytes):
        return SnapshotResult(document=previous, raw_path=raw_path, changed=False)
    warehouse.put_document(document)
    changed = previous is None or previous.content_hash != document.content_hash
    return SnapshotResult(document=document, raw_path=raw_path, changed=changed)


def _read_derived(raw_root: Path, source_key: str) -> bytes:
    """A derived document's bytes, extracted from its container (``derived``)."""
    from agrag_pipeline.derived import read_derived
    from agrag_pipeline.parsing.errors import DocumentTooLargeError
    from agrag_pipeline.sources import FileTooLargeError, OutsideRootError, SourceKeyError

    try:
        return read_derived(raw_root, source_key)
    except (SourceKeyError, OutsideRootError) as exc:
        raise DocumentError(source_key, f"refused: {exc}") from None
    except FileTooLargeError as exc:
        raise DocumentTooLargeError(
            source_key, f"its container is {exc}; nothing was stored"
        ) from None
    except FileNotFoundError:
        raise DocumentError(source_key, "the file holding it no longer exists") from None
    except OSError as exc:
        raise DocumentError(source_key, f"the file holding it cannot be read: {exc}") from exc


#: Media types OCR may read (PDF pages, images): their parse depends on the OCR engine.
_READ_BY_OCR = frozenset({pdf.MEDIA_TYPE, *image.MEDIA_TYPES})


def build_sections(
    warehouse: Warehouse,
    document: Document,
    *,
    parse_version: str = PARSE_VERSION,
    ocr: OcrSettings | None = None,
    force: bool = False,
) -> SectionsResult:
    """Parse the snapshotted version and store its text layer, layout and sections.

    Sections already stored for this version by this parser version (and, for a PDF or an image,
    by this OCR engine, version and settings: ``ocr_engine``) are reused, not redone, unless
    ``force``.
    """
    assert document.id is not None
    wanted = {"content_hash": document.content_hash, "parse_version": parse_version}
    if ocr is not None and document.media_type in _READ_BY_OCR:
        from agrag_pipeline.fingerprints import canonical_json
        from agrag_pipeline.parsing.ocr import engine_fingerprint

        wanted["ocr_engine"] = canonical_json(engine_fingerprint(ocr)).decode("utf-8")
    if not force and _current(warehouse, "sections", document, wanted):
        try:
            parsed = load_parsed(warehouse, document)
        except DamagedFileError as exc:  # e.g. a missing text layer: parse again
            warehouse.report_repair(f"{exc}; the sections are rebuilt from the snapshot")
        else:
            return SectionsResult(
                document,
                parsed,
                warehouse.table_path("sections", document.id),
                warehouse.text_path(document.id, document.content_hash),
                reused=True,
            )
    raw = warehouse.get_raw(document.id, document.content_hash)  # verified against its hash
    parsing = None
    if ocr is not None:
        from agrag_pipeline.settings import ParsingSettings

        parsing = ParsingSettings(ocr=ocr)
    parsed = parse_document(raw, document.source_key, document.media_type, parsing=parsing)
    text_path = warehouse.put_text_layer(document.id, document.content_hash, parsed.text_layer)
    if parsed.layout:
        warehouse.put_layout(document.id, document.content_hash, layout_to_table(parsed.layout))
    text_sha256 = content_hash(parsed.text_layer.encode("utf-8", "surrogatepass"))
    metadata = {
        **_version_metadata(document),
        **wanted,
        "text_sha256": text_sha256,
        "layout_spans": str(len(parsed.layout)),  # so a layout gone missing is noticed
        **{PARSER_METADATA + key: str(v) for key, v in parsed.document.metadata.items()},
    }
    table = with_metadata(sections_to_table(parsed.sections), metadata)
    path = _write_step_table(
        warehouse,
        "sections",
        document,
        table,
        requires={DOCUMENT: {"content_hash": document.content_hash}},
    )
    return SectionsResult(document, parsed, path, text_path)


def build_chunks(
    warehouse: Warehouse,
    document: Document,
    chunker: StructureChunker,
    *,
    schema_fingerprint: str | None,
    extraction_fingerprint: str | None,
    force: bool = False,
) -> ChunksResult:
    """Chunk the stored sections of ``document`` and write its chunks table.

    Chunks already stored for this version with these fingerprints are reused unless ``force``.
    """
    assert document.id is not None
    sections_meta = warehouse.table_metadata("sections", document.id) or {}
    wanted = {
        "content_hash": document.content_hash,
        "chunker_hash": chunker.chunker_hash,
        "schema_fingerprint": schema_fingerprint or "",
        "extraction_fingerprint": extraction_fingerprint or "",
        "parse_version": sections_meta.get("parse_version", ""),
    }
    if not force and _current(warehouse, "chunks", document, wanted):
        try:
            chunks = load_chunks(warehouse, document)
        except DamagedFileError as exc:
            warehouse.report_repair(f"{exc}; the chunks are rebuilt from the sections")
        else:
            counts = [int(c.metadata.get("token_count", 0)) for c in chunks]
            path = warehouse.table_path("chunks", document.id)
            return ChunksResult(document, chunks, path, counts, reused=True)
    parsed = load_parsed(warehouse, document)
    chunks = chunker.chunk(
        parsed,
        schema_fingerprint=schema_fingerprint,
        extraction_fingerprint=extraction_fingerprint,
    )
    metadata = {
        **_version_metadata(document),
        "chunker": CHUNKER_NAME,
        "chunker_hash": chunker.chunker_hash,
        "schema_fingerprint": schema_fingerprint,
        "extraction_fingerprint": extraction_fingerprint,
        "parse_version": sections_meta.get("parse_version"),
    }
    sections_read = {
        "content_hash": document.content_hash,
        "parse_version": sections_meta.get("parse_version", ""),
    }
    path = _write_step_table(
        warehouse,
        "chunks",
        document,
        with_metadata(chunks_to_table(chunks, document.source_key), metadata),
        requires={"sections": sections_read},
    )
    counts = [int(c.metadata.get("token_count", 0)) for c in chunks]
    return ChunksResult(document, chunks, path, counts)


def build_embeddings(
    warehouse: Warehouse,
    document: Document,
    embedder: Embedder,
    cache: EmbeddingCache,
    *,
    settings_fingerprint: str | None = None,
    force: bool = False,
) -> EmbeddingsResult:
    """Embed each chunk's ``contextual_text`` (through the content-addressed cache).

    Embeddings already stored for these chunks with this model are reused unless ``force``.
    ``settings_fingerprint`` (of the embedding settings) is recorded so that staleness can be
    judged later without loading the model.
    """
    from agrag_pipeline.embedding.cache import embed_with_cache
    from agrag_pipeline.embedding.table import embeddings_table, model_name

    assert document.id is not None
    chunks_meta = warehouse.table_metadata("chunks", document.id) or {}
    wanted = {
        "content_hash": document.content_hash,
        "chunker_hash": chunks_meta.get("chunker_hash", ""),
        "embedding_fingerprint": embedder.fingerprint,
    }
    path = warehouse.table_path("embeddings", document.id)
    if not force and _current(warehouse, "embeddings", document, wanted):
        try:
            rows = warehouse.read_table("embeddings", document.id).num_rows
        except DamagedFileError as exc:
            warehouse.report_repair(f"{exc}; the embeddings are rebuilt from the chunks")
        else:
            return EmbeddingsResult(
                document, rows, path, embedder.fingerprint, 0, 0, 0, reused=True
            )
    # The chunker hash recorded is the one of the very table embedded (not of an earlier read).
    chunks, chunks_meta = load_chunks_table(warehouse, document)
    vectors, stats = embed_with_cache(embedder, [c.contextual_text for c in chunks], cache)
    table = embeddings_table(
        chunks,
        vectors,
        embedder.fingerprint,
        source_key=document.source_key,
        model=model_name(embedder),
    )
    metadata = {
        **_version_metadata(document),
        "chunker_hash": chunks_meta.get("chunker_hash"),
        "embedding_fingerprint": embedder.fingerprint,
        "embedding_settings": settings_fingerprint,
    }
    chunks_read = {
        "content_hash": document.content_hash,
        "chunker_hash": chunks_meta.get("chunker_hash", ""),
    }
    path = _write_step_table(
        warehouse,
        "embeddings",
        document,
        with_metadata(table, metadata),
        requires={"chunks": chunks_read},
    )
    return EmbeddingsResult(
        document=document,
        rows=table.num_rows,
        path=path,
        fingerprint=embedder.fingerprint,
        cache_hits=stats.hits,
        cache_misses=stats.misses,
        truncated=stats.truncated,
    )


def run_document(
    runtime: Runtime, source_key: str, *, embed: bool = True, force: bool = False
) -> ChunksResult:
    """Every step for one document, in one process: what ``agrag core`` and the benchmarks'
    Dagster-free baseline run (the Dagster assets run the same steps one asset at a time)."""
    warehouse = runtime.warehouse
    document = snapshot_document(warehouse, runtime.raw_root, source_key).document
    build_sections(warehouse, document, ocr=runtime.settings.parsing.ocr, force=force)
    chunks = build_chunks(
        warehouse,
        document,
        runtime.chunker,
        schema_fingerprint=runtime.schema_fingerprint,
        extraction_fingerprint=runtime.extraction_fingerprint,
        force=force,
    )
    if embed:
        build_embeddings(
            warehouse,
            document,
            runtime.embedder,
            runtime.embedding_cache,
            settings_fingerprint=runtime.embedding_settings_fingerprint,
            force=force,
        )
    if runtime.settings.llm is not None:
        client, cache = llm_parts(runtime.settings, runtime.embedding_cache_dir)
        try:
            build_extractions(warehouse, document, runtime.settings, client, cache, force=force)
        finally:
            if cache is not None:
                cache.close()
    return chunks


def _current(warehouse: Warehouse, table: str, document: Document, wanted: dict[str, str]) -> bool:
    """Whether the stored ``table`` is of ``wanted``; a damaged one (truncated, garbage) is
    not, so the step rebuilds it from its sound inputs."""
    assert document.id is not None
    try:
        meta = warehouse.table_metadata(table, document.id)
    except DamagedFileError as exc:
        warehouse.report_repair(f"{exc}; rebuilding it")
        return False
    return meta is not None and all(meta.get(k, "") == v for k, v in wanted.items())


def _write_step_table(
    warehouse: Warehouse,
    table: str,
    document: Document,
    data: Any,
    *,
    requires: dict[str, dict[str, str]],
) -> str:
    """Write a step's table only if the inputs it was built from are still the current ones.

    Why: two writers of two versions of one document (a ``materialize`` and a ``core``, or
    two runs racing an edit) must never leave embeddings of one version beside chunks of
    another. Each step records the metadata of the input it read (the document record's
    content hash; the sections' content hash and parse version; the chunks' content hash and
    chunker hash) and ``Warehouse.write_table`` reads them again under the document's lock
    just before its atomic rename: a replaced input makes the step fail (``StaleInputError``,
    nothing written), and the writer of the newer input rebuilds what follows it.
    """
    assert document.id is not None
    try:
        return warehouse.write_table(table, document.id, data, requires=requires)
    except InputChangedError as exc:
        raise StaleInputError(document.source_key, str(exc)) from exc


def _version_metadata(document: Document) -> dict[str, Any]:
    return {
        "document_id": str(document.id),
        "source_key": document.source_key,
        "content_hash": document.content_hash,
        "media_type": document.media_type,
    }


def _detected_media_type(source_key: str, raw: bytes) -> str:
    """The media type by content (``parsing.detect``); a file no parser reads is refused here,
    naming why (its extension, XML root, binary data), before its snapshot is stored."""
    from agrag_pipeline.parsing import detect
    from agrag_pipeline.parsing.errors import UnsupportedFormatError

    media_type = detect.detect_media_type(source_key, raw)
    if media_type is None:
        reason = detect.undetected_reason(source_key, raw) or "no parser reads it"
        raise UnsupportedFormatError(source_key, reason)
    return media_type


__all__: Sequence[str] = [
    "PARSER_METADATA",
    "ChunksResult",
    "EmbeddingsResult",
    "SectionsResult",
    "SnapshotResult",
    "StaleInputError",
    "build_chunks",
    "build_embeddings",
    "build_sections",
    "current_document",
    "load_chunks",
    "load_parsed",
    "require_stored",
    "run_document",
    "snapshot_document",
]
