"""Typst documents (``.typ``): compiled by the Typst compiler to HTML, then read by our HTML
reader, so what is indexed is what the document shows.

Typst is a programming language as much as markup (``#let``, ``#for``, show rules, templates
that wrap the whole body), so only its compiler knows the text: typst-py (Apache-2.0, the
compiler as a Python module) exports HTML with the document's headings (``=`` as ``<h2>``:
Typst keeps ``<h1>`` for the title), paragraphs, lists, tables, code blocks with their lines,
equations as MathML (which our HTML reader writes as linear LaTeX) and footnotes as endnotes.
The document title (``#set document(title: …)``) heads the text where the body has no
``<h1>`` of its own.

The compiler runs in a process of its own (``sandbox.run_offline``): no network, so a
``@preview`` package that is not already on this machine (Typst's own package folders,
``$XDG_DATA_HOME/typst/packages`` and ``$XDG_CACHE_HOME/typst/packages``) is an error naming
it, never a download; the document's folder is not its root, an empty one is, so ``#read``,
``#include`` and ``#image`` of other files fail; the run is bounded by the parse deadline and
2 GiB, and what it writes by ``MAX_HTML_BYTES``.
"""

from __future__ import annotations

import html as html_text
import os
import re
import sys
import tempfile
import unicodedata
from pathlib import Path

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    UnsupportedFormatError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.sandbox import run_offline

MEDIA_TYPE = "text/x-typst"

#: Longest one compilation may run (the parse's own deadline may cut it shorter).
COMPILE_TIMEOUT_S = 60.0
COMPILE_MEMORY_BYTES = 2 * 1024**3
#: The most HTML a compilation may give (a short loop can write a great deal: ``#for i in
#: range(1000000)`` is 13 MB).
MAX_HTML_BYTES = 64 * 1024 * 1024

#: Show rules compiled before the document: layout elements HTML export leaves out, with their
#: text (``align``, ``grid``, ``stack``, ``place``, shapes: a title page, an author grid), as
#: their content; ``repeat`` (a leader of dots) as nothing.
PRELUDE = """\
#show align: it => it.body
#show pad: it => it.body
#show place: it => it.body
#show columns: it => it.body
#show move: it => it.body
#show rotate: it => it.body
#show scale: it => it.body
#show skew: it => it.body
#show rect: it => it.body
#show square: it => it.body
#show circle: it => it.body
#show ellipse: it => it.body
#show repeat: it => []
#show stack: it => it.children.filter(c => type(c) == content).join(parbreak())
#show grid: it => it.children.map(c => if c.has("body") { c.body } else if c.has("children") {
  c.children.map(x => x.at("body", default: none)).join(parbreak()) }).join(parbreak())
"""

