"""JSON, NDJSON, YAML and TOML: every value written under its key path, records as sections.

Why a text layer of ``path: value`` lines: a reader (and an embedder) sees each value next to
the keys that say what it is (``user.address.city: Paris``), and search finds the value and its
key alike; the file's own punctuation (braces, quotes, indentation) carries no meaning a chunk
needs. The same writer serves generic XML (``xmldoc``), so every structured format reads alike.

Conventions (``write_document``):
- A path joins keys with ``.`` and list positions with ``[i]``; a key holding ``.``, ``[``,
  ``]``, a line break, edge blanks or nothing is quoted as written (``["a.b"]``). An XML
  attribute (key ``Attribute``) follows its element's path directly (``title@lang``); an XML
  element's own text (key ``OWN_TEXT``) sits under the element's path.
- Scalars read as written in JSON (``true``, ``false``, ``null``, numbers); strings verbatim
  (their line breaks kept, so ``text_layer`` holds every string value exactly); a list of
  scalars without line breaks is one line, ``tags: a, b, c``; an empty list or mapping reads
  ``key: []`` / ``key: {}``.
- Records: the values of a top-level list (and each NDJSON line) are level-1 sections; so are
  the items of a list of mappings under a top-level key (level 2, under the key's level-1
  heading). A record is titled by its first key-like field (``title``, ``name``, ``id``, …,
  see ``TITLE_KEYS``) holding a short scalar, else by its position (``[3]``; ``line 4`` for
  NDJSON). Inside a record, paths start at the record (``address.city: Paris``).
- A top-level mapping: its one-line entries come first (the level-0 section), then each entry
  holding a mapping or a list of more than scalars under a level-1 heading naming its key, its
  lines keeping their full path; a mapping there whose values are all mappings (docker-compose
  ``services``, OpenAPI ``paths``) is records too, each titled by its key. One-line entries go
  first because a section runs to the next heading: one written after a heading would read as
  part of that heading's section.
- YAML with several documents (``---``): each is a level-1 section "document N". A YAML
  template (Helm's ``{{ .Values.x }}``, Jinja's ``{% if %}``) that is not YAML as it stands is
  read as plain text, with a warning; JSON with comments or trailing commas (JSONC:
  ``tsconfig.json``) is read with them blanked, with a warning.

Budgets, each a ``DocumentTooLargeError`` naming the file and the limit: nesting deeper than
``MAX_DEPTH`` levels (the JSON reader's own recursion limit, reached by ``10^5`` brackets, says
the same), more than ``MAX_VALUES`` values written (YAML aliases count as often as they are
expanded, so an alias bomb is refused from its event stream before anything is built), a text
layer over ``MAX_TEXT_CHARS`` characters, YAML over ``MAX_YAML_BYTES``. Writing runs under the
parse's ``Deadline``.

Not JSON: a ``.txt`` file holding JSON stays plain text (``detect``): its author named it text,
its values are readable as they are, and a note that happens to open with ``{`` must not fail
as broken JSON.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import tomllib
from collections.abc import Callable, Iterable
from typing import Any

import yaml

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import Deadline, check_size, current_deadline
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, build_sections

JSON_MEDIA_TYPE = "application/json"
NDJSON_MEDIA_TYPE = "application/x-ndjson"
YAML_MEDIA_TYPE = "application/yaml"
TOML_MEDIA_TYPE = "application/toml"

#: Levels of nesting a document may have (a real one rarely passes 20).
MAX_DEPTH = 100
#: Values (scalars, empty lists and mappings) one document may write.
MAX_VALUES = 2_000_000
#: Characters the written text layer may hold.
MAX_TEXT_CHARS = 128 * 1024 * 1024
#: YAML is parsed by PyYAML (a few MB/s): larger files are refused rather than left to time out.
MAX_YAML_BYTES = 16 * 1024 * 1024
#: Fields that name a record, in order of preference (compared without case and a leading ``@``).
TITLE_KEYS = ("title", "name", "id", "key", "label", "subject", "headline", "sku", "slug", "uid")
#: A title longer than this is not a name: the record is titled by its position.
_MAX_TITLE_CHARS = 120

#: Template markup (Helm, Jinja, Ansible): such a file is YAML only once rendered.
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}")
_PLAIN_KEY = re.compile(r"[^.\[\]\r\n]+")
_SPACE = re.compile(r"\s+")


class StructuredWriter:
    """The text layer being written, with its heading marks, under the parse's budgets."""

    def __init__(self, source_key: str, deadline: Deadline | None = None) -> None:
        self.source_key = source_key
        self.deadline = deadline or current_deadline(source_key)
        self.parts: list[str] = []
        self.pos = 0
        self.values = 0
        self.headings: list[HeadingMark] = []
        self._block_open = False  # the next line continues the current block

    def _append(self, separator: str, text: str) -> int:
        if self.pos:
            self.parts.append(separator)
            self.pos += len(separator)
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        check_size(self.source_key, "characters of text", self.pos, MAX_TEXT_CHARS)
        return start

    def heading(self, text: str, level: int) -> None:
        clean = _SPACE.sub(" ", text).strip()
        if not clean:
            return
        start = self._append("\n\n", clean)
        self.headings.append(HeadingMark(start, self.pos, level, clean))
        self._block_open = False

    def value(self, path: str, text: str) -> None:
        """One value's line: ``path: text`` (the text alone at the top)."""
        self.values += 1
        check_size(self.source_key, "values", self.values, MAX_VALUES)
        self.deadline.tick(f"value {self.values:,}")
        line = f"{path}: {text}" if path else text
        self._append("\n" if self._block_open else "\n\n", line)
        self._block_open = True

    def text(self) -> str:
        return "".join(self.parts)


