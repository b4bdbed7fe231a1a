"""E-mail: MIME messages (``.eml``, Python's ``email`` with ``policy.default``) and Outlook
``.msg`` files (``python-oxmsg``, MIT, over ``olefile``, BSD).

Why these readers: the standard library reads MIME fully (encoded words, charsets,
transfer encodings, nested messages). For ``.msg`` (an OLE compound file of MAPI property
streams) ``extract-msg`` is GPL; ``python-oxmsg`` is the permissive reader unstructured moved
to, by the author of python-docx, and reads what we need: headers, plain and HTML bodies,
recipients by type and attachments by value.

A message is one document. Its text layer is:

- the subject, as a level-1 heading (``(no subject)`` when it has none), so every chunk of the
  message carries it in its heading path;
- a header section (a table section of ``Name: value`` lines): From, To, Cc, Date, and one
  ``Attachment n: name (type, size)`` line per attachment;
- its body: each inline text part in order, ``text/plain`` as it is, ``text/html`` through the
  HTML parser (its headings one level under the subject); of a ``multipart/alternative`` only
  the plain text is read, else the HTML. In a plain body, each earlier message a reply or
  forward quotes is a level-2 section headed by the line that introduces it
  (``quoted_history``), in an HTML body too, once its text is read.

The headers also go into the document's metadata (``mail.from``, ``mail.to``, ``mail.cc``,
``mail.date``, ``mail.subject``, ``mail.attachments``). Each attachment is a document of its own
(``agrag_pipeline.derived``), found by ``read_message``, which is the one place that reads the
parts, so the message's listing and its children always agree.

Budgets: a message declaring more than ``MAX_MIME_PARTS`` parts, or multiparts nested deeper
than ``MAX_MIME_NESTING`` (MIME bombs), is refused before it is walked, naming the file; a
truncated message is read as far as it goes, its defects named in the parse's warnings.
"""

from __future__ import annotations

import email
import email.errors
import email.header
import email.message
import email.policy
import hashlib
import mimetypes
import re
from dataclasses import dataclass, field
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import HeadingMark, TableMark, build_sections

EML_MEDIA_TYPE = "message/rfc822"
MSG_MEDIA_TYPE = "application/vnd.ms-outlook"
#: Apple Mail's ``.emlx``: the message's byte count on a line, the message, then a property list.
EMLX_MEDIA_TYPE = "message/x-emlx"
MEDIA_TYPES = (EML_MEDIA_TYPE, MSG_MEDIA_TYPE, EMLX_MEDIA_TYPE)

#: A message declaring more parts than this is refused (real mail holds tens).
MAX_MIME_PARTS = 1000
#: Multiparts nested deeper than this are refused (real mail nests a handful).
MAX_MIME_NESTING = 32
#: The header fields shown, in this order.
SHOWN_HEADERS = ("From", "To", "Cc", "Date")

_CONTENT_TYPE_LINE = re.compile(rb"^content-type:", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Attachment:
    """A part of a message that is a file of its own (or an attached message)."""

    index: int  #: 1-based position among the message's attachments
    name: str  #: the file name the sender gave ("" when none)
    content_type: str
    #: The bytes; None when the message does not hold them (a link, an unreadable part).
    data: bytes | None
    note: str = ""  #: why ``data`` is None

    def file_name(self) -> str:
        """The name a child document gets: the sender's, else one made from the type."""
        if self.name:
            return self.name
        if self.content_type in (EML_MEDIA_TYPE, "message/global"):
            return "message.eml"
        guessed = mimetypes.guess_extension(self.content_type) or ".bin"
        return f"attachment{guessed}"


@dataclass
class Message:
    subject: str
    headers: dict[str, str]
    #: Inline body parts in order: ("plain" | "html", text).
    bodies: list[tuple[str, str]] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)


def read_message(raw: bytes, source_key: str, media_type: str) -> Message:
    """The headers, body parts and attachments of a message (``.eml`` or ``.msg``)."""
    if media_type == MSG_MEDIA_TYPE:
        return _read_msg(raw, source_key)
    if media_type == EMLX_MEDIA_TYPE:
        return _read_eml(emlx_message(raw, source_key), source_key)
    return _read_eml(raw, source_key)


_EMLX_COUNT = re.compile(rb"\A[ \t]*(\d{1,12})[ \t]*\r?\n")


