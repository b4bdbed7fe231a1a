"""Legacy binary Office (.doc, .xls, .ppt), OpenDocument (.odt, .ods, .odp, .odg, and flat
.fodt, .fods, .fodp), RTF, Word and Excel 2003's XML formats (a ``.xml``, or behind
``.doc``/``.xls``: ``detect``), Excel's binary ``.xlsb``, Visio and Publisher files, Apple
iWork, OpenOffice.org 1 and StarOffice, Works, WordPerfect, Windows Write, Lotus 1-2-3 and
Quattro Pro; and the older files saved as ``.doc`` or ``.ppt`` that LibreOffice reads (Word for
Windows 2.0 and Write's layout by their signatures, PowerPoint 4 by its ``PP40`` stream).

Each is checked here, then converted by LibreOffice (``libreoffice.convert``) to the OOXML
equivalent and read by our own DOCX/XLSX/PPTX parser, so the text layer and sections follow
the same rules as a ``.docx``/``.xlsx``/``.pptx`` (headings from styles, tables, slides);
drawings and page layouts (Visio, Publisher, ``.odg``) have no OOXML form we read and are laid
out as PDF for the PDF reader (``_FORMATS`` says which target each gets).

Checked before the converter starts (fast, clear per-file errors, no process for a bad file):

- an OLE file (.doc/.xls/.ppt) must be a readable compound file holding its format's main
  stream; a password-protected one (``msoffcrypto``: RC4/CryptoAPI/XOR-encrypted binaries, and
  encrypted OOXML, which is an OLE file too; an Excel 5/95 workbook by its FILEPASS record) is
  ``CorruptDocumentError`` saying "password-protected";
- a Windows Write file must start with Write's signature (LibreOffice reads any file it does
  not know as plain text: a renamed binary would read as noise);
- an OpenDocument file is a ZIP opened through ``archive.open_zip`` (zip bombs and truncation
  refused from its directory), whose ``mimetype`` must name the format; an encrypted one
  (``encryption-data`` in its manifest) is "password-protected";
- an RTF file must start with ``{\\rtf``;
- an ``.xlsb``, ``.vsdx`` or Apple iWork file must be a readable zip (an iWork package whose
  parts Apple encrypted is "password-protected"); StarOffice, Works, WordPerfect and Lotus
  files have no signature worth checking, and LibreOffice says when one is not what it claims;
- a Word or Excel 2003 XML file or a flat OpenDocument file must be well-formed XML without
  entity declarations (``jats.parse_xml``: billion laughs and external entities refused before
  LibreOffice sees it).
"""

from __future__ import annotations

import io
import re
import struct

import msoffcrypto
import olefile
from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import jats, libreoffice, pdf, powerpoint, spreadsheet, word
from agrag_pipeline.parsing.archive import open_zip, read_member
from agrag_pipeline.parsing.detect import (
    CONVERTED_BY_EXTENSION,
    DOC,
    EXCEL_2003_XML,
    FODP,
    FODS,
    FODT,
    KEYNOTE,
    LOTUS,
    NUMBERS,
    ODG,
    ODP,
    ODS,
    ODT,
    PAGES,
    PPT,
    PUB,
    QUATTRO,
    RTF,
    SDC,
    SDD,
    SDW,
    SXC,
    SXI,
    SXW,
    VSD,
    VSDX,
    WORD_2003_XML,
    WPD,
    WPS,
    WRITE,
    XLS,
    XLSB,
    extension,
)
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument

