"""Manual pages (roff ``man(7)`` and ``mdoc(7)``: ``ls.1``, ``git-commit.1``, ``ssh_config.5``,
``.man``, ``.mdoc``), read as the page a terminal shows, under its title and sections.

mandoc (ISC; the manual formatter of OpenBSD and the other BSDs, written to be run on untrusted
pages) formats the page to HTML and our HTML reader reads that (``html.parse``): roff is a
macro language, and what a page shows (``.TP`` tagged paragraphs, ``.B``/``.I`` fonts, ``.EX``
examples, tbl tables, mdoc's semantic macros) is what the formatter makes of it, not what a
regular expression could. The page's title (``LS(1)``) is the level-1 heading, its ``.SH``/``.Sh``
sections level 2 and ``.SS``/``.Ss`` subsections level 3, so a chunk's heading path says which
page it is from ("LS(1) > OPTIONS"); mandoc's running header and footer are left out; examples
keep their lines.

No other file is ever read: ``.so`` requests (a page that includes another, or is only a link to
one) are removed before mandoc sees the page, mandoc runs in an empty folder with the page on its
standard input, and it runs no programs. A page that was only a ``.so`` link is empty, with the
page it names in the error. mandoc runs offline, bounded by the parse's deadline and 1 GiB of
memory (``sandbox``).
"""

from __future__ import annotations

import html as html_text
import re
import shutil

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    EmptyDocumentError,
    UnsupportedFormatError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.sandbox import run_offline

MEDIA_TYPE = "text/troff"

#: The request that starts a page's content: ``.TH`` (man) or ``.Dd``/``.Dt`` (mdoc).
_TITLE_REQUEST = re.compile(r"^[.'][ \t]*(?:TH|Dd|Dt)[ \t]", re.MULTILINE)
#: ``.so file``: an include (or the whole of a link page); never followed.
_INCLUDE = re.compile(r"^[.'][ \t]*(?:so|mso)[ \t]+(\S+).*$", re.MULTILINE)
_HEAD_TITLE = re.compile(r'<td class="head-ltitle">(.*?)</td>', re.DOTALL)
_HEAD_AND_FOOT = re.compile(r'<table class="(?:head|foot)">.*?</table>', re.DOTALL)
_SECTION_HEADING = re.compile(r'<(/?)h([12])( class="S[hs]")?')
_TAG = re.compile(r"<[^>]*>")
#: mdoc's synopsis line is a layout table (the command's name, then its arguments): a line.
_SYNOPSIS_TABLE = re.compile(r'<table class="Nm">(.*?)</table>', re.DOTALL)
_TABLE_TAGS = re.compile(r"</?t[rd][^>]*>")
#: mandoc writes a ``<br/>`` line inside a man(7) example before each indented line, which the
#: example's own line break already makes (a terminal shows no empty line there).
_PRE_BLOCK = re.compile(r"<pre>.*?</pre>", re.DOTALL)
_PRE_BREAK = re.compile(r"\n<br/>\n")

#: Longest mandoc may run (the parse's own deadline may cut it shorter); it formats a large
#: page (bash(1), 10,000 lines of roff) in well under a second.
FORMAT_TIMEOUT_S = 30.0
FORMAT_MEMORY_BYTES = 1 << 30


def is_man_page(text: str) -> bool:
    """Whether ``text`` (a file's first kilobytes) is roff with a page title request."""
    return _TITLE_REQUEST.search(text) is not None


def opens_as_man_page(text: str) -> bool:
    """Whether ``text`` is a page or a link page (``.so``): what detection calls a manual page
    behind a section suffix (``ls.1``); a link page is then refused naming its target."""
    return is_man_page(text) or _INCLUDE.search(text) is not None


def mandoc_path() -> str | None:
    return shutil.which("mandoc")


def _format(source: str, source_key: str) -> str:
    """mandoc's HTML of the page (``-O fragment``: no ``<html>`` around it)."""
    program = mandoc_path()
    if program is None:
        raise UnsupportedFormatError(
            source_key,
            "reading manual pages needs mandoc, which is not installed (bin/setup installs it: "
            "apt-get install mandoc)",
        )
    done = run_offline(
        [program, "-T", "html", "-O", "fragment", "-K", "utf-8"],
        stdin=source.encode("utf-8"),
        source_key=source_key,
        what="mandoc",
        timeout_s=FORMAT_TIMEOUT_S,
        memory_bytes=FORMAT_MEMORY_BYTES,
    )
    # mandoc exits 2-4 for warnings, errors and unsupported requests, and still formats what
    # it can; only no output at all is a failure.
    output = done.stdout.decode("utf-8", "replace")
    if not output.strip():
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CorruptDocumentError(
            source_key,
            f"mandoc could not format it as a manual page (exit status {done.returncode}): "
            f"{message[0] if message else 'no output'}",
        )
    return output


def _inline_text(fragment: str) -> str:
    return " ".join(html_text.unescape(_TAG.sub("", fragment)).split())


def as_document_html(fragment: str) -> str:
    """mandoc's fragment as a page of its own: the title (``LS(1)``) as ``<h1>``, sections one
    level below, the running header and footer (title, volume, date, source) left out."""
    title_match = _HEAD_TITLE.search(fragment)
    title = _inline_text(title_match.group(1)) if title_match else ""
    body = _HEAD_AND_FOOT.sub("", fragment)
    body = _SYNOPSIS_TABLE.sub(
        lambda m: "<p>" + " ".join(_TABLE_TAGS.sub(" ", m.group(1)).split()) + "</p>", body
    )
    body = _PRE_BLOCK.sub(lambda m: _PRE_BREAK.sub("\n", m.group(0)), body)
    # Only mandoc's own section headings (``class="Sh"``/``"Ss"``, and their closing tags).
    body = _SECTION_HEADING.sub(
        lambda m: f"<{m.group(1)}h{int(m.group(2)) + 1}{m.group(3) or ''}", body
    )
    heading = f"<h1>{html_text.escape(title)}</h1>" if title else ""
    return f"<!DOCTYPE html><html><body>{heading}{body}</body></html>"


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of a manual page's roff ``text``."""
    key = document.source_key
    included = _INCLUDE.findall(text)
    source = _INCLUDE.sub("", text)
    if included and not is_man_page(source):
        raise EmptyDocumentError(
            key,
            f"a link to another manual page ({included[0]}), which is read where it is; "
            "no other file is read",
        )
    parsed = html.parse(as_document_html(_format(source, key)), document)
    if not parsed.text_layer.strip():
        raise EmptyDocumentError(key, "the manual page shows no text")
    return parsed


__all__ = ["MEDIA_TYPE", "as_document_html", "is_man_page", "opens_as_man_page", "parse"]
