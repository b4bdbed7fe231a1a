"""Pipeline settings: one YAML file (``data/pipeline.yaml``), validated with pydantic.

A wrong setting is a ``SettingsError`` that names the file and the field, e.g.
``data/pipeline.yaml: chunker.max_tokens: Input should be greater than or equal to 8``.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.embedding.settings import EmbeddingSettings
from agrag_pipeline.extraction.settings import LlmSettings
from agrag_pipeline.file_kinds import STRUCTURED_KINDS, StructuredKind, kind_of, kind_words
from agrag_pipeline.fingerprints import fingerprint, settings_dict
from agrag_pipeline.sinks.bm25_context import IndexSettings
from agrag_pipeline.sinks.graph.settings import GraphSettings

#: The settings file the project ships and the Dagster definitions load by default.
DEFAULT_SETTINGS_PATH = Path(__file__).resolve().parent.parent / "data" / "pipeline.yaml"

PropertyType = Literal["string", "integer", "float", "boolean", "date", "datetime", "list[string]"]


class SettingsError(ValueError):
    """A settings file that cannot be read or does not validate; ``str()`` is one line."""


class SettingsFileError(SettingsError):
    """The settings file cannot be read at all (missing, a folder, no permission)."""


class InvalidSettingsError(SettingsError):
    """The settings file was read but is not valid: not UTF-8, not YAML, not a mapping, or a
    wrong key, type or value."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PropertySpec(_Frozen):
    name: str = Field(min_length=1)
    type: PropertyType = "string"
    required: bool = False
    description: str = ""


def _unique_property_names(properties: list[PropertySpec]) -> list[PropertySpec]:
    # A property named twice would be hashed in one fingerprint and dropped from the other.
    names = [p.name for p in properties]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"properties defined twice: {duplicates}")
    return properties


class EntityType(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    properties: list[PropertySpec] = Field(default_factory=list)

    _unique = field_validator("properties")(_unique_property_names)


class RelationType(_Frozen):
    name: str = Field(min_length=1)
    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    description: str = ""
    properties: list[PropertySpec] = Field(default_factory=list)

    _unique = field_validator("properties")(_unique_property_names)


class GraphSchema(_Frozen):
    """The entity and relation types the graph-RAG extraction looks for."""

    entity_types: list[EntityType] = Field(default_factory=list)
    relation_types: list[RelationType] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names_resolve(self) -> GraphSchema:
        names = [e.name for e in self.entity_types]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"entity types defined twice: {duplicates}")
        keys = [(r.name, r.source, r.target) for r in self.relation_types]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise ValueError(f"relation types defined twice (name, source, target): {twice}")
        for rel in self.relation_types:
            for end in (rel.source, rel.target):
                if end not in names:
                    raise ValueError(f"relation {rel.name!r} names unknown entity type {end!r}")
        return self


