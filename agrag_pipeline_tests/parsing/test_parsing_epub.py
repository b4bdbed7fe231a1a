"""EPUB: chapters in spine order through the HTML parser, the navigation (EPUB 3 nav or EPUB 2
NCX) as headings; hostile books (truncated, zip bomb, spine entries that are missing or climb out
with ``../``, entity declarations) end in a clear error or a warning, never a crash."""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from agrag_pipeline.parsing import ParsedDocument, epub, parse_document
from agrag_pipeline.parsing.detect import detect_media_type
from agrag_pipeline.parsing.errors import CorruptDocumentError, DocumentTooLargeError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).parent.parent / "fixtures" / "epub"
#: Project Gutenberg's "Winter Sports in Switzerland" (E. F. Benson), EPUB 2 with an NCX.
WINTER = FIXTURES / "winter-sports.epub"
#: A Google Docs export, EPUB 3 with a nav document.
GDOC = FIXTURES / "eng_spa_mult.epub"
OPF = "OEBPS/content.opf"


@pytest.fixture(scope="module")
def winter() -> ParsedDocument:
    return parse_checked(WINTER.read_bytes(), "books/winter-sports.epub")


def _words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def _rewritten(raw: bytes, replace: dict[str, bytes]) -> bytes:
    """The book with members replaced or added (the rest copied as they are)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = replace.pop(info.filename, None)
            target.writestr(info, source.read(info) if data is None else data)
        for name, data in replace.items():
            target.writestr(name, data, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def test_epub_is_detected_by_content_and_extension() -> None:
    raw = WINTER.read_bytes()
    assert detect_media_type("book.epub", raw) == epub.MEDIA_TYPE
    assert detect_media_type("book.zip", raw) == epub.MEDIA_TYPE  # the OCF mimetype member
    assert detect_media_type("book.epub", raw[:4096]) == epub.MEDIA_TYPE


def test_ncx_navigation_becomes_the_heading_tree(winter: ParsedDocument) -> None:
    ncx = etree.fromstring(zipfile.ZipFile(WINTER).read("OEBPS/toc.ncx"))
    nav_map = ncx.find("{http://www.daisy.org/z3986/2005/ncx/}navMap")
    assert nav_map is not None
    labels = [
        " ".join("".join(t.itertext()).split())
        for t in nav_map.iter("{http://www.daisy.org/z3986/2005/ncx/}text")
    ]
    headings = [s.heading for s in winter.sections if s.heading is not None]
    recall = sum(1 for label in labels if label in headings) / len(labels)
    assert recall == 1.0, [label for label in labels if label not in headings]
    # Precision: every heading is a navigation entry or a heading element of its chapter.
    extra = [h for h in headings if h not in labels]
    assert extra == ["Part I", "Part II", "Part I", "Part II"]
    section_b = next(s for s in winter.sections if s.heading == "Section B")
    assert section_b.heading_path == [
        "CHAPTER II RINKS AND SKATERS",
        "FIRST-CLASS TEST",
        "Section B",
    ]
    chapter = next(s for s in winter.sections if s.heading == "CHAPTER IV TOBOGGANING")
    assert chapter.level == 1 and chapter.heading_path == ["CHAPTER IV TOBOGGANING"]


def test_chapters_are_read_in_spine_order_with_their_words(winter: ParsedDocument) -> None:
    text = winter.text_layer
    order = [
        "CHAPTER I THE SUN-SEEKER",
        "CHAPTER II RINKS AND SKATERS",
        "CHAPTER VIII FOR PARENTS AND GUARDIANS",
        "THE FULL PROJECT GUTENBERG LICENSE",
    ]
    at = [next(s.start for s in winter.sections if s.heading == h) for h in order]
    assert at == sorted(at)
    # Word coverage and precision against the chapters' XHTML text read by lxml.
    book = zipfile.ZipFile(WINTER)
    reference: Counter[str] = Counter()
    for index in range(9):
        name = f"OEBPS/9010142969167985858_60153-h-{index}.htm.html"
        body = etree.fromstring(book.read(name)).find("{http://www.w3.org/1999/xhtml}body")
        assert body is not None
        reference += _words(" ".join(body.itertext()))
    ours = _words(text)
    matched = sum((ours & reference).values())
    assert matched / sum(reference.values()) > 0.99
    assert matched / sum(ours.values()) > 0.99


def test_epub3_nav_document_gives_the_headings() -> None:
    parsed = parse_checked(GDOC.read_bytes(), "gdoc.epub")
    headings = [(s.level, s.heading) for s in parsed.sections if s.heading is not None]
    assert headings == [(1, "Untitled document")]
    assert "All human beings are born free and equal in dignity and rights." in parsed.text_layer
    assert "Todos los seres humanos nacen libres e iguales" in parsed.text_layer


def test_truncated_epub_is_a_clear_error() -> None:
    raw = WINTER.read_bytes()
    with pytest.raises(CorruptDocumentError, match=r"^cut\.epub: .*(truncated|damaged)"):
        parse_document(raw[: len(raw) // 2], "cut.epub")


def test_epub_zip_bomb_is_refused_from_its_directory() -> None:
    bomb = _rewritten(
        GDOC.read_bytes(),
        {"GoogleDoc/Untitleddocument.xhtml": b"<p>" + b" " * (40 * 1024 * 1024) + b"</p>"},
    )
    assert len(bomb) < 200_000
    with pytest.raises(DocumentTooLargeError, match=r"^bomb\.epub: .*inflate"):
        parse_document(bomb, "bomb.epub")


def test_spine_entries_missing_or_outside_the_book_are_skipped_with_a_warning() -> None:
    package = "GoogleDoc/package.opf"
    opf = (
        zipfile.ZipFile(GDOC)
        .read(package)
        .replace(
            b"</manifest>",
            b'<item href="../../etc/passwd" id="evil" media-type="application/xhtml+xml"/>'
            b'<item href="gone.html" id="gone" media-type="application/xhtml+xml"/></manifest>',
        )
        .replace(b"<spine>", b'<spine><itemref idref="evil"/><itemref idref="gone"/>')
    )
    # "../../etc/passwd" from GoogleDoc/ resolves to "../etc/passwd", a member this ZIP holds
    # (as a hostile archive may): it climbs out of the container, so it is never read.
    raw = _rewritten(GDOC.read_bytes(), {package: opf, "../etc/passwd": b"<p>root:x:0:0</p>"})
    parsed = parse_checked(raw, "odd.epub")
    assert "root:x" not in parsed.text_layer
    assert "All human beings are born free" in parsed.text_layer
    assert any("'../../etc/passwd' points outside the book" in w for w in parsed.warnings)
    assert any("'gone.html' names no member" in w for w in parsed.warnings)


def test_epub_without_a_readable_chapter_is_a_clear_error() -> None:
    opf = (
        zipfile.ZipFile(GDOC)
        .read("GoogleDoc/package.opf")
        .replace(b'href="Untitleddocument.xhtml"', b'href="../../Untitleddocument.xhtml"')
    )
    with pytest.raises(CorruptDocumentError, match=r"^none\.epub: .*no readable chapter"):
        parse_document(_rewritten(GDOC.read_bytes(), {"GoogleDoc/package.opf": opf}), "none.epub")


def test_entity_declarations_in_the_package_are_refused() -> None:
    opf = zipfile.ZipFile(GDOC).read("GoogleDoc/package.opf")
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE package [<!ENTITY a "aaaaaaaaaa">]>'
        + opf.split(b"?>", 1)[1]
    )
    with pytest.raises(CorruptDocumentError, match=r"^laughs\.epub: .*entit"):
        parse_document(
            _rewritten(GDOC.read_bytes(), {"GoogleDoc/package.opf": laughs}), "laughs.epub"
        )


def _encryption(algorithm: str, uri: str) -> bytes:
    return (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        f'<enc:EncryptionMethod Algorithm="{algorithm}"/><enc:CipherData>'
        f'<enc:CipherReference URI="{uri}"/></enc:CipherData></enc:EncryptedData></encryption>'
    ).encode()


def test_drm_encrypted_chapters_are_named_not_read_as_text() -> None:
    chapter = "GoogleDoc/Untitleddocument.xhtml"
    drm = _rewritten(
        GDOC.read_bytes(),
        {
            "META-INF/encryption.xml": _encryption(
                "http://www.w3.org/2001/04/xmlenc#aes128-cbc", chapter
            ),
            chapter: bytes(range(256)) * 20,  # what an encrypted chapter holds: noise
        },
    )
    with pytest.raises(CorruptDocumentError, match=r"^drm\.epub: .*encrypted \(DRM\)"):
        parse_document(drm, "drm.epub")
    # Obfuscated fonts (the IDPF algorithm) are no DRM: the book reads.
    fonts = _rewritten(
        GDOC.read_bytes(),
        {"META-INF/encryption.xml": _encryption("http://www.idpf.org/2008/embedding", "f.otf")},
    )
    assert "All human beings" in parse_checked(fonts, "fonts.epub").text_layer


#: A page of a fixed-layout book drawn as SVG, as InDesign exports it: each line a ``<text>``
#: moved into place, its pieces ``<tspan>``s placed by ``x`` and ``y`` (the italic title and the
#: rest of a line at one ``y``, the next line at another), indented in the source.
_DRAWN_PAGE = b"""<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 368 581">
  <title>Sea Stories, page 2</title>
  <desc>The books by the same author.</desc>
  <style>.t { font-size: 9.5px; }</style>
  <text transform="matrix(1 0 0 1 56.7 127.4)">
    <tspan x="0,4.4,7.0" y="0" class="t">Harbour Lights</tspan>
    <tspan x="48.8,51.1" y="0" class="t">, Estuary Press, 2005.</tspan>
    <tspan x="0,4.8" y="11.761" class="t">Low Water</tspan>
    <tspan x="25.3,27.6" y="11.761" class="t">, Tideway Books, 2010.</tspan>
  </text>
  <path d="M 0 0 L 10 10"/>
