"""Which parser a file needs, decided by its content where the extension lies.

``detect_media_type(source_key, head)`` looks at the file's first bytes (the raw-root scan reads
8 KiB; the pipeline passes the whole file) and its extension:

- Binary containers are recognised by their magic: ``%PDF-`` (in the first KiB, as readers
  allow) is a PDF; a zip holding ``[Content_Types].xml`` is OOXML, told apart by the content
  type of its main part (read from that first member, which Office writes first), else by its
  part names (``word/`` DOCX, ``ppt/`` PPTX, ``xl/`` XLSX); macro-enabled variants (DOCM, PPTM,
  XLSM) likewise; an EPUB by its OCF ``mimetype`` first member (or ``META-INF/container.xml``
  behind ``.epub``); images (PNG, JPEG, TIFF, WebP, GIF; BMP only behind ``.bmp``, its two-byte
  magic being too weak) by their signatures, whatever their extension; OpenDocument (ODT,
  ODS, ODP) by its first member ``mimetype``; legacy OLE2 Office files (DOC, XLS, PPT) by the
  main stream named in their directory (``_ole_type``; by extension where the directory lies
  past the head), an Outlook message by its MAPI property streams; RTF by ``{\\rtf``; any
  other OLE2 file and other binary data (NUL bytes) have no parser: ``None``.
- Text is sniffed for markup where the extension may lie (``.txt``, ``.xml``, ``.csv``, ``.tsv``,
  no extension): JATS by ``<!DOCTYPE article`` with a JATS/NLM DTD, or an ``<article>`` root
  carrying ``dtd-version`` or JATS front matter; a USPTO patent (ICE XML) by its
  ``us-patent-grant`` or ``us-patent-application`` root; HTML by ``<!doctype html`` or an
  ``<html>``, ``<head>`` or ``<body>`` root. A ``.md`` or ``.html`` file is trusted (Markdown
  may embed HTML; an HTML fragment is still HTML).
- Office's own XML, by its root element (in a ``.xml``, a sniffed file, or behind ``.doc``/
  ``.xls``): Word 2003 XML (``w:wordDocument``), Excel 2003 XML (a ``Workbook`` in the
  spreadsheet namespace), flat OPC (``pkg:package``, Word's "XML Document"). A web page behind
  ``.doc``/``.xls`` is HTML.
- Other XML (an ``.xml``, or a file without extension opening ``<?xml``, whose root is not a
  JATS article) is generic XML. JSON, YAML, notebooks and source code go by their extension
  (``file_kinds``); a ``.txt`` holding JSON stays plain text (``structured`` says why).
- Text with no format of its own is plain text by its extension (``.log``, ``.ics``, ``.vcf``,
  ``.nfo``); configuration files and patches are code (``file_kinds``); ``.svg`` is a drawing
  (``svg``), read as its words, not as generic XML.
- A file without an extension that is UTF-8 text (``README``, ``NOTES``) is plain text; one with
  an extension no parser knows is ``None``. A known extension whose content is damaged keeps its
  type, so parsing reports a clear per-file error (a truncated zip, a PDF without its header).

- Web archives (MHTML): ``.mht``/``.mhtml``, or MIME headers declaring ``multipart/related``
  behind ``.doc`` (Word's "Single File Web Page") or no extension.
- Mailboxes: a ``.mbox``/``.mbx``, or a sniffed file (no extension: Thunderbird's ``Inbox``; a
  ``.txt``: a mailing list's monthly archive) opening with a From_ line and a header field.
- E-mail: an OLE2 file naming MAPI property streams (or behind ``.msg``) is an Outlook message,
  not a legacy Office file; text without an extension that opens with an RFC 822 header block
  (two message fields or more: From, Subject, Date...) is a MIME message; so is a Maildir
  message (``cur/1529571718.R114.laptop:2,S``, whose suffix is a host name and flags). Apple
  Mail's ``.emlx`` is a message behind a byte count. A zip behind ``.zip``
  that is no OOXML package is an archive (its members are documents: ``derived``).
- HEIC/HEIF photos (an ``ftyp`` box of a HEVC brand) have no parser, and the reason says why
  (libheif, LGPL, is not shipped) and what to do.

``None`` means: skip it at scan time; ``undetected_reason`` says why in words.
"""

from __future__ import annotations

import codecs
import io
import re
import zipfile
import zlib
from pathlib import PurePosixPath

from agrag_pipeline.file_kinds import CODE_LANGUAGES
from agrag_pipeline.parsing import (
    boxnote,
    libarchive_reader,
    mail,
    manpage,
    mbox,
    mhtml,
    patent_aps,
    patent_early_xml,
    svg,
    tararchive,
    xbrl,
)