class _OwnText:
    """The key of an XML element's own text in its mapping (no JSON or YAML key is it)."""

    def __repr__(self) -> str:
        return "OWN_TEXT"


OWN_TEXT = _OwnText()


class Attribute(str):
    """An XML attribute's key (``@lang``): written right after its element's path."""

    __slots__ = ()


def join_path(path: str, key: object) -> str:
    """``path`` extended by a mapping key (see the module docstring for quoting)."""
    if key is OWN_TEXT:
        return path
    name = key if isinstance(key, str) else scalar_text(key)
    if isinstance(key, Attribute) and _PLAIN_KEY.fullmatch(name):
        return f"{path}{name}"
    if not _PLAIN_KEY.fullmatch(name) or name != name.strip():
        return f'{path}["{name}"]'  # the key as written (readable, not escaped)
    return f"{path}.{name}" if path else name


def scalar_text(value: object) -> str:
    """A scalar as it reads in JSON (strings verbatim)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):  # YAML !!binary
        return f"<{len(value):,} bytes of binary data>"
    return str(value)


def _is_container(value: object) -> bool:
    return isinstance(value, (dict, list))


def _is_scalar_list(value: list[Any]) -> bool:
    """A list written on one line: scalars only, no string with a line break."""
    return not any(_is_container(v) or (isinstance(v, str) and "\n" in v) for v in value)


def _is_one_line(value: object) -> bool:
    """A value ``write_value`` writes on one line (a scalar, an empty or scalar list, ``{}``),
    or an XML leaf element with attributes (its text and attributes, a line each)."""
    if isinstance(value, dict):
        return not value or (OWN_TEXT in value and not any(map(_is_container, value.values())))
    if isinstance(value, list):
        return _is_scalar_list(value)
    return True


def _too_deep(source_key: str) -> DocumentTooLargeError:
    return DocumentTooLargeError(source_key, f"nested deeper than the limit of {MAX_DEPTH} levels")


def write_value(writer: StructuredWriter, value: object, path: str, depth: int) -> None:
    """``value`` and everything under it, each scalar on its own line under its path."""
    if depth > MAX_DEPTH:
        raise _too_deep(writer.source_key)
    if isinstance(value, dict):
        if not value:
            writer.value(path, "{}")
        for key, item in value.items():
            write_value(writer, item, join_path(path, key), depth + 1)
    elif isinstance(value, list):
        if not value:
            writer.value(path, "[]")
        elif _is_scalar_list(value):
            writer.values += len(value) - 1
            writer.value(path, ", ".join(scalar_text(v) for v in value))
        else:
            for index, item in enumerate(value):
                write_value(writer, item, f"{path}[{index}]", depth + 1)
    else:
        writer.value(path, scalar_text(value))


def record_title(record: object) -> str | None:
    """The record's name: its first ``TITLE_KEYS`` field holding a short scalar, else None."""
    if not isinstance(record, dict):
        return None
    fields: dict[str, object] = {}
    for key, value in record.items():
        if isinstance(key, str):
            fields.setdefault(key.lstrip("@").lower(), value)
    for name in TITLE_KEYS:
        value = fields.get(name)
        if value is None or _is_container(value) or isinstance(value, bool):
            continue
        text = _SPACE.sub(" ", scalar_text(value)).strip()
        if text and len(text) <= _MAX_TITLE_CHARS:
            return text
    return None


