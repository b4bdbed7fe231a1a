"""Web archives (MHTML: ``.mht``, ``.mhtml``; what Chrome's and Edge's "Webpage, single file",
Internet Explorer and Word's "Single File Web Page" save, Word's also behind ``.doc``) read as
the page they hold.

An MHTML file is a MIME message (RFC 2557): a ``multipart/related`` whose root part is the
page's HTML and whose other parts are its style sheets, scripts, images and frames. Read as an
e-mail it would be a message "From: <Saved by Blink>" with dozens of attachments, each image a
document of its own to OCR. Here it is one document: the root part (the part the ``start``
parameter names, else the one at the snapshot's address, else the first HTML part) read by the
HTML parser, so it has the headings, tables and boilerplate rules of any web page; its
``<title>`` (else the archive's ``Subject``) is its title and the page's address its
``mhtml.url``. The other parts are not read: a frame's HTML is a page of its own the archive
merely carries (a gap named in the README). MIME bombs are refused as for e-mail
(``mail.refuse_mime_bomb``).
"""

from __future__ import annotations

import email
import email.message
import email.policy
import email.utils
import re

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.mail import refuse_mime_bomb
from agrag_pipeline.parsing.parsed import ParsedDocument

MEDIA_TYPE = "application/x-mimearchive"

#: The header block of an MHTML file: MIME headers naming a ``multipart/related`` body.
_MHTML_HEAD = re.compile(
    r"\A(?:[!-9;-~]+:[^\n]*\n(?:[ \t][^\n]*\n)*)*?content-type:[ \t]*multipart/related",
    re.IGNORECASE,
)


def looks_like_mhtml(text: str) -> bool:
    """``text`` (a file's decoded head) opens with MIME headers declaring ``multipart/related``
    and ``MIME-Version``: a web archive, whatever its extension."""
    head = text.lstrip("\ufeff").replace("\r\n", "\n")[:4096]
    block = head.split("\n\n", 1)[0].lower()
    return "mime-version:" in block and _MHTML_HEAD.match(head) is not None


def _root(top: email.message.EmailMessage) -> email.message.Message | None:
    """The page's HTML part."""
    if top.get_content_type() != "multipart/related":
        return top if top.get_content_type() == "text/html" else None
    parts = [p for p in top.iter_parts()]
    param = top.get_param("start")
    start = (email.utils.collapse_rfc2231_value(param) if param else "").strip()
    if start:
        for part in parts:
            if (part.get("Content-ID") or "").strip() == start:
                return part
    address = (top.get("Snapshot-Content-Location") or "").strip()
    if address:
        for part in parts:
            if part.get_content_type() == "text/html" and part.get("Content-Location") == address:
                return part
    for part in parts:
        if part.get_content_type() == "text/html":
            return part
        if part.get_content_type() == "multipart/alternative":
            for alternative in part.iter_parts():
                if alternative.get_content_type() == "text/html":
                    return alternative
    return None


def _html_text(part: email.message.Message, source_key: str) -> str:
    """The part's HTML, decoded by its declared charset, else as any HTML file is."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes) or not payload.strip():
        raise EmptyDocumentError(source_key, "the archived page is empty")
    charset = part.get_content_charset()
    if charset:
        try:
            return payload.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass  # a wrong or unknown label: the page's own meta tag or detection decides
    return decode(payload, source_key, html=True).text


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The archived page, read as HTML."""
    key = document.source_key
    refuse_mime_bomb(raw, key, "archive")
    try:
        top = email.message_from_bytes(raw, policy=email.policy.default)
    except RecursionError:
        raise DocumentTooLargeError(key, "its MIME parts are nested too deeply to read") from None
    assert isinstance(top, email.message.EmailMessage)
    root = _root(top)
    if root is None:
        raise CorruptDocumentError(
            key, "not a web archive: no HTML page among its MIME parts (multipart/related)"
        )
    parsed = html.parse(_html_text(root, key), document, web_page=True)
    if not parsed.text_layer.strip():
        raise EmptyDocumentError(key, "the archived page has no visible text")
    address = (top.get("Snapshot-Content-Location") or root.get("Content-Location") or "").strip()
    if address:
        document.metadata["mhtml.url"] = address
    subject = str(top.get("Subject") or "").strip()
    if subject and not document.metadata.get("title"):
        document.metadata["title"] = subject
    return parsed


__all__ = ["MEDIA_TYPE", "looks_like_mhtml", "parse"]
