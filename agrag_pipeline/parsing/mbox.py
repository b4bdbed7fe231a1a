"""Unix mailboxes (``.mbox``, ``.mbx``; Thunderbird's extensionless folder files such as
``Inbox``; a mailing list's monthly archive saved as ``.txt``) as containers: each message is a
document of its own, read as the ``.eml`` it would be saved as (``agrag_pipeline.derived``), and
the mailbox's own text is its listing (date, sender, subject of each message).

An mbox (RFC 4155) is messages one after another, each opened by a "From_" line (``From
sender date``). A body line that merely starts with "From " is common ("From Russia with
love"), and not every writer quotes it (mboxo, Thunderbird), so a line opens a message only
when it reads as a From_ line (its sender ``-``, Thunderbird's, or an address, as Gmail's
export writes with no date, or a time of day among its fields, as every ``ctime`` date has)
and the line after it is a header field. A message whose
``Content-Length`` header lands exactly on the next From_ line (Solaris, the content-length
variant) is cut there, whatever its body holds. Quoted lines (``>From ``, mboxrd) lose one
``>``.

A message's member name is its ``Message-ID`` (``<id@host>`` -> ``id@host.eml``), so a message
keeps its key while others are added or deleted around it (a mailbox is appended to, and
compacted); one without an ID is named by its place (``message-7.eml``). Two messages with one
ID: the second is listed as not read (``derived``: a second member of the same name).
"""

from __future__ import annotations

import bisect
import email.errors
import email.parser
import email.policy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.recent import RecentByContent
from agrag_pipeline.parsing.tree import build_sections, listing_marks

MEDIA_TYPE = "application/mbox"
#: A mailbox's messages are many more than an archive's members: at most this many are read.
MAX_MESSAGES = 20_000

_BOM = b"\xef\xbb\xbf"
#: A line starting "From " (the only place a message can start), at the start or after "\n".
_CANDIDATE = re.compile(rb"^From ", re.MULTILINE)
#: The rest of a From_ line: the sender (``-`` for Thunderbird), then the date's fields.
_FROM_LINE = re.compile(rb"From (\S+)([^\r\n]*)")
_TIME_OF_DAY = re.compile(rb"\b\d{1,2}:\d\d\b")
#: An RFC 5322 header field: printable characters but the colon, then a colon.
_HEADER_FIELD = re.compile(rb"[!-9;-~]+:")
_CONTENT_LENGTH = re.compile(rb"^Content-Length:[ \t]*(\d{1,12})[ \t]*\r?$", re.MULTILINE | re.I)
_HEADER_END = re.compile(rb"\r?\n\r?\n")
#: The most a message's header block is looked through for ``Content-Length`` and its end.
_MAX_HEADER_BYTES = 256 * 1024
_QUOTED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)
_MESSAGE_ID = re.compile(rb"^Message-ID:[ \t]*(?:\r?\n[ \t]+)?<?([^\s<>]+)>?", re.MULTILINE | re.I)
_UNSAFE_IN_NAME = re.compile(r"[/\\\x00-\x1f\x7f]|\.{2,}")


@dataclass(frozen=True, slots=True)
class MessageSpan:
    """One message of a mailbox: its member name and where its bytes lie (From_ line left
    out)."""

    name: str
    start: int
    end: int


def looks_like_mbox(head: bytes) -> bool:
    """``head`` opens with a From_ line followed by a header field (a BOM allowed)."""
    data = head[3:] if head.startswith(_BOM) else head
    return data.startswith(b"From ") and _opens_message(data, 0)


def _opens_message(data: bytes, at: int) -> bool:
    """Whether the "From " at ``at`` (a line start) is a From_ line before a header field."""
    line = _FROM_LINE.match(data, at)
    if line is None:
        return False
    sender, rest = line.group(1), line.group(2)
    if sender != b"-" and b"@" not in sender and _TIME_OF_DAY.search(rest) is None:
        return False
    end = data.find(b"\n", line.end())
    return end >= 0 and _HEADER_FIELD.match(data, end + 1) is not None


def _line_end(data: bytes, at: int) -> int:
    end = data.find(b"\n", at)
    return len(data) if end < 0 else end + 1


def _starts(data: bytes, first: int, source_key: str) -> list[int]:
    """Offsets of the From_ lines that open messages, in order; the first at ``first`` (after
    a BOM, where ``^`` does not match). Linear in the mailbox's size: every line starting
    "From " is looked at once, every message's header block within that message."""
    deadline = current_deadline(source_key)
    found = [first]
    for number, candidate in enumerate(_CANDIDATE.finditer(data, first + 1)):
        if number % 1024 == 0:
            deadline.tick("splitting the mailbox")
        if _opens_message(data, candidate.start()):
            found.append(candidate.start())
    # A message whose Content-Length lands on a later From_ line swallows the ones before it
    # (lines of its body that only looked like From_ lines).
    starts: list[int] = []
    index = 0
    while index < len(found):
        at = found[index]
        starts.append(at)
        end = found[index + 1] if index + 1 < len(found) else len(data)
        by_length = _content_length_end(data, _line_end(data, at), end)
        if by_length > end:
            index = bisect.bisect_left(found, by_length, index + 1)
        else:
            index += 1
    return starts