PDF = "application/pdf"
HTML = "text/html"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"
CSV = "text/csv"
TSV = "text/tab-separated-values"
JATS = "application/jats+xml"
DOCBOOK = "application/docbook+xml"
FICTIONBOOK = "application/x-fictionbook+xml"
USPTO = "application/vnd.uspto.patent+xml"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
DOCM = "application/vnd.ms-word.document.macroEnabled.12"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
PPTM = "application/vnd.ms-powerpoint.presentation.macroEnabled.12"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLSM = "application/vnd.ms-excel.sheet.macroEnabled.12"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
WEBP = "image/webp"
BMP = "image/bmp"
GIF = "image/gif"
#: JPEG 2000, as archives and libraries keep their page scans: the JP2 and JPX files and the
#: bare codestream (.j2k, .j2c); Pillow decodes all three through OpenJPEG.
JP2 = "image/jp2"
EML = "message/rfc822"
EMLX = mail.EMLX_MEDIA_TYPE
OUTLOOK_MSG = "application/vnd.ms-outlook"
ZIP = "application/zip"
EPUB = "application/epub+zip"
#: Kindle and Palm books (``parsing.mobi``): Mobipocket, KF8 and PalmDOC Palm databases.
MOBI = "application/x-mobipocket-ebook"
RST = "text/x-rst"
LATEX = "application/x-latex"
ORG = "text/x-org"
ASCIIDOC = "text/asciidoc"
MEDIAWIKI = "text/x-mediawiki"
MANPAGE = "text/troff"
TYPST = "text/x-typst"
TEXTILE = "text/x-textile"
TEXINFO = "application/x-texinfo"
TAR = tararchive.TAR_MEDIA_TYPE
MBOX = mbox.MEDIA_TYPE
SVG = svg.MEDIA_TYPE
MHTML = mhtml.MEDIA_TYPE
BOXNOTE = boxnote.MEDIA_TYPE
XBRL = xbrl.MEDIA_TYPE
USPTO_2001 = patent_early_xml.MEDIA_TYPE
USPTO_APS = patent_aps.MEDIA_TYPE
DOC = "application/msword"
XLS = "application/vnd.ms-excel"
PPT = "application/vnd.ms-powerpoint"
ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
ODP = "application/vnd.oasis.opendocument.presentation"
ODG = "application/vnd.oasis.opendocument.graphics"
XLSB = "application/vnd.ms-excel.sheet.binary.macroenabled.12"
VSD = "application/vnd.visio"
VSDX = "application/vnd.ms-visio.drawing"
PUB = "application/x-mspublisher"
PAGES = "application/vnd.apple.pages"
KEYNOTE = "application/vnd.apple.keynote"
NUMBERS = "application/vnd.apple.numbers"
SXW = "application/vnd.sun.xml.writer"
SXC = "application/vnd.sun.xml.calc"
SXI = "application/vnd.sun.xml.impress"
SDW = "application/vnd.stardivision.writer"
SDC = "application/vnd.stardivision.calc"
SDD = "application/vnd.stardivision.impress"
WPS = "application/vnd.ms-works"
WPD = "application/vnd.wordperfect"
LOTUS = "application/vnd.lotus-1-2-3"
QUATTRO = "application/x-quattro-pro"
WRITE = "application/x-mswrite"
#: Formats only LibreOffice reads here, known by their extension alone (their own signatures are
#: weak or absent; LibreOffice says when a file is not one). Apple's must be zip packages: a
#: ``.key`` that is not is a cryptographic key, never read.
CONVERTED_BY_EXTENSION: dict[str, str] = {
    ".pages": PAGES,
    ".key": KEYNOTE,
    ".numbers": NUMBERS,
    ".sxw": SXW,
    ".sxc": SXC,
    ".sxi": SXI,
    ".sdw": SDW,
    ".sdc": SDC,
    ".sdd": SDD,
    ".wps": WPS,
    ".wpd": WPD,
    ".wp5": WPD,
    ".wp6": WPD,
    ".wri": WRITE,
    ".wk1": LOTUS,
    ".wk3": LOTUS,
    ".wk4": LOTUS,
    ".wks": LOTUS,
    ".123": LOTUS,
    ".wq1": QUATTRO,
    ".wq2": QUATTRO,
    ".wb1": QUATTRO,
    ".wb2": QUATTRO,
    ".wb3": QUATTRO,
    ".qpw": QUATTRO,
}
_IWORK = frozenset({PAGES, KEYNOTE, NUMBERS})
#: Flat (single-XML-file) OpenDocument, as LibreOffice saves ``.fodt``/``.fods``/``.fodp``.
FODT = "application/vnd.oasis.opendocument.text-flat-xml"
FODS = "application/vnd.oasis.opendocument.spreadsheet-flat-xml"
FODP = "application/vnd.oasis.opendocument.presentation-flat-xml"
RTF = "application/rtf"
#: Office documents saved as one XML file: Word 2003's "XML Document" (``w:wordDocument``),
#: Excel 2003's "XML Spreadsheet" (a ``Workbook`` in the spreadsheet namespace), and Office
#: 2007+'s flat XML ("Word XML Document (*.xml)": an OOXML package as one ``pkg:package``).
WORD_2003_XML = "application/vnd.ms-wordml"
EXCEL_2003_XML = "application/vnd.ms-spreadsheetml"
FLAT_OPC = "application/vnd.ms-office.flat-opc+xml"
# Structured text and code (issue 23): ``parsing.structured``, ``xmldoc``, ``notebook``,
# ``sourcecode``; a source file's media type is ``text/x-<language>``.
JSON = "application/json"
NDJSON = "application/x-ndjson"
YAML = "application/yaml"
TOML = "application/toml"
XML = "application/xml"
VTT = "text/vtt"
SRT = "application/x-subrip"
NOTEBOOK = "application/x-ipynb+json"