def _is_record_list(value: object) -> bool:
    return isinstance(value, list) and any(isinstance(v, dict) for v in value)


def _is_keyed_records(value: object) -> bool:
    """A mapping of names to mappings (docker-compose ``services``, OpenAPI ``paths``)."""
    return (
        isinstance(value, dict)
        and bool(value)
        and all(isinstance(v, dict) and v and not _is_one_line(v) for v in value.values())
    )


def write_records(
    writer: StructuredWriter,
    records: Iterable[tuple[str, object]],
    level: int,
    depth: int,
) -> None:
    """Each record under its own heading (its title, else its ``label``); paths start at it."""
    for label, record in records:
        writer.heading(record_title(record) or label, level)
        write_value(writer, record, "", depth + 1)


def write_document(writer: StructuredWriter, value: object, *, depth: int = 0) -> None:
    """A whole parsed document: records and top-level keys as sections (module docstring)."""
    if _is_record_list(value):
        assert isinstance(value, list)
        write_records(writer, ((f"[{i}]", v) for i, v in enumerate(value)), 1, depth)
        return
    if not isinstance(value, dict):
        write_value(writer, value, "", depth)
        return
    for key, item in value.items():
        if _is_one_line(item):
            write_value(writer, item, join_path("", key), depth + 1)
    for key, item in value.items():
        if _is_one_line(item):
            continue
        path = join_path("", key)
        writer.heading(path, 1)
        if _is_record_list(item):
            assert isinstance(item, list)
            labels = ((f"{path}[{i}]", v) for i, v in enumerate(item))
            write_records(writer, labels, 2, depth + 1)
        elif _is_keyed_records(item):
            assert isinstance(item, dict)
            for name, record in item.items():  # titled by their key: it is their name
                writer.heading(join_path("", name), 2)
                write_value(writer, record, "", depth + 2)
        else:
            write_value(writer, item, path, depth + 1)


def finish(writer: StructuredWriter, document: Document, what: str) -> ParsedDocument:
    """The ``ParsedDocument`` of what ``writer`` wrote (``what`` names the empty case)."""
    text = writer.text()
    if not text.strip():
        raise EmptyDocumentError(document.source_key, f"the {what} holds no value")
    sections = build_sections(text, document, writer.headings, [])
    return ParsedDocument(document=document, text_layer=text, sections=sections)


def _decoded(raw: bytes, document: Document) -> str:
    decoded = decode(raw, document.source_key)
    document.metadata.update(decoded.metadata())
    if not decoded.text.strip():
        raise EmptyDocumentError(document.source_key, "the file holds only whitespace")
    return decoded.text


def _load_json(text: str, source_key: str, line: int | None = None) -> object:
    """One JSON value (``line``: the NDJSON line ``text`` is, for the error message)."""
    where = "" if line is None else f" on line {line:,}"
    try:
        return json.loads(text)
    except RecursionError:
        raise _too_deep(source_key) from None
    except json.JSONDecodeError as exc:
        at = f"column {exc.colno}" if line is not None else f"line {exc.lineno}, column {exc.colno}"
        cut = exc.pos >= len(text.rstrip())
        raise CorruptDocumentError(
            source_key,
            f"not valid JSON{where}: {exc.msg} at {at}"
            + (
                (" (the line ends early)" if line else " (the file ends early: truncated?)")
                if cut
                else ""
            ),
        ) from exc
    except ValueError as exc:  # an integer over Python's digit limit
        raise CorruptDocumentError(source_key, f"not readable as JSON{where}: {exc}") from exc


