"""Tar archives (``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``) and single compressed
files (``report.csv.gz``, ``ls.1.gz``, ``.bz2``, ``.xz``) as containers: like a ``.zip``, the
container's own text is its listing and each member is a document of its own
(``agrag_pipeline.derived``); a single compressed file holds one member, named as the file less
its compression suffix.

Unlike a zip, a tar has no directory: listing one means decompressing the whole stream. So the
stream is decompressed in steps with a ceiling (``MAX_UNPACKED_BYTES``): past it the file is
refused as a decompression bomb or too large, before any member is read, naming the file; and
at most ``MAX_MEMBERS`` entries are looked at. Only regular files are members: symbolic and
hard links, devices and FIFOs are listed as not read (a link is never followed), and a member
named to climb out (``../x``, ``/etc/x``) is refused by ``derived_keys`` as for a zip. Python's
``tarfile`` reads; nothing is ever written to disk.
"""

from __future__ import annotations

import bz2
import io
import lzma
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from agrag_pipeline.models import Document
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentTooLargeError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.recent import RecentByContent
from agrag_pipeline.parsing.tree import build_sections, listing_marks

TAR_MEDIA_TYPE = "application/x-tar"
GZIP_MEDIA_TYPE = "application/gzip"
BZIP2_MEDIA_TYPE = "application/x-bzip2"
XZ_MEDIA_TYPE = "application/x-xz"
#: A single compressed file's type, by its compression.
COMPRESSED_MEDIA_TYPES = frozenset({GZIP_MEDIA_TYPE, BZIP2_MEDIA_TYPE, XZ_MEDIA_TYPE})
MEDIA_TYPES = COMPRESSED_MEDIA_TYPES | {TAR_MEDIA_TYPE}

#: The most a stream may decompress to (the derived documents' budget per file is 256 MiB).
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
#: More tar entries than this are not looked at (the listing says where it stopped).
MAX_MEMBERS = 10_000
_STEP = 1024 * 1024

_GZIP_MAGIC = b"\x1f\x8b"
_BZIP2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_NAMES = {GZIP_MEDIA_TYPE: "gzip", BZIP2_MEDIA_TYPE: "bzip2", XZ_MEDIA_TYPE: "xz"}
_SUFFIXES = {
    GZIP_MEDIA_TYPE: (".gz", ".gzip", ".z"),
    BZIP2_MEDIA_TYPE: (".bz2",),
    XZ_MEDIA_TYPE: (".xz",),
}


def compression(head: bytes) -> str | None:
    """The compressed file type ``head`` starts with (gzip, bzip2, xz), or None."""
    if head.startswith(_GZIP_MAGIC):
        return GZIP_MEDIA_TYPE
    if head.startswith(_BZIP2_MAGIC) and head[3:4].isdigit():
        return BZIP2_MEDIA_TYPE
    if head.startswith(_XZ_MAGIC):
        return XZ_MEDIA_TYPE
    return None


def is_tar(data: bytes) -> bool:
    """A POSIX (ustar) or GNU tar header at the start of ``data``."""
    return data[257:262] == b"ustar"


_STREAM_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)


def unpacked_head(raw: bytes, media_type: str, size: int = 1024) -> bytes:
    """The first ``size`` decompressed bytes of a (possibly truncated) stream, or b""."""
    try:
        return bytes(_decompressor(media_type).decompress(raw, max_length=size))
    except _STREAM_ERRORS:
        return b""


def _decompressor(media_type: str) -> Any:
    if media_type == GZIP_MEDIA_TYPE:
        return zlib.decompressobj(wbits=31)  # gzip's header and trailer
    if media_type == BZIP2_MEDIA_TYPE:
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor()


def unpack(
    raw: bytes, media_type: str, source_key: str, limit: int | None = None
) -> tuple[bytes, bool]:
    """The decompressed stream (several streams one after another joined) and whether it was
    whole: a truncated file (a download cut short) gives what its bytes hold, ``False``.
    Read in steps and refused past ``limit`` (default: ``MAX_UNPACKED_BYTES``).

    Raises:
        DocumentTooLargeError: it decompresses past ``limit`` (a bomb or a very large file).
        CorruptDocumentError: damaged data (not merely cut short), or cut before any content.
    """
    deadline = current_deadline(source_key)
    limit = MAX_UNPACKED_BYTES if limit is None else limit
    out: list[bytes] = []
    total = 0
    pending = raw
    try:
        while True:
            decompressor = _decompressor(media_type)
            while not decompressor.eof:
                deadline.tick("decompressing")
                chunk = decompressor.decompress(pending, max_length=_STEP)
                if media_type == GZIP_MEDIA_TYPE:  # zlib hands back what it did not take
                    pending = decompressor.unconsumed_tail
                    starved = not chunk and not pending
                else:  # bz2 and lzma keep it
                    pending = b""
                    starved = not chunk and decompressor.needs_input
                total += len(chunk)
                if total > limit:
                    raise DocumentTooLargeError(
                        source_key,
                        f"it decompresses to over {limit:,} bytes (a decompression bomb, or "
                        "too large to read): not unpacked",
                    )
                out.append(chunk)
                if starved:  # the input ended inside the stream
                    if not total:
                        raise CorruptDocumentError(
                            source_key, "the compressed data ends before any of its content"
                        )
                    return b"".join(out), False
            pending = decompressor.unused_data.lstrip(b"\0")
            if not pending:
                return b"".join(out), True
    except _STREAM_ERRORS as exc:
        raise CorruptDocumentError(source_key, f"not readable compressed data: {exc}") from exc