</svg>
"""


def _with_pages(pages: dict[str, tuple[str, bytes]], spine: list[str], only: bool) -> bytes:
    """The Google Docs book with ``pages`` added (href -> media type, data) and ``spine`` (their
    hrefs) read first; ``only``: the book's own chapter taken out of the spine."""
    package = "GoogleDoc/package.opf"
    items = b"".join(
        f'<item href="{href}" id="{href.replace(".", "-")}" media-type="{kind}"/>'.encode()
        for href, (kind, _) in pages.items()
    )
    opf = zipfile.ZipFile(GDOC).read(package)
    if only:
        opf = re.sub(rb"<itemref [^>]*/>", b"", opf)
    refs = b"".join(f'<itemref idref="{href.replace(".", "-")}"/>'.encode() for href in spine)
    opf = opf.replace(b"</manifest>", items + b"</manifest>").replace(b"<spine>", b"<spine>" + refs)
    replace = {package: opf} | {f"GoogleDoc/{href}": data for href, (_, data) in pages.items()}
    return _rewritten(GDOC.read_bytes(), replace)


def test_a_spine_page_drawn_as_svg_is_read_as_its_lines() -> None:
    pages = {"page2.svg": ("image/svg+xml", _DRAWN_PAGE)}
    parsed = parse_checked(_with_pages(pages, ["page2.svg"], only=False), "drawn.epub")
    text = parsed.text_layer
    assert text.startswith(
        "The books by the same author.\nHarbour Lights, Estuary Press, 2005.\n"
        "Low Water, Tideway Books, 2010.\n"
    )
    assert "Sea Stories, page 2" not in text  # the reading system's label, not the page's
    assert "All human beings are born free" in text  # the book's other chapter
    assert not any("page2.svg" in w for w in parsed.warnings)