def emlx_message(raw: bytes, source_key: str) -> bytes:
    """The RFC 822 message of an Apple Mail ``.emlx`` file: the bytes its first line counts
    (Apple's property list of flags after them left out).

    Raises:
        CorruptDocumentError: no byte count on the first line.
    """
    found = _EMLX_COUNT.match(raw)
    if found is None:
        raise CorruptDocumentError(
            source_key, "not an Apple Mail message: an .emlx starts with its message's byte count"
        )
    start = found.end()
    return raw[start : start + int(found.group(1))]


# -- MIME --------------------------------------------------------------------------------------


def refuse_mime_bomb(raw: bytes, source_key: str, what: str = "message") -> None:
    """Refuse, before the e-mail library parses it, MIME that declares more than
    ``MAX_MIME_PARTS`` parts (the library would build every one).

    Raises:
        DocumentTooLargeError: naming the file and the count.
    """
    declared = len(_CONTENT_TYPE_LINE.findall(raw))
    if declared > MAX_MIME_PARTS:
        raise DocumentTooLargeError(
            source_key,
            f"the {what} declares {declared:,} MIME parts (limit {MAX_MIME_PARTS:,}; a MIME "
            "bomb?): refused before it was parsed",
        )


def _read_eml(raw: bytes, source_key: str) -> Message:
    refuse_mime_bomb(raw, source_key)
    try:
        utf16 = _utf16_codec(raw)
        if utf16 is not None:  # saved as UTF-16 by some Windows tools
            parsed = email.message_from_string(raw.decode(utf16), policy=email.policy.default)
        else:
            parsed = email.message_from_bytes(raw, policy=email.policy.default)
    except RecursionError:
        raise DocumentTooLargeError(
            source_key, "its MIME parts are nested too deeply to read (a MIME bomb?)"
        ) from None
    except UnicodeDecodeError as exc:
        raise CorruptDocumentError(source_key, f"not a readable message: {exc}") from exc
    assert isinstance(parsed, email.message.EmailMessage)
    if not parsed.keys() and not parsed.get_payload():
        raise EmptyDocumentError(source_key, "the message has no headers and no body")
    message = Message(subject=_header(parsed, "Subject"), headers={})
    for name in SHOWN_HEADERS:
        value = _header(parsed, name)
        if value:
            message.headers[name] = value
    _walk(parsed, message, source_key)
    return message


def _utf16_codec(raw: bytes) -> str | None:
    """The UTF-16 codec of a message saved as UTF-16 (with or without a byte-order mark; its
    headers are ASCII, so every other byte of its start is NUL), else None."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    start = raw[:64]
    if len(start) >= 16 and not any(start[1::2]):
        return "utf-16-le"
    if len(start) >= 16 and not any(start[0::2]):
        return "utf-16-be"
    return None


def _header(part: email.message.Message, name: str) -> str:
    """A header's decoded value, whitespace folded; the raw value where it cannot be decoded."""
    try:
        value = part.get(name)
    except Exception:  # a malformed header policy.default cannot parse (an address group)
        value = _unparsed_header(part, name)
    return " ".join(str(value).split()) if value is not None else ""


def _unparsed_header(part: email.message.Message, name: str) -> str | None:
    """A header's value as written, its encoded words decoded where they can be: every
    parsed accessor (``get``, ``get_all``) would fail on it again."""
    wanted = name.lower()
    raw = next((v for k, v in part.raw_items() if k.lower() == wanted), None)
    if raw is None:
        return None
    try:
        return str(email.header.make_header(email.header.decode_header(str(raw))))
    except (ValueError, LookupError, email.errors.HeaderParseError):
        return str(raw)


