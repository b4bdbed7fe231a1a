"""Jupyter notebooks (``.ipynb``, nbformat 4, and 3's worksheets): cells in order, as Markdown.

The text layer is Markdown we write from the cells, parsed by our Markdown parser
(``markdown.parse``), so a notebook's headings become its sections as in any Markdown file:
- a Markdown cell is its source as written (a v3 heading cell, ``#`` times its level);
- a code cell is a fenced code block tagged with the notebook's language
  (``metadata.kernelspec.language`` or ``language_info.name``, recorded as
  ``notebook_language``), its text outputs a fenced block after it: streams, the
  ``text/plain`` of results and displays, errors as ``name: value`` and their traceback (terminal
  colour codes removed). Images, HTML and widget outputs are left out: no text a reader needs
  that ``text/plain`` does not give;
- a raw cell is its source as text.
Cells are parted by a blank line. A fence is one backtick longer than any backtick run in its
content, so code holding a fence cannot end it early.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import markdown
from agrag_pipeline.parsing.budget import check_size, current_deadline
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.structured import MAX_TEXT_CHARS, MAX_VALUES

MEDIA_TYPE = "application/x-ipynb+json"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_BACKTICKS = re.compile(r"`{3,}")
_LANGUAGE = re.compile(r"[\w+#.-]+")


def _joined(value: object) -> str:
    """A cell field: nbformat stores text as a string or a list of lines."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _fenced(content: str, info: str = "") -> str:
    runs = [len(m.group()) for m in _BACKTICKS.finditer(content)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}{info}\n{content.rstrip()}\n{fence}"


def _output_text(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind in ("error", "pyerr"):
        head = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".rstrip()
        trace = "\n".join(_joined(line) for line in output.get("traceback") or [])
        return _ANSI.sub("", f"{head}\n{trace}".strip())
    if "text" in output:  # stream (v3 and v4), v3 pyout
        return _ANSI.sub("", _joined(output["text"]))
    data = output.get("data")
    if isinstance(data, dict):
        return _ANSI.sub("", _joined(data.get("text/plain")))
    return ""


def _cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    cells = notebook.get("cells")
    if isinstance(cells, list):
        return [c for c in cells if isinstance(c, dict)]
    found: list[dict[str, Any]] = []
    for sheet in notebook.get("worksheets") or []:  # nbformat 3
        if isinstance(sheet, dict):
            found.extend(c for c in sheet.get("cells") or [] if isinstance(c, dict))
    return found


def _language(notebook: dict[str, Any]) -> str:
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    for field, name_key in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(field)
        if isinstance(section, dict) and isinstance(section.get(name_key), str):
            match = _LANGUAGE.fullmatch(section[name_key].strip())
            if match:
                return match.group()
    return ""


def markdown_of(notebook: dict[str, Any], source_key: str) -> tuple[str, str]:
    """The notebook's cells as Markdown text, and its language ('' when it names none)."""
    language = _language(notebook)
    deadline = current_deadline(source_key)
    blocks: list[str] = []
    size = 0
    cells = _cells(notebook)
    check_size(source_key, "cells", len(cells), MAX_VALUES)
    for number, cell in enumerate(cells, start=1):
        deadline.tick(f"cell {number:,}")
        before = len(blocks)
        kind = cell.get("cell_type")
        source = _joined(cell.get("source", cell.get("input")))
        if kind == "code":
            if source.strip():
                blocks.append(_fenced(source, language))
            outputs = cell.get("outputs") or []
            texts = [_output_text(o) for o in outputs if isinstance(o, dict)]
            joined = "\n".join(t.rstrip() for t in texts if t.strip())
            if joined:
                blocks.append(_fenced(joined))
        elif kind == "heading":  # nbformat 3
            level = cell.get("level")
            hashes = "#" * (level if isinstance(level, int) and 1 <= level <= 6 else 1)
            if source.strip():
                blocks.append(f"{hashes} {' '.join(source.split())}")
        elif source.strip():  # markdown, raw
            blocks.append(source.strip("\n").rstrip())
        size += sum(len(b) + 2 for b in blocks[before:])
        check_size(source_key, "characters of text", size, MAX_TEXT_CHARS)
    return "\n\n".join(blocks) + ("\n" if blocks else ""), language


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """A notebook as Markdown text with its headings as sections (module docstring)."""
    key = document.source_key
    decoded = decode(raw, key)
    document.metadata.update(decoded.metadata())
    try:
        notebook = json.loads(decoded.text)
    except RecursionError:
        raise CorruptDocumentError(key, "not a notebook: its JSON is nested too deep") from None
    except ValueError as exc:
        raise CorruptDocumentError(key, f"not a notebook: not valid JSON: {exc}") from exc
    if not isinstance(notebook, dict) or not ("cells" in notebook or "worksheets" in notebook):
        raise CorruptDocumentError(key, "not a notebook: no cells (nbformat 3 or 4)")
    text, language = markdown_of(notebook, key)
    if language:
        document.metadata["notebook_language"] = language
    if not text.strip():
        raise EmptyDocumentError(key, "the notebook has no cell with text")
    return ParsedDocument(
        document=document, text_layer=text, sections=markdown.parse(text, document)
    )


__all__ = ["MEDIA_TYPE", "markdown_of", "parse"]