def test_a_page_holding_its_lines_in_an_inline_svg_is_read_as_those_lines() -> None:
    # The same page as XHTML around an inline SVG (a fixed-layout book's other way): the lines
    # are the ``<text>`` elements, the tooltip and the style are not text.
    page = (
        b'<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>Sea Stories</title></head><body><div class='page'>"
        + _DRAWN_PAGE.split(b"?>", 1)[1]
        + b"</div></body></html>"
    )
    pages = {"page2.xhtml": ("application/xhtml+xml", page)}
    text = parse_checked(_with_pages(pages, ["page2.xhtml"], only=False), "inline.epub").text_layer
    assert text.startswith(
        "Harbour Lights, Estuary Press, 2005.\nLow Water, Tideway Books, 2010.\n"
    )
    assert "Sea Stories, page 2" not in text and "font-size" not in text


def _picture_book(scan_jpeg: bytes, inline: bool) -> bytes:
    """The Google Docs book with its text page replaced by a scanned page: a JPEG in the spine
    (``inline`` False: a fixed-layout comic's way) or in an XHTML page's ``<img>``."""
    page = (
        b'<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
        b'<head><title>Page 1</title></head><body><div><img src="scan.jpg" alt=""/></div>'
        b"</body></html>"
    )
    pages = {"scan.jpg": ("image/jpeg", scan_jpeg)}
    if inline:
        pages["page1.xhtml"] = ("application/xhtml+xml", page)
    return _with_pages(pages, ["page1.xhtml" if inline else "scan.jpg"], only=True)


@pytest.mark.parametrize("inline", [False, True], ids=["picture-in-the-spine", "img-in-a-page"])
def test_a_book_whose_pages_are_pictures_is_read_by_ocr(inline: bool) -> None:
    import pypdfium2

    corpus_scan = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "ocr" / "ocr_test.pdf"
    if not corpus_scan.is_file():
        pytest.skip("the shared corpus is not here")
    pdf = pypdfium2.PdfDocument(corpus_scan)
    try:
        picture = pdf[0].render(scale=200 / 72, grayscale=True).to_pil()
    finally:
        pdf.close()
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=90, dpi=(200, 200))
    parsed = parse_checked(_picture_book(out.getvalue(), inline), "scanned.epub")
    assert parsed.text_layer.startswith("Docling bundles PDF document conversion to")
    assert parsed.warnings[0] == "its page is a picture: text by OCR"
    assert "All human beings are born free" not in parsed.text_layer  # the page was replaced