def _walk(top: email.message.EmailMessage, message: Message, source_key: str) -> None:
    """Collect body parts and attachments in document order, without recursion."""
    deadline = current_deadline(source_key)
    stack: list[tuple[email.message.Message, int]] = [(top, 0)]
    seen = 0
    while stack:
        part, nesting = stack.pop()
        seen += 1
        deadline.tick(f"MIME part {seen:,}")
        if seen > MAX_MIME_PARTS:
            raise DocumentTooLargeError(
                source_key, f"the message holds more than {MAX_MIME_PARTS:,} MIME parts"
            )
        message.defects.extend(type(d).__name__ for d in part.defects)
        content_type = part.get_content_type()
        if part.is_multipart() and content_type != EML_MEDIA_TYPE:
            if nesting >= MAX_MIME_NESTING:
                raise DocumentTooLargeError(
                    source_key,
                    f"its multiparts are nested more than {MAX_MIME_NESTING} deep (a MIME bomb?)",
                )
            children = [p for p in part.get_payload() if isinstance(p, email.message.Message)]
            if content_type == "multipart/alternative":
                children = _preferred_alternative(children)
            stack.extend((child, nesting + 1) for child in reversed(children))
            continue
        if _is_inline_text(part):
            text = _text_of(part, message)
            if text is not None and text.strip():
                kind = "html" if part.get_content_subtype() == "html" else "plain"
                message.bodies.append((kind, text))
            continue
        message.attachments.append(_attachment(part, len(message.attachments) + 1))


def _preferred_alternative(children: list[email.message.Message]) -> list[email.message.Message]:
    """Of a ``multipart/alternative``: its plain text, else its HTML, else its last part."""
    for wanted in ("text/plain", "text/html"):
        for child in children:
            if child.get_content_type() == wanted and not _is_attachment(child):
                return [child]
    for child in reversed(children):
        if child.is_multipart():
            return [child]  # e.g. multipart/related holding the HTML and its images
    return children[-1:]


def _is_attachment(part: email.message.Message) -> bool:
    return part.get_content_disposition() == "attachment" or bool(part.get_filename())


def _is_inline_text(part: email.message.Message) -> bool:
    return part.get_content_type() in ("text/plain", "text/html") and not _is_attachment(part)


#: Charset labels that mail clients and browsers read as windows-1252 (the WHATWG Encoding
#: Standard's mapping): senders label windows-1252 text ``iso-8859-1`` or ``us-ascii``, and a
#: strict reading turns its curly quotes and dashes into C1 control characters ("we\x92re").
_READ_AS_WINDOWS_1252 = frozenset(
    {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii", "iso_8859-1"}
)


def _text_of(part: email.message.Message, message: Message) -> str | None:
    charset = (part.get_content_charset() or "").lower()
    if charset in _READ_AS_WINDOWS_1252:
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes):
            try:
                return payload.decode("cp1252")
            except UnicodeDecodeError:  # one of the five bytes cp1252 leaves undefined
                return payload.decode("latin-1")
    try:
        content = part.get_content()  # type: ignore[attr-defined]
    except (LookupError, ValueError, AssertionError) as exc:  # unknown charset, bad encoding
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            message.defects.append(f"an unreadable text part ({exc})")
            return None
        content = payload.decode("utf-8", "replace")
    return content if isinstance(content, str) else None


def _attachment(part: email.message.Message, index: int) -> Attachment:
    content_type = part.get_content_type()
    name = _filename(part)
    if content_type in (EML_MEDIA_TYPE, "message/global"):
        inner = part.get_payload()
        if isinstance(inner, list) and inner:
            inner = inner[0]
        if isinstance(inner, email.message.Message):
            return Attachment(index, name, EML_MEDIA_TYPE, inner.as_bytes(policy=_AS_BYTES))
    try:
        data = part.get_payload(decode=True)
    except Exception as exc:  # a damaged transfer encoding
        return Attachment(index, name, content_type, None, f"cannot be decoded: {exc}")
    if not isinstance(data, bytes):
        return Attachment(index, name, content_type, None, "holds no data")
    return Attachment(index, name, content_type, data)


#: Re-serialising an attached message: lines as they were, nothing re-wrapped.
_AS_BYTES = email.policy.default.clone(linesep="\n", max_line_length=0)
#: Writing an embedded Outlook message as MIME.
_WRITTEN = email.policy.default.clone(linesep="\n")


def _filename(part: email.message.Message) -> str:
    try:
        return part.get_filename() or ""
    except Exception:
        return ""


# -- Outlook .msg ------------------------------------------------------------------------------


def _read_msg(raw: bytes, source_key: str) -> Message:
    from oxmsg import Message as OutlookMessage  # imported when needed

    try:
        return _from_outlook(OutlookMessage.load(raw), source_key, 0)
    except DocumentTooLargeError:
        raise
    except Exception as exc:  # olefile on truncated or damaged bytes, a bad property stream
        raise CorruptDocumentError(
            source_key,
            f"not a readable Outlook message (truncated or damaged?): {type(exc).__name__}: {exc}",
        ) from exc