#: Extension (lower case, with the dot) -> the media type it claims.
EXTENSIONS: dict[str, str] = {
    ".pdf": PDF,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".shtml": HTML,
    ".mht": MHTML,
    ".mhtml": MHTML,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdown": MARKDOWN,
    ".mkd": MARKDOWN,
    ".mkdn": MARKDOWN,
    ".mdwn": MARKDOWN,
    ".rmd": MARKDOWN,  # R Markdown and Quarto: Markdown with code chunks
    ".mdx": MARKDOWN,  # MDX: Markdown with JSX and ES modules (``mdx``)
    ".qmd": MARKDOWN,
    ".txt": PLAIN,
    ".text": PLAIN,
    # Text with no format of its own: logs, release notes, calendars and address cards (their
    # lines ``SUMMARY:``, ``FN:`` read as written).
    ".log": PLAIN,
    ".nfo": PLAIN,
    ".ics": PLAIN,
    ".vcf": PLAIN,
    ".svg": SVG,
    ".csv": CSV,
    ".tsv": TSV,
    ".tab": TSV,
    ".nxml": JATS,
    ".dbk": DOCBOOK,
    ".docbook": DOCBOOK,
    ".fb2": FICTIONBOOK,
    ".xbrl": XBRL,
    ".boxnote": BOXNOTE,  # Box Notes: JSON of either of Box's formats (``boxnote``)
    ".docx": DOCX,
    ".docm": DOCM,
    ".pptx": PPTX,
    ".pptm": PPTM,
    ".xlsx": XLSX,
    ".xlsm": XLSM,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
    ".tif": TIFF,
    ".tiff": TIFF,
    ".webp": WEBP,
    ".bmp": BMP,
    ".gif": GIF,
    ".jp2": JP2,
    ".jpf": JP2,
    ".jpx": JP2,
    ".j2k": JP2,
    ".j2c": JP2,
    ".eml": EML,
    ".emlx": EMLX,
    ".msg": OUTLOOK_MSG,
    ".zip": ZIP,
    ".epub": EPUB,
    ".mobi": MOBI,
    ".azw": MOBI,
    ".azw3": MOBI,
    ".prc": MOBI,
    ".ibooks": EPUB,
    ".rst": RST,
    ".rest": RST,
    ".tex": LATEX,
    ".bbl": LATEX,  # a LaTeX bibliography (thebibliography), as BibTeX writes it
    ".latex": LATEX,
    ".org": ORG,
    ".wiki": MEDIAWIKI,
    ".mediawiki": MEDIAWIKI,
    ".wikitext": MEDIAWIKI,
    ".man": MANPAGE,
    ".mdoc": MANPAGE,
    ".typ": TYPST,
    ".textile": TEXTILE,
    ".texi": TEXINFO,
    ".texinfo": TEXINFO,
    ".txi": TEXINFO,
    ".mbox": MBOX,
    ".mbx": MBOX,
    ".tar": TAR,
    ".tgz": TAR,
    ".tbz2": TAR,
    ".txz": TAR,
    ".7z": libarchive_reader.SEVEN_ZIP_MEDIA_TYPE,
    ".rar": libarchive_reader.RAR_MEDIA_TYPE,
    ".zst": libarchive_reader.ZSTD_MEDIA_TYPE,
    ".tzst": libarchive_reader.ZSTD_MEDIA_TYPE,
    ".gz": tararchive.GZIP_MEDIA_TYPE,
    ".bz2": tararchive.BZIP2_MEDIA_TYPE,
    ".xz": tararchive.XZ_MEDIA_TYPE,
    ".adoc": ASCIIDOC,
    ".asciidoc": ASCIIDOC,
    ".asc": ASCIIDOC,
    ".doc": DOC,
    ".xls": XLS,
    ".ppt": PPT,
    ".odt": ODT,
    ".ods": ODS,
    ".odp": ODP,
    ".odg": ODG,
    ".xlsb": XLSB,
    ".vsd": VSD,
    ".vsdx": VSDX,
    ".vsdm": VSDX,
    ".pub": PUB,
    **CONVERTED_BY_EXTENSION,
    ".fodt": FODT,
    ".fods": FODS,
    ".fodp": FODP,
    ".rtf": RTF,
    ".json": JSON,
    ".ndjson": NDJSON,
    ".jsonl": NDJSON,
    ".yaml": YAML,
    ".yml": YAML,
    ".toml": TOML,
    ".xml": XML,
    ".xsd": XML,
    ".xsl": XML,
    ".xslt": XML,
    ".rss": XML,
    ".atom": XML,
    ".vtt": VTT,
    ".srt": SRT,
    ".ipynb": NOTEBOOK,
    **{ext: f"text/x-{language}" for ext, language in CODE_LANGUAGES.items()},
}
_OOXML = frozenset({DOCX, DOCM, PPTX, PPTM, XLSX, XLSM, XLSB, VSDX})
#: Recordings: skipped with that reason (no speech recognition), not as unknown "binary data".
_AUDIO_VIDEO = {
    **dict.fromkeys(
        (".mp3", ".wav", ".flac", ".m4a", ".aac", ".ogg", ".oga", ".opus", ".wma", ".aiff"),
        "audio",
    ),
    **dict.fromkeys(
        (".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".wmv", ".mpg", ".mpeg", ".3gp"),
        "video",
    ),
}
_COMPRESSED = frozenset({".lz4", ".lz", ".lzma", ".cab", ".iso"})
#: Extensions whose text content is sniffed for markup (the extension may lie).
#: A manual page's section suffix (``.1``, ``.3p``, ``.1ssl``, Tcl's ``.n``) and the title
#: request its roff starts its content with (``manpage.opens_as_man_page``): both, since
#: ``notes.1`` alone says little.
_MAN_SECTION = re.compile(r"^\.(?:[1-9][a-z0-9]{0,11}|n|l)$")
_SNIFFED = frozenset({".txt", ".text", ".xml", ".nxml", ".csv", ".tsv", ".tab", ""})

#: Image signatures (scans as images): the first bytes of each format.
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", PNG),
    (b"\xff\xd8\xff", JPEG),
    (b"II*\x00", TIFF),
    (b"MM\x00*", TIFF),
    (b"GIF87a", GIF),
    (b"GIF89a", GIF),
    (b"BM", BMP),
    (b"\xff\x4f\xff\x51", JP2),  # a JPEG 2000 codestream's SOC and SIZ markers
)
#: A JPEG 2000 file: its signature box, then a file type box whose brand says JP2 or JPX (a JPM
#: compound document shares the signature; Pillow does not read it).
_JP2_SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"
_JP2_BRANDS = (b"jp2 ", b"jpx ")
_ZIP_MAGIC = b"PK\x03\x04"
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
#: A Palm database's type and creator (bytes 60-67) when it is a book: Mobipocket or PalmDOC.
_PALM_BOOKS = (b"BOOKMOBI", b"TEXtREAd")
_PALM_HEADER = 78