#: Run by ``sys.executable -I``: argv is the source file, its root and the package folders. A
#: file the document reads and the root lacks (an image, an included chapter) is made as a
#: blank stand-in (a 1x1 image, an empty file) and the compilation tried again, at most
#: ``_MAX_STAND_INS`` times; each stand-in is named on stderr ("missing: path").
_COMPILE = """
import re, sys
from pathlib import Path
try:
    import typst
except ImportError:
    sys.stderr.write("typst-py is not installed")
    sys.exit(5)
source, root, packages, cache, limit = sys.argv[1:6]
root_path = Path(root).resolve()
for attempt in range(int(limit) + 1):
    try:
        out = typst.compile(source, format="html", root=root, ignore_system_fonts=True,
                            package_path=packages, package_cache_path=cache)
        break
    except Exception as exc:
        message = str(exc)
        found = re.search(r"file not found \\(searched at (.+?)\\)", message)
        path = Path(found.group(1)).resolve() if found else None
        if path is None or attempt == int(limit) or root_path not in path.parents or path.exists():
            sys.stderr.write(message)
            sys.exit(3)
        path.parent.mkdir(parents=True, exist_ok=True)
        suffix = path.suffix.lower()
        if suffix == ".svg":
            path.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>')
        elif suffix in (".png", ".jpg", ".jpeg", ".gif", ".webp"):
            from PIL import Image
            Image.new("RGB", (1, 1), (255, 255, 255)).save(path)
        else:
            path.write_bytes(b"")
        sys.stderr.write("missing: " + str(path.relative_to(root_path)) + "\\n")
sys.stdout.buffer.write(out)
"""
#: Files a document may lack and still be read without them (each costs one compilation).
_MAX_STAND_INS = 16
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_H1 = re.compile(r"<h1[\s>]")
_BODY = re.compile(r"<body[^>]*>")
_FIRST_HEADING = re.compile(r"<h[1-6][^>]*>(.*?)</h[1-6]>", re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
#: Mathematical alphanumeric symbols (Typst writes a formula's ``a`` as U+1D44E "𝑎"): read as
#: the letters and digits they style, so "a^2" is found by the words a reader would type.
_MATH_LETTERS = re.compile("[\U0001d400-\U0001d7ff]")
#: An endnote's number linking back to its reference: the endnote list numbers it already.
_BACKLINK = re.compile(r'<sup role="doc-backlink">.*?</sup>', re.DOTALL)


def _package_folders(empty: str) -> tuple[str, str]:
    """Typst's local and cached package folders where they exist, else an empty folder."""
    home = Path.home()
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "typst" / "packages"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "typst" / "packages"
    return (str(data) if data.is_dir() else empty), (str(cache) if cache.is_dir() else empty)


def _compile(text: str, source_key: str) -> tuple[str, list[str]]:
    """The compiled HTML, and the files the document read that it was compiled without."""
    with tempfile.TemporaryDirectory(prefix="agrag-typst-") as work:
        root = Path(work) / "root"
        root.mkdir()
        empty = Path(work) / "none"
        empty.mkdir()
        source = root / "document.typ"
        source.write_text(PRELUDE + text, encoding="utf-8")
        packages, cache = _package_folders(str(empty))
        done = run_offline(
            [
                *(sys.executable, "-I", "-c", _COMPILE),
                *(str(source), str(root), packages, cache, str(_MAX_STAND_INS)),
            ],
            stdin=b"",
            source_key=source_key,
            what="the Typst compiler",
            timeout_s=COMPILE_TIMEOUT_S,
            memory_bytes=COMPILE_MEMORY_BYTES,
            cwd=str(empty),
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": str(empty)},
        )
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    missing = [line.removeprefix("missing: ") for line in lines if line.startswith("missing: ")]
    message = "\n".join(line for line in lines if not line.startswith("missing: "))
    if done.returncode == 5:
        raise UnsupportedFormatError(
            source_key, "reading Typst needs typst-py, which is not installed (bin/setup)"
        )
    if done.returncode != 0:
        reason = message.splitlines()[0] if message else f"exit status {done.returncode}"
        if "failed to download package" in reason:
            package = re.search(r"/preview/([\w.-]+?)\.tar\.gz", reason)
            name = f"@preview/{package.group(1)}" if package else "a package"
            reason = (
                f"it imports {name}, which is not on this machine (packages are never "
                "downloaded while parsing; `typst compile` it once to cache it)"
            )
        raise CorruptDocumentError(source_key, f"the Typst compiler could not compile it: {reason}")
    if len(done.stdout) > MAX_HTML_BYTES:
        raise DocumentTooLargeError(
            source_key,
            f"compiled, it is {len(done.stdout):,} bytes of HTML (limit {MAX_HTML_BYTES:,})",
        )
    return done.stdout.decode("utf-8", "replace"), missing


def _text_of(fragment: str) -> str:
    return " ".join(html_text.unescape(_TAG.sub("", fragment)).split())


def readable_page(page: str) -> str:
    """The compiled page as our HTML reader should read it: its ``<title>`` as an ``<h1>``
    where the body has none and does not open with a heading saying the same; formula letters
    as plain letters; endnotes without their back-link numbers."""
    page = _MATH_LETTERS.sub(lambda m: unicodedata.normalize("NFKC", m.group()), page)
    page = _BACKLINK.sub("", page)
    title = _TITLE.search(page)
    body = _BODY.search(page)
    if title is None or body is None or _H1.search(page, body.end()):
        return page
    heading = _text_of(title.group(1))
    first = _FIRST_HEADING.search(page, body.end())
    if not heading or (first is not None and _text_of(first.group(1)) == heading):
        return page
    return f"{page[: body.end()]}<h1>{html_text.escape(heading)}</h1>{page[body.end() :]}"


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of a Typst document's source ``text``."""
    page, missing = _compile(text, document.source_key)
    parsed = html.parse(readable_page(page), document)
    if not parsed.text_layer.strip():
        raise EmptyDocumentError(document.source_key, "the compiled Typst document shows no text")
    if missing:
        parsed.warnings.append(
            "compiled without the files it reads from its folder, which a document's bytes do "
            f"not carry (blank stand-ins: images show nothing, included files no text): "
            f"{', '.join(missing)}"
        )
    return parsed


__all__ = ["MEDIA_TYPE", "parse", "readable_page"]
