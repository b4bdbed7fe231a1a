"""Office 2007+ documents saved as one XML file ("Word XML Document (*.xml)", PowerPoint's "XML
Presentation"): a flat OPC package, ``pkg:package`` holding each part of the OOXML package as
a ``pkg:part`` (``pkg:name``, ``pkg:contentType``, then ``pkg:xmlData`` or base64
``pkg:binaryData``).

The parts are put back into the ZIP package they came from and read by our DOCX/PPTX/XLSX
parser, so the text is exactly that of the same document saved as ``.docx`` (no converter: a
generic XML reading gave every style, font and relationship as text). The XML is parsed by
``jats.parse_xml`` (no DTD, no entities, no network); the rebuilt package has no more bytes
than the file holds, and the OOXML parsers open it through ``archive.open_zip`` as any other.
"""

from __future__ import annotations

import base64
import binascii
import io
import zipfile
from xml.sax.saxutils import quoteattr

from lxml import etree

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import jats, powerpoint, spreadsheet, word
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.detect import FLAT_OPC
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument

MEDIA_TYPE = FLAT_OPC
PKG = "http://schemas.microsoft.com/office/2006/xmlPackage"
_CONTENT_TYPES = "http://schemas.openxmlformats.org/package/2006/content-types"
#: The main part's content type -> the parser of the package it opens, and its words.
_MAIN_PARTS = (
    ("wordprocessingml.document.main+xml", word.parse, "Word"),
    ("ms-word.document.macroEnabled.main+xml", word.parse, "Word"),
    ("presentationml.presentation.main+xml", powerpoint.parse, "PowerPoint"),
    ("ms-powerpoint.presentation.macroEnabled.main+xml", powerpoint.parse, "PowerPoint"),
    ("spreadsheetml.sheet.main+xml", spreadsheet.parse, "Excel"),
    ("ms-excel.sheet.macroEnabled.main+xml", spreadsheet.parse, "Excel"),
)


def _pkg(local: str) -> str:
    return f"{{{PKG}}}{local}"


def repackage(raw: bytes, source_key: str) -> tuple[bytes, list[str]]:
    """The OOXML ZIP package a flat OPC file holds, and its parts' content types.

    Raises:
        CorruptDocumentError: not well-formed, entity declarations, no ``pkg:package`` root,
            a part without a name or with damaged base64 data.
    """
    deadline = current_deadline(source_key)
    root = jats.parse_xml(raw, source_key)
    if root.tag != _pkg("package"):
        raise CorruptDocumentError(source_key, "not a flat OPC package (no pkg:package root)")
    buffer = io.BytesIO()
    types: list[str] = []
    overrides = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        for part in root.iter(_pkg("part")):
            deadline.tick("flat OPC part")
            name = (part.get(_pkg("name")) or "").lstrip("/")
            content_type = part.get(_pkg("contentType")) or ""
            if not name or name == "[Content_Types].xml":
                raise CorruptDocumentError(source_key, f"a flat OPC part named {name!r}")
            xml_data = part.find(_pkg("xmlData"))
            binary = part.find(_pkg("binaryData"))
            if xml_data is not None:
                element = next((c for c in xml_data if isinstance(c.tag, str)), None)
                body = b"" if element is None else etree.tostring(element, encoding="UTF-8")
            elif binary is not None:
                try:
                    body = base64.b64decode("".join((binary.text or "").split()), validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise CorruptDocumentError(
                        source_key, f"flat OPC part {name!r} has damaged base64 data: {exc}"
                    ) from exc
            else:
                body = b""
            package.writestr(name, body)
            types.append(content_type)
            if content_type:
                overrides.append(
                    f"<Override PartName={quoteattr('/' + name)} "
                    f"ContentType={quoteattr(content_type)}/>"
                )
        package.writestr(
            "[Content_Types].xml",
            f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{_CONTENT_TYPES}">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            + "".join(overrides)
            + "</Types>",
        )
    return buffer.getvalue(), types


def parse(raw: bytes, document: Document) -> ParsedDocument:
    """The text layer and sections of a flat OPC file, read as the package it holds."""
    key = document.source_key
    package, types = repackage(raw, key)
    for suffix, reader, words in _MAIN_PARTS:
        if any(t.endswith(suffix) for t in types):
            document.metadata["flat_opc"] = f"a {words} package saved as one XML file"
            return reader(package, document)
    raise CorruptDocumentError(
        key, "a flat OPC package without a Word, PowerPoint or Excel main part"
    )


__all__ = ["MEDIA_TYPE", "PKG", "parse", "repackage"]
