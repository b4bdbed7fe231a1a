"""Textile markup (``.textile``: Redmine and Textpattern pages, old GitHub READMEs): rendered to
HTML by python-textile (BSD-3-Clause, the reference implementation's Python port), then read
by our HTML reader: ``h1.``-``h6.`` headings, paragraphs, lists, tables (``|_. header|``), ``bc.``
and ``pre.`` code with its lines, block quotes, footnotes, link texts.

python-textile is built of regular expressions whose matching the parse deadline cannot stop,
so it runs in a process of its own (``sandbox.run_offline``): killed at the deadline, bounded
to 1 GiB, the page given on its standard input and its HTML read from its output.
"""

from __future__ import annotations

import sys

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    EmptyDocumentError,
    UnsupportedFormatError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.sandbox import run_offline

MEDIA_TYPE = "text/x-textile"

#: Longest one rendering may run (the parse's own deadline may cut it shorter).
RENDER_TIMEOUT_S = 60.0
RENDER_MEMORY_BYTES = 1 << 30

#: Run by ``sys.executable -I``: the page on stdin (UTF-8), its HTML on stdout.
_RENDER = """
import sys
try:
    import textile
except ImportError:
    sys.stderr.write("python-textile is not installed")
    sys.exit(5)
page = sys.stdin.buffer.read().decode("utf-8")
sys.stdout.buffer.write(textile.textile(page, html_type="html5").encode("utf-8"))
"""


def _render(text: str, source_key: str) -> str:
    done = run_offline(
        [sys.executable, "-I", "-c", _RENDER],
        stdin=text.encode("utf-8"),
        source_key=source_key,
        what="python-textile",
        timeout_s=RENDER_TIMEOUT_S,
        memory_bytes=RENDER_MEMORY_BYTES,
    )
    message = done.stderr.decode("utf-8", "replace").strip().splitlines()
    if done.returncode == 5:
        raise UnsupportedFormatError(
            source_key, "reading Textile needs python-textile, which is not installed (bin/setup)"
        )
    if done.returncode != 0:
        raise CorruptDocumentError(
            source_key,
            f"python-textile could not render it: {message[-1] if message else done.returncode}",
        )
    return done.stdout.decode("utf-8", "replace")


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of a Textile page's ``text``."""
    rendered = _render(text, document.source_key)
    parsed = html.parse(f"<!DOCTYPE html><html><body>{rendered}</body></html>", document)
    if not parsed.text_layer.strip():
        raise EmptyDocumentError(document.source_key, "the Textile page shows no text")
    return parsed


__all__ = ["MEDIA_TYPE", "parse"]
