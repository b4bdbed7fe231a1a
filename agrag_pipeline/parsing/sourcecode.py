"""Source code files: the file's text as it is, its language in metadata, definitions as sections.

- The text layer is the decoded source itself (like plain text): search and chunks quote the
  code exactly. Its language (by extension, ``LANGUAGES``) is recorded as ``code_language``
  (``language`` is the document's natural language, measured by ``quality``).
- Python: definitions from the standard library's ``ast`` (a real parser, no dependency): each
  top-level ``class``/``def`` opens a level-1 section; a class's own definitions are sections
  one level deeper (to level 6). Functions nested in functions stay in their function's text.
  Module code between definitions joins the section above it (a section runs to the next
  heading; so in every language). Source ``ast`` cannot read (Python 2, a syntax error,
  nesting past its limits) is one section, with a warning saying why.
- JavaScript, TypeScript, Java, Go, Rust, C, C++, Ruby and shell: definitions from tree-sitter
  (MIT; one small wheel per grammar, ~2.3 MB in all with the core, C code that never raises on
  broken source: it marks the broken part and parses the rest): functions, classes, methods,
  interfaces, structs, impls, modules, namespaces (``_grammars`` names the node types), a
  container's members one level deeper.
- A definition's section starts at its decorators or attributes (``@dataclass``,
  ``#[cfg(test)]``, an ``export`` or ``template<...>`` before it), and its heading is its head as
  written, up to the line where its body opens (``@dataclass class Store``, ``def get(self,
  key)``, ``impl fmt::Display for Key<'k>``), whitespace collapsed. Why the head and not just a
  name: the chunker leaves a section's heading lines out of a chunk's text (its label says the
  heading), so a heading of only ``def get`` would lose the parameters from the chunk.
- A definition is a section only where it starts its line (only blanks before it): a minified
  file's hundred thousand functions on one line stay one section, as do one-liners.
- Other languages (Kotlin, C#, Swift, PHP, SQL, ...): the whole file is one section; chunking
  cuts it by size. Files over ``MAX_DEFINITION_BYTES`` are not searched for definitions.
- A file whose text is whitespace only: ``EmptyDocumentError``. Minified one-line files read as
  one section (the chunker cuts them by size); ``documents.exclude`` leaves ``*.min.js`` out.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from agrag_pipeline.file_kinds import CODE_LANGUAGES
from agrag_pipeline.models import Document
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, build_sections

#: Extension (lower case, with the dot) -> language name.
LANGUAGES = CODE_LANGUAGES
#: Media type of each language's source files.
MEDIA_TYPES: dict[str, str] = {lang: f"text/x-{lang}" for lang in sorted(set(LANGUAGES.values()))}
_LANGUAGE_OF_MEDIA_TYPE = {media: lang for lang, media in MEDIA_TYPES.items()}
#: Files larger than this are not parsed for definitions (``ast`` takes ~20x the memory).
MAX_DEFINITION_BYTES = 4 * 1024 * 1024
#: A definition's heading (its head as written) is cut here: a label rides on every chunk.
MAX_HEADING_CHARS = 300
#: Deepest section level (``Section.level``).
_MAX_LEVEL = 6

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def media_type_for_extension(extension: str) -> str | None:
    """The media type of source files with ``extension`` (None: not source code)."""
    language = LANGUAGES.get(extension.lower())
    return MEDIA_TYPES[language] if language else None


def _line_starts(text: str) -> list[int]:
    """Where each line starts (line 1 at index 0), by the line breaks Python's tokenizer sees."""
    return [0, *(m.end() for m in _LINE_BREAK.finditer(text))]


