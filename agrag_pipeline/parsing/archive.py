"""Safe opening of ZIP-based formats (OOXML: DOCX, PPTX, XLSX) and of the XML parts inside.

A ZIP's central directory declares every member's compressed and uncompressed size, and
``zipfile`` never returns more bytes than a member declares (a member that inflates past its
declared size fails its CRC check). So a zip bomb is refused from the directory alone, before a
single member is read: too many members, declared uncompressed sizes summing past the limit,
a member whose compression ratio is past the limit, or members whose compressed data overlap
(the "overlapping files" bomb, which Python 3.11's ``zipfile`` does not detect itself).

OOXML parts never carry a DTD, so an XML part with a ``<!DOCTYPE`` (billion laughs, external
entities) is refused outright by ``parse_xml`` instead of being parsed; the lxml parser it uses
also resolves no entities, loads no DTD and never touches the network.

Member names are read as their writer meant them: the ZIP format says a name without the
UTF-8 flag is in code page 437, but tools write the system's code page there (GBK in China,
cp866 in Russia, Shift_JIS in Japan) or UTF-8 without setting the flag. Such names are decoded
as UTF-8 when they are valid UTF-8, else in the code page the names read most plausibly in
(``encoding``'s detector; a Western reading stays cp437, as the format says).

Errors: ``CorruptDocumentError`` for what is not a readable ZIP (truncated, encrypted, a legacy
binary Office file, one part of a split archive), ``DocumentTooLargeError`` for what is over a
limit. Both name the file. A user's ``.zip`` archive (``members_may_fail``) is read though some
of its members are encrypted or packed by a method we cannot unpack: those members fail alone
when read, each with its reason.
"""

from __future__ import annotations

import io
import itertools
import re
import struct
import zipfile

import olefile
from lxml import etree

from agrag_pipeline.parsing.encoding import detected_codec
from agrag_pipeline.parsing.errors import CorruptDocumentError, DocumentTooLargeError

#: More members than this is refused (real OOXML packages hold tens to a few thousand).
MAX_MEMBERS = 10_000
#: The declared uncompressed sizes of all members together may not exceed this.
MAX_UNCOMPRESSED_BYTES = 512 * 1024 * 1024
#: A member larger than ``RATIO_FLOOR_BYTES`` may not inflate more than this many times.
#: (Ordinary XML parts compress 5-50x, generated tables of identical cells ~300x; deflate's
#: ceiling, reached by runs of one byte, is about 1030x.) The size limits bound the rest.
MAX_RATIO = 500.0
#: Members below this size are not ratio-checked: they cost little, and generated XML of
#: repeated rows or cells compresses 200-300x honestly (seen here on a 1 MB table part).
RATIO_FLOOR_BYTES = 8 * 1024 * 1024

#: One XML part larger than this is refused before it is parsed (an lxml tree takes several
#: times its text in memory; a 1,000-page document's main part is some tens of MB).
MAX_XML_PART_BYTES = 128 * 1024 * 1024

#: The signature of an OLE compound file: a legacy .doc/.xls/.ppt, or an encrypted OOXML file.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_EOCD = b"PK\x05\x06"
_SUPPORTED_COMPRESSION = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
)
#: Names of the ZIP methods ``zipfile`` cannot unpack that real archives still use.
_METHOD_NAMES = {
    1: "Shrink (PKZIP 1)",
    6: "Implode (PKZIP 1)",
    9: "Deflate64",
    93: "Zstandard",
    95: "XZ",
    98: "PPMd",
    99: "AES encryption (WinZip)",
}
#: A DTD in an XML prolog, in UTF-8 or either UTF-16 byte order.
_DOCTYPE = re.compile(
    rb"<!DOCTYPE|<\x00!\x00D\x00O\x00C\x00T\x00Y\x00P\x00E\x00|\x00<\x00!\x00D\x00O\x00C\x00T\x00Y\x00P\x00E",
    re.IGNORECASE,
)