def is_palm_book(head: bytes) -> bool:
    """Whether ``head`` opens a Palm database that is a Mobipocket (Kindle) or PalmDOC book."""
    return len(head) >= _PALM_HEADER and head[60:68] in _PALM_BOOKS


#: WordPerfect's prefix (5.0 and later): "\xffWPC", then the document's offset and product.
_WORDPERFECT_MAGIC = b"\xffWPC"
#: Local file header: signature, 22 bytes of fields, name length, extra length, then the name.
_LOCAL_HEADER = re.compile(rb"PK\x03\x04.{22}(..)(..)", re.DOTALL)

_XML_PROLOG = re.compile(
    r"\A(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)*", re.DOTALL | re.IGNORECASE
)
_DOCTYPE = re.compile(r"<!DOCTYPE\s+([\w:.-]+)([^\[>]*)", re.IGNORECASE)
_ROOT = re.compile(r"<([A-Za-z_][\w:.-]*)([^>]*)")
_JATS_DTD = re.compile(r"JATS|NLM|journalpublishing|archivearticle|articleauthoring", re.I)


def extension(source_key: str) -> str:
    """The lower-case extension of the key's file name, with its dot ('' for none)."""
    return PurePosixPath(source_key).suffix.lower()


def detect_media_type(source_key: str, head: bytes) -> str | None:
    """The media type of the file ``source_key`` starting with ``head`` (None: no parser)."""
    return _detect(source_key, head)[0]


def undetected_reason(source_key: str, head: bytes) -> str | None:
    """Why ``detect_media_type`` gives None for this file, in words (None when it has a type)."""
    return _detect(source_key, head)[1]


#: A Maildir message: a unique name starting with the delivery time, in a ``cur`` or ``new``
#: folder (``cur/1529571718.R114.laptop:2,S``); its "extension" is the host name and flags.
_MAILDIR_MESSAGE = re.compile(r"(?:^|/)(?:cur|new)/\d{9,}\.[^/]+$")