def _line_end(text: str, start: int) -> int:
    match = _LINE_BREAK.search(text, start)
    end = match.start() if match else len(text)
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def python_definitions(text: str) -> list[HeadingMark]:
    """Heading marks of the module's classes and functions (see the module docstring).

    Raises:
        SyntaxError, ValueError, RecursionError, MemoryError: ``ast`` cannot read the source.
    """
    tree = ast.parse(text)
    starts = _line_starts(text)
    marks: list[HeadingMark] = []

    def visit(body: list[ast.stmt], level: int) -> None:
        for node in body:
            if not isinstance(node, _Definition):
                continue
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            line_start = starts[first - 1]
            start = line_start + (len(text[line_start:]) - len(text[line_start:].lstrip(" \t")))
            # The head runs to the signature's last line (the line before the body's first).
            last = max(node.lineno, node.body[0].lineno - 1) if node.body else node.lineno
            marks.append(_head_mark(text, start, starts[last - 1], level))
            if isinstance(node, ast.ClassDef) and level < _MAX_LEVEL:
                visit(node.body, level + 1)

    visit(tree.body, 1)
    return marks


def _head_mark(text: str, start: int, last_line: int, level: int) -> HeadingMark:
    """The heading mark of a definition whose head (decorators, signature) runs from ``start``
    to the end of the line at ``last_line``: its heading is that text, whitespace collapsed,
    a closing ``{`` or ``:`` dropped, cut at ``MAX_HEADING_CHARS``."""
    end = max(_line_end(text, last_line), start)
    heading = " ".join(text[start:end].split())
    if len(heading) > MAX_HEADING_CHARS:
        heading = heading[:MAX_HEADING_CHARS].rstrip()
    return HeadingMark(start, end, level, heading.rstrip(" {:") or heading)


def _starts_line(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return not text[line_start:at].strip()


@dataclass(frozen=True)
class _Grammar:
    """What in a tree-sitter grammar is a definition, and where members are found."""

    #: The grammar's ``Language`` capsule, loaded on first use.
    language: Callable[[], object]
    #: Node types that are definitions (each a section, headed by its head as written).
    definitions: AbstractSet[str]
    #: Definitions whose members are sections one level deeper (classes, impls, modules).
    containers: AbstractSet[str] = frozenset()
    #: Nodes walked through at the same level (export wrappers, class bodies, ``#ifdef``).
    through: AbstractSet[str] = frozenset()


_JS_DEFINITIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "class_declaration"}
    | {"method_definition"}
)
#: Nodes before a definition that belong to it (``@decorator``, Rust's ``#[attribute]``).
_PREFIXES = frozenset({"decorator", "attribute_item"})
#: Through-nodes that wrap one definition: its section starts where they do.
_WRAPPERS = frozenset({"export_statement", "template_declaration"})
_PREPROCESSOR = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"})