def open_zip(
    raw: bytes,
    source_key: str,
    *,
    max_members: int = MAX_MEMBERS,
    max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES,
    max_ratio: float = MAX_RATIO,
    members_may_fail: bool = False,
) -> zipfile.ZipFile:
    """The ZIP archive in ``raw``, after its central directory passed the bomb checks.

    ``members_may_fail``: an encrypted member or one packed by an unsupported method does not
    refuse the archive (a user's ``.zip``); ``read_member`` then refuses that member alone.

    Raises:
        CorruptDocumentError: not a ZIP, truncated, encrypted, or an unsupported compression.
        DocumentTooLargeError: too many members, too large declared sizes, a ratio past
            ``max_ratio`` or overlapping members (a zip bomb).
    """
    if raw.startswith(_OLE_MAGIC):
        raise CorruptDocumentError(source_key, _ole_problem(raw))
    declared = _declared_member_count(raw)
    if declared is not None and declared > max_members:
        raise DocumentTooLargeError(
            source_key, f"the ZIP declares {declared:,} members (limit {max_members:,})"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as exc:
        raise CorruptDocumentError(
            source_key, f"not a readable ZIP package (truncated or damaged?): {exc}"
        ) from exc
    try:
        renamed = _decode_legacy_names(archive)
        renamed = _slash_separated_names(archive) or renamed
        if renamed:  # ``zipfile`` looks members up by name in this map
            archive.NameToInfo = {info.filename: info for info in archive.infolist()}
        check_archive(
            archive,
            source_key,
            max_members=max_members,
            max_uncompressed_bytes=max_uncompressed_bytes,
            max_ratio=max_ratio,
            members_may_fail=members_may_fail,
        )
    except BaseException:
        archive.close()
        raise
    return archive


def _ole_problem(raw: bytes) -> str:
    """Why an OLE compound file is no ZIP package: encrypted OOXML (its ``EncryptedPackage``
    stream) is password-protected; anything else is a legacy binary file behind a new name."""
    try:
        with olefile.OleFileIO(io.BytesIO(raw)) as ole:
            encrypted = ole.exists("EncryptedPackage")
    except Exception:  # olefile raises OSError, struct.error, IndexError on damage
        return "a damaged OLE compound file (truncated?), not a ZIP package"
    if encrypted:
        return (
            "a password-protected (encrypted) Office file: it cannot be read without its password"
        )
    return (
        "an OLE compound file, not a ZIP package: a legacy binary Office file (.doc/.xls/.ppt) "
        "with an OOXML extension? Rename it to its real extension"
    )


def check_archive(
    archive: zipfile.ZipFile,
    source_key: str,
    *,
    max_members: int = MAX_MEMBERS,
    max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES,
    max_ratio: float = MAX_RATIO,
    members_may_fail: bool = False,
) -> None:
    """Refuse ``archive`` if its central directory describes a bomb or an unreadable member
    (with ``members_may_fail``, an encrypted or unsupported member is left to ``read_member``)."""
    infos = archive.infolist()
    if len(infos) > max_members:
        raise DocumentTooLargeError(
            source_key, f"the ZIP holds {len(infos):,} members (limit {max_members:,})"
        )
    if any(info.volume for info in infos):
        # Member offsets count in other files (disks): only the whole set can be read.
        raise CorruptDocumentError(
            source_key,
            "one part of a split (multi-volume) ZIP archive: its members lie in the other "
            "parts (.z01, .z02, ...), which are needed to read it",
        )
    total = 0
    for info in infos:
        problem = member_problem(info)
        if problem is not None and not members_may_fail:
            raise CorruptDocumentError(source_key, f"ZIP member {info.filename!r} {problem}")
        total += info.file_size
        if total > max_uncompressed_bytes:
            raise DocumentTooLargeError(
                source_key,
                f"the ZIP's members inflate to more than {max_uncompressed_bytes:,} bytes "
                "(a zip bomb?)",
            )
        if info.file_size >= RATIO_FLOOR_BYTES:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > max_ratio:
                raise DocumentTooLargeError(
                    source_key,
                    f"ZIP member {info.filename!r} inflates {ratio:,.0f}x "
                    f"(limit {max_ratio:,.0f}x; a zip bomb?)",
                )
    _check_no_overlap(infos, source_key)


def member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why member ``info`` cannot be unpacked (encrypted, an unsupported method), or None."""
    if info.flag_bits & 0x1:
        return "is encrypted (password-protected)"
    if info.compress_type not in _SUPPORTED_COMPRESSION:
        method = _METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
        return f"is packed by {method}, a compression this reader does not unpack"
    return None


def _decode_legacy_names(archive: zipfile.ZipFile) -> bool:
    """Re-decode the names ``zipfile`` read as code page 437 (no UTF-8 flag): as UTF-8 where
    they are valid UTF-8, else in the code page they read most plausibly in (module
    docstring). ``orig_filename`` is kept: ``zipfile`` checks local headers against it.
    True when a name was re-decoded."""
    legacy = [i for i in archive.infolist() if not i.flag_bits & 0x800]
    raw_names = [i.orig_filename.encode("cp437") for i in legacy]
    if not any(max(name, default=0) > 0x7F for name in raw_names):
        return False
    joined = b"\n".join(raw_names)
    try:
        joined.decode("utf-8")
        codec = "utf-8"
    except UnicodeDecodeError:
        codec = detected_codec(joined) or "cp437"
        if codec in ("windows-1252", "cp1252", "latin_1", "iso8859_1", "ascii"):
            codec = "cp437"  # a Western reading: the code page the format names
    if codec == "cp437":
        return False
    for info, raw_name in zip(legacy, raw_names, strict=True):
        try:
            name = raw_name.decode(codec)
        except UnicodeDecodeError:
            continue
        info.filename = name.split("\x00", 1)[0]
    return True


def _slash_separated_names(archive: zipfile.ZipFile) -> bool:
    """Names written with backslashes between folders (``xl\\workbook.xml``, by some Windows
    tools; the ZIP format asks for ``/``) read with slashes, as Info-ZIP's ``unzip`` and Excel
    read them, where no other member already has that name. ``orig_filename`` is kept.
    True when a name was changed."""
    names = {info.filename for info in archive.infolist()}
    renamed = False
    for info in archive.infolist():
        if "\\" in info.filename:
            slashed = info.filename.replace("\\", "/")
            if slashed not in names:
                names.discard(info.filename)
                names.add(slashed)
                info.filename = slashed
                renamed = True
    return renamed


def _check_no_overlap(infos: list[zipfile.ZipInfo], source_key: str) -> None:
    """Members whose local header + data run into the next member's header are a bomb."""
    ordered = sorted(infos, key=lambda i: i.header_offset)
    for this, following in itertools.pairwise(ordered):
        # 30 bytes of fixed local header; its name (as stored: UTF-8 when flagged, else bytes
        # ``zipfile`` read as cp437) and extra field come before the data.
        stored = this.orig_filename.encode("utf-8" if this.flag_bits & 0x800 else "cp437")
        data_end = this.header_offset + 30 + len(stored) + this.compress_size
        if this.header_offset == following.header_offset or data_end > following.header_offset:
            raise DocumentTooLargeError(
                source_key,
                f"ZIP members {this.filename!r} and {following.filename!r} overlap "
                "(an overlapping-files zip bomb?)",
            )


def _declared_member_count(raw: bytes) -> int | None:
    """The member count of the end-of-central-directory record, read before ``zipfile`` does."""
    at = raw.rfind(_EOCD, max(0, len(raw) - 65_557))
    if at < 0 or at + 22 > len(raw):
        return None
    (count,) = struct.unpack_from("<H", raw, at + 10)
    return None if count == 0xFFFF else int(count)  # 0xFFFF: the real count is in ZIP64


def read_member(
    archive: zipfile.ZipFile, name: str, source_key: str, *, max_bytes: int | None = None
) -> bytes:
    """The bytes of member ``name`` (``KeyError`` if absent), errors wrapped as DocumentErrors."""
    info = archive.getinfo(name)
    if max_bytes is not None and info.file_size > max_bytes:
        raise DocumentTooLargeError(
            source_key, f"ZIP member {name!r} is {info.file_size:,} bytes (limit {max_bytes:,})"
        )
    problem = member_problem(info)
    if problem is not None:
        raise CorruptDocumentError(source_key, f"ZIP member {name!r} {problem}")
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise CorruptDocumentError(
            source_key, f"ZIP member {name!r} cannot be read: {exc}"
        ) from exc


#: lxml options for every XML the pipeline reads (OOXML parts, JATS): no entity resolved, no
#: DTD loaded, no network, no huge trees. ``etree.iterparse`` takes them as keywords.
HARDENED_XML_OPTIONS: dict[str, bool] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
}