#: A JSON string, a ``//`` or ``/* */`` comment, or a comma before a closing bracket: strings
#: are matched first, so what looks like a comment inside one stays.
_JSONC_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[\]}])', re.DOTALL)


def _without_comments(text: str) -> str:
    """JSON with comments and trailing commas (JSONC: ``tsconfig.json``, VS Code settings) as
    JSON: each comment and trailing comma blanked (line breaks kept, so positions hold)."""

    def blank(match: re.Match[str]) -> str:
        token = match.group()
        return token if token.startswith('"') else re.sub(r"[^\n]", " ", token)

    return _JSONC_TOKEN.sub(blank, text)


def _load_jsonc(text: str, source_key: str, invalid: CorruptDocumentError) -> object:
    """``text`` read as JSONC. Raises ``invalid`` (the error of reading it as JSON) when it
    has no comment or trailing comma, else the error of reading it without them (at the same
    line and column: blanking keeps every position)."""
    stripped = _without_comments(text)
    if stripped == text:
        raise invalid
    return _load_json(stripped, source_key)


def parse_json(raw: bytes, document: Document) -> ParsedDocument:
    """A JSON file (one value); JSON with comments (JSONC) too, with a warning saying so."""
    key = document.source_key
    text = _decoded(raw, document)
    warnings: list[str] = []
    try:
        value = _load_json(text, key)
    except CorruptDocumentError as invalid:
        value = _load_jsonc(text, key, invalid)
        warnings.append("read as JSON with comments or trailing commas (JSONC)")
    writer = StructuredWriter(key)
    write_document(writer, value)
    parsed = finish(writer, document, "JSON")
    parsed.warnings.extend(warnings)
    return parsed


def parse_ndjson(raw: bytes, document: Document) -> ParsedDocument:
    """Newline-delimited JSON: one record per non-blank line, each its own section.

    A line that is not JSON is left out with a warning naming it (a log cut mid-line keeps its
    other records); a file none of whose lines is JSON, but which is one JSON value as a whole
    (pretty-printed under an ``.ndjson`` name), is read as JSON; else it is refused.
    """
    key = document.source_key
    text = _decoded(raw, document)
    records: list[tuple[str, object]] = []
    bad: list[tuple[int, str]] = []
    deadline = current_deadline(key)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        deadline.tick(f"line {number:,}")
        try:
            records.append((f"line {number}", _load_json(line, key, number)))
        except CorruptDocumentError as exc:
            bad.append((number, exc.problem))
    if not records:
        whole = _load_json(text, key)
        writer = StructuredWriter(key)
        write_document(writer, whole)
        return finish(writer, document, "JSON")
    writer = StructuredWriter(key)
    write_records(writer, records, 1, 0)
    parsed = finish(writer, document, "NDJSON")
    for _, problem in bad[:10]:
        parsed.warnings.append(f"left out: {problem}")
    if len(bad) > 10:
        parsed.warnings.append(f"left out {len(bad) - 10:,} more lines that are not JSON")
    return parsed