def _grammars() -> dict[str, _Grammar]:
    import tree_sitter_bash
    import tree_sitter_c
    import tree_sitter_cpp
    import tree_sitter_go
    import tree_sitter_java
    import tree_sitter_javascript
    import tree_sitter_ruby
    import tree_sitter_rust
    import tree_sitter_typescript

    typescript = _JS_DEFINITIONS | {
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "type_alias_declaration",
        "internal_module",
    }
    ts_containers = frozenset(
        {"class_declaration", "abstract_class_declaration", "internal_module"}
    )
    ts_through = frozenset({"export_statement", "class_body", "statement_block"})
    return {
        "javascript": _Grammar(
            tree_sitter_javascript.language,
            _JS_DEFINITIONS,
            frozenset({"class_declaration"}),
            frozenset({"export_statement", "class_body"}),
        ),
        "typescript": _Grammar(
            tree_sitter_typescript.language_typescript, typescript, ts_containers, ts_through
        ),
        "tsx": _Grammar(tree_sitter_typescript.language_tsx, typescript, ts_containers, ts_through),
        "java": _Grammar(
            tree_sitter_java.language,
            frozenset(
                {
                    "class_declaration",
                    "interface_declaration",
                    "enum_declaration",
                    "record_declaration",
                    "annotation_type_declaration",
                    "method_declaration",
                    "constructor_declaration",
                }
            ),
            frozenset(
                {"class_declaration", "interface_declaration", "enum_declaration"}
                | {"record_declaration"}
            ),
            frozenset({"class_body", "interface_body", "enum_body", "enum_body_declarations"}),
        ),
        "go": _Grammar(
            tree_sitter_go.language,
            {
                "function_declaration",
                "method_declaration",
                "type_declaration",
            },
        ),
        "rust": _Grammar(
            tree_sitter_rust.language,
            {
                "function_item",
                "struct_item",
                "enum_item",
                "union_item",
                "trait_item",
                "impl_item",
                "mod_item",
                "macro_definition",
            },
            frozenset({"impl_item", "trait_item", "mod_item"}),
            frozenset({"declaration_list"}),
        ),
        "c": _Grammar(
            tree_sitter_c.language,
            {"function_definition"},
            through=_PREPROCESSOR | {"linkage_specification", "declaration_list"},
        ),
        "cpp": _Grammar(
            tree_sitter_cpp.language,
            {
                "function_definition",
                "class_specifier",
                "struct_specifier",
                "namespace_definition",
            },
            frozenset({"class_specifier", "struct_specifier", "namespace_definition"}),
            _PREPROCESSOR
            | {
                "declaration_list",
                "field_declaration_list",
                "template_declaration",
                "linkage_specification",
            },
        ),
        "ruby": _Grammar(
            tree_sitter_ruby.language,
            {
                "method",
                "singleton_method",
                "class",
                "module",
            },
            frozenset({"class", "module"}),
            frozenset({"body_statement"}),
        ),
        "shell": _Grammar(tree_sitter_bash.language, {"function_definition"}),
    }


_GRAMMARS: dict[str, _Grammar] = {}


def _grammar(language: str) -> _Grammar | None:
    if not _GRAMMARS:
        _GRAMMARS.update(_grammars())
    return _GRAMMARS.get(language)


def _node_name(node: Any) -> str | None:
    """A definition's name: its ``name`` field, a C declarator's identifier, an impl's types,
    a Go type spec's name."""
    name = node.child_by_field_name("name")
    if name is None and node.type == "impl_item":
        kind, trait = node.child_by_field_name("type"), node.child_by_field_name("trait")
        if kind is not None:
            return (
                f"{trait.text.decode()} for {kind.text.decode()}" if trait else kind.text.decode()
            )
    if name is None:
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.child_by_field_name("declarator") is not None:
            declarator = declarator.child_by_field_name("declarator")
        name = declarator
    if name is None:
        for child in node.named_children:
            name = child.child_by_field_name("name")
            if name is not None:
                break
    if name is None or name.text is None:
        return None
    return " ".join(name.text.decode("utf-8", "replace").split())[:120] or None


def _char_offsets(data: bytes, offsets: set[int]) -> dict[int, int]:
    """String index of each UTF-8 byte offset into ``data`` (one pass over the sorted offsets)."""
    mapping: dict[int, int] = {}
    byte = char = 0
    for offset in sorted(offsets):
        char += len(data[byte:offset].decode("utf-8", "replace"))
        byte = offset
        mapping[offset] = char
    return mapping