def _detect(source_key: str, head: bytes) -> tuple[str | None, str | None]:
    ext = extension(source_key)
    if _MAILDIR_MESSAGE.search(source_key) and ext not in EXTENSIONS:
        ext = ""  # sniffed as a file without extension: an RFC 822 message is an e-mail
    claimed = EXTENSIONS.get(ext)
    if not head:
        # Empty: nothing to sniff. A known extension keeps its type (parsing says "empty").
        if claimed is not None:
            return claimed, None
        return None, f"an empty file with {_ext_words(ext)}"
    if ext in CONVERTED_BY_EXTENSION:
        if claimed in _IWORK and not head.startswith(_ZIP_MAGIC):
            secret = " (a cryptographic key?)" if ext == ".key" else ""
            return None, f"a {ext} file that is no Apple iWork package{secret}: not read"
        return claimed, None
    if head.startswith(_ZIP_MAGIC):
        odf = _odf_type(head, claimed)
        if odf is not None:
            return odf, None
        return _zip_type(head, ext, claimed)
    if b"%PDF-" in head[:1024]:
        return PDF, None
    for magic, image_type in _IMAGE_MAGIC:
        if head.startswith(magic) and (image_type != BMP or claimed == BMP):
            return image_type, None
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP, None
    if head.startswith(_JP2_SIGNATURE) and head[16:20] == b"ftyp" and head[20:24] in _JP2_BRANDS:
        return JP2, None
    if head.startswith(_OLE2_MAGIC) and (claimed == OUTLOOK_MSG or _is_outlook_msg(head)):
        return OUTLOOK_MSG, None
    if head.startswith(_OLE2_MAGIC):
        ole = _ole_type(head, claimed)
        if ole is not None:
            return ole, None
        if claimed in _OOXML:
            # An encrypted OOXML file is an OLE2 container: the parser says it cannot be read.
            return claimed, None
        return None, _ole_reason(head, ext)
    if is_palm_book(head):
        return MOBI, None  # a Kindle or Palm book, whatever its name (.pdb, .prc, none)
    if head.startswith(_WORDPERFECT_MAGIC) and claimed in (None, DOC):
        return WPD, None  # WordPerfect 5.0 and later, often saved as .doc in its day
    compressed = tararchive.compression(head)
    if compressed is not None:  # a .tar.gz is an archive; a report.csv.gz holds one file
        tar = tararchive.is_tar(tararchive.unpacked_head(head, compressed))
        return (TAR if tar else compressed), None
    if tararchive.is_tar(head):
        return TAR, None
    archive = libarchive_reader.media_type_of(head)  # 7-Zip, RAR, zstd: by their signatures
    if archive is not None:
        return archive, None
    if _is_heif(head):
        return None, _HEIF_REASON
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        return (DOC if claimed == DOC else RTF), None  # Word saves RTF as .doc too
    if ext in _SNIFFED and mbox.looks_like_mbox(head):
        return MBOX, None  # Thunderbird's ``Inbox``, a list archive's ``2024-March.txt``
    text = _head_text(head)
    if text is not None and (ext in _SNIFFED or claimed in _OLE_OFFICE):
        # Office's own XML (often behind .doc or .xls), or a web page saved as .doc/.xls.
        office = _office_xml_type(text)
        if office is not None:
            return office, None
        if claimed in _OLE_OFFICE and _markup_type(text) == HTML:
            return HTML, None
        if (claimed in _OLE_OFFICE or ext == "") and mhtml.looks_like_mhtml(text):
            return MHTML, None  # Word's "Single File Web Page", saved or renamed as .doc
    if text is None:
        if ext in CODE_LANGUAGES:  # a video's .ts, a binary .pl: not source code
            return None, f"binary data with {_ext_words(ext)}, which is not source code"
        if claimed is not None and claimed not in _OOXML and claimed != PDF:
            return claimed, None  # a text extension: parsing names the bad byte
        if claimed is not None:
            return claimed, None  # damaged container: parsing reports it per file
        if ext in _AUDIO_VIDEO:
            return None, (
                f"{_AUDIO_VIDEO[ext]} ({ext}): there is no speech recognition here; a "
                "transcript or subtitles beside it (.vtt, .srt, .txt) are read"
            )
        if ext in _COMPRESSED:
            return None, (
                f"a compressed file ({ext}), which is not unpacked (.zip, .7z, .rar, .tar and "
                "gzip, bzip2, xz or zstd files, .eml and .msg attachments are read as the "
                "documents they hold)"
            )
        return None, f"binary data with {_ext_words(ext)}, which no parser reads"
    if ext in _SNIFFED and patent_aps.looks_like_aps(text):
        return USPTO_APS, None  # the USPTO's 1976-2001 grants (``pftaps*.txt``)
    if ext in _SNIFFED or claimed in _OOXML or claimed == PDF:
        markup = _markup_type(text)
        if markup is not None:
            return markup, None
        if ext == "" and _is_rfc822(text):
            return EML, None
        if ext == ".xml" or (ext == "" and text.lstrip().startswith("<?xml")):
            return XML, None  # generic XML (``xmldoc``): element text under its path
    if claimed is not None:
        return claimed, None
    if _MAN_SECTION.match(ext) and manpage.opens_as_man_page(text[:8192]):
        return MANPAGE, None  # ``ls.1``, ``ssh_config.5``: roff with a page title request
    if ext == "":
        return PLAIN, None
    return None, f"no parser for {_ext_words(ext)}"


#: OLE2 stream name -> the legacy Office type whose content it holds (Excel 5/95: "Book").
#: Keys upper-case: compound-file names compare case-insensitively ([MS-CFB] 2.6.4), and some
#: writers store them upper- or lower-case ("WORDDOCUMENT").
_OLE_MAIN_STREAMS = {
    "WORDDOCUMENT": DOC,
    "WORKBOOK": XLS,
    "BOOK": XLS,
    "POWERPOINT DOCUMENT": PPT,
    "PP40": PPT,  # PowerPoint 4 (1994), Windows and Mac: LibreOffice reads it
    "VISIODOCUMENT": VSD,
}
_OLE_OFFICE = frozenset({DOC, XLS, PPT, VSD, PUB})
_ODF = frozenset({ODT, ODS, ODP, ODG})
_ODF_MIMETYPE = re.compile(
    rb"application/vnd\.oasis\.opendocument\.(text|spreadsheet|presentation|graphics)"
)


def _ole_type(head: bytes, claimed: str | None) -> str | None:
    """.doc, .xls or .ppt by the main stream named in the OLE2 directory ``head`` holds; by the
    extension where the directory lies past ``head`` (parsing then checks the streams); else
    None."""
    streams = _ole_streams(head)
    upper = {name.upper() for name in streams or ()}
    found = {_OLE_MAIN_STREAMS[name] for name in upper if name in _OLE_MAIN_STREAMS}
    if claimed in found or (claimed in _OLE_OFFICE and not found):
        return claimed
    if len(found) == 1:
        return found.pop()
    return None


def _ole_streams(head: bytes) -> set[str] | None:
    """Names of the streams in the OLE2 directory entries ``head`` holds (None: no directory
    entry in ``head``; Word writes its directory at the end of the file).

    Directory entries are 128-byte records in sectors (512 or 4096 bytes), so each 128-byte
    slot is tried: a UTF-16LE name whose byte length (with its NUL) is at 0x40, the entry's type
    at 0x42 (2: stream, 5: the root entry)."""
    streams: set[str] = set()
    seen_root = False
    for at in range(512, len(head) - 127, 128):
        kind = head[at + 0x42]
        name_length = int.from_bytes(head[at + 0x40 : at + 0x42], "little")
        if kind not in (2, 5) or not 2 <= name_length <= 64 or name_length % 2:
            continue
        try:
            name = head[at : at + name_length - 2].decode("utf-16-le")
        except UnicodeDecodeError:
            continue
        if kind == 5 and name == "Root Entry":
            seen_root = True
        elif kind == 2:
            streams.add(name)
    return streams if seen_root else None