def hardened_xml_parser() -> etree.XMLParser:
    """An lxml parser with ``HARDENED_XML_OPTIONS``."""
    return etree.XMLParser(**HARDENED_XML_OPTIONS)


def refuse_dtd(data: bytes, source_key: str, part: str) -> None:
    """Raise if the XML ``data`` holds a DTD (entity expansion and external entities live there)."""
    if _DOCTYPE.search(data, 0, _prolog_end(data)):
        raise CorruptDocumentError(
            source_key,
            f"XML part {part!r} declares a DTD, which OOXML never uses (an entity-expansion or "
            "external-entity attack?): refused",
        )


def _prolog_end(data: bytes) -> int:
    """Where the root element starts (a DTD can only come before it); the end if not found."""
    pos = 0
    while True:
        at = data.find(b"<", pos)
        if at < 0:
            return len(data)
        nxt = data[at + 1 : at + 2]
        if nxt == b"\x00":  # UTF-16 little-endian: look at the next code unit
            nxt = data[at + 2 : at + 3]
        if nxt not in (b"?", b"!", b""):
            return at
        pos = at + 1


_STRICT = "http://purl.oclc.org/ooxml/"
_STRICT_URI = re.compile(r"http://purl\.oclc\.org/ooxml/([A-Za-z]+)/(.+)")