#: An embedded message's properties stream has a 24-byte header (a top-level one's: 32).
_EMBEDDED_HEADER_BYTES = 24
#: How deep embedded Outlook messages are read (each becomes an attached ``.eml``).
MAX_EMBEDDED_DEPTH = 3


def _from_outlook(msg: Any, source_key: str, depth: int) -> Message:
    """Our ``Message`` of an oxmsg message (a file's, or one embedded in it)."""
    headers = {"From": msg.sender or ""}
    by_type: dict[int, list[str]] = {1: [], 2: []}  # MAPI_TO, MAPI_CC (BCC not shown)
    for recipient in msg.recipients:
        kind = recipient.properties.int_prop_value(0x0C15)  # PidTagRecipientType
        shown = _recipient_text(recipient.name, recipient.email_address)
        if kind in by_type and shown:
            by_type[kind].append(shown)
    headers["To"] = ", ".join(by_type[1])
    headers["Cc"] = ", ".join(by_type[2])
    sent = msg.sent_date
    headers["Date"] = sent.strftime("%a, %d %b %Y %H:%M:%S %z") if sent else ""
    message = Message(subject=msg.subject, headers={k: v for k, v in headers.items() if v})
    body = _outlook_text(msg, "body", 0x1000, 0x001E, source_key)
    if body and body.strip():
        message.bodies.append(("plain", body))
    else:
        html_body = _outlook_text(msg, "html_body", 0x1013, 0x0102, source_key)
        if html_body:
            message.bodies.append(("html", html_body))
    message.attachments = [
        _msg_attachment(a, i, source_key, depth) for i, a in enumerate(msg.attachments, 1)
    ]
    return message


def _outlook_text(msg: Any, attribute: str, pid: int, ptyp: int, source_key: str) -> str | None:
    """A body property; one whose declared code page is wrong or unknown to Python (Outlook
    writes ``windows-950``; an 8-bit body that is not UTF-8 behind code page 65001) is decoded
    from its bytes by ``encoding.decode`` instead."""
    try:
        value = getattr(msg, attribute)
        return value if isinstance(value, str) else None
    except (UnicodeDecodeError, LookupError):
        try:
            data = msg._storage.property_stream_bytes(pid, ptyp)
        except KeyError:
            return None
        return decode(data, source_key, html=attribute == "html_body").text


def _embedded_message(attachment: Any) -> Any:
    """The message embedded in an attachment (attach method 5), read by oxmsg."""
    from oxmsg import Message as OutlookMessage
    from oxmsg.properties import Properties

    class EmbeddedMessage(OutlookMessage):
        @property
        def _properties(self) -> Any:
            return Properties(self._storage, properties_header_offset=_EMBEDDED_HEADER_BYTES)

    storage = next(
        s for s in attachment._storage.storages if s.name.upper() == "__SUBSTG1.0_3701000D"
    )
    return EmbeddedMessage(storage)


def _as_eml(message: Message) -> bytes:
    """An embedded Outlook message written as MIME, deterministically (a fixed boundary made
    from its content), so the same message gives the same bytes and content hash each scan."""
    out = email.message.EmailMessage(policy=_WRITTEN)
    for name, value in (*message.headers.items(), ("Subject", message.subject)):
        if value:
            out[name] = value
    kind, text = message.bodies[0] if message.bodies else ("plain", "")
    out.set_content(text, subtype=kind, charset="utf-8", cte="base64")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass"))
    for a in message.attachments:
        if a.data is None:
            continue
        maintype, _, subtype = (a.content_type or "application/octet-stream").partition("/")
        out.add_attachment(
            a.data, maintype=maintype, subtype=subtype or "octet-stream", filename=a.file_name()
        )
        digest.update(a.data)
    if out.is_multipart():
        out.set_boundary(f"agrag-{digest.hexdigest()[:32]}")
    return out.as_bytes()


def _recipient_text(name: str, address: str) -> str:
    if name and address and name != address:
        return f"{name} <{address}>"
    return name or address