#: Apple iWork packages: zips, checked as such before LibreOffice (libetonyek) reads them.
IWORK_TYPES = (PAGES, KEYNOTE, NUMBERS)
#: Formats LibreOffice alone checks (StarOffice, Works, WordPerfect, Lotus 1-2-3, Quattro Pro).
UNCHECKED_TYPES = (SXW, SXC, SXI, SDW, SDC, SDD, WPS, WPD, LOTUS, QUATTRO)
OLE_TYPES = (DOC, XLS, PPT, VSD, PUB)
ODF_TYPES = (ODT, ODS, ODP, ODG)
#: OOXML packages our own readers do not read: converted like the binary formats.
OOXML_CONVERTED_TYPES = (XLSB, VSDX)
FLAT_ODF_TYPES = (FODT, FODS, FODP)
_FLAT_ODF_ROOT = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}document"
#: Single XML files LibreOffice reads: Office 2003's and flat OpenDocument.
OFFICE_2003_XML_TYPES = (WORD_2003_XML, EXCEL_2003_XML, FODT, FODS, FODP)

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_RTF_MAGIC = b"{\\rtf"
#: The BOF record that opens an Excel 2.x-4.0 worksheet, which is a bare BIFF file, not OLE.
_BIFF_BOF = (b"\x09\x00", b"\x09\x02", b"\x09\x04")
#: Windows Write 3.x (with OLE objects: 0x32), whose layout Word for DOS shares.
_WRITE_MAGIC = (b"\x31\xbe\x00\x00", b"\x32\xbe\x00\x00")
#: Files saved as .doc before Word 97 that LibreOffice reads by their content: Word for
#: Windows 2.0, and Write's layout (Write, Word for DOS). WordPerfect's go by ``detect``.
_DOC_BEFORE_OLE = (b"\xdb\xa5\x2d\x00", *_WRITE_MAGIC)
#: Media type -> (file suffix LibreOffice is given, OOXML target, words for errors).
_FORMATS: dict[str, tuple[str, str, str]] = {
    DOC: (".doc", "docx", "a Word 97-2003 document"),
    XLS: (".xls", "xlsx", "an Excel 97-2003 workbook"),
    PPT: (".ppt", "pptx", "a PowerPoint 97-2003 presentation"),
    ODT: (".odt", "docx", "an OpenDocument text"),
    ODS: (".ods", "xlsx", "an OpenDocument spreadsheet"),
    ODP: (".odp", "pptx", "an OpenDocument presentation"),
    FODT: (".fodt", "docx", "a flat OpenDocument text"),
    FODS: (".fods", "xlsx", "a flat OpenDocument spreadsheet"),
    FODP: (".fodp", "pptx", "a flat OpenDocument presentation"),
    RTF: (".rtf", "docx", "an RTF document"),
    WORD_2003_XML: (".xml", "docx", "a Word 2003 XML document"),
    EXCEL_2003_XML: (".xml", "xlsx", "an Excel 2003 XML spreadsheet"),
    XLSB: (".xlsb", "xlsx", "an Excel binary workbook"),
    # Drawings and page layouts have no OOXML equivalent we read: LibreOffice lays them out as
    # a PDF, which the PDF reader reads (their text boxes in reading order, headings by type).
    VSD: (".vsd", "pdf", "a Visio drawing"),
    VSDX: (".vsdx", "pdf", "a Visio drawing"),
    PUB: (".pub", "pdf", "a Publisher document"),
    ODG: (".odg", "pdf", "an OpenDocument drawing"),
    PAGES: (".pages", "docx", "an Apple Pages document"),
    KEYNOTE: (".key", "pptx", "an Apple Keynote presentation"),
    NUMBERS: (".numbers", "xlsx", "an Apple Numbers spreadsheet"),
    SXW: (".sxw", "docx", "an OpenOffice.org 1 text"),
    SXC: (".sxc", "xlsx", "an OpenOffice.org 1 spreadsheet"),
    SXI: (".sxi", "pptx", "an OpenOffice.org 1 presentation"),
    SDW: (".sdw", "docx", "a StarOffice text"),
    SDC: (".sdc", "xlsx", "a StarOffice spreadsheet"),
    SDD: (".sdd", "pptx", "a StarOffice presentation"),
    WPS: (".wps", "docx", "a Microsoft Works document"),
    WPD: (".wpd", "docx", "a WordPerfect document"),
    WRITE: (".wri", "docx", "a Windows Write document"),
    LOTUS: (".wk1", "xlsx", "a Lotus 1-2-3 spreadsheet"),
    QUATTRO: (".wb2", "xlsx", "a Quattro Pro spreadsheet"),
}
#: Every format this module reads: those the table above knows how to convert.
MEDIA_TYPES = tuple(_FORMATS)
#: The OLE stream that holds each binary format's content (Excel 5/95 names it "Book").
_MAIN_STREAMS: dict[str, tuple[str, ...]] = {
    DOC: ("WordDocument",),
    XLS: ("Workbook", "Book"),
    PPT: ("PowerPoint Document", "PP40"),  # PowerPoint 97-2003, and PowerPoint 4
    VSD: ("VisioDocument",),
    PUB: ("Quill/QuillSub/CONTENTS",),
}
_ENCRYPTED_OOXML_STREAMS = ("EncryptionInfo", "EncryptedPackage")
_ODF_ENCRYPTION = re.compile(rb"<manifest:encryption-data\b")
#: The OOXML parser that reads each conversion target.
_READERS = {
    "docx": word.parse,
    "xlsx": spreadsheet.parse,
    "pptx": powerpoint.parse,
    "pdf": pdf.parse,
}


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a legacy Office, OpenDocument or RTF file."""
    media_type = document.media_type
    suffix, target, words = _FORMATS[media_type]
    key = document.source_key
    if CONVERTED_BY_EXTENSION.get(extension(key)) == media_type:
        suffix = extension(key)  # ".wk4", ".qpw": the name LibreOffice's own filters expect
    if media_type in OLE_TYPES:
        if raw.startswith(_RTF_MAGIC):
            suffix = ".rtf"  # Word saves RTF behind .doc often enough; LibreOffice reads it
        elif media_type == DOC and raw.startswith(_DOC_BEFORE_OLE):
            pass  # Word 2.0 for Windows, Write, Word for DOS: LibreOffice reads them
        elif not (media_type == XLS and raw[:2] in _BIFF_BOF):
            check_ole(raw, key, media_type)
    elif media_type == WRITE:
        if not raw.startswith(_WRITE_MAGIC):
            raise CorruptDocumentError(
                key, f"not {words} (it does not start with Write's signature)"
            )
    elif media_type in ODF_TYPES:
        check_odf(raw, key, media_type)
    elif media_type in UNCHECKED_TYPES:
        pass  # no signature of their own worth checking: LibreOffice says if it is not one
    elif media_type in OOXML_CONVERTED_TYPES:
        with open_zip(raw, key):
            pass  # a readable package, no zip bomb: LibreOffice reads what is in it
    elif media_type in IWORK_TYPES:
        check_iwork(raw, key, media_type)
    elif media_type in OFFICE_2003_XML_TYPES:
        root = jats.parse_xml(raw, key)  # well-formed, no entity declarations (module docstring)
        if media_type in FLAT_ODF_TYPES and root.tag != _FLAT_ODF_ROOT:
            raise CorruptDocumentError(
                key,
                f"not {words} (its root is <{etree.QName(root).localname}>, not "
                "<office:document>: a part taken out of an OpenDocument package?)",
            )
    elif not raw.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(_RTF_MAGIC):
        raise CorruptDocumentError(key, "not an RTF document (it does not start with {\\rtf)")
    converted = libreoffice.convert(raw, key, source_suffix=suffix, target=target)
    try:
        parsed = _READERS[target](converted, document)
    except EmptyDocumentError as empty:
        # The reader speaks of its own format ("the Word document has no text"): say which
        # file it was (an RTF, an Excel 97 workbook) and that the converter read it first.
        raise EmptyDocumentError(
            key,
            f"{words[0].upper()}{words[1:]} in which no text was found (after LibreOffice's "
            f"conversion to .{target}: {empty.problem})",
        ) from empty
    document.metadata["converted_by"] = f"LibreOffice ({suffix} to .{target})"
    return parsed


def check_ole(raw: bytes, source_key: str, media_type: str) -> None:
    """Refuse what is not a readable, unencrypted OLE file of ``media_type``."""
    words = _FORMATS[media_type][2]
    if not raw.startswith(_OLE_MAGIC):
        raise CorruptDocumentError(
            source_key, f"not {words} (no OLE compound file signature; a renamed file?)"
        )
    try:
        with olefile.OleFileIO(io.BytesIO(raw)) as ole:
            # Compound-file names compare case-insensitively ([MS-CFB] 2.6.4): "WORDDOCUMENT"
            # is a Word document's stream too (LibreOffice reads it).
            streams = {"/".join(path).upper() for path in ole.listdir(streams=True, storages=False)}
    except Exception as exc:  # olefile raises OSError, struct.error, IndexError, ...
        raise CorruptDocumentError(
            source_key, f"not a readable OLE compound file (truncated or damaged?): {exc}"
        ) from exc
    if any(name.upper() in streams for name in _ENCRYPTED_OOXML_STREAMS):
        raise CorruptDocumentError(
            source_key,
            "a password-protected (encrypted) Office file: it cannot be read without its password",
        )
    wanted = _MAIN_STREAMS[media_type]
    if not any(name.upper() in streams for name in wanted):
        raise CorruptDocumentError(
            source_key, f"not {words}: the OLE file has no {' or '.join(wanted)} stream"
        )
    if _is_encrypted(raw) or _biff5_is_encrypted(raw):
        raise CorruptDocumentError(
            source_key,
            f"{words} that is password-protected (encrypted): it cannot be read without its "
            "password",
        )


def _is_encrypted(raw: bytes) -> bool:
    """Whether msoffcrypto finds the file encrypted. A format it does not know (Excel 5/95's
    "Book" stream) or damaged records it cannot follow are left to LibreOffice, which reads
    the former and reports the latter."""
    try:
        return bool(msoffcrypto.OfficeFile(io.BytesIO(raw)).is_encrypted())
    except Exception:
        return False


#: BIFF record types: FILEPASS (the workbook is encrypted from here on), EOF of a substream.
_FILEPASS, _BIFF_EOF = 0x002F, 0x000A


def _biff5_is_encrypted(raw: bytes) -> bool:
    """Whether an Excel 5/95 workbook (a "Book" stream, which msoffcrypto does not read) is
    password-protected: its globals carry a FILEPASS record, whose header stays in the clear.
    LibreOffice, given one, reports only that it could not load the file."""
    try:
        with olefile.OleFileIO(io.BytesIO(raw)) as ole:
            if not ole.exists("Book"):
                return False
            stream = ole.openstream("Book").read(64 * 1024)
    except Exception:  # unreadable: check_ole's own reading said so already
        return False
    at = 0
    for _record in range(256):  # FILEPASS follows the first BOF; the globals are short
        if at + 4 > len(stream):
            return False
        kind, length = struct.unpack_from("<HH", stream, at)
        if kind == _FILEPASS:
            return True
        if kind == _BIFF_EOF:
            return False
        at += 4 + length
    return False


def check_iwork(raw: bytes, source_key: str, media_type: str) -> None:
    """Refuse an Apple iWork package that is no readable zip; a password-protected one packs
    its parts by Apple's own methods (numbered past zip's), which nothing here unpacks."""
    words = _FORMATS[media_type][2]
    with open_zip(raw, source_key, members_may_fail=True) as archive:
        if any(info.compress_type > 99 for info in archive.infolist()):
            raise CorruptDocumentError(
                source_key,
                f"{words} that is password-protected (its parts are encrypted): it cannot be "
                "read without its password",
            )


def check_odf(raw: bytes, source_key: str, media_type: str) -> None:
    """Refuse what is not a safe, unencrypted OpenDocument package of ``media_type``."""
    words = _FORMATS[media_type][2]
    with open_zip(raw, source_key) as archive:
        names = set(archive.namelist())
        if "mimetype" in names:
            declared = read_member(archive, "mimetype", source_key, max_bytes=256)
            declared_type = declared.decode("ascii", "replace").strip()
            if not declared_type.startswith(media_type):
                raise CorruptDocumentError(
                    source_key, f"not {words}: its mimetype says {declared_type!r}"
                )
        elif "content.xml" not in names:
            raise CorruptDocumentError(
                source_key, f"not {words}: the package has neither mimetype nor content.xml"
            )
        if "META-INF/manifest.xml" in names:
            manifest = read_member(
                archive, "META-INF/manifest.xml", source_key, max_bytes=16 * 1024 * 1024
            )
            if _ODF_ENCRYPTION.search(manifest):
                raise CorruptDocumentError(
                    source_key,
                    f"{words} that is password-protected (encrypted): it cannot be read "
                    "without its password",
                )


__all__ = [
    "DOC",
    "FODP",
    "FODS",
    "FODT",
    "MEDIA_TYPES",
    "ODF_TYPES",
    "ODP",
    "ODS",
    "ODT",
    "OFFICE_2003_XML_TYPES",
    "OLE_TYPES",
    "PPT",
    "RTF",
    "XLS",
    "check_odf",
    "check_ole",
    "parse",
]