def transitional_uri(uri: str) -> str:
    """The Transitional namespace (or relationship type) for a Strict OOXML one, else ``uri``.

    Strict OOXML (ISO/IEC 29500 Strict) names the same vocabularies under
    ``http://purl.oclc.org/ooxml/<area>/<name>``; Transitional under
    ``http://schemas.openxmlformats.org/<area>/2006/<name>``.
    """
    match = _STRICT_URI.fullmatch(uri)
    if match is None:
        return uri
    return f"http://schemas.openxmlformats.org/{match.group(1)}/2006/{match.group(2)}"


def _to_transitional(root: etree._Element) -> None:
    """Rename Strict-namespace elements and attributes of ``root`` to Transitional ones."""
    for element in root.iter():
        tag = element.tag
        if isinstance(tag, str) and tag.startswith("{" + _STRICT):
            uri, local = tag[1:].split("}", 1)
            element.tag = f"{{{transitional_uri(uri)}}}{local}"
        for key in list(element.attrib):
            if key.startswith("{" + _STRICT):
                uri, local = key[1:].split("}", 1)
                value = element.attrib.pop(key)
                element.set(f"{{{transitional_uri(uri)}}}{local}", value)


def parse_xml(
    data: bytes, source_key: str, part: str, *, transitional: bool = True
) -> etree._Element:
    """The root element of an XML part, parsed with no DTD, no entities and no network.

    With ``transitional`` (the default) Strict OOXML names are mapped to Transitional ones, so
    one reader serves both conformance classes.
    """
    refuse_dtd(data, source_key, part)
    try:
        root = etree.fromstring(data, hardened_xml_parser())
    except etree.XMLSyntaxError as exc:
        raise CorruptDocumentError(
            source_key, f"XML part {part!r} is not well-formed: {exc}"
        ) from exc
    if root is None:
        raise CorruptDocumentError(source_key, f"XML part {part!r} is empty")
    if transitional and (_STRICT.encode() in data or _STRICT.encode("utf-16-le") in data):
        _to_transitional(root)
    return root


__all__ = [
    "MAX_MEMBERS",
    "MAX_RATIO",
    "MAX_UNCOMPRESSED_BYTES",
    "MAX_XML_PART_BYTES",
    "check_archive",
    "open_zip",
    "parse_xml",
    "read_member",
    "refuse_dtd",
    "transitional_uri",
]
