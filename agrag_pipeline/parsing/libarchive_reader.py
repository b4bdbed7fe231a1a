"""7-Zip (``.7z``) and RAR (``.rar``, RAR 4 and 5) archives and zstd-compressed files
(``.tar.zst``/``.tzst``, or a single ``report.csv.zst``) as containers, read by libarchive: like
a ``.zip``'s or a ``.tar``'s, each member is a document of its own (``agrag_pipeline.derived``)
and the container's own text is its listing (``tararchive.listing``).

Why libarchive (BSD-2; Debian's ``libarchive13``, through libarchive-c, CC0): it is the one
permissive, maintained reader of all three (py7zr is LGPL; the RAR libraries are unrar's
licence or wrappers calling the ``unrar`` program), the same code bsdtar and the BSDs use, and
it never writes a file: members are read into memory. Budgets as for a tar: at most
``tararchive.MAX_UNPACKED_BYTES`` unpacked from one archive (checked while the data streams, so
a bomb whose sizes lie is stopped there too), at most ``tararchive.MAX_MEMBERS`` entries; links
are listed, never followed; an encrypted member (or an archive whose names are encrypted) is
named as password-protected. A solid 7z or RAR must be unpacked from its start to reach any
member, so an archive's members are unpacked once per process for the last two archives read
(as ``tararchive`` keeps its streams).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator

import libarchive
import libarchive.ffi
from libarchive.exception import ArchiveError

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import tararchive
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, DocumentTooLargeError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.recent import RecentByContent
from agrag_pipeline.parsing.tararchive import Member, listing

SEVEN_ZIP_MEDIA_TYPE = "application/x-7z-compressed"
RAR_MEDIA_TYPE = "application/vnd.rar"
ZSTD_MEDIA_TYPE = "application/zstd"
MEDIA_TYPES = frozenset({SEVEN_ZIP_MEDIA_TYPE, RAR_MEDIA_TYPE, ZSTD_MEDIA_TYPE})

_MAGIC = (
    (b"7z\xbc\xaf\x27\x1c", SEVEN_ZIP_MEDIA_TYPE),
    (b"Rar!\x1a\x07\x00", RAR_MEDIA_TYPE),
    (b"Rar!\x1a\x07\x01\x00", RAR_MEDIA_TYPE),
    (b"\x28\xb5\x2f\xfd", ZSTD_MEDIA_TYPE),
)
_NAMES = {SEVEN_ZIP_MEDIA_TYPE: "7-Zip", RAR_MEDIA_TYPE: "RAR", ZSTD_MEDIA_TYPE: "zstd"}
_ZSTD_SUFFIXES = (".zst", ".zstd")


def media_type_of(head: bytes) -> str | None:
    """The archive or compressed type ``head`` starts with (7z, RAR, zstd), or None."""
    for magic, media_type in _MAGIC:
        if head.startswith(magic):
            return media_type
    return None


#: ``archive_entry_is_encrypted`` (libarchive 3.2+), which libarchive-c does not wrap: declared
#: through its own ``ffi`` helper, with the entry's pointer type, so an encrypted member is said to
#: be one (reading it gives messages such as RAR's "Prefix found").
_is_encrypted = libarchive.ffi.ffi(
    "entry_is_encrypted", [libarchive.ffi.c_archive_entry_p], ctypes.c_int
)


def _problem(exc: ArchiveError) -> str:
    message = getattr(exc, "msg", None)
    if not message:  # libarchive gave up without a word (a fatal return, no error string)
        return (
            "not readable: libarchive gave up on it (damaged, or packed by a method it does "
            "not read)"
        )
    message = str(message).split(" (errno=")[0]
    if "encrypt" in message.lower() or "passphrase" in message.lower():
        return f"password-protected (encrypted): not read ({message})"
    return f"not readable: {message}"


def _entries(raw: bytes, source_key: str, format_name: str) -> list[Member]:
    deadline = current_deadline(source_key)
    out: list[Member] = []
    total = 0
    limit = tararchive.MAX_UNPACKED_BYTES
    with libarchive.memory_reader(raw, format_name=format_name) as archive:
        for count, entry in enumerate(archive, 1):
            deadline.tick(f"archive entry {count:,}")
            if count > tararchive.MAX_MEMBERS:
                note = f"more than {tararchive.MAX_MEMBERS:,} entries: the rest not read"
                out.append(Member("", 0, None, note))
                break
            name = str(entry.pathname or "")
            name = name[2:] if name.startswith("./") else name
            if format_name == "raw":
                name = tararchive.member_name(source_key, _ZSTD_SUFFIXES)
            if entry.isdir or not name:
                continue
            if entry.issym or entry.islnk:
                target = entry.linkpath or ""
                out.append(Member(name, 0, None, f"a link to {target!r}: not followed"))
                continue
            if not entry.isfile:
                out.append(Member(name, 0, None, "not a regular file: not read"))
                continue
            if _is_encrypted(entry._entry_p):
                note = "password-protected (encrypted): not read"
                out.append(Member(name, entry.size or 0, None, note))
                continue
            blocks: list[bytes] = []
            try:
                for block in entry.get_blocks():
                    total += len(block)
                    if total > limit:
                        raise DocumentTooLargeError(
                            source_key,
                            f"it unpacks to over {limit:,} bytes (a decompression "
                            "bomb, or too large to read): not unpacked",
                        )
                    blocks.append(bytes(block))
            except ArchiveError as exc:
                out.append(Member(name, entry.size or 0, None, _problem(exc)))
                if "encrypt" not in str(exc).lower():
                    break  # a damaged stream: what follows cannot be trusted
                continue
            data = b"".join(blocks)
            out.append(Member(name, len(data), data))
    return out


def _unpack(raw: bytes, media_type: str, source_key: str) -> list[Member]:
    if media_type == ZSTD_MEDIA_TYPE:
        # Decompressed whole (libarchive's raw format: one entry), then a tar's members are read
        # as any tar's; "all formats" would take a CSV for an mtree file.
        single = _read_entries(raw, source_key, "raw")
        if len(single) == 1 and single[0].data is not None and tararchive.is_tar(single[0].data):
            # Kept in this module's cache only: not hashed and kept a second time by tar's.
            data = single[0].data
            return list(tararchive.read_members(data, tararchive.TAR_MEDIA_TYPE, source_key))
        return single
    format_name = "7zip" if media_type == SEVEN_ZIP_MEDIA_TYPE else "rar"
    if raw[:8].startswith(b"Rar!\x1a\x07\x01"):
        format_name = "rar5"
    return _read_entries(raw, source_key, format_name)


def _read_entries(raw: bytes, source_key: str, format_name: str) -> list[Member]:
    """The archive's members, or ``CorruptDocumentError`` naming the file."""
    try:
        return _entries(raw, source_key, format_name)
    except ArchiveError as exc:
        media_type = media_type_of(raw[:8]) or ZSTD_MEDIA_TYPE
        problem = _problem(exc)
        raise CorruptDocumentError(
            source_key, f"not a readable {_NAMES[media_type]} archive: {problem}"
        ) from exc


