"""Scans that arrive as images (PNG, JPEG, multi-page TIFF) are read by OCR like scanned PDFs,
with page boxes in points; hostile or text-less images fail naming the file and the problem.

The images are the corpus scan rendered at 200 dpi (one upright, one turned in its raster), so
the words are checked against docling's reference for that scan."""

from __future__ import annotations

import io
import struct
import zlib
from collections import Counter
from pathlib import Path

import pypdfium2
import pytest
from PIL import Image, ImageDraw

from agrag_pipeline.parsing import image, parse_document
from agrag_pipeline.parsing.detect import detect_media_type
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.settings import OcrSettings, ParsingSettings

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "ocr"
DPI = 200

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not here")


def _coverage(text: str, reference: str) -> float:
    ours, ref = Counter(text.casefold().split()), Counter(reference.casefold().split())
    return sum(min(n, ours[w]) for w, n in ref.items()) / sum(ref.values())


@pytest.fixture(scope="module")
def scan() -> Image.Image:
    pdf = pypdfium2.PdfDocument(CORPUS / "ocr_test.pdf")
    try:
        return pdf[0].render(scale=DPI / 72, grayscale=True).to_pil()
    finally:
        pdf.close()


@pytest.fixture(scope="module")
def reference() -> str:
    return (CORPUS / "groundtruth" / "ocr_test.md").read_text("utf-8")


def _encoded(picture: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    picture.save(out, fmt, **options)
    return out.getvalue()


def test_a_png_scan_is_read_by_ocr_with_boxes_in_points_at_its_resolution(
    scan: Image.Image, reference: str
) -> None:
    raw = _encoded(scan, "PNG", dpi=(DPI, DPI))
    parsed = parse_document(raw, "scans/page.png")
    assert parsed.document.media_type == "image/png"
    assert _coverage(parsed.text_layer, reference) >= 0.85
    assert parsed.text_layer.startswith("Docling bundles PDF document conversion to")
    assert any("OCR" in w for w in parsed.warnings), parsed.warnings
    boxes = [b for s in parsed.sections for b in s.boxes]
    assert boxes and all(b.page == 1 and b.origin == "top-left" for b in boxes)
    # Points of the page: the image's pixels x 72 / dpi, so every box lies on that page.
    width_pt, height_pt = (v * 72 / DPI for v in scan.size)
    assert all(
        0 <= b.x0 < b.x1 <= width_pt + 1 and 0 <= b.y0 < b.y1 <= height_pt + 1 for b in boxes
    )
    first = min(boxes, key=lambda b: b.y0)
    assert first.x0 < 120 and first.y0 < 130


def test_each_page_of_a_multi_page_tiff_is_a_page_even_one_turned_in_its_raster(
    scan: Image.Image, reference: str
) -> None:
    turned = scan.rotate(90, expand=True)
    raw = _encoded(scan, "TIFF", save_all=True, append_images=[turned], compression="tiff_lzw")
    parsed = parse_document(raw, "fax.TIFF")
    assert parsed.document.media_type == "image/tiff"
    assert {span.box.page for span in parsed.layout} == {1, 2}
    for number in (1, 2):
        text = "\n".join(
            parsed.text_layer[span.start : span.end]
            for span in parsed.layout
            if span.box.page == number
        )
        assert _coverage(text, reference) >= 0.8, (number, text)


def test_a_jpeg_2000_scan_is_read_by_ocr_as_a_png_of_it_is(
    scan: Image.Image, reference: str
) -> None:
    # What archives keep their page scans in: a JP2 file, and the bare codestream (.j2k).
    for name, options in (("page.jp2", {}), ("page.j2k", {"no_jp2": True})):
        raw = _encoded(scan, "JPEG2000", **options)
        assert detect_media_type("upload", raw[:8192]) == "image/jp2", name
        parsed = parse_document(raw, f"archive/{name}")
        assert parsed.document.media_type == "image/jp2"
        assert _coverage(parsed.text_layer, reference) >= 0.85, name
    # A JPEG 2000 compound document (JPM) shares the JP2 signature; Pillow cannot read it.
    jpm = _encoded(scan.resize((200, 260)), "JPEG2000").replace(b"ftypjp2 ", b"ftypjpm ", 1)
    assert detect_media_type("layers.jpm", jpm) is None


def test_an_image_is_known_by_its_signature_whatever_its_extension(scan: Image.Image) -> None:
    small = scan.resize((200, 260))
    assert detect_media_type("upload.dat", _encoded(small, "JPEG")) == "image/jpeg"
    assert detect_media_type("scan", _encoded(small, "PNG")) == "image/png"
    assert detect_media_type("page.tif", _encoded(small, "TIFF")) == "image/tiff"
    assert detect_media_type("a.webp", _encoded(small, "WEBP")) == "image/webp"
    # "BM" is too weak a signature to trust behind another extension.
    assert detect_media_type("scan.bmp", _encoded(small, "BMP")) == "image/bmp"
    assert detect_media_type("notes.txt", b"BM is a two-letter start of text") == "text/plain"


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG declaring ``width`` x ``height`` whose data stops after 64 bytes: what a
    decompression bomb looks like before it is decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = zlib.compress(bytes(64))  # the first bytes of what would be gigabytes of pixels
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat)