_YAML_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_yaml_events(text: str, source_key: str) -> None:
    """Refuse, from the flat event stream (no tree built, no tag constructed), YAML nested
    deeper than ``MAX_DEPTH`` or whose aliases expand to more than ``MAX_VALUES`` values."""
    deadline = current_deadline(source_key)
    expanded: dict[str, int] = {}  # anchor -> values its node expands to
    open_anchors: set[str] = set()
    stack: list[list[Any]] = []  # per open collection: [values so far, anchor]
    total = 0

    def add(count: int) -> None:
        nonlocal total
        if stack:
            stack[-1][0] += count
        else:
            total += count
        if (stack[-1][0] if stack else total) > MAX_VALUES:
            raise DocumentTooLargeError(
                source_key,
                f"its values, with every alias expanded, are over the limit of {MAX_VALUES:,} "
                "values (an alias bomb?)",
            )

    for events, event in enumerate(yaml.parse(text, Loader=_YAML_LOADER), start=1):
        if events % 1024 == 0:
            deadline.check(f"YAML event {events:,}")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(stack) >= MAX_DEPTH:
                raise _too_deep(source_key)
            stack.append([0, event.anchor])
            if event.anchor:
                open_anchors.add(event.anchor)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            count, anchor = stack.pop()
            count = max(count, 1)
            if anchor:
                expanded[anchor] = count
                open_anchors.discard(anchor)
            add(count)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor:
                expanded[event.anchor] = 1
            add(1)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                raise CorruptDocumentError(
                    source_key, f"the alias *{event.anchor} refers to a node that contains it"
                )
            add(expanded.get(event.anchor or "", 1))


def parse_yaml(raw: bytes, document: Document) -> ParsedDocument:
    """A YAML file, with PyYAML's safe loader (no tag runs code); several documents in one
    file are sections "document 1", "document 2"…"""
    key = document.source_key
    check_size(key, "bytes of YAML", len(raw), MAX_YAML_BYTES)
    text = _decoded(raw, document)
    try:
        _check_yaml_events(text, key)
        values = list(yaml.load_all(text, Loader=_YAML_LOADER))
    except RecursionError:
        raise _too_deep(key) from None
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own limit, past ours
            raise _too_deep(key) from exc
        if _TEMPLATE.search(text):
            # A Helm or Jinja template: YAML only once rendered; its text is what we have.
            parsed = ParsedDocument(
                document=document, text_layer=text, sections=build_sections(text, document, [], [])
            )
            parsed.warnings.append(
                f"a template ({{{{ … }}}} or {{% … %}}), not YAML until rendered "
                f"({_one_line(exc)}): read as plain text"
            )
            return parsed
        raise CorruptDocumentError(key, f"not valid YAML: {_one_line(exc)}") from exc
    values = [v for v in values if v is not None]
    writer = StructuredWriter(key)
    if len(values) == 1:
        write_document(writer, values[0])
    else:
        write_records(writer, ((f"document {i}", v) for i, v in enumerate(values, 1)), 1, 0)
    return finish(writer, document, "YAML")


def parse_toml(raw: bytes, document: Document) -> ParsedDocument:
    """A TOML file (``pyproject.toml``, ``Cargo.toml``), with the standard library's reader."""
    key = document.source_key
    text = _decoded(raw, document)
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CorruptDocumentError(key, f"not valid TOML: {exc}") from exc
    except RecursionError:
        raise _too_deep(key) from None
    writer = StructuredWriter(key)
    write_document(writer, value)
    return finish(writer, document, "TOML")


def _one_line(exc: BaseException) -> str:
    return _SPACE.sub(" ", str(exc)).strip()


#: Media type -> parser, for ``parsing.PARSERS``.
PARSERS: dict[str, Callable[[bytes, Document], ParsedDocument]] = {
    JSON_MEDIA_TYPE: parse_json,
    NDJSON_MEDIA_TYPE: parse_ndjson,
    YAML_MEDIA_TYPE: parse_yaml,
    TOML_MEDIA_TYPE: parse_toml,
}

__all__ = [
    "JSON_MEDIA_TYPE",
    "MAX_DEPTH",
    "MAX_TEXT_CHARS",
    "MAX_VALUES",
    "MAX_YAML_BYTES",
    "NDJSON_MEDIA_TYPE",
    "OWN_TEXT",
    "PARSERS",
    "TITLE_KEYS",
    "TOML_MEDIA_TYPE",
    "YAML_MEDIA_TYPE",
    "Attribute",
    "StructuredWriter",
    "finish",
    "join_path",
    "parse_json",
    "parse_ndjson",
    "parse_toml",
    "parse_yaml",
    "record_title",
    "scalar_text",
    "write_document",
    "write_records",
    "write_value",
]