class ExtractionSettings(_Frozen):
    """How entities and relations are extracted from chunks (recorded on every chunk)."""

    model: str = Field(min_length=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_gleanings: int = Field(default=1, ge=0)
    prompt_version: str = "1"
    #: Completion tokens one answer may use (an answer cut there is retried, then failed). It
    #: also bounds the answer's lists: at most ``max_completion_tokens // 128`` entities and as
    #: many relations (25 at most), so even a looping model's answer ends within it.
    max_completion_tokens: int = Field(default=1024, ge=16)
    #: Sampling seed sent with every request (servers that honour it answer reproducibly).
    seed: int = 0


# The schema's fingerprints live beside the schema (``fingerprints`` only hashes; it knows no
# settings types), so neither module imports the other.


def schema_fingerprint(schema: GraphSchema) -> str:
    """Structure hash of a graph schema: type names, properties and their types, relations.

    Descriptions are excluded, so rewording one does not change it. Order of types and
    properties is irrelevant (they are sorted by name).
    """
    entities = [
        {"name": e.name, "properties": _structure(e.properties)}
        for e in sorted(schema.entity_types, key=lambda e: e.name)
    ]
    relations = [
        {
            "name": r.name,
            "source": r.source,
            "target": r.target,
            "properties": _structure(r.properties),
        }
        for r in sorted(schema.relation_types, key=_relation_key)
    ]
    return fingerprint({"entity_types": entities, "relation_types": relations})


def extraction_fingerprint(schema: GraphSchema, extraction: ExtractionSettings) -> str:
    """Hash of the schema's descriptions, the extraction settings and the model name."""
    # Relations are keyed by (name, source, target) as a list, not a joined string: a string
    # such as "A-B->C" is ambiguous once type names may contain "-" or ">".
    descriptions = {
        "entity_types": [
            {
                "name": e.name,
                "description": e.description,
                "properties": _descriptions(e.properties),
            }
            for e in sorted(schema.entity_types, key=lambda e: e.name)
        ],
        "relation_types": [
            {
                "key": list(_relation_key(r)),
                "description": r.description,
                "properties": _descriptions(r.properties),
            }
            for r in sorted(schema.relation_types, key=_relation_key)
        ],
    }
    return fingerprint(
        {
            "descriptions": descriptions,
            "settings": settings_dict(extraction),
            "model": extraction.model,
        }
    )


def _relation_key(relation: RelationType) -> tuple[str, str, str]:
    return (relation.name, relation.source, relation.target)


def _structure(properties: list[PropertySpec]) -> list[dict[str, Any]]:
    return [
        {"name": p.name, "type": p.type, "required": p.required}
        for p in sorted(properties, key=lambda p: p.name)
    ]


def _descriptions(properties: list[PropertySpec]) -> dict[str, str]:
    return {p.name: p.description for p in properties}


class OcrSettings(_Frozen):
    """OCR of PDF pages without a usable text layer (Tesseract); all of it is fingerprinted."""

    enabled: bool = True
    #: Tesseract language codes (``eng``, ``deu``, ``ara``...): each needs its traineddata file.
    languages: list[str] = Field(default_factory=lambda: ["eng"], min_length=1)
    #: Render resolution: 200 dpi reads body text fully; 300 helps only very small print.
    dpi: int = Field(default=200, ge=72, le=600)
    #: Words Tesseract is less sure of than this (0-100) are dropped as noise.
    min_confidence: float = Field(default=30.0, ge=0.0, le=100.0)
    #: Detect a page turned by 90/180/270 degrees (when reading it as it is is not clearly right)
    #: and turn it back before reading it.
    detect_orientation: bool = True
    #: Read a page in the language of its script and words where Tesseract has it installed:
    #: a page in a script none of ``languages`` reads (Arabic, Han, Cyrillic: seen by orientation
    #: detection) is read with that script's language, a Latin page whose words are clearly of
    #: another installed language (Polish read as English) with that one first. False: only
    #: ``languages``.
    auto_languages: bool = True
    #: Seconds one page may take (orientation, recognition and retries together).
    page_timeout_s: float = Field(default=60.0, gt=0.0)
    #: A PDF or image in which OCR found no words at all (a photo, a diagram, a blank page) is a
    #: failure when true; by default it succeeds with no chunks and a warning saying so, since a
    #: folder of documents holds pictures. Text that could not be read (OCR off or unavailable)
    #: is a failure either way.
    require_text: bool = False

    @field_validator("languages")
    @classmethod
    def _language_codes(cls, languages: list[str]) -> list[str]:
        for code in languages:
            if not code or not all(c.isalnum() or c == "_" for c in code):
                raise ValueError(f"not a Tesseract language code: {code!r} (eng, deu, chi_sim)")
        if len(set(languages)) != len(languages):
            raise ValueError(f"languages named twice: {languages}")
        return languages


class QualitySettings(_Frozen):
    """The reading-quality score (``parsing.quality``): only its check reads this, so changing
    it re-parses nothing."""

    #: The sections check ``reading_quality`` warns (never fails) for a document scoring below
    #: this. Clean corpus documents score 0.92 or more; each defect of issue 20 scores under it
    #: (BENCHMARKS.md, "Reading quality").
    warn_below: float = Field(default=0.8, ge=0.0, le=1.0)


class ParsingSettings(_Frozen):
    """How documents are parsed into text and sections."""

    ocr: OcrSettings = Field(default_factory=OcrSettings)
    quality: QualitySettings = Field(default_factory=QualitySettings)


#: What is not a document by default: licences, VCS and dependency folders, lock files, Office
#: owner files (``~$report.docx``), editor backups and OS droppings. Case-sensitive, like paths.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    "LICENSE",
    "LICENSE.*",
    "LICENCE",
    "LICENCE.*",
    "COPYING",
    "COPYING.*",
    "**/.git/**",
    "**/.hg/**",
    "**/.svn/**",
    "**/node_modules/**",
    "**/__pycache__/**",
    "*.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "go.sum",
    # Built, not written: minified scripts and styles, source maps, installed Python packages.
    "*.min.js",
    "*.min.css",
    "*.map",
    "**/site-packages/**",
    "~$*",
    "*~",
    "*.tmp",
    "*.swp",
    "Thumbs.db",
    "desktop.ini",
)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for a glob over source keys (POSIX paths relative to the raw root).

    ``*`` and ``?`` stay inside one path component, ``[...]`` is a character class, ``**``
    spans components (``**/`` also matches no folder at all). A pattern without ``/`` matches
    the file name in any folder (``*.lock`` matches ``a/b/yarn.lock``), as in ``.gitignore``.
    """
    body = pattern if "/" in pattern else f"**/{pattern}"
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            close = body.find("]", i + 2 if body[i + 1 : i + 2] in ("!", "]") else i + 1)
            if close < 0:
                out.append(re.escape(ch))
                i += 1
                continue
            inner = body[i + 1 : close]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


class DocumentsSettings(_Frozen):
    """Which files under the raw root count as documents (glob patterns over source keys).

    A file is a document when some ``include`` pattern matches its key and no ``exclude``
    pattern does. Hidden files (a component starting with ``.``) are skipped by the scan anyway.

    ``structured_kinds`` says which kinds of structured text and code count as documents
    (``file_kinds.KIND_EXTENSIONS``: ``json`` .json/.ndjson/.jsonl, ``yaml``, ``toml``, ``xml``,
    ``notebook`` .ipynb, ``code`` source files by extension). All by default: a team's
    configuration, data exports, notebooks and code are what it searches for; what is generated
    rather than written (lock files, minified files, ``node_modules``, VCS folders) is left out
    by ``exclude``. A file of a kind not listed is skipped with a reason naming this setting.

    ``skip_saved_page_folders``: the folder a browser or Office writes beside a web page saved
    "complete" (``report_files/`` beside ``report.htm``: its scripts, style sheets, pictures) is
    skipped once, naming its page (``source_keys.saved_page_of``); false reads it as any folder
    (a folder of one's own that happens to be named so).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, ignored_types=(cached_property,))

    include: list[str] = Field(default_factory=lambda: ["**"])
    exclude: list[str] = Field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    structured_kinds: list[StructuredKind] = Field(
        default_factory=lambda: list(STRUCTURED_KINDS)  # type: ignore[arg-type]
    )
    skip_saved_page_folders: bool = True

    @field_validator("include", "exclude")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not pattern or pattern.startswith("/"):
                raise ValueError(f"{pattern!r}: a pattern is a non-empty relative glob")
            glob_regex(pattern)
        return patterns

    @cached_property
    def _compiled(self) -> tuple[list[re.Pattern[str]], list[tuple[str, re.Pattern[str]]]]:
        return (
            [glob_regex(p) for p in self.include],
            [(p, glob_regex(p)) for p in self.exclude],
        )

    def skip_reason(self, source_key: str) -> str | None:
        """Why ``source_key`` is not a document under these settings, or None when it is one."""
        include, exclude = self._compiled
        if not any(r.match(source_key) for r in include):
            return f"matches no documents.include pattern ({', '.join(self.include)})"
        for pattern, regex in exclude:
            if regex.match(source_key):
                return f"excluded by the documents.exclude pattern {pattern!r}"
        kind = kind_of(source_key)
        if kind is not None and kind not in self.structured_kinds:
            return f"{kind_words(kind)}, and {kind!r} is not in documents.structured_kinds"
        return None


class PipelineSettings(_Frozen):
    parsing: ParsingSettings = Field(default_factory=ParsingSettings)
    chunker: ChunkerSettings = Field(default_factory=ChunkerSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    graph_schema: GraphSchema = Field(default_factory=GraphSchema)
    extraction: ExtractionSettings
    documents: DocumentsSettings = Field(default_factory=DocumentsSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    #: The search index (what BM25 reads); recorded by the index, which a change rebuilds.
    index: IndexSettings = Field(default_factory=IndexSettings)
    #: The chat endpoint extraction calls; none (the default): extraction is not configured.
    llm: LlmSettings | None = None

    @property
    def schema_fingerprint(self) -> str:
        return schema_fingerprint(self.graph_schema)

    @property
    def extraction_fingerprint(self) -> str:
        return extraction_fingerprint(self.graph_schema, self.extraction)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key written twice in one mapping.

    Plain ``yaml.safe_load`` keeps the last value silently, so a setting could be overridden by
    a forgotten duplicate lower down the file.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_settings(path: str | Path = DEFAULT_SETTINGS_PATH) -> PipelineSettings:
    """Read and validate a settings file; every problem names the file and the field, in one
    line (``SettingsFileError`` when it cannot be read, else ``InvalidSettingsError``)."""
    path = Path(path)
    try:
        # Read from the open file, so the marks in a YAML error name it ("in <path>, line 8").
        with path.open(encoding="utf-8") as stream:
            raw = yaml.load(stream, Loader=_UniqueKeyLoader)
    except OSError as exc:
        raise SettingsFileError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise InvalidSettingsError(f"{path}: is not valid YAML: {_yaml_problem(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidSettingsError(f"{path}: is not UTF-8 text: {exc}") from exc
    if raw is None:
        raise InvalidSettingsError(f"{path}: is empty (it must be a mapping of sections)")
    if not isinstance(raw, dict):
        raise InvalidSettingsError(
            f"{path}: must be a mapping of sections, got {type(raw).__name__}"
        )
    try:
        return PipelineSettings.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {_one_line(err['msg'])}"
            for err in exc.errors()
        )
        raise InvalidSettingsError(f"{path}: {problems}") from exc


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where and what, in one line ("line 2, column 1: expected the node content, ...")."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return where + _one_line(exc.problem)
    return _one_line(str(exc))
