"""Source code files: the file's text as it is, its language in metadata, definitions as sections.

- The text layer is the decoded source itself (like plain text): search and chunks quote the
  code exactly. Its language (by extension, ``LANGUAGES``) is recorded as ``code_language``
  (``language`` is the document's natural language, measured by ``quality``).
- Python: definitions from the standard library's ``ast`` (a real parser, no dependency): each
  top-level ``class``/``def`` opens a level-1 section headed ``class Name`` / ``def name`` (its
  span starts at its first decorator and the heading is its ``def`` line); a class's own
  definitions are sections one level deeper (to level 6). Functions nested in functions stay
  in their function's text. Module code between definitions joins the section above it (a
  section runs to the next heading). Source ``ast`` cannot read (Python 2, a syntax error,
  nesting past its limits) or over ``MAX_AST_BYTES`` is one section, with a warning saying why.
- Other languages: the whole file is one section. Why no definitions there yet: no parser in
  the standard library; tree-sitter grammars (MIT, a wheel per language) would give them, at
  a dependency per language and code per grammar's node names; chunking by size already cuts
  such files, so that is left for later rather than done by fragile regular expressions.
- A file whose text is whitespace only: ``EmptyDocumentError``. Minified one-line files read as
  one section (the chunker cuts them by size); ``documents.exclude`` leaves ``*.min.js`` out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

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
#: Python files larger than this are not parsed for definitions (``ast`` takes ~20x the memory).
MAX_AST_BYTES = 4 * 1024 * 1024
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
            end = _line_end(text, starts[node.lineno - 1])
            if isinstance(node, ast.ClassDef):
                label = f"class {node.name}"
            elif isinstance(node, ast.AsyncFunctionDef):
                label = f"async def {node.name}"
            else:
                label = f"def {node.name}"
            marks.append(HeadingMark(start, end, level, label))
            if isinstance(node, ast.ClassDef) and level < _MAX_LEVEL:
                visit(node.body, level + 1)

    visit(tree.body, 1)
    return marks


#: Language -> its definitions as heading marks (languages not here: one section).
DEFINITIONS: dict[str, Callable[[str], list[HeadingMark]]] = {"python": python_definitions}


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
    find = DEFINITIONS.get(language)
    if find is not None:
        if len(raw) > MAX_AST_BYTES:
            warnings.append(
                f"definitions not looked for: {len(raw):,} bytes is over {MAX_AST_BYTES:,}"
            )
        else:
            try:
                headings = find(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
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
    "MAX_AST_BYTES",
    "MEDIA_TYPES",
    "media_type_for_extension",
    "parse",
    "python_definitions",
]
