"""Scanned pages that arrive as images (PNG, JPEG, TIFF with its pages, WebP, BMP, GIF, JPEG
2000): read by the same OCR and layout path as a scanned PDF.

Why through the PDF path: a scan is a scan whatever its container. Each frame becomes one page
of an image-only PDF at the image's own resolution (Pillow's PDF writer), which ``pdf.parse``
reads as it reads any scanned PDF: Tesseract with orientation detection, lines, paragraphs,
typographic headings, page boxes. Boxes are in PDF points of that page: pixels x 72 / dpi.
An image that does not state its resolution (or states an implausible one) is taken as a page
of paper: its long side 11.69 inches, between 72 and 300 dpi (see ``_dpi``).

Budgets: a frame over ``MAX_PIXELS`` (a decompression bomb or a poster) and more frames than
``pdf.MAX_PAGES`` are refused before any OCR, naming the figure; an image Pillow cannot decode
is a ``CorruptDocumentError`` saying what is wrong (never naming an in-memory object). An
image in which OCR found no words (a photo, a diagram) is read as a document with no text and a
warning saying so, unless ``OcrSettings.require_text``; one whose text could not be read (OCR
off or unavailable) is an ``EmptyDocumentError`` saying why.
"""

from __future__ import annotations

import io
import re
import warnings
from typing import TYPE_CHECKING

from PIL import Image, ImageSequence, UnidentifiedImageError

from agrag_pipeline.parsing import pdf
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.detect import BMP, GIF, JP2, JPEG, PNG, TIFF, WEBP
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)

if TYPE_CHECKING:
    from agrag_pipeline.models import Document
    from agrag_pipeline.parsing.parsed import ParsedDocument
    from agrag_pipeline.settings import ParsingSettings

MEDIA_TYPES = (PNG, JPEG, TIFF, WEBP, BMP, GIF, JP2)

#: Pixels one frame may have: Pillow's own decompression-bomb limit (about 89 million; an A4
#: page at 600 dpi is about 35 million).
MAX_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485
_PLAUSIBLE_DPI = (50.0, 2400.0)
#: The long side of a page of paper (A4), in inches: what an image that does not say its
#: resolution is taken to be, so its text reaches OCR at the size it would have on paper.
PAPER_LONG_SIDE_IN = 11.69
#: Resolutions an estimate may give: a screenshot is no coarser than 72 dpi, and 300 dpi is the
#: most a page scan needs (OCR renders at ``OcrSettings.dpi``, 200 by default).
_ESTIMATED_DPI = (72.0, 300.0)
#: A page longer than this (inches) at the stated resolution means the tag is wrong (a 300-dpi
#: scan saved with a 72-dpi default): the resolution is estimated instead.
_MAX_PAGE_IN = 50.0


def _dpi(image: Image.Image) -> float:
    """The image's resolution: its own tag where plausible, else estimated as a page of paper.

    Assuming a fixed 300 dpi shrank screenshots and exported pages before OCR (OCR renders at
    200 dpi, so 13-pixel text became 9 pixels: coverage 0.07 on a page Tesseract reads at 0.94
    from the same pixels); a paper-sized estimate gives 96-dpi exports about 90 dpi, rendered
    2.2x larger, and leaves real 300-dpi scans as they were.
    """
    stated = _stated_dpi(image)
    long_side = max(image.size)
    if stated is not None and long_side / stated <= _MAX_PAGE_IN:
        return stated
    low, high = _ESTIMATED_DPI
    return min(max(long_side / PAPER_LONG_SIDE_IN, low), high)


def _stated_dpi(image: Image.Image) -> float | None:
    value = image.info.get("dpi")
    if isinstance(value, tuple):
        value = value[0] if value else None
    if value is None:
        return None
    try:
        dpi = float(value)
    except (TypeError, ValueError, IndexError):
        return None
    low, high = _PLAUSIBLE_DPI
    return dpi if low <= dpi <= high else None


def _page(frame: Image.Image) -> Image.Image:
    """The frame as Pillow's PDF writer takes it: greyscale or RGB, alpha flattened on white."""
    if frame.mode in ("1", "L", "RGB"):
        return frame.copy()
    if frame.mode in ("RGBA", "LA", "P", "PA"):
        rgba = frame.convert("RGBA")
        white = Image.new("RGB", rgba.size, (255, 255, 255))
        white.paste(rgba, mask=rgba.getchannel("A"))
        return white
    return frame.convert("RGB")


#: An object's default repr ("<_io.BytesIO object at 0x7f...>"): an address, never a message.
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def _plain(exc: BaseException) -> str:
    """Pillow's message without object reprs in it, or the error's kind when it has none."""
    text = _OBJECT_REPR.sub("the image", str(exc)).strip()
    return text or type(exc).__name__


def to_pdf(raw: bytes, source_key: str) -> bytes:
    """The image's frames as an image-only PDF, one page per frame, at the image's resolution."""
    deadline = current_deadline(source_key)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(raw))
            frames = getattr(image, "n_frames", 1)
            if frames > pdf.MAX_PAGES:
                raise DocumentTooLargeError(
                    source_key, f"{frames} frames is over the limit of {pdf.MAX_PAGES} pages"
                )
            pages: list[Image.Image] = []
            dpi = _dpi(image)
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                deadline.check(f"frame {number}")
                width, height = frame.size
                if width * height > MAX_PIXELS:
                    raise DocumentTooLargeError(
                        source_key,
                        f"frame {number} has {width}x{height} pixels, over the limit of "
                        f"{MAX_PIXELS:,}",
                    )
                pages.append(_page(frame))
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise DocumentTooLargeError(
            source_key, f"the image is over the limit of {MAX_PIXELS:,} pixels a frame"
        ) from None
    except UnidentifiedImageError:
        # Pillow's own message names the in-memory buffer ("<_io.BytesIO object at 0x...>").
        raise CorruptDocumentError(
            source_key,
            "not a readable image (truncated or corrupt?): no image format can read its "
            f"header (it starts with {raw[:8]!r})",
        ) from None
    except (OSError, ValueError, EOFError, SyntaxError) as exc:
        raise CorruptDocumentError(
            source_key, f"not a readable image (truncated or corrupt?): {_plain(exc)}"
        ) from None
    if not pages:
        raise EmptyDocumentError(source_key, "the image has no frames")
    out = io.BytesIO()
    pages[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=pages[1:])
    return out.getvalue()


def parse(
    raw: bytes, document: Document, *, parsing: ParsingSettings | None = None
) -> ParsedDocument:
    """OCR text, lines, headings and page boxes of an image's frames (see the module)."""
    scanned = to_pdf(raw, document.source_key)
    try:
        parsed = pdf.parse(scanned, document, parsing=parsing)
    except EmptyDocumentError as exc:
        raise EmptyDocumentError(document.source_key, f"an image: {exc.problem}") from None
    return parsed