def _content_length_end(data: bytes, start: int, next_start: int) -> int:
    """Where the message starting at ``start`` ends by its ``Content-Length``, when that lands
    on a From_ line that opens a message or the end of the mailbox; else ``next_start`` (split
    by From_ lines). Its header block is looked for before ``next_start`` only."""
    header_end = _HEADER_END.search(data, start, min(next_start, start + _MAX_HEADER_BYTES))
    if header_end is None:
        return next_start
    length = _CONTENT_LENGTH.search(data, start, header_end.start() + 1)
    if length is None:
        return next_start
    end = header_end.end() + int(length.group(1))
    for candidate in (end, end + 1, end + 2):  # the separating blank line, "\n" or "\r\n"
        if candidate == len(data) or (
            candidate < len(data)
            and data[candidate - 1 : candidate] == b"\n"
            and data.startswith(b"From ", candidate)
            and _opens_message(data, candidate)
        ):
            return candidate
    return next_start


def _member_name(raw: bytes, start: int, end: int, number: int) -> str:
    """``<Message-ID>.eml`` made safe for a key, else ``message-<number>.eml``: the message
    from ``start`` to ``end`` of the mailbox, its header block read where it lies."""
    found = _MESSAGE_ID.search(raw, start, _header_block_end(raw, start, end))
    if found is not None:
        identifier = found.group(1).decode("utf-8", "replace").strip(".")
        identifier = _UNSAFE_IN_NAME.sub("_", identifier)[:150]
        if identifier:
            return identifier + ".eml"
    return f"message-{number}.eml"


def _header_block_end(raw: bytes, start: int, end: int) -> int:
    """Where the header block of the message from ``start`` to ``end`` ends (its last line
    break included; ``end`` when it has no blank line within ``_MAX_HEADER_BYTES``)."""
    found = _HEADER_END.search(raw, start, min(end, start + _MAX_HEADER_BYTES))
    return end if found is None else found.start() + 1


#: The last mailboxes split (``recent``): each message is read as a document of its own.
_SPLIT: RecentByContent[list[MessageSpan]] = RecentByContent(keep=2)


def spans(raw: bytes, source_key: str) -> list[MessageSpan]:
    """The messages of the mailbox ``raw``, in order (remembered for the last two mailboxes).

    Raises:
        CorruptDocumentError: ``raw`` does not open with a From_ line and a header field.
    """
    return _SPLIT.get(raw, MEDIA_TYPE, lambda: _split(raw, source_key))


def _split(raw: bytes, source_key: str) -> list[MessageSpan]:
    if not looks_like_mbox(raw[:8192]):
        raise CorruptDocumentError(
            source_key,
            "not a mailbox: an mbox opens with a 'From sender date' line followed by the "
            "first message's header fields",
        )
    starts = _starts(raw, len(_BOM) if raw.startswith(_BOM) else 0, source_key)
    result: list[MessageSpan] = []
    for number, (at, end) in enumerate(zip(starts, [*starts[1:], len(raw)], strict=True), 1):
        start = _line_end(raw, at)
        result.append(MessageSpan(_member_name(raw, start, end, number), start, end))
    return result


def message_bytes(raw: bytes, span: MessageSpan) -> bytes:
    """One message as an ``.eml`` holds it: the separating blank line left out, mboxrd's
    ``>From`` quoting undone."""
    data = raw[span.start : span.end]
    if data.endswith(b"\r\n\r\n"):
        data = data[:-2]
    elif data.endswith(b"\n\n"):
        data = data[:-1]
    return _QUOTED_FROM.sub(rb"\1", data) if b">From " in data else data


def messages(raw: bytes, source_key: str) -> Iterator[tuple[str, bytes]]:
    """(member name, message bytes) for each message of the mailbox, in order."""
    for span in spans(raw, source_key):
        yield span.name, message_bytes(raw, span)


def message(raw: bytes, name: str, source_key: str) -> bytes | None:
    """The first message named ``name`` (None: the mailbox holds none of that name)."""
    for span in spans(raw, source_key):
        if span.name == name:
            return message_bytes(raw, span)
    return None


_HEADERS = email.parser.BytesHeaderParser(policy=email.policy.default)


def _summary(raw: bytes, span: MessageSpan) -> str:
    """ "date, sender: subject" of one message, from its header fields."""
    try:
        headers = _HEADERS.parsebytes(
            raw[span.start : _header_block_end(raw, span.start, span.end)]
        )
        fields = [str(headers.get(name, "") or "").strip() for name in ("Date", "From")]
        subject = str(headers.get("Subject", "") or "").strip()
    except (ValueError, TypeError, IndexError, AttributeError, email.errors.MessageError):
        # a header the library cannot decode is shown as missing: the listing is not the mail
        fields, subject = [], ""
    who = ", ".join(f for f in fields if f)
    return f"{who}: {subject or '(no subject)'}" if who else subject or "(no subject)"


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The mailbox's listing: a heading naming it, then one line per message."""
    key = document.source_key
    found = spans(raw, key)
    lines = [
        " ".join(f"{span.name} ({span.end - span.start:,} bytes) {_summary(raw, span)}".split())
        for span in found[:MAX_MESSAGES]
    ]
    if len(found) > MAX_MESSAGES:
        lines.append(f"more than {MAX_MESSAGES:,} messages: the rest are not read")
    document.metadata["mailbox.messages"] = str(len(found))
    text, headings, tables = listing_marks(f"Mailbox {PurePosixPath(key).name}", lines)
    sections = build_sections(text, document, headings, tables)
    return ParsedDocument(document=document, text_layer=text, sections=sections)


__all__ = [
    "MAX_MESSAGES",
    "MEDIA_TYPE",
    "MessageSpan",
    "looks_like_mbox",
    "message",
    "message_bytes",
    "messages",
    "parse",
    "spans",
]