def test_a_frame_over_the_pixel_limit_is_refused_before_it_is_decoded() -> None:
    with pytest.raises(DocumentTooLargeError, match=r"^bomb\.png: .*pixels"):
        parse_document(_png_header_only(40_000, 40_000), "bomb.png")


def test_a_truncated_image_is_corrupt_naming_the_file(scan: Image.Image) -> None:
    raw = _encoded(scan.resize((400, 520)), "PNG")
    with pytest.raises(CorruptDocumentError, match=r"^cut\.png: not a readable image"):
        parse_document(raw[: len(raw) // 2], "cut.png")


def _diagram() -> bytes:
    """A drawing without a word in it: boxes joined by arrows and a circle, in colour."""
    picture = Image.new("RGB", (1200, 900), "white")
    draw = ImageDraw.Draw(picture)
    for i in range(5):
        draw.rectangle([80 + i * 220, 150, 220 + i * 220, 300], outline="black", width=4)
        if i:
            draw.line([220 + (i - 1) * 220, 225, 80 + i * 220, 225], fill="black", width=3)
    draw.ellipse([400, 450, 800, 800], outline=(30, 90, 200), width=6)
    return _encoded(picture, "PNG")


def test_a_picture_without_words_is_a_document_with_no_text_and_a_note() -> None:
    """A folder of documents holds pictures: a diagram or a blank page succeeds with no text,
    no sections and a warning saying why, unless the settings require text."""
    blank = _encoded(Image.new("L", (850, 1100), 255), "PNG")
    for name, raw in (("diagram.png", _diagram()), ("blank.png", blank)):
        parsed = parse_document(raw, name)
        assert parsed.text_layer == "" and parsed.sections == []
        assert any(w.startswith("no text: OCR found no words") for w in parsed.warnings)
    strict = ParsingSettings(ocr=OcrSettings(require_text=True))
    with pytest.raises(EmptyDocumentError, match=r"^blank\.png: an image: .*OCR found no text"):
        parse_document(blank, "blank.png", parsing=strict)


def test_an_image_with_ocr_off_says_why() -> None:
    blank = _encoded(Image.new("L", (850, 1100), 255), "PNG")
    off = ParsingSettings(ocr=OcrSettings(enabled=False))
    with pytest.raises(EmptyDocumentError, match=r"OCR is turned off"):
        parse_document(blank, "blank.png", parsing=off)
    assert image.MAX_PIXELS >= 35_000_000  # an A4 page at 600 dpi fits


def test_an_image_that_does_not_state_its_resolution_is_read_at_the_size_of_a_paper_page() -> None:
    """A page exported at screen resolution (96 dpi) without a resolution tag, as screenshots
    and exported page images are: its small text must not be shrunk before OCR. The reference is
    the same page's own text layer (a corpus PDF with real text)."""
    source = pypdfium2.PdfDocument(CORPUS.parent / "pdf" / "2305.03393v1-pg9.pdf")
    try:
        page = source[0]
        reference = page.get_textpage().get_text_range()
        screen = page.render(scale=96 / 72, grayscale=True).to_pil()
    finally:
        source.close()
    raw = _encoded(screen, "PNG")  # no dpi: Pillow writes no pHYs chunk
    assert "dpi" not in Image.open(io.BytesIO(raw)).info
    parsed = parse_document(raw, "exports/page.png")
    assert _coverage(parsed.text_layer, reference) >= 0.9
    # Boxes in points of a page of paper (the long side 11.69 in), not of a 300-dpi page.
    height_pt = 11.69 * 72
    boxes = [b for s in parsed.sections for b in s.boxes]
    assert max(b.y1 for b in boxes) > height_pt / 2
    assert all(b.y1 <= height_pt + 1 for b in boxes)


def test_a_folder_with_a_picture_in_it_succeeds_and_the_picture_has_no_chunks(
    tmp_path: Path,
) -> None:
    """The run's exit status counts only real failures: a diagram among documents is read,
    found wordless and reported as such, and `agrag core` exits 0."""
    import subprocess
    import sys

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "diagram.png").write_bytes(_diagram())
    (raw / "notes.md").write_text("# Notes\n\nThe diagram shows the pipeline.\n", "utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agrag_pipeline.cli",
            "--raw-root",
            str(raw),
            "--warehouse",
            str(tmp_path / "w"),
            "core",
            "--no-embed",
            "--workers",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "diagram.png ok (0 chunks)" in done.stderr  # progress goes to stderr
    assert "2 succeeded, 0 failed" in done.stdout