def _ole_reason(head: bytes, ext: str) -> str:
    if _ole_streams(head) is None:
        return (
            f"an OLE2 compound file with {_ext_words(ext)} whose directory lies past the bytes "
            "read, so its kind is unknown (a .doc/.xls/.ppt is read under its own extension)"
        )
    return (
        "an OLE2 compound file that is not a Word, Excel or PowerPoint file, which no parser reads"
    )


def _odf_type(head: bytes, claimed: str | None) -> str | None:
    """An OpenDocument package by its first member, ``mimetype`` (stored, as ODF requires);
    else by the extension when the zip is not an OOXML package."""
    if head[30:38] == b"mimetype":
        match = _ODF_MIMETYPE.match(head, 38)
        if match is not None:
            kinds = {b"text": ODT, b"spreadsheet": ODS, b"presentation": ODP, b"graphics": ODG}
            return kinds[match.group(1)]
    if claimed in _ODF and b"[Content_Types].xml" not in head:
        return claimed  # damaged or unusual: parsing reports it per file
    return None


def _ext_words(ext: str) -> str:
    return f"extension {ext!r}" if ext else "no extension"


def _zip_type(head: bytes, ext: str, claimed: str | None) -> tuple[str | None, str | None]:
    if head[30:58] == b"mimetypeapplication/epub+zip":
        return EPUB, None  # an EPUB's first member, stored: its media type (OCF)
    if head[30:62] == b"mimetypeapplication/x-ibooks+zip":
        return EPUB, None  # an Apple Books (iBooks Author) book: an EPUB 3 under another name
    names, content_types = _zip_members(head)
    if "META-INF/container.xml" in names and claimed == EPUB:
        return EPUB, None
    main = _main_part_type(content_types) if content_types else None
    if main is not None:
        return main, None
    if any(n.startswith("visio/") for n in names):
        return VSDX, None
    if "[Content_Types].xml" in names or any(n.startswith(("word/", "ppt/", "xl/")) for n in names):
        if any(n.startswith("word/") for n in names):
            macro = ext == ".docm" or "word/vbaProject.bin" in names
            return (DOCM if macro else DOCX), None
        if any(n.startswith("ppt/") for n in names):
            macro = ext == ".pptm" or "ppt/vbaProject.bin" in names
            return (PPTM if macro else PPTX), None
        if "xl/workbook.bin" in names:
            return XLSB, None
        if any(n.startswith("xl/") for n in names):
            macro = ext == ".xlsm" or "xl/vbaProject.bin" in names
            return (XLSM if macro else XLSX), None
        if claimed in _OOXML:
            return claimed, None  # the main part lies past the bytes we saw
        return None, "an OOXML package whose kind is unknown (not Word, PowerPoint or Excel)"
    if claimed in _OOXML:
        return claimed, None  # truncated or odd: the parser reports it per file
    if claimed == EPUB:
        # Zipped by a general tool: ``mimetype`` and ``META-INF/`` past the bytes we saw. The
        # parser reads the whole package (and says so per file if it is no EPUB).
        return EPUB, None
    if ext == ".zip":
        return ZIP, None  # an archive: its members are documents of their own (``derived``)
    return None, f"a zip archive with {_ext_words(ext)}, which no parser reads"


#: Content type of the package's main part (``[Content_Types].xml``) -> our media type; macro
#: variants first (their names contain the plain ones' words). Templates and slide shows read
#: like their documents.
_MAIN_PARTS: tuple[tuple[bytes, str], ...] = (
    (b"ms-excel.sheet.binary.macroenabled.main", XLSB),
    (b"ms-visio.drawing.main+xml", VSDX),
    (b"ms-visio.drawing.macroenabled.main+xml", VSDX),
    (b"ms-excel.sheet.macroenabled.main+xml", XLSM),
    (b"ms-excel.template.macroenabled.main+xml", XLSM),
    (b"spreadsheetml.sheet.main+xml", XLSX),
    (b"spreadsheetml.template.main+xml", XLSX),
    (b"ms-word.document.macroenabled.main+xml", DOCM),
    (b"ms-word.template.macroenabledtemplate.main+xml", DOCM),
    (b"wordprocessingml.document.main+xml", DOCX),
    (b"wordprocessingml.template.main+xml", DOCX),
    (b"ms-powerpoint.presentation.macroenabled.main+xml", PPTM),
    (b"ms-powerpoint.slideshow.macroenabled.main+xml", PPTM),
    (b"ms-powerpoint.template.macroenabled.main+xml", PPTM),
    (b"presentationml.presentation.main+xml", PPTX),
    (b"presentationml.slideshow.main+xml", PPTX),
    (b"presentationml.template.main+xml", PPTX),
)
_CONTENT_TYPES_MAX = 1024 * 1024


def _main_part_type(content_types: bytes) -> str | None:
    lowered = content_types.lower()
    for needle, media_type in _MAIN_PARTS:
        if needle in lowered:
            return media_type
    return None