def _msg_attachment(attachment: Any, index: int, source_key: str, depth: int) -> Attachment:
    name = attachment.file_name or ""
    content_type = attachment.mime_type or "application/octet-stream"
    method = attachment.properties.int_prop_value(0x3705)  # PidTagAttachMethod
    if method == 5:  # an embedded Outlook message: a storage, not bytes
        shown = attachment.properties.str_prop_value(0x3001) or "message"  # PidTagDisplayName
        if depth + 1 > MAX_EMBEDDED_DEPTH:
            return Attachment(
                index,
                f"{shown}.eml",
                EML_MEDIA_TYPE,
                None,
                f"an embedded message nested past {MAX_EMBEDDED_DEPTH} levels: not read",
            )
        embedded = _from_outlook(_embedded_message(attachment), source_key, depth + 1)
        return Attachment(index, f"{shown}.eml", EML_MEDIA_TYPE, _as_eml(embedded))
    if method not in (1, None):
        return Attachment(index, name, content_type, None, "attached by reference, not by value")
    data = attachment.file_bytes
    if data is None:
        return Attachment(index, name, content_type, None, "holds no data")
    return Attachment(index, name, content_type, bytes(data))


# -- the document ------------------------------------------------------------------------------


class _Layer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0

    def write(self, text: str) -> int:
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        return start

    def value(self) -> str:
        return "".join(self.parts)


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The message's text layer (subject, header section, body) and its sections."""
    source_key = document.source_key
    message = read_message(raw, source_key, document.media_type)
    layer = _Layer()
    headings: list[HeadingMark] = []
    tables: list[TableMark] = []
    subject = message.subject or "(no subject)"
    start = layer.write(subject)
    headings.append(HeadingMark(start, layer.pos, 1, subject))
    layer.write("\n\n")
    rows: list[tuple[int, int]] = []
    lines = [f"{name}: {value}" for name, value in message.headers.items()]
    lines += [
        f"Attachment {a.index}: {a.file_name()} ({a.content_type}"
        + (f", {len(a.data):,} bytes)" if a.data is not None else f"; {a.note})")
        for a in message.attachments
    ]
    for line in lines:
        row_start = layer.write(line)
        rows.append((row_start, layer.pos))
        layer.write("\n")
    if rows:
        tables.append(TableMark(rows[0][0], rows[-1][1], None, tuple(rows)))
    for kind, text in message.bodies:
        layer.write("\n")
        if kind == "html":
            body, body_headings, body_tables = _html_marks(text, source_key)
            body_headings = _merged(body_headings, quoted_history(body, quoted_by_marks=False))
        else:
            body = text.replace("\r\n", "\n")
            body_headings, body_tables = quoted_history(body), []
        offset = layer.write(body)
        layer.write("\n")
        headings += [
            HeadingMark(h.start + offset, h.end + offset, min(h.level + 1, 6), h.text)
            for h in body_headings
        ]
        tables += [_shifted(t, offset) for t in body_tables]
    text_layer = layer.value()
    document.metadata.update(_metadata(message))
    parsed = ParsedDocument(
        document=document,
        text_layer=text_layer,
        sections=build_sections(text_layer, document, headings, tables),
    )
    if message.defects:
        kinds = ", ".join(sorted(set(message.defects)))
        parsed.warnings.append(
            f"{source_key}: the message is damaged or truncated ({kinds}); read as far as it goes"
        )
    return parsed


#: The header block Outlook (and most clients after it) writes above the message a reply or
#: a forward quotes: "From:", then the date, recipients and subject, in the client's language.
_QUOTED_FROM = re.compile(r"^(?:From|Von|De|Da|Van|Fra|Od) ?:[ \t]*\S.*$", re.MULTILINE)
_QUOTED_FIELDS = re.compile(
    r"^(?:Sent|Date|Gesendet|Datum|Envoyé|Enviado|Fecha|Inviato|Verzonden|Sendt|Wysłano"
    r"|To|An|À|A|Para|Aan|Til|Do|Subject|Betreff|Objet|Asunto|Oggetto|Onderwerp|Emne|Temat"
    r"|Cc) ?:",
    re.IGNORECASE,
)
#: The line Gmail, Apple Mail and Thunderbird write above a quoted message ("On Mon, 1 Dec
#: 2025 at 10:00, Ana <ana@example.org> wrote:"), possibly wrapped onto a second line.
_ATTRIBUTION = re.compile(
    r"^(?:On|Am|Le|El|Il|Op|Den|Dnia) [^\n]{4,240}?(?:\n[^\n]{0,120}?)?"
    r"(?:wrote|schrieb|a écrit|escribió|ha scritto|schreef|skrev|napisał)\s?:[ \t]*$",
    re.MULTILINE,
)