#: The last archives unpacked (``recent``): a solid archive unpacks from its start for each
#: member read.
_UNPACKED: RecentByContent[list[Member]] = RecentByContent(keep=2)


def members(raw: bytes, media_type: str, source_key: str) -> Iterator[Member]:
    """Each member of the archive or compressed file ``raw``, in order.

    Raises:
        DocumentTooLargeError: it unpacks past ``MAX_UNPACKED_BYTES``.
        CorruptDocumentError: not an archive of its kind, or damaged before any member.
    """
    if media_type_of(raw[:8]) != media_type:
        raise CorruptDocumentError(
            source_key,
            f"not a {_NAMES[media_type]} file (no {_NAMES[media_type]} signature): a renamed or "
            "damaged file",
        )
    found = _UNPACKED.get(raw, media_type, lambda: _unpack(raw, media_type, source_key))
    yield from found


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The container's listing: a heading naming it, then one line per member."""
    found = list(members(raw, document.media_type, document.source_key))
    single = document.media_type == ZSTD_MEDIA_TYPE and len(found) == 1
    return listing(document, found, "Compressed file" if single else "Archive")


__all__ = [
    "MEDIA_TYPES",
    "RAR_MEDIA_TYPE",
    "SEVEN_ZIP_MEDIA_TYPE",
    "ZSTD_MEDIA_TYPE",
    "media_type_of",
    "members",
    "parse",
]