def _zip_members(head: bytes) -> tuple[set[str], bytes | None]:
    """Member names and the bytes of ``[Content_Types].xml`` (None if not seen): from the
    central directory when ``head`` is the whole file, else from the local headers it holds."""
    try:
        with zipfile.ZipFile(io.BytesIO(head)) as archive:
            listed = set(archive.namelist())
            content_types = None
            if "[Content_Types].xml" in listed:
                info = archive.getinfo("[Content_Types].xml")
                if info.file_size <= _CONTENT_TYPES_MAX:
                    content_types = archive.read(info)
            return listed, content_types
    except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, NotImplementedError):
        pass
    names: set[str] = set()
    content_types = None
    for match in _LOCAL_HEADER.finditer(head):
        at = match.start()
        method = int.from_bytes(head[at + 8 : at + 10], "little")
        name_length = int.from_bytes(match.group(1), "little")
        extra_length = int.from_bytes(match.group(2), "little")
        raw = head[match.end() : match.end() + name_length]
        if len(raw) != name_length:
            continue
        name = raw.decode("utf-8", "replace")
        names.add(name)
        if name == "[Content_Types].xml" and content_types is None:
            data = head[match.end() + name_length + extra_length :]
            content_types = _inflate(data, method)
    return names, content_types


def _inflate(data: bytes, method: int) -> bytes | None:
    """The start of a member's data as far as ``data`` holds it (stored or deflated)."""
    if method == zipfile.ZIP_STORED:
        return data[:_CONTENT_TYPES_MAX]
    if method != zipfile.ZIP_DEFLATED:
        return None
    try:
        return zlib.decompressobj(-15).decompress(data, _CONTENT_TYPES_MAX)
    except zlib.error:
        return None


#: Streams only an Outlook message has, as OLE directory entries name them (UTF-16LE).
_OUTLOOK_STREAMS = (
    "__substg1.0_".encode("utf-16-le"),
    "__properties_version1.0".encode("utf-16-le"),
)
#: A header field line, and the fields that make a header block a message's.
_HEADER_LINE = re.compile(r"[!-9;-~]+:")
_MESSAGE_FIELDS = frozenset(
    {
        "from",
        "to",
        "cc",
        "subject",
        "date",
        "message-id",
        "mime-version",
        "received",
        "return-path",
        "reply-to",
        "sender",
        "delivered-to",
        "in-reply-to",
        "references",
    }
)


#: HEIF image brands (ISO BMFF ``ftyp`` box): HEVC-coded photos, as iPhones save them.
_HEIF_BRANDS = frozenset({b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1"})
_HEIF_REASON = (
    "a HEIC/HEIF image, which no parser reads: decoding it needs libheif and an HEVC decoder "
    "(LGPL, through pillow-heif), which the pipeline does not ship; save it as JPEG or PNG to "
    "have it read by OCR"
)


def _is_heif(head: bytes) -> bool:
    return head[4:8] == b"ftyp" and head[8:12] in _HEIF_BRANDS


def _is_outlook_msg(head: bytes) -> bool:
    """An OLE2 file whose directory (when ``head`` reaches it) names MAPI property streams."""
    return any(name in head for name in _OUTLOOK_STREAMS)


def _is_rfc822(text: str) -> bool:
    """Text opening with an RFC 822 header block holding at least two message fields (From,
    Subject, Date...): an e-mail saved without an extension."""
    fields: set[str] = set()
    for line in text.splitlines()[:200]:
        if not line.strip():
            break
        if line[:1] in (" ", "\t"):
            continue  # a folded continuation
        if not _HEADER_LINE.match(line):
            return False
        fields.add(line.split(":", 1)[0].lower())
    return len(fields & _MESSAGE_FIELDS) >= 2


def _head_text(head: bytes) -> str | None:
    """``head`` decoded (UTF-8 or BOM-marked UTF-16; a cut last character tolerated), or None."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        codec = "utf-16-le" if head.startswith(codecs.BOM_UTF16_LE) else "utf-16-be"
        body = head[2:]
    else:
        codec = "utf-8"
        body = head[3:] if head.startswith(codecs.BOM_UTF8) else head
        if b"\x00" in body:
            return None
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        text = decoder.decode(body, final=False)
    except UnicodeDecodeError:
        declared = _declared_xml_text(body)
        if declared is None:
            return None
        text = declared
    if "\x00" in text:
        return None
    return text


#: An XML declaration naming its encoding (``<?xml version="1.0" encoding="windows-1251"?>``).
_XML_ENCODING = re.compile(
    rb"""\A\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9._-]{1,40})["']"""
)


def _declared_xml_text(body: bytes) -> str | None:
    """An XML file's head in the single-byte or legacy encoding its declaration names (FB2 and
    older JATS are often windows-1251 or ISO-8859-1), or None."""
    declared = _XML_ENCODING.match(body)
    if declared is None:
        return None
    try:
        codec = codecs.lookup(declared.group(1).decode("ascii"))
        return codec.incrementaldecoder().decode(body, final=False)
    except (LookupError, UnicodeDecodeError):
        return None