def tree_sitter_definitions(text: str, language: str) -> list[HeadingMark]:
    """Heading marks of ``text``'s definitions by its tree-sitter grammar (module docstring)."""
    from tree_sitter import Language, Parser

    grammar = _grammar(language)
    if grammar is None:
        return []
    data = text.encode("utf-8")
    tree = Parser(Language(grammar.language())).parse(data)
    found: list[tuple[int, int, int, int]] = []  # byte start, body start, name start, level

    def walk(node: Any, level: int, anchor: int | None = None) -> None:
        """``anchor``: where the wrapper around ``node``'s definition starts (``export``)."""
        prefix: int | None = None  # where the decorators or attributes before a child start
        for child in node.named_children:
            if child.type in _PREFIXES:
                prefix = child.start_byte if prefix is None else prefix
                continue
            start = min(at for at in (anchor, prefix, child.start_byte) if at is not None)
            prefix = None
            if child.type not in grammar.definitions:
                if child.type in grammar.through:
                    walk(child, level, start if child.type in _WRAPPERS else None)
                continue
            if child.type in ("class_specifier", "struct_specifier") and (
                child.child_by_field_name("body") is None
            ):
                continue  # a forward declaration
            if _node_name(child) is None:
                continue
            # The head runs to the line where the body opens, or the line before when the
            # body starts a line of its own (Ruby, a C brace on its own line); at least to the
            # name's line.
            body = child.child_by_field_name("body")
            name = child.child_by_field_name("name")
            head = body.start_byte if body is not None else child.start_byte
            at_name = name.start_byte if name is not None else start
            found.append((start, max(start, head), max(start, at_name), level))
            if child.type in grammar.containers and level < _MAX_LEVEL:
                walk(child, level + 1)

    walk(tree.root_node, 1)
    if not found:
        return []
    if text.isascii():
        char: Callable[[int], int] = int
    else:
        offsets = {o for s, b, n, _ in found for o in (s, b, n)}
        char = _char_offsets(data, offsets).__getitem__
    marks: list[HeadingMark] = []
    for byte_start, byte_body, byte_name, level in found:
        start, body = char(byte_start), char(byte_body)
        if not _starts_line(text, start) or (marks and start < marks[-1].end):
            continue
        if body > start and _starts_line(text, body):
            body = text.rfind("\n", start, body)  # the line before the body's
        marks.append(_head_mark(text, start, max(body, char(byte_name), start), level))
    return marks


_TREE_SITTER_LANGUAGES = (
    "javascript",
    "typescript",
    "tsx",
    "java",
    "go",
    "rust",
    "c",
    "cpp",
    "ruby",
    "shell",
)

#: Language -> its definitions as heading marks (languages not here: one section).
DEFINITIONS: dict[str, Callable[[str], list[HeadingMark]]] = {
    "python": python_definitions,
    **{
        language: functools.partial(tree_sitter_definitions, language=language)
        for language in _TREE_SITTER_LANGUAGES
    },
}


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """A source file: its text, its language, its definitions as sections."""
    key = document.source_key
    decoded = decode(raw, key)
    document.metadata.update(decoded.metadata())
    text = decoded.text
    if not text.strip():
        raise EmptyDocumentError(key, "the file holds only whitespace")
    language = _LANGUAGE_OF_MEDIA_TYPE.get(document.media_type, "")
    if language:
        document.metadata["code_language"] = language
    warnings: list[str] = []
    headings: list[HeadingMark] = []
    # A .tsx file is TypeScript with JSX, which has a grammar of its own.
    grammar = "tsx" if key.lower().endswith(".tsx") else language
    find = DEFINITIONS.get(grammar)
    if find is not None:
        if len(raw) > MAX_DEFINITION_BYTES:
            warnings.append(
                f"definitions not looked for: {len(raw):,} bytes is over {MAX_DEFINITION_BYTES:,}"
            )
        else:
            try:
                headings = find(text)
            except Exception as exc:  # the text is read; only its definitions are missing
                where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
                warnings.append(
                    f"not read as {language}{where}: {type(exc).__name__}: {exc}; "
                    "the file is one section"
                )
    sections = build_sections(text, document, headings, [])
    return ParsedDocument(document=document, text_layer=text, sections=sections, warnings=warnings)


__all__ = [
    "DEFINITIONS",
    "LANGUAGES",
    "MAX_DEFINITION_BYTES",
    "MEDIA_TYPES",
    "media_type_for_extension",
    "parse",
    "python_definitions",
    "tree_sitter_definitions",
]