#: The members of the last archives read (``recent``), with the error that stopped the reading
#: if one did: an archive's members are read one document at a time, and each read would
#: otherwise decompress the stream and walk every entry before the one it wants.
_UNPACKED: RecentByContent[tuple[list[Member], DocumentError | None]] = RecentByContent(keep=2)


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of a container: its name, size and bytes (None: not read, ``problem`` says
    why)."""

    name: str
    size: int
    data: bytes | None
    problem: str | None = None


def member_name(source_key: str, suffixes: tuple[str, ...]) -> str:
    """The one member of a single compressed file: its name less its compression suffix (one
    of ``suffixes``, any case), else its name and ``.unpacked``."""
    name = PurePosixPath(source_key).name
    for suffix in suffixes:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name + ".unpacked"


def members(raw: bytes, media_type: str, source_key: str) -> Iterator[Member]:
    """Each member of the tar or compressed file ``raw``, in order (read once per process for
    the last two archives).

    Raises:
        DocumentTooLargeError, CorruptDocumentError: as ``unpack``, and for a tar that is not
            one (naming the file); after the members read before the damage, if any.
    """
    listed, error = _UNPACKED.get(raw, media_type, lambda: _listed(raw, media_type, source_key))
    yield from listed
    if error is not None:
        raise type(error)(error.source_key, error.problem)


def _listed(
    raw: bytes, media_type: str, source_key: str
) -> tuple[list[Member], DocumentError | None]:
    found: list[Member] = []
    try:
        found.extend(read_members(raw, media_type, source_key))
    except DocumentError as exc:
        if not found:
            raise  # nothing read: not remembered, raised as it is
        return found, exc
    return found, None


def read_members(raw: bytes, media_type: str, source_key: str) -> Iterator[Member]:
    """``members`` read now, remembered nowhere: for a caller that keeps the result itself."""
    deadline = current_deadline(source_key)
    compressed = compression(raw[:8])  # a .tar.gz is a tar by its content, gzip by its bytes
    if compressed is None and media_type in COMPRESSED_MEDIA_TYPES:
        raise CorruptDocumentError(
            source_key,
            f"not {_NAMES[media_type]}-compressed data (no {_NAMES[media_type]} signature): a "
            "renamed or damaged file",
        )
    data, whole = (raw, True) if compressed is None else unpack(raw, compressed, source_key)
    cut = (
        None
        if whole
        else f"the file is cut short (a truncated download?): read up to {len(data):,} bytes "
        "of its content"
    )
    if media_type != TAR_MEDIA_TYPE and compressed is not None and not is_tar(data):
        yield Member(member_name(source_key, _SUFFIXES[compressed]), len(data), data)
        if cut:
            yield Member("", 0, None, cut)
        return
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:")  # noqa: SIM115 (closed below)
    except tarfile.TarError as exc:
        raise CorruptDocumentError(source_key, f"not a readable tar archive: {exc}") from exc
    with archive:
        count = 0
        while True:
            deadline.tick(f"tar entry {count:,}")
            try:
                info = archive.next()
            except tarfile.TarError as exc:
                if cut:  # the entries before the cut are read; say where it stopped
                    yield Member("", 0, None, f"{cut}; the entries after it are lost")
                    return
                raise CorruptDocumentError(source_key, f"a damaged tar entry: {exc}") from exc
            if info is None:
                if cut:
                    yield Member("", 0, None, cut)
                return
            count += 1
            if count > MAX_MEMBERS:
                yield Member("", 0, None, f"more than {MAX_MEMBERS:,} entries: the rest not read")
                return
            name = info.name[2:] if info.name.startswith("./") else info.name
            if info.isdir() or not name:
                continue
            if info.issym() or info.islnk():
                yield Member(name, 0, None, f"a link to {info.linkname!r}: not followed")
            elif not info.isfile():
                yield Member(name, 0, None, "not a regular file (a device or a FIFO): not read")
            elif info.offset_data + info.size > len(data):
                yield Member(name, info.size, None, "cut off where the file is cut short")
            else:
                extracted = archive.extractfile(info)
                yield Member(name, info.size, extracted.read() if extracted else b"")


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The container's listing: a heading naming it, then one line per member."""
    kind = "Archive" if document.media_type == TAR_MEDIA_TYPE else "Compressed file"
    return listing(document, members(raw, document.media_type, document.source_key), kind)


def listing(document: Document, found: Iterable[Member], kind: str) -> ParsedDocument:
    """A container's text: "<kind> <file name>" as its heading, then a table of one line per
    member (name, size, and why it is not read where it is not)."""
    lines: list[str] = []
    count = 0
    for member in found:
        count += member.data is not None
        line = f"{member.name} ({member.size:,} bytes)" if member.name else ""
        if member.problem is not None:
            line = f"{line}: {member.problem}" if line else member.problem
        lines.append(line)
    if kind == "Archive" or count != 1:
        document.metadata["archive.members"] = str(count)
    title = f"{kind} {PurePosixPath(document.source_key).name}"
    text, headings, tables = listing_marks(title, lines)
    sections = build_sections(text, document, headings, tables)
    return ParsedDocument(document=document, text_layer=text, sections=sections)


__all__ = [
    "BZIP2_MEDIA_TYPE",
    "COMPRESSED_MEDIA_TYPES",
    "GZIP_MEDIA_TYPE",
    "MAX_MEMBERS",
    "MAX_UNPACKED_BYTES",
    "MEDIA_TYPES",
    "TAR_MEDIA_TYPE",
    "XZ_MEDIA_TYPE",
    "Member",
    "compression",
    "is_tar",
    "listing",
    "member_name",
    "members",
    "parse",
    "read_members",
    "unpack",
    "unpacked_head",
]