def _markup_type(text: str) -> str | None:
    """JATS, a USPTO patent or HTML when ``text`` opens as such a document, else None."""
    start = text.lstrip()[:1]
    if start != "<":
        return None
    doctype = _DOCTYPE.search(text[:4096])
    if doctype is not None:
        name = doctype.group(1).lower()
        if name == "html":
            return HTML
        if name == "article" and _JATS_DTD.search(doctype.group(2)):
            return JATS
        if "docbook" in doctype.group(2).lower():
            return DOCBOOK
    root = _root_name(text)
    if root is None:
        return None
    local = root.rsplit(":", 1)[-1].lower()
    if local in ("html", "head", "body"):
        return HTML
    if local == "article" and _is_jats_article(text):
        return JATS
    if local in ("us-patent-grant", "us-patent-application"):
        return USPTO
    if root in (patent_early_xml.GRANT_ROOT, patent_early_xml.APPLICATION_ROOT):
        return USPTO_2001
    if _is_docbook(text, local):
        return DOCBOOK
    if root == "FictionBook" or local == "fictionbook":
        return FICTIONBOOK
    if local == "xbrl" and xbrl.INSTANCE_NAMESPACE in text[:16384]:
        return XBRL  # a filing's facts: an instance, as EDGAR's ``*_htm.xml``
    return None


_DOCBOOK_NAMESPACE = "http://docbook.org/ns/docbook"
#: Roots a DocBook document has (``docbook.SECTIONS`` less the ones inside a book only).
_DOCBOOK_ROOTS = frozenset(
    {"book", "article", "chapter", "part", "set", "appendix", "preface", "section", "sect1"}
    | {"refentry", "reference", "glossary", "bibliography"}
)
#: Elements of DocBook no other common vocabulary has, in a document without a namespace or
#: DOCTYPE (DocBook 4 written by hand or by a tool that omits the DTD).
_DOCBOOK_ELEMENTS = re.compile(
    r"<(?:simpara|sect[1-5]|articleinfo|bookinfo|chapterinfo|programlisting|itemizedlist"
    r"|orderedlist|variablelist|informaltable|refentrytitle)[\s>/]"
)


def _is_docbook(text: str, local: str) -> bool:
    """DocBook 5 by its namespace; an un-namespaced one by its root and an element only
    DocBook has (``<para>`` alone is not enough: other vocabularies have it)."""
    head = text[:8192]
    if _DOCBOOK_NAMESPACE in head:
        return True
    return local in _DOCBOOK_ROOTS and _DOCBOOK_ELEMENTS.search(head) is not None


_MSO_APPLICATION = re.compile(r"<\?mso-application\s[^>]*progid=[\"']([\w.]+)", re.I)
_SPREADSHEET_2003_NS = "urn:schemas-microsoft-com:office:spreadsheet"
_FLAT_OPC_NS = "http://schemas.microsoft.com/office/2006/xmlPackage"


def _office_xml_type(text: str) -> str | None:
    """Word 2003 XML, Excel 2003 XML or a flat OPC package, by the root element (and the
    ``<?mso-application?>`` instruction Office writes before it), else None."""
    if text.lstrip()[:1] != "<":
        return None
    root = _root_name(text)
    if root is None:
        return None
    local = root.rsplit(":", 1)[-1]
    head = text[:8192]
    progid = _MSO_APPLICATION.search(head)
    if local == "wordDocument":
        return WORD_2003_XML
    if local == "Workbook" and (
        _SPREADSHEET_2003_NS in head or (progid and progid.group(1).lower() == "excel.sheet")
    ):
        return EXCEL_2003_XML
    if local == "package" and _FLAT_OPC_NS in head:
        return FLAT_OPC
    return None


def _root_name(text: str) -> str | None:
    prolog = _XML_PROLOG.match(text)
    rest = text[prolog.end() if prolog else 0 :]
    match = _ROOT.match(rest)
    return match.group(1) if match else None


def _is_jats_article(text: str) -> bool:
    prolog = _XML_PROLOG.match(text)
    rest = text[prolog.end() if prolog else 0 :]
    root = _ROOT.match(rest)
    attributes = root.group(2) if root else ""
    if "dtd-version" in attributes or "article-type" in attributes:
        return True
    if "jats" in attributes.lower():
        return True
    return "<front" in rest[:8192] and ("<article-meta" in rest or "<journal-meta" in rest)


__all__ = [
    "BOXNOTE",
    "CONVERTED_BY_EXTENSION",
    "CSV",
    "DOC",
    "DOCBOOK",
    "DOCM",
    "DOCX",
    "EPUB",
    "EXTENSIONS",
    "FICTIONBOOK",
    "FODP",
    "FODS",
    "FODT",
    "HTML",
    "JATS",
    "JP2",
    "JSON",
    "KEYNOTE",
    "LOTUS",
    "MANPAGE",
    "MARKDOWN",
    "MBOX",
    "MEDIAWIKI",
    "MHTML",
    "MOBI",
    "NDJSON",
    "NOTEBOOK",
    "NUMBERS",
    "ODG",
    "ODP",
    "ODS",
    "ODT",
    "PAGES",
    "PDF",
    "PLAIN",
    "PPTM",
    "PPTX",
    "PUB",
    "QUATTRO",
    "RTF",
    "SDC",
    "SDD",
    "SDW",
    "SRT",
    "SVG",
    "SXC",
    "SXI",
    "SXW",
    "TAR",
    "TEXINFO",
    "TEXTILE",
    "TOML",
    "TSV",
    "TYPST",
    "USPTO",
    "USPTO_2001",
    "USPTO_APS",
    "VSD",
    "VSDX",
    "VTT",
    "WPD",
    "WPS",
    "WRITE",
    "XBRL",
    "XLS",
    "XLSB",
    "XLSM",
    "XLSX",
    "XML",
    "YAML",
    "detect_media_type",
    "extension",
    "is_palm_book",
    "undetected_reason",
]
