"""Text PDFium cannot set because a font is neither in the file nor on this machine.

Why: a PDF may name a CJK font without embedding it (Ryumin-Light, GothicBBB-Medium, STSong,
SimSun, MSung, HYSMyeongJo: the Asian font packs of older Acrobat, Word's exports, pTeX). PDFium
then borrows an installed font, and where the machine has none that covers the script it drops
those characters from the page's text without a word: on a server without CJK fonts a Japanese
gazette gave 28 of its 7,384 characters, a vertical poem 297 of 1,007, a Chinese auditor's
letter 218 of 772 on its first page (BENCHMARKS.md, "CJK text in fonts the file does not
embed"). Vertical writing (an ``-V`` CMap) is always lost so; some horizontal text too.
``bin/setup`` installs Noto CJK, which covers all four scripts. Where no such font is
installed, this module finds what was lost, so the parse says so and the reading-quality score
counts it, instead of passing a document that lost most of its text.

How: once per process, PDFium reads a one-line vertical sample of each script in a
non-embedded font (``sets_vertical_cjk``). Only where one fails are a page's text objects looked
at (``runs_without_text``): runs in a non-embedded font of which the page's text holds nothing.
On those pages pdfminer, which maps a CID font's codes to Unicode from Adobe's tables with no
font at all, counts the CJK characters the page holds, and those our text lacks are the lost
ones (``characters_lost``; a run of spaces, the other kind of empty run, loses none).
"""

from __future__ import annotations

import ctypes
import functools
import io
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pypdfium2
import pypdfium2.raw as pdfium_c

#: One line of each script, the non-embedded font and CMap it is written in, and the code
#: page of that CMap's character codes.
SAMPLES = (
    ("日本語の文章です", "Ryumin-Light", "UniJIS-UCS2-V", "Japan1", 2, "utf-16-be"),
    ("中文的文字内容", "STSong-Light", "UniGB-UCS2-V", "GB1", 2, "utf-16-be"),
    ("中文的文字內容", "MSung-Light", "UniCNS-UCS2-V", "CNS1", 0, "utf-16-be"),
    ("한국어문장입니다", "HYSMyeongJo-Medium", "UniKS-UCS2-V", "Korea1", 1, "utf-16-be"),
    ("中文的文字内容", "SimSun", "GBK-EUC-H", "GB1", 2, "gbk"),
)


def cjk_sample_pdf(
    text: str,
    font: str,
    cmap: str,
    ordering: str,
    supplement: int,
    codec: str,
    latin: str = "",
    tracking: float = 0.0,
    adjustment: int = 0,
) -> bytes:
    """A one-page PDF whose ``text`` is set in ``font`` with ``cmap``, the font not embedded:
    the way old CJK PDFs name a font from the reader's Asian font pack (each character's code
    is its bytes in ``codec``, the code page the CMap reads); ``latin``, if given, is a line of
    Helvetica above it; ``tracking``, points added after each character (``Tc``: justified
    CJK text is spread so); ``adjustment``, thousandths of an em moved after each character in
    a ``TJ`` array instead (how Word and InDesign spread it)."""
    if adjustment:
        shown = b"[%s] TJ" % b" ".join(
            b"<%s> %d" % (ch.encode(codec).hex().encode(), -adjustment) for ch in text
        )
    else:
        shown = b"<%s> Tj" % text.encode(codec).hex().encode()
    content = b"BT /F1 12 Tf %g Tc 300 700 Td %s ET" % (tracking, shown)
    if latin:
        content = b"BT /F2 12 Tf 72 740 Td (%s) Tj ET " % latin.encode("latin-1") + content
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R /F2 8 0 R >> >> /Contents 5 0 R >>",
        f"<< /Type /Font /Subtype /Type0 /BaseFont /{font}-{cmap} /Encoding /{cmap} "
        f"/DescendantFonts [6 0 R] >>".encode(),
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        f"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /{font} /CIDSystemInfo << "
        f"/Registry (Adobe) /Ordering ({ordering}) /Supplement {supplement} >> "
        f"/FontDescriptor 7 0 R /DW 1000 >>".encode(),
        f"<< /Type /FontDescriptor /FontName /{font} /Flags 6 /FontBBox [0 -141 1000 859] "
        f"/ItalicAngle 0 /Ascent 859 /Descent -141 /CapHeight 700 /StemV 80 >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return pdf_file(objects)