#: How much text after an attribution line is looked at to see whether it is quoted.
_QUOTE_WINDOW = 4000


def quoted_history(body: str, *, quoted_by_marks: bool = True) -> list[HeadingMark]:
    """Level-1 headings over each message a plain-text reply or forward quotes: the first line
    of its Outlook header block ("From: Ana <...>" with "Sent:", "To:", "Subject:" below it) or
    the attribution line above a ``>``-quoted message, most of whose lines after it are quoted
    (``quoted_by_marks``; an HTML body's text, whose quote was a ``<blockquote>``, has no marks:
    there the line is enough).

    Why: a reply holds every earlier message of its thread under its own text; read as one
    body, chunks mixed the new text with the old. As sections, each quoted message is chunked
    apart, its heading path saying whose it is; nothing is left out (the earlier message may be
    in no other file)."""
    marks: list[HeadingMark] = []
    for found in _QUOTED_FROM.finditer(body):
        following = body[found.end() : found.end() + 600].split("\n")[1:5]
        if sum(1 for line in following if _QUOTED_FIELDS.match(line.strip())) >= 2:
            marks.append(_mark(body, found.start(), found.end()))
    for found in _ATTRIBUTION.finditer(body):
        window = body[found.end() : found.end() + _QUOTE_WINDOW]  # bounded: a digest holds
        after = [line for line in window.split("\n") if line.strip()]  # thousands of these
        quoted = sum(1 for line in after if line.lstrip().startswith(">"))
        if after and (not quoted_by_marks or quoted >= 0.8 * len(after)):
            marks.append(_mark(body, found.start(), found.end()))
    marks.sort(key=lambda mark: mark.start)
    return [mark for k, mark in enumerate(marks) if k == 0 or mark.start >= marks[k - 1].end]


def _merged(headings: list[HeadingMark], quoted: list[HeadingMark]) -> list[HeadingMark]:
    """An HTML body's own headings with its quoted messages' (none overlapping one)."""
    kept = [q for q in quoted if not any(h.start < q.end and q.start < h.end for h in headings)]
    return sorted([*headings, *kept], key=lambda mark: mark.start)


def _mark(body: str, start: int, end: int) -> HeadingMark:
    return HeadingMark(start, end, 1, " ".join(body[start:end].split()))


def _metadata(message: Message) -> dict[str, str]:
    metadata = {f"mail.{name.lower()}": value for name, value in message.headers.items()}
    metadata["mail.subject"] = message.subject
    metadata["mail.attachments"] = str(len(message.attachments))
    if message.attachments:
        metadata["mail.attachment_names"] = "; ".join(a.file_name() for a in message.attachments)
    return metadata


def _html_marks(text: str, source_key: str) -> tuple[str, list[HeadingMark], list[TableMark]]:
    """An HTML body's text, heading and table marks, as ``html.parse`` extracts them."""
    deadline = current_deadline(source_key)
    tree = LexborHTMLParser(html.cap_nesting(text))
    extractor = html._Extractor()
    top = tree.body if tree.body is not None else tree.root
    if top is not None:
        extractor.run(top, deadline)
    del top, tree
    extractor.heading = None
    layer = extractor.layer.value()
    headings = [
        HeadingMark(h.start, h.end, h.level, " ".join(layer[h.start : h.end].split()))
        for h in extractor.headings
    ]
    return layer, headings, extractor.tables


def _shifted(table: TableMark, offset: int) -> TableMark:
    header = (table.header[0] + offset, table.header[1] + offset) if table.header else None
    rows = tuple((a + offset, b + offset) for a, b in table.rows)
    return TableMark(table.start + offset, table.end + offset, header, rows)


__all__ = [
    "EMLX_MEDIA_TYPE",
    "EML_MEDIA_TYPE",
    "MAX_MIME_NESTING",
    "MAX_MIME_PARTS",
    "MEDIA_TYPES",
    "MSG_MEDIA_TYPE",
    "Attachment",
    "Message",
    "emlx_message",
    "parse",
    "read_message",
    "refuse_mime_bomb",
]
