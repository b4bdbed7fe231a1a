"""Parsing: raw document bytes -> ``ParsedDocument`` (text layer + section tree).

One entry point, ``parse_document``; one module per format (``markdown``, ``plaintext``,
``html``, ``pdf``), chosen by media type or, without one, by the file extension.

Documented results for bad input (every error is a ``DocumentError`` naming the source key):
- no parser for the media type / extension: ``UnsupportedFormatError``;
- more than ``max_bytes``: ``DocumentTooLargeError``, before any parsing;
- 0 bytes (any format, said before a parser runs), or a text format whose text is whitespace
  only: ``EmptyDocumentError``;
- text is decoded by ``encoding.decode`` (byte-order marks, UTF-8, an HTML meta charset, a
  detected legacy encoding, else windows-1252; recorded as ``text_encoding`` in the document's
  metadata); binary data behind a text extension: ``EncodingError`` saying why;
- a truncated, encrypted or otherwise unreadable PDF: ``CorruptDocumentError``;
- a PDF over ``pdf.MAX_PAGES`` pages: ``DocumentTooLargeError``; past its time budget:
  ``ParseTimeoutError``;
- an image (PNG, JPEG, TIFF and its pages, WebP, BMP, GIF) is a scan: ``image`` reads it by the
  PDF path below, OCR included; a frame over ``image.MAX_PIXELS``: ``DocumentTooLargeError``;
- legacy Office (.doc/.xls/.ppt), OpenDocument (.odt/.ods/.odp) and RTF are converted by
  LibreOffice to OOXML and read by the DOCX/XLSX/PPTX parsers (``legacy_office``); a
  password-protected file: ``CorruptDocumentError`` saying so; a conversion past its budget:
  ``ParseTimeoutError``, its processes killed;
- every parse that gives text is scored for reading quality (``quality``: the share of words
  of the document's language, garbled and misread words, mojibake, unmapped glyphs, OCR
  confidence), recorded as ``reading_quality`` (0-1), ``reading_quality_reasons`` and
  ``language`` in the document's metadata;
- a PDF page without a usable text layer (a scan) is read by OCR (``parsing.ocr``, settings in
  ``parsing``: ``ParsingSettings``); a PDF that still has no text: ``EmptyDocumentError`` with
  the reason and the pages ("no text layer and OCR found no text on pages 1–4").
Any other library failure is wrapped in ``CorruptDocumentError``: nothing but a
``DocumentError`` leaves ``parse_document``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Document
from agrag_pipeline.parsing import (
    boxnote,
    delimited,
    docbook,
    epub,
    fictionbook,
    flat_opc,
    html,
    image,
    jats,
    latex,
    legacy_office,
    libarchive_reader,
    lightmarkup,
    mail,
    manpage,
    markdown,
    mbox,
    mdx,
    mediawiki,
    mhtml,
    mobi,
    notebook,
    patent,
    patent_aps,
    patent_early_xml,
    pdf,
    plaintext,
    powerpoint,
    quality,
    rst,
    sourcecode,
    spreadsheet,
    structured,
    subtitles,
    svg,
    tararchive,
    texinfo,
    textiledoc,
    typstdoc,
    word,
    xbrl,
    xmldoc,
    ziparchive,
)
from agrag_pipeline.parsing.budget import DEFAULT_TIME_BUDGET_S, Deadline, deadline_scope
from agrag_pipeline.parsing.detect import EXTENSIONS, detect_media_type
from agrag_pipeline.parsing.encoding import decode
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    UnsupportedFormatError,
)
from agrag_pipeline.parsing.parsed import ParsedDocument

if TYPE_CHECKING:
    from agrag_pipeline.settings import ParsingSettings

#: Default size limit: larger files are refused before any parsing.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

#: File extension (lower case, with the dot) -> media type: ``detect``'s table, the one place
#: an extension is given its format (content may still overrule it there).
EXTENSION_MEDIA_TYPES: dict[str, str] = dict(EXTENSIONS)

Parser = Callable[[bytes, Document], ParsedDocument]


def _text_parser(
    parse_text: Callable[[str, Document], ParsedDocument], *, html: bool = False
) -> Parser:
    def parse(raw: bytes, document: Document) -> ParsedDocument:
        decoded = decode(raw, document.source_key, html=html)
        document.metadata.update(decoded.metadata())
        text = decoded.text
        if not text.strip():
            raise EmptyDocumentError(document.source_key, "the file holds only whitespace")
        return parse_text(text, document)

    return parse


def _markdown(text: str, document: Document) -> ParsedDocument:
    if document.source_key.lower().endswith(".mdx"):
        text = mdx.as_markdown(text)
        if not text.strip():
            raise EmptyDocumentError(document.source_key, "the MDX file holds only code")
    return ParsedDocument(
        document=document, text_layer=text, sections=markdown.parse(text, document)
    )


def _html(text: str, document: Document) -> ParsedDocument:
    parsed = html.parse(text, document, web_page=True)
    if not parsed.text_layer.strip():
        raise EmptyDocumentError(document.source_key, "the HTML has no visible text")
    return parsed


#: Media type -> parser. Other modules may look here to see which formats are supported.
PARSERS: dict[str, Parser] = {
    markdown.MEDIA_TYPE: _text_parser(_markdown),
    plaintext.MEDIA_TYPE: _text_parser(plaintext.parsed),
    html.MEDIA_TYPE: _text_parser(_html, html=True),
    pdf.MEDIA_TYPE: pdf.parse,
    word.MEDIA_TYPE: word.parse,
    word.MACRO_MEDIA_TYPE: word.parse,
    powerpoint.MEDIA_TYPE: powerpoint.parse,
    powerpoint.MACRO_MEDIA_TYPE: powerpoint.parse,
    spreadsheet.XLSX_MEDIA_TYPE: spreadsheet.parse,
    spreadsheet.XLSM_MEDIA_TYPE: spreadsheet.parse,
    delimited.CSV_MEDIA_TYPE: delimited.parse,
    delimited.TSV_MEDIA_TYPE: delimited.parse,
    jats.MEDIA_TYPE: jats.parse,
    docbook.MEDIA_TYPE: docbook.parse,
    fictionbook.MEDIA_TYPE: fictionbook.parse,
    boxnote.MEDIA_TYPE: boxnote.parse,
    xbrl.MEDIA_TYPE: xbrl.parse,
    patent.MEDIA_TYPE: patent.parse,
    patent_early_xml.MEDIA_TYPE: patent_early_xml.parse,
    patent_aps.MEDIA_TYPE: _text_parser(patent_aps.parse),
    epub.MEDIA_TYPE: epub.parse,
    mobi.MEDIA_TYPE: mobi.parse,
    rst.MEDIA_TYPE: _text_parser(rst.parse),
    latex.MEDIA_TYPE: _text_parser(latex.parse),
    lightmarkup.ORG_MEDIA_TYPE: _text_parser(lightmarkup.parse_org),
    mediawiki.MEDIA_TYPE: _text_parser(mediawiki.parse),
    manpage.MEDIA_TYPE: _text_parser(manpage.parse),
    typstdoc.MEDIA_TYPE: _text_parser(typstdoc.parse),
    textiledoc.MEDIA_TYPE: _text_parser(textiledoc.parse),
    texinfo.MEDIA_TYPE: _text_parser(texinfo.parse),
    lightmarkup.ASCIIDOC_MEDIA_TYPE: _text_parser(lightmarkup.parse_asciidoc),
    subtitles.VTT_MEDIA_TYPE: _text_parser(subtitles.parse),
    subtitles.SRT_MEDIA_TYPE: _text_parser(subtitles.parse),
    **dict.fromkeys(image.MEDIA_TYPES, image.parse),
    **dict.fromkeys(mail.MEDIA_TYPES, mail.parse),
    ziparchive.MEDIA_TYPE: ziparchive.parse,
    **dict.fromkeys(tararchive.MEDIA_TYPES, tararchive.parse),
    **dict.fromkeys(libarchive_reader.MEDIA_TYPES, libarchive_reader.parse),
    mbox.MEDIA_TYPE: mbox.parse,
    svg.MEDIA_TYPE: svg.parse,
    mhtml.MEDIA_TYPE: mhtml.parse,
    **dict.fromkeys(legacy_office.MEDIA_TYPES, legacy_office.parse),
    **structured.PARSERS,
    xmldoc.MEDIA_TYPE: xmldoc.parse,
    flat_opc.MEDIA_TYPE: flat_opc.parse,
    notebook.MEDIA_TYPE: notebook.parse,
    **dict.fromkeys(sourcecode.MEDIA_TYPES.values(), sourcecode.parse),
}
#: Parsers that read ``ParsingSettings`` (OCR): they get the run's settings.
_TAKES_SETTINGS = (pdf.parse, image.parse, epub.parse)


def media_type_for(source_key: str) -> str:
    """The media type a source key's extension implies.

    Raises:
        UnsupportedFormatError: an extension we have no parser for.
    """
    suffix = PurePosixPath(source_key).suffix.lower()
    try:
        return EXTENSION_MEDIA_TYPES[suffix]
    except KeyError:
        known = ", ".join(sorted(EXTENSION_MEDIA_TYPES))
        raise UnsupportedFormatError(
            source_key, f"no parser for extension {suffix or '(none)'!r} (known: {known})"
        ) from None


#: Formats whose files hold no text by design often enough (slides of pictures, a blank form,
#: an empty sheet) that no text is a note, not a failure (``parse_document``). Not the formats
#: LibreOffice converts: there an empty result may be the converter's loss, not the file's.
#: Lower case, as ``parse_document`` compares media types ("...macroEnabled.12" too).
_TEXTLESS_IS_A_DOCUMENT = frozenset(
    media_type.lower()
    for media_type in (
        word.MEDIA_TYPE,
        word.MACRO_MEDIA_TYPE,
        powerpoint.MEDIA_TYPE,
        powerpoint.MACRO_MEDIA_TYPE,
        spreadsheet.XLSX_MEDIA_TYPE,
        spreadsheet.XLSM_MEDIA_TYPE,
        svg.MEDIA_TYPE,  # an icon, a shape: a drawing without words, like a photo
    )
)


def parse_document(
    raw: bytes,
    source_key: str,
    media_type: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    time_budget_s: float = DEFAULT_TIME_BUDGET_S,
    parsing: ParsingSettings | None = None,
) -> ParsedDocument:
    """Parse one document version into its text layer and section tree.

    ``parsing`` (default: ``ParsingSettings()``) reaches the parsers that read it (PDF: OCR).

    ``media_type`` wins over the extension; parameters such as ``; charset=...`` are ignored.
    The parser runs under a ``budget.Deadline`` of ``time_budget_s`` (reached through
    ``budget.current_deadline()``): past it, ``ParseTimeoutError``.

    Raises:
        DocumentError: one of its subclasses (see the module docstring); never anything else.
    """
    if media_type is None:
        # By content where the extension lies (``detect``), else by the extension.
        media_type = detect_media_type(source_key, raw) or media_type_for(source_key)
    media_type = media_type.split(";", 1)[0].strip().lower()
    parser = PARSERS.get(media_type)
    if parser is None:  # media types are case-insensitive ("...macroEnabled.12")
        parser = next((p for t, p in PARSERS.items() if t.lower() == media_type), None)
    if parser is None:
        raise UnsupportedFormatError(source_key, f"no parser for media type {media_type!r}")
    if len(raw) > max_bytes:
        raise DocumentTooLargeError(
            source_key, f"{len(raw):,} bytes is over the limit of {max_bytes:,} bytes"
        )
    if not raw:
        # Said here once for every format: a binary parser would call it corrupt.
        raise EmptyDocumentError(source_key, "the file is empty (0 bytes)")
    document = Document(
        source_key=source_key,
        media_type=media_type,
        size_bytes=len(raw),
        content_hash=content_hash(raw),
    )
    try:
        with deadline_scope(Deadline(source_key, time_budget_s)):
            if parsing is not None and parser in _TAKES_SETTINGS:
                parsed = parser(raw, document, parsing=parsing)
            else:
                parsed = parser(raw, document)
    except EmptyDocumentError as empty:
        # A deck of pictures, a blank form, an empty workbook: files a team's folder holds on
        # purpose, like a photo among scans. No text is no failure (no chunks, a note the UI
        # shows) unless the settings require text, as for pictures and scans.
        if media_type not in _TEXTLESS_IS_A_DOCUMENT or (
            parsing is not None and parsing.ocr.require_text
        ):
            raise
        parsed = ParsedDocument(
            document=document, text_layer="", warnings=[f"no text: {empty.problem}"]
        )
    except DocumentError:
        raise
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # pyo3 panics are BaseExceptions; wrap them too
        raise CorruptDocumentError(
            source_key, f"could not be parsed as {media_type}: {type(exc).__name__}: {exc}"
        ) from exc
    _record_reading_quality(parsed)
    return parsed


#: Structured data and code: their key paths, identifiers and markup names are no words of a
#: language, so the score leaves out the word-list signals there (``quality.assess``'s
#: ``prose``); they flagged a quarter of such files read right.
_NOT_PROSE = frozenset(
    {
        *structured.PARSERS,
        xmldoc.MEDIA_TYPE,
        notebook.MEDIA_TYPE,
        *sourcecode.MEDIA_TYPES.values(),
    }
)


def _record_reading_quality(parsed: ParsedDocument) -> None:
    """The document's reading-quality score (``quality``) into its metadata. A text layer without
    words has none; a failure to measure is a warning, never a failed parse."""
    if not parsed.text_layer.strip():
        return
    try:
        tables = [(s.start, s.end) for s in parsed.sections if s.kind == "table"]
        measured = quality.assess(
            parsed.text_layer,
            parsed.document.metadata,
            tables,
            prose=parsed.document.media_type not in _NOT_PROSE,
        )
    except Exception as exc:  # the text was read; only its score is missing
        parsed.warnings.append(f"reading quality not measured: {type(exc).__name__}: {exc}")
        return
    parsed.document.metadata.update(measured.metadata())


__all__ = [
    "DEFAULT_MAX_BYTES",
    "EXTENSION_MEDIA_TYPES",
    "PARSERS",
    "ParsedDocument",
    "media_type_for",
    "parse_document",
]