def pdf_file(objects: Sequence[bytes], root: int = 1) -> bytes:
    """A PDF of ``objects`` (numbered from 1; object ``root`` the catalogue) with its
    cross-reference table: the file around the objects the samples above are written as, and
    the parser tests' files written object by object."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        root,
        xref,
    )
    return bytes(out)


@functools.cache
def sets_vertical_cjk() -> bool:
    """Whether PDFium, with this machine's fonts, sets vertical Japanese, Chinese (simplified
    and traditional) and Korean text written in a font the file does not embed."""
    for sample in SAMPLES:
        pdf = pypdfium2.PdfDocument(cjk_sample_pdf(*sample))
        try:
            page = pdf[0]
            textpage = page.get_textpage()
            read = textpage.get_text_range()
            textpage.close()
            page.close()
        finally:
            pdf.close()
        if "".join(read.split()) != sample[0]:
            return False
    return True


def runs_without_text(
    page: pypdfium2.PdfPage, textpage: pypdfium2.PdfTextPage
) -> tuple[int, set[str]]:
    """The runs of ``page`` in a font the file does not embed of which ``textpage`` holds no
    character, and those fonts' names: where text may have been dropped for want of a font
    (a run of spaces counts too; ``characters_lost`` tells which lost text)."""
    runs = 0
    fonts: set[str] = set()
    embedded: dict[int, bool] = {}
    for index in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
        obj = pdfium_c.FPDFPage_GetObject(page.raw, index)
        if pdfium_c.FPDFPageObj_GetType(obj) != pdfium_c.FPDF_PAGEOBJ_TEXT:
            continue
        font = pdfium_c.FPDFTextObj_GetFont(obj)
        if not font:
            continue
        address = ctypes.cast(font, ctypes.c_void_p).value or 0
        if address not in embedded:
            embedded[address] = bool(pdfium_c.FPDFFont_GetIsEmbedded(font))
        # The run's text as the page's text holds it: 2 bytes (a terminating NUL) when empty.
        if embedded[address] or pdfium_c.FPDFTextObj_GetText(obj, textpage.raw, None, 0) > 2:
            continue
        runs += 1
        fonts.add(_font_name(font))
    return runs, fonts


def characters_lost(raw: bytes, read: dict[int, str]) -> dict[int, int] | str:
    """For each page index of ``read`` (our text of that page), how many CJK characters the
    page's content holds that our text lacks, counted by pdfminer (which maps a CID font's
    codes to Unicode from Adobe's tables, with no font at all). Where pdfminer cannot read
    those pages (a file PDFium repairs and pdfminer does not), what it said instead: the text
    PDFium read is kept and the loss is reported uncounted, not the document failed."""
    from pdfminer.high_level import extract_pages

    lost: dict[int, int] = {}
    try:
        for index, layout in zip(
            sorted(read),
            extract_pages(io.BytesIO(raw), page_numbers=set(read), laparams=None),
            strict=False,
        ):
            theirs = _cjk_count("".join(_characters(layout)))
            lost[index] = max(0, theirs - _cjk_count(read[index]))
    except Exception as exc:  # pdfminer raises many kinds (syntax, assertions, key errors)
        said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return f"pdfminer could not read the pages to count them: {said}"
    return lost


def _characters(container: Any) -> Iterator[str]:
    from pdfminer.layout import LTChar, LTContainer

    for item in container:
        if isinstance(item, LTChar):
            yield item.get_text()
        elif isinstance(item, LTContainer):
            yield from _characters(item)


#: Han (with its extensions and compatibility forms), kana, Hangul, CJK punctuation and
#: full-width forms: the characters of the scripts whose fonts are left out of files.
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u30ff\u3130-\u318f\u31f0-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0003ffff]"
)


def _cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def _font_name(font: Any) -> str:
    length = pdfium_c.FPDFFont_GetBaseFontName(font, None, 0)
    buffer = ctypes.create_string_buffer(max(length, 1))
    pdfium_c.FPDFFont_GetBaseFontName(font, buffer, length)
    return buffer.value.decode("latin-1") or "(unnamed)"
