"""Scanned pages that arrive as images (PNG, JPEG, TIFF with its pages, WebP, BMP, GIF): read by
the same OCR and layout path as a scanned PDF.

Why through the PDF path: a scan is a scan whatever its container. Each frame becomes one page
of an image-only PDF at the image's own resolution (Pillow's PDF writer), which ``pdf.parse``
reads as it reads any scanned PDF: Tesseract with orientation detection, lines, paragraphs,
typographic headings, page boxes. Boxes are in PDF points of that page: pixels x 72 / dpi
(300 dpi assumed when the image does not say, or says something implausible).

Budgets: a frame over ``MAX_PIXELS`` (a decompression bomb or a poster) and more frames than
``pdf.MAX_PAGES`` are refused before any OCR, naming the figure; an image Pillow cannot decode
is a ``CorruptDocumentError`` saying what is wrong (never naming an in-memory object); an image
without readable text is an ``EmptyDocumentError`` saying why (OCR off, unavailable, or no text
found).
"""

from __future__ import annotations

import io
import re
import warnings
from typing import TYPE_CHECKING

from PIL import Image, ImageSequence, UnidentifiedImageError

from agrag_pipeline.parsing import pdf
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.detect import BMP, GIF, JPEG, PNG, TIFF, WEBP
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)

if TYPE_CHECKING:
    from agrag_pipeline.models import Document
    from agrag_pipeline.parsing.parsed import ParsedDocument
    from agrag_pipeline.settings import ParsingSettings

MEDIA_TYPES = (PNG, JPEG, TIFF, WEBP, BMP, GIF)

#: Pixels one frame may have: Pillow's own decompression-bomb limit (about 89 million; an A4
#: page at 600 dpi is about 35 million).
MAX_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485
#: The resolution assumed when an image gives none (or an implausible one): a typical scan.
DEFAULT_DPI = 300.0
_PLAUSIBLE_DPI = (50.0, 2400.0)


def _dpi(image: Image.Image) -> float:
    value = image.info.get("dpi")
    if isinstance(value, tuple):
        value = value[0] if value else None
    if value is None:
        return DEFAULT_DPI
    try:
        dpi = float(value)
    except (TypeError, ValueError, IndexError):
        return DEFAULT_DPI
    low, high = _PLAUSIBLE_DPI
    return dpi if low <= dpi <= high else DEFAULT_DPI


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
