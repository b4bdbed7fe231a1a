"""One PDF page's text as a reader sees it, from PDFium's characters (pypdfium2, Apache-2.0/BSD).

Why PDFium: measured on the corpus against its ground truth (``benchmarks/fidelity.py``) it
gives per-character boxes, font sizes and render modes, right-to-left text in logical order and
no doubled overprint, ten times faster than pdfminer; pdfminer (pdfplumber) glued words on
justified lines, emitted ``(cid:N)`` and reversed Arabic. Only pdfplumber's lattice functions
(``pdfplumber.table``: edges to cells to tables, pure geometry) are used here, on ruling lines
read from PDFium's path objects; two of them (crossings, cells) are rewritten here to give the
same answers in work linear in the rules, not their square.

What a page becomes (``read_page``): rows of characters clustered by height (a short row of
smaller marks joined to the row whose baseline it is raised or lowered from), split into
*segments* at gaps wider than a word space (rejoined where the gap is a justified line's
stretched space, or a line of code going on, on its character grid, to its aligned comment);
column gutters found over runs of rows (a vertical
strip no segment crosses, with column-wide text on both sides) and each column read top to
bottom before the next; words broken where the page leaves a gap (or draws a space);
overprinted duplicates (fake bold) dropped, glyph by glyph (the letters PDFium expands one
ligature glyph into share its box and are no copies); glyphs without a Unicode map and control
characters dropped and counted; glyphs of LaTeX's picture fonts (box corners) dropped;
invisible text (render mode 3/7) set aside; text turned by 90,
180 or 270 degrees read in its own direction, after the upright text; tables from ruling lines
validated (at least 2x2 cells, most non-empty, short cells) and written as pipe rows.
Boxes are in PDF points on the unrotated page from the top-left of its crop box (``PageBox``'s
``"top-left"`` origin, the OCR module's convention).
"""

from __future__ import annotations

import bisect
import collections
import ctypes
import dataclasses
import itertools
import math
import re
import statistics
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import pypdfium2
import pypdfium2.raw as pdfium_c

from agrag_pipeline.parsing import pdf_fonts
from agrag_pipeline.parsing.pdf_font_metrics import FontMetrics
from agrag_pipeline.parsing.pdf_glyph_names import GlyphNames

#: Sort keys of characters: by position along the line, by PDFium's (content) order.
_X0 = attrgetter("x0")
_INDEX = attrgetter("index")
#: A gap wider than this (in font sizes) between two characters is a word break.
WORD_GAP = 0.18
#: A smaller glyph whose baseline is off the other's by more than this (in the larger's font
#: sizes) is raised or lowered (a superscript, a footnote mark, an index), a token of its own.
_OFF_BASELINE = 0.1
#: A gap wider than this (in font sizes) splits a row into segments (columns, table cells).
SEGMENT_GAP = 0.75
#: Arabic tatweel (kashida): a stroke that lengthens a word (to justify a line or a title),
#: no letter of it; left in the text, "الإعــــلان" is not the word "الإعلان" to a search.
TATWEEL = "\u0640"
#: Steps downwards (one character below the one before) that make a page vertical writing …
_MIN_VERTICAL_STEPS = 6
#: … and characters of Chinese or Japanese that make a column on a page written across, set
#: apart or not (fewer must stand apart: ``_turn_vertical_writing``).
_MIN_VERTICAL_RUN = 3
#: A superscript's baseline is raised at most this much above its row's (in font sizes) …
MARK_RAISE = 0.6
#: … a subscript's lowered at most this much below it.
MARK_DROP = 0.3
#: A mark (at most three characters) is smaller than the row it joins: at most this share of
#: its size (a footnote's mark in 5.8 pt type before its 7.1 pt text measures 0.81) …
_MARK_SIZE = 0.85
#: … and a short line of small print (a margin note's, a limit) at most this share.
_SMALL_PRINT = 0.8
#: A mark that stands this many of its row's font sizes from the rest of its row, beside another
#: row's text, is that row's (rows are as wide as the page: the other column's line at its height).
_MARK_APART = 2.0
#: A column gutter is at least this wide (points) …
MIN_GUTTER = 6.0
#: … and each column beside it averages at least this many font sizes of width.
MIN_COLUMN_EMS = 7.0
_RTL_CLASSES = frozenset({"R", "AL"})
#: What a line may end in where a word is broken: hyphens (PDFium's soft-hyphen mark comes as
#: U+00AD, ``read_chars``).
HYPHENS = frozenset("-\u00ad\ufffe\u2010")
#: Bold by name: the usual words, Type 1 "Medi", and TeX's bold extended (cmbx, sfbx, lmbx…).
_BOLD_NAME = re.compile(r"bold|black|heavy|demi|-medi|(?:^|\+)(?:cm|sf|lm|ec|tc)[a-z]*bx")
#: Fixed pitch by name (TeX's typewriter fonts carry no FixedPitch flag; txfonts' bold one and
#: its symbols, ``t1xbtt`` and ``tcxtt``, set a Sphinx listing's keywords and quotes).
_MONO_NAME = re.compile(
    r"mono|courier|(?:^|\+)(?:cm|sf|lm|ec|tcx?|rm|t1x)?b?tt|lmtk|typewriter|consol|menlo|inconsolata"
    r"|sourcecode|fixed|lucidaconsole|andale"
)
#: LaTeX's picture fonts (rounded box corners, as texinfo draws around a ``@cartouche``, and
#: line pieces): drawings, whose glyphs PDFium maps to dingbats (☛ ✟ ✡ ✠) that would land in
#: the words beside them.
_DRAWING_FONT = re.compile(r"(?:^|\+)(?:lcircle|lcirclew|line|linew)10$")
#: Spacing accents and the combining marks they stand for. TeX's OT1 fonts (LaTeX's default)
#: have no accented letters: ``\'e`` draws "´" over "e", two glyphs, read "Poincar´e".
_SPACING_ACCENTS = {
    "\u00b4": "\u0301",  # acute
    "\u0060": "\u0300",  # grave (also the backtick, which stands beside letters, not on them)
    "\u02c6": "\u0302",  # circumflex
    "\u005e": "\u0302",
    "\u02dc": "\u0303",  # tilde
    "\u007e": "\u0303",
    "\u00af": "\u0304",  # macron
    "\u02c9": "\u0304",
    "\u02d8": "\u0306",  # breve
    "\u02d9": "\u0307",  # dot above
    "\u00a8": "\u0308",  # diaeresis
    "\u02da": "\u030a",  # ring
    "\u02dd": "\u030b",  # double acute
    "\u02c7": "\u030c",  # caron
    "\u00b8": "\u0327",  # cedilla
    "\u02db": "\u0328",  # ogonek
}
#: An accent is on a letter when at least this share of its width lies over the letter.
_ACCENT_OVERLAP = 0.5
#: The dotless letters TeX puts accents on (``\'\i``): the accented letter is the dotted one's.
_DOTLESS = {"\u0131": "i", "\u0237": "j"}
#: Two typewriter segments of one row are one line of code when the second starts on the
#: first's character grid at most this many characters after it ends (an aligned comment).
CODE_GAP_CHARS = 16


@dataclass(slots=True)
class Char:
    text: str
    #: Reading frame (the page as shown, turned so this character's text runs left to right).
    x0: float
    top: float
    x1: float
    bottom: float
    #: Unrotated page, top-left origin (for ``PageBox``).
    box: tuple[float, float, float, float]
    size: float
    bold: bool
    rtl: bool
    index: int
    italic: bool = False
    space: bool = False  # a space drawn (or generated by PDFium) before the next character
    #: A glyph without a Unicode map is drawn after it (left out of the text): something
    #: stands between it and the next character (a chart's unmapped space).
    dropped_after: bool = False
    #: The space after it has a width of its own: a space glyph the page draws, not one PDFium
    #: puts at a wide gap inside a text object (a ``TJ`` adjustment: those come with an empty
    #: box) or between objects.
    wide_space: bool = False
    #: PDFium's index of the first character of the glyph this one was drawn by: the letters
    #: of a ligature (``ffi``: one glyph mapped to three characters) share it.
    glyph: int = -1
    #: Where its baseline lies in the reading frame (the glyph origin's vertical position).
    baseline: float = 0.0
    #: Drawn in a fixed-pitch (typewriter) font: code.
    mono: bool = False


@dataclass(slots=True)
class Line:
    """One line of one column (or a table row), as written into the text layer."""

    text: str
    box: tuple[float, float, float, float]  # unrotated page, top-left origin
    top: float  # reading frame
    bottom: float
    x0: float
    x1: float
    size: float
    bold: bool
    column: int = 0
    rotated: bool = False
    italic: bool = False
    #: Set by the document pass: "furniture" (running header/footer, page number), "toc".
    role: str = "text"
    paragraph_start: bool = False
    #: Set in a fixed-pitch font throughout: code.
    mono: bool = False
    #: Set by the document pass: it goes on with the sentence of the line before it in reading
    #: order, which ends another column (a column break inside a sentence: no paragraph break).
    goes_on: bool = False
    #: The page it was read on, where the document pass moved it to another page's reading
    #: order (a float after the sentence it interrupted); 0: the page that holds it.
    page: int = 0
    #: The size of its largest letters (``size`` is the median: a line mostly in a smaller
    #: typewriter face, an address or a name of code, measures smaller than its paragraph).
    largest: float = 0.0
    #: Its first word is bold, italic (a run-in head's end, or one of its own).
    opens_bold: bool = False
    opens_italic: bool = False
    #: Its last word is bold, italic (a bold phrase that begins in it and wraps on).
    closes_bold: bool = False
    closes_italic: bool = False


@dataclass(slots=True)
class Table:
    rows: list[list[str]]
    row_boxes: list[tuple[float, float, float, float]]
    top: float
    #: As ``Line.page``.
    page: int = 0
    #: Characters its rules enclose (the rest of what it holds was read beside them).
    enclosed: int = 0
    #: Its first rows that are its header (cells of the first spanning down over the rest).
    header_rows: int = 1


@dataclass
class PageRead:
    """What one page gave: its blocks in reading order (a line or a table each)."""

    number: int
    width: float
    height: float
    items: list[Line | Table] = field(default_factory=list)
    chars: int = 0
    unmapped: int = 0
    invisible: int = 0
    #: Characters drawn wholly outside the page's visible box (crop box within media box).
    off_page: int = 0
    #: Characters a tagged PDF marks as artifacts (running heads and feet, page numbers).
    artifacts: int = 0
    image_area: float = 0.0  # share of the page covered by images
    #: Runs in fonts the file does not embed that PDFium gave no text for, where this machine
    #: lacks CJK fonts (``pdf_fonts``), and those fonts' names.
    fontless_runs: int = 0
    fontless_fonts: set[str] = field(default_factory=set)
    #: CJK characters the page holds that PDFium dropped for want of a font (``pdf.parse``).
    unset: int = 0
    #: Columns of vertical writing on a page written across (``_turn_vertical_writing``).
    columns: list[list[Char]] = field(default_factory=list)


# -- characters -----------------------------------------------------------------------------


def _address(pointer: Any) -> int:
    """A PDFium handle's address (0 for NULL): the key its caches are kept by. Read straight
    from the pointer's bytes, a quarter of ``ctypes.cast``'s cost, paid for every character."""
    return _SIZE_T_OF(pointer).value


_SIZE_T_OF = ctypes.c_size_t.from_buffer


@dataclass(frozen=True, slots=True)
class _Style:
    """What the layout needs of a text object, read once per object."""

    bold: bool
    italic: bool
    mode: int  # text render mode (3, 7: invisible)
    #: Drawn in a drawing font (``_DRAWING_FONT``): a box corner, not text.
    drawing: bool
    #: Drawn in a fixed-pitch font.
    mono: bool
    #: The font's own (ascent, descent) in em where PDFium invented its metrics
    #: (``pdf_font_metrics``), else None.
    own_metrics: tuple[float, float] | None
    #: Quarter turns of its text against the page as shown (0: it runs left to right).
    quarter: int


class _Fonts:
    """Per text object (by address): its ``_Style``, worked out from its font once, on a page
    turned by ``rotation`` degrees (``/Rotate``)."""

    def __init__(self, metrics: FontMetrics | None = None, rotation: int = 0) -> None:
        self.objects: dict[int, _Style] = {}
        self._rotation = rotation
        self._metrics = metrics
        self.fonts: dict[int, tuple[bool, bool]] = {}
        #: Fixed-pitch fonts and drawing fonts (``_DRAWING_FONT``), by font address.
        self.fixed_fonts: set[int] = set()
        self.drawing_fonts: set[int] = set()
        #: Base font names, by font address (``name``).
        self.names: dict[int, str] = {}
        self._buffer = ctypes.create_string_buffer(256)

    def of(self, obj: Any, key: int) -> _Style:
        """The style of text object ``obj`` at address ``key``."""
        found = self.objects.get(key)
        if found is not None:
            return found
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
        matrix = pdfium_c.FS_MATRIX()
        angle = 0.0
        if pdfium_c.FPDFPageObj_GetMatrix(obj, matrix):
            angle = math.degrees(math.atan2(matrix.b, matrix.a))
        font = pdfium_c.FPDFTextObj_GetFont(obj)
        fkey = _address(font)
        style = self.fonts.get(fkey)
        if style is None:
            bold = italic = False
            flags, name = 0, ""
            if font:
                weight = pdfium_c.FPDFFont_GetWeight(font)
                n = pdfium_c.FPDFFont_GetBaseFontName(font, self._buffer, 256)
                name = self._buffer.raw[: max(n - 1, 0)].decode("latin-1").lower()
                flags = pdfium_c.FPDFFont_GetFlags(font)
                bold = weight >= 600 or bool(_BOLD_NAME.search(name)) or bool(flags & (1 << 18))
                italic = bool(flags & 64) or "italic" in name or "oblique" in name
            style = self.fonts[fkey] = (bold, italic)
            if font and (flags & 1 or _MONO_NAME.search(name)):
                self.fixed_fonts.add(fkey)
            if font and _DRAWING_FONT.search(name):
                self.drawing_fonts.add(fkey)
        own = None
        if self._metrics is not None and font:
            own = self._metrics.replaced(font, self.name(obj))  # cached by the document
        quarter = round(((angle - self._rotation) % 360) / 90) % 4
        found = self.objects[key] = _Style(
            *style, mode, fkey in self.drawing_fonts, fkey in self.fixed_fonts, own, quarter
        )
        return found

    def name(self, obj: Any) -> str:
        """The base font name of the text object's font, as the PDF writes it (subset prefix
        included: ``GYUURQ+Cmmi10``)."""
        font = pdfium_c.FPDFTextObj_GetFont(obj)
        fkey = _address(font)
        name = self.names.get(fkey)
        if name is None:
            n = pdfium_c.FPDFFont_GetBaseFontName(font, self._buffer, 256) if font else 0
            name = self.names[fkey] = self._buffer.raw[: max(n - 1, 0)].decode("latin-1")
        return name


class _CodesTakenAsText:
    """Characters PDFium flags as unmapped (``FPDFText_HasUnicodeMapError``): no ToUnicode map
    or encoding gave them, so it took the character code for the character.

    Where a font's codes *are* Unicode (an ``Identity-H`` font whose codes are the code points,
    as TCPDF and other generators write Polish or Chinese without a ToUnicode map) that text is
    right, and dropping it sent correct pages to OCR in the wrong language. Where the codes are
    glyph ids, they read as control characters and letters at random. So per font: its flagged
    characters are kept when none of its flagged codes was a control, unassigned or private-use
    character, most are letters, and the letters are of at most two scripts (Latin with Han,
    say); otherwise they are dropped and counted unmapped.
    """

    def __init__(self) -> None:
        self.flagged: dict[int, list[Char]] = {}
        self.distrusted: set[int] = set()

    @staticmethod
    def _font(obj: Any) -> int:
        return _address(pdfium_c.FPDFTextObj_GetFont(obj))

    def add(self, obj: Any, char: Char) -> None:
        self.flagged.setdefault(self._font(obj), []).append(char)

    def distrust(self, obj: Any) -> None:
        self.distrusted.add(self._font(obj))

    def settle(self, chars: list[Char], out: PageRead) -> list[Char]:
        """``chars`` without the flagged characters of fonts whose codes are no text."""
        dropped: set[int] = set()
        for font, flagged in self.flagged.items():
            if font in self.distrusted or not _reads_as_text(flagged):
                dropped.update(id(c) for c in flagged)
        if not dropped:
            return chars
        out.unmapped += len(dropped)
        return [c for c in chars if id(c) not in dropped]


def _reads_as_text(chars: list[Char]) -> bool:
    letters = [c.text[0] for c in chars if c.text[0].isalpha()]
    if len(letters) * 2 < len(chars):
        return False
    scripts = set()
    for letter in letters:
        name = unicodedata.name(letter, "?").split(" ", 1)[0]
        scripts.add("CJK" if name in ("CJK", "HIRAGANA", "KATAKANA", "HANGUL") else name)
    return len(scripts) <= 2


def _frame(
    rotation: int, width: float, height: float
) -> tuple[float, float, Any]:  # shown width, height, point transform
    """The page as shown (``/Rotate`` applied): its size and (x, y) user space -> shown."""
    if rotation == 90:
        return height, width, lambda x, y: (y, x)
    if rotation == 180:
        return width, height, lambda x, y: (width - x, y)
    if rotation == 270:
        return height, width, lambda x, y: (height - y, width - x)
    return width, height, lambda x, y: (x, height - y)


def _turn(quarter: int, w: float, h: float, x: float, y: float) -> tuple[float, float]:
    """A shown-page point in the frame of text turned ``quarter`` x 90 degrees counter-clockwise."""
    if quarter == 1:  # text runs bottom to top
        return h - y, x
    if quarter == 2:
        return w - x, h - y
    if quarter == 3:  # text runs top to bottom
        return y, w - x
    return x, y


#: A marked-content tag's name fits in this many UTF-16 units (``Artifact`` is 8).
_MARK_NAME_UNITS = 32
_ARTIFACT = "Artifact".encode("utf-16-le")
#: An artifact is left out in the top or bottom band of this share of the page, where running
#: heads, feet and page numbers stand; one elsewhere is kept (a form whose producer marked its
#: field labels as artifacts lost all its text; a table of contents' leaders stay as before).
_ARTIFACT_BAND = 0.15


class _ArtifactMarks:
    """Whether a page object is inside marked content tagged ``/Artifact``, by object. One
    call for the most of a tagged page: an object that belongs to a structure element (it has
    a marked-content id) is content; only the others' marks are read, into buffers made once."""

    def __init__(self) -> None:
        self.of: dict[int, bool] = {}  # by object address
        self._name = (ctypes.c_ushort * _MARK_NAME_UNITS)()
        self._size = ctypes.c_ulong()
        self._size_ref = ctypes.byref(self._size)

    def __call__(self, obj: Any, address: int) -> bool:
        artifact = self.of.get(address)
        if artifact is None:
            artifact = self.of[address] = self._read(obj)
        return artifact

    def _read(self, obj: Any) -> bool:
        if pdfium_c.FPDFPageObj_GetMarkedContentID(obj) >= 0:
            return False
        name, capacity = self._name, ctypes.sizeof(self._name)
        for k in range(pdfium_c.FPDFPageObj_CountMarks(obj)):
            mark = pdfium_c.FPDFPageObj_GetMark(obj, k)
            if not mark or not pdfium_c.FPDFPageObjMark_GetName(
                mark, name, capacity, self._size_ref
            ):
                continue
            if bytes(name)[: max(0, self._size.value - 2)] == _ARTIFACT:
                return True
        return False


#: What pdf.js shows a page whose media box has no area: US Letter, in points.
_LETTER = (0.0, 0.0, 612.0, 792.0)


def _area(box: tuple[float, float, float, float]) -> float:
    return abs(box[2] - box[0]) * abs(box[3] - box[1])


def _shown_box(
    crop: tuple[float, float, float, float], media: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    """What a viewer shows of a page, (left, bottom, right, top): its crop box within its
    media box, either given with its corners in any order; no area where the two do not meet."""
    return (
        max(min(crop[0], crop[2]), min(media[0], media[2])),
        max(min(crop[1], crop[3]), min(media[1], media[3])),
        min(max(crop[0], crop[2]), max(media[0], media[2])),
        min(max(crop[1], crop[3]), max(media[1], media[3])),
    )


def mend_page_boxes(page: pypdfium2.PdfPage) -> str | None:
    """Give a page whose boxes show nothing the boxes a viewer shows it by, as pdf.js does: a
    media box with no area is US Letter, a crop box with no area inside the media box is the
    media box. Only the open page is changed (the file is not). Why: PDFium measures such a
    page as 0 by 0, so every character fell outside it and the page went to OCR, whose
    rendering failed the whole document ("Crop exceeds page dimensions"). Returns what was
    mended, for the parse's warnings, or None."""
    media = page.get_mediabox()
    crop = page.get_cropbox()
    mended = []
    if _area(media) <= 0:
        media = _LETTER
        page.set_mediabox(*media)
        mended.append("its media box is empty: read as US Letter")
    shown_left, shown_bottom, shown_right, shown_top = _shown_box(crop, media)
    if shown_right <= shown_left or shown_top <= shown_bottom:
        page.set_cropbox(*media)
        mended.append("its crop box shows nothing of it: read by its media box")
    return "; ".join(mended) or None


def read_chars(
    page: pypdfium2.PdfPage,
    textpage: pypdfium2.PdfTextPage,
    out: PageRead,
    glyph_names: GlyphNames | None = None,
    metrics: FontMetrics | None = None,
    artifacts: bool = False,
) -> list[Char]:
    """The page's visible, mapped characters with boxes; counts what was dropped into ``out``.

    A character PDFium flags as unmapped whose font's encoding names it (``glyph_names``: a
    Type 3 font without a ToUnicode map) is the character its glyph name says. ``artifacts``
    (a tagged PDF): a character in content the file marks ``/Artifact`` in the page's top or
    bottom band (``_ARTIFACT_BAND``) is no text of the page: a running head or foot, a page
    number, as the tags declare them."""
    left, bottom, right, top = page.get_cropbox()
    width, height = abs(right - left), abs(top - bottom)
    # What a viewer shows: the crop box, within the media box. A character wholly outside it
    # is not on the page (a two-page spread drawn whole on each of its pages, say: every word
    # would be read twice), and is dropped as a reader never sees it.
    shown_left, shown_bottom, shown_right, shown_top = _shown_box(
        (left, bottom, right, top), page.get_mediabox()
    )
    rotation = page.get_rotation() % 360
    shown_w, shown_h, to_shown = _frame(rotation, width, height)
    tp = textpage.raw
    count = pdfium_c.FPDFText_CountChars(tp)
    fonts = _Fonts(metrics, rotation)
    rect = pdfium_c.FS_RECTF()
    chars: list[Char] = []
    get_unicode = pdfium_c.FPDFText_GetUnicode
    get_box = pdfium_c.FPDFText_GetLooseCharBox
    get_object = pdfium_c.FPDFText_GetTextObject
    map_error = pdfium_c.FPDFText_HasUnicodeMapError
    get_origin = pdfium_c.FPDFText_GetCharOrigin
    size_t_of = _SIZE_T_OF
    codes = _CodesTakenAsText()
    rect_ref = ctypes.byref(rect)
    #: Per text object in a font measured by its own metrics: its span across the line.
    spans: dict[int, tuple[int, float, float]] = {}
    origin_x, origin_y = ctypes.c_double(), ctypes.c_double()
    origin_refs = (ctypes.byref(origin_x), ctypes.byref(origin_y))
    #: (index, text object, origin, box) of the last character kept: a glyph's expansion.
    last: tuple[int, int, tuple[float, float], tuple[float, ...]] | None = None
    joined = -1  # a low surrogate joined to the high one before it
    stroked = -1  # an "l" with a stroke drawn over it
    artifact_of = _ArtifactMarks() if artifacts else None
    for i in range(count):
        if i == joined:
            continue
        code = get_unicode(tp, i)
        obj = get_object(tp, i)
        if code in (0xFFFE, 0x00AD, 0x0002):  # PDFium's mark of a hyphen it took for soft
            if chars and not chars[-1].text.endswith("\u00ad"):
                chars[-1].text += "\u00ad"
            continue
        if not obj:  # generated by PDFium: a space or line break between text objects
            if chars and code in (0x20, 0x0D, 0x0A, 0x09):
                chars[-1].space = True
            continue
        ch = chr(code) if 0 <= code < 0x110000 else "\ufffd"
        if 0xD800 <= code < 0xDC00 and i + 1 < count:
            # A character beyond the BMP (math italic 𝑎, U+1D44E) that a ToUnicode map gives
            # in UTF-16 comes as its two surrogates at two indices, one glyph: one character.
            low = get_unicode(tp, i + 1)
            if 0xDC00 <= low < 0xE000:
                ch, joined = chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), i + 1
        flagged = map_error(tp, i) == 1  # no map gave the character: PDFium took its code
        if flagged and glyph_names is not None:
            named = glyph_names.of(fonts.name(obj)).get(code)
            if named is not None:
                ch, flagged = named, False
        if ch.isspace():
            if (
                code == 0x20
                and i + 1 < count
                and get_unicode(tp, i + 1) == 0x6C
                and _stroke_over_next(tp, i, get_box)
            ):
                stroked = i + 1  # OT1's "ł": a stroke glyph (a space to PDFium) over "l"
                continue
            if chars:
                chars[-1].space = True
                if get_box(tp, i, rect_ref) and abs(rect.right - rect.left) > 0.01:
                    chars[-1].wide_space = True
            continue
        if i == stroked:
            ch = "\u0142"
        address = size_t_of(obj).value  # _address, inlined: once per character
        style = fonts.of(obj, address)
        if style.drawing:
            continue  # a box corner, not a character
        artifact = artifact_of is not None and artifact_of(obj, address)
        if style.mode in (3, 7):  # invisible: a scanner's OCR layer (see ``pdf._needs_ocr``)
            out.invisible += 1
        if 0xF020 <= code <= 0xF0FF:
            ch = _symbol_font_char(fonts.name(obj), code) or ch
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs", "Co", "Cn") or ch == "\ufffd":
            out.unmapped += 1
            if chars:
                chars[-1].dropped_after = True
            if flagged:
                codes.distrust(obj)
            continue
        if category == "Cf" and ch not in "\u200c\u200d":
            continue  # format marks (bidi controls): order is ours to give
        if not get_box(tp, i, rect_ref):
            continue
        if style.own_metrics is not None:
            span = spans.get(address)
            if span is None:
                span = spans[address] = _span(style.own_metrics, tp, i)
            get_origin(tp, i, *origin_refs)
            _measure_by(span, origin_x.value, origin_y.value, rect)
        r_left, r_top, r_right, r_bottom = rect.left, rect.top, rect.right, rect.bottom
        low_x, high_x = (r_left, r_right) if r_left <= r_right else (r_right, r_left)
        low_y, high_y = (r_bottom, r_top) if r_bottom <= r_top else (r_top, r_bottom)
        if (
            low_x >= shown_right
            or high_x <= shown_left
            or low_y >= shown_top
            or high_y <= shown_bottom
        ):
            out.off_page += 1
            continue
        if (
            category[0] in "PS"
            and chars
            and _arabic_letter(chars[-1].text[-1])
            and _baseline_stroke(tp, i, rect)
        ):
            ch = TATWEEL  # a kashida glyph without a Unicode map (LibreOffice's reads as "!")
        # One glyph mapped to several characters (a ligature) gives them one text object, one
        # origin and one box, at consecutive indices; an overprinted copy is drawn apart.
        get_origin(tp, i, *origin_refs)
        origin = (origin_x.value, origin_y.value)
        loose = (r_left, r_top, r_right, r_bottom)
        same_glyph = last is not None and last[0] == i - 1 and last[1:] == (address, origin, loose)
        last = (i, address, origin, loose)
        # Unrotated box (top-left origin of the crop box) and shown-page box.
        ux0, ux1 = r_left - left, r_right - left
        uy_top, uy_bottom = height - (r_top - bottom), height - (r_bottom - bottom)
        if rotation:
            ax, ay = to_shown(ux0, r_bottom - bottom)
            bx, by = to_shown(ux1, r_top - bottom)
        else:  # the page as shown is the unrotated page (``_frame``), inlined
            ax, ay, bx, by = ux0, uy_bottom, ux1, uy_top
        sx0, sx1 = (ax, bx) if ax <= bx else (bx, ax)
        st0, st1 = (ay, by) if ay <= by else (by, ay)
        quarter = style.quarter
        if quarter:
            (ax, ay), (bx, by) = (
                _turn(quarter, shown_w, shown_h, sx0, st0),
                _turn(quarter, shown_w, shown_h, sx1, st1),
            )
            sx0, sx1, st0, st1 = min(ax, bx), max(ax, bx), min(ay, by), max(ay, by)
        if artifact and (st1 <= shown_h * _ARTIFACT_BAND or st0 >= shown_h * (1 - _ARTIFACT_BAND)):
            out.artifacts += 1  # a running head or foot, a page number: in a margin band
            continue
        rtl = unicodedata.bidirectional(ch) in _RTL_CLASSES
        # The loose box is the font's ascent to descent: its height tracks the font size
        # (PDFium's own font size ignores the text matrix, 1.0 in many TeX files).
        size = st1 - st0 if st1 - st0 >= 0.1 else 0.1
        char = Char(
            ch,
            sx0,
            st0,
            sx1,
            st1,
            (ux0, uy_top, ux1, uy_bottom),
            size,
            style.bold,
            rtl,
            i,
            style.italic,
        )
        char.glyph = chars[-1].glyph if same_glyph else i
        char.mono = style.mono
        if rotation or quarter:
            base_x, base_y = to_shown(origin[0] - left, origin[1] - bottom)
            char.baseline = (
                _turn(quarter, shown_w, shown_h, base_x, base_y)[1] if quarter else base_y
            )
        else:
            char.baseline = height - (origin[1] - bottom)
        if quarter:
            char.index = -quarter - 1  # marks turned text (set aside into its own frame)
        chars.append(char)
        if flagged:
            codes.add(obj, char)
    out.columns = _turn_vertical_writing(chars, shown_w, shown_h)
    chars = codes.settle(chars, out)
    out.chars = len(chars)
    return chars


def _span(metrics: tuple[float, float], tp: Any, index: int) -> tuple[int, float, float]:
    """How far below and above its origin a character of a text object in a font measured by
    its own (ascent, descent) reaches across its line, as PDFium reaches from a descriptor's:
    type size times the text's scale. (0, low, high): up the page; (1, low, high): along x
    (a quarter turn); (-1, 0, 0): at another angle, left as PDFium boxed it."""
    matrix = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFText_GetMatrix(tp, index, matrix):
        return (-1, 0.0, 0.0)
    size = pdfium_c.FPDFText_GetFontSize(tp, index)
    ascent, descent = metrics
    if abs(matrix.b) < 1e-6 and abs(matrix.c) < 1e-6 and matrix.d:
        axis, up = 0, matrix.d * size
    elif abs(matrix.a) < 1e-6 and abs(matrix.d) < 1e-6 and matrix.c:
        axis, up = 1, matrix.c * size
    else:
        return (-1, 0.0, 0.0)
    low, high = sorted((descent * up, ascent * up))
    return (axis, low, high)


def _measure_by(span: tuple[int, float, float], x: float, y: float, rect: Any) -> None:
    """Set the loose box ``rect`` of a character at origin (``x``, ``y``) across its line by
    its text object's ``span``; along the line it stays PDFium's."""
    axis, low, high = span
    if axis == 0:
        rect.bottom, rect.top = y + low, y + high
    elif axis == 1:
        rect.left, rect.right = x + low, x + high


def _stroke_over_next(tp: Any, index: int, get_box: Any) -> bool:
    """Whether the space glyph at ``index`` is drawn over the character after it: LaTeX's OT1
    fonts have no "ł", so ``\\l`` draws a stroke (code 32, which maps to a space) over an
    "l". A real space stands beside the letters it parts, over none (boxes are of the
    unrotated page)."""
    stroke, letter = pdfium_c.FS_RECTF(), pdfium_c.FS_RECTF()
    if not (
        get_box(tp, index, ctypes.byref(stroke)) and get_box(tp, index + 1, ctypes.byref(letter))
    ):
        return False
    # Over it in both directions: along a turned line the two stand one above the other.
    width, height = stroke.right - stroke.left, stroke.top - stroke.bottom
    across = min(stroke.right, letter.right) - max(stroke.left, letter.left)
    up = min(stroke.top, letter.top) - max(stroke.bottom, letter.bottom)
    return (
        width > 0
        and height > 0
        and across >= _ACCENT_OVERLAP * width
        and up >= _ACCENT_OVERLAP * height
    )


def _arabic_letter(ch: str) -> bool:
    return "\u0620" <= ch <= "\u06ff" and unicodedata.category(ch) == "Lo"


def _baseline_stroke(tp: Any, index: int, loose: Any) -> bool:
    """The glyph is a flat stroke lying on the baseline, as a kashida is (a hyphen sits above
    it, an underscore below, a dot is as tall as it is wide)."""
    x0, x1, y0, y1 = (ctypes.c_double() for _ in range(4))
    refs = (ctypes.byref(x0), ctypes.byref(x1), ctypes.byref(y0), ctypes.byref(y1))
    if not pdfium_c.FPDFText_GetCharBox(tp, index, *refs):
        return False
    origin_x, origin_y = ctypes.c_double(), ctypes.c_double()
    pdfium_c.FPDFText_GetCharOrigin(tp, index, ctypes.byref(origin_x), ctypes.byref(origin_y))
    em = abs(loose.top - loose.bottom)
    height, width = y1.value - y0.value, x1.value - x0.value
    return (
        em > 0
        and 0 <= height < 0.15 * em
        and width > 2 * height
        and abs(y0.value - origin_y.value) < 0.05 * em
    )


#: How one character follows another in the content's order (``_step``).
_ELSEWHERE, _BESIDE, _BELOW = 0, 1, 2


def _step(a: Char, b: Char) -> int:
    """Whether ``b`` stands beside ``a`` (on its row), below it in its column (the next
    character of vertical writing) or elsewhere."""
    # (Conditionals, not min and max: this runs for every pair of characters of a page.)
    a_top, a_bottom, b_top, b_bottom = a.top, a.bottom, b.top, b.bottom
    y_overlap = (a_bottom if a_bottom <= b_bottom else b_bottom) - (
        a_top if a_top >= b_top else b_top
    )
    a_height, b_height = a_bottom - a_top, b_bottom - b_top
    if y_overlap >= 0.5 * (a_height if a_height <= b_height else b_height):
        return _BESIDE
    x_overlap = min(a.x1, b.x1) - max(a.x0, b.x0)
    below = b_top - a_bottom  # b's top under a's bottom (a little overlap allowed)
    if x_overlap >= 0.5 * min(max(a.x1 - a.x0, 0.1), max(b.x1 - b.x0, 0.1)) and (
        -0.3 * a.size <= below < 2 * max(a.size, b.size)
    ):
        return _BELOW
    return _ELSEWHERE


def _turn_vertical_writing(chars: list[Char], width: float, height: float) -> list[list[Char]]:
    """Set vertical writing (Japanese or Chinese columns, top to bottom, right to left) into the
    frame of text that runs top to bottom, as turned text: a column reads as a line, columns
    from right to left as lines from top to bottom.

    PDFium gives vertical glyphs upright (angle 0) and no writing mode, but in its order (the
    content's) each character of a column lies below the one before, where horizontal text has
    it beside. A page whose upright characters mostly follow each other downwards is written
    vertically; the characters in those steps are turned (a lone character stays upright).

    On a page written across, the columns of Chinese or Japanese set vertically (a label beside
    the text, a form's header cell) are returned instead, for ``read_page`` to turn those that
    are no table's: read across, such a column was one character per line, each put into the
    line beside it. A column of two or three characters counts only where it stands apart (no
    character beside its first or last) in one size of type: ruby is smaller than its base
    character, and the last character of a paragraph and the first of the next can stand one
    over the other."""
    upright = [c for c in chars if c.index >= 0]
    steps = [_step(a, b) for a, b in itertools.pairwise(upright)]
    down = steps.count(_BELOW)
    if down >= _MIN_VERTICAL_STEPS and down >= 2 * steps.count(_BESIDE):
        turned = {
            id(c): c
            for k, step in enumerate(steps)
            if step == _BELOW
            for c in (upright[k], upright[k + 1])
        }
        _turn_column(list(turned.values()), width, height)
        return []
    columns: list[list[Char]] = []
    start = 0
    for k, step in enumerate([*steps, _ELSEWHERE]):
        if step == _BELOW:
            continue
        if k - start < 1:  # one character: no column (most steps of a page written across)
            start = k + 1
            continue
        column = upright[start : k + 1]
        if all(_UNSPACED.fullmatch(c.text) for c in column):
            sizes = [c.size for c in column]
            apart = (start == 0 or steps[start - 1] != _BESIDE) and (
                k == len(steps) or steps[k] != _BESIDE
            )
            if len(column) > _MIN_VERTICAL_RUN or (apart and min(sizes) > 0.85 * max(sizes)):
                columns.append(column)
        start = k + 1
    return columns


def _turn_column(chars: list[Char], width: float, height: float) -> None:
    """Characters of vertical writing turned into the frame of text running top to bottom."""
    for c in chars:
        (ax, ay), (bx, by) = (
            _turn(3, width, height, c.x0, c.top),
            _turn(3, width, height, c.x1, c.bottom),
        )
        c.x0, c.x1, c.top, c.bottom = min(ax, bx), max(ax, bx), min(ay, by), max(ay, by)
        c.size = max(c.bottom - c.top, 0.1)
        c.baseline = c.bottom  # the column's edge: the same for every glyph of it
        c.index = -4  # turned text, as text running top to bottom (quarter 3)


# -- rows, segments, words --------------------------------------------------------------------


def _rows(chars: list[Char]) -> list[list[Char]]:
    """Characters clustered into rows by their vertical centres, and by their baseline.

    A row that starts with a raised footnote mark ends a little above the centres of its
    line's letters; a letter whose box sits lower (text around a sentence's inline code set in
    a smaller fixed-pitch face) still belongs to it when it stands on the baseline of the
    row's largest type, within a letter's height (else the sentence split into two lines)."""
    ordered = sorted(chars, key=lambda c: (c.top + c.bottom) / 2)
    rows: list[list[Char]] = []
    centre = tolerance = baseline = size = 0.0
    for c in ordered:
        mid = (c.top + c.bottom) / 2
        if rows and (
            mid - centre <= tolerance
            or (abs(c.baseline - baseline) <= 0.1 * c.size and mid - centre <= c.bottom - c.top)
        ):
            rows[-1].append(c)
            if c.size > size:
                baseline, size = c.baseline, c.size
            continue
        rows.append([c])
        centre, baseline, size = mid, c.baseline, c.size
        tolerance = max((c.bottom - c.top) * 0.45, 1.0)
    return [_compose_accents(row) for row in _attach_small(rows)]


def _compose_accents(row: list[Char]) -> list[Char]:
    """A spacing accent drawn over (or under) a letter of its row made part of that letter:
    "´" on "e" is "é" (NFC), "˜" on "C" is "C" with a combining tilde.

    The letter is the one the accent's box lies over by at least half its width, among its
    neighbours in x order: not necessarily drawn next to it (an accent can be drawn after the
    word it sits in). An accent beside letters, over none (a backtick in code, a caret), stays
    a character of its own. The letter keeps its own box, so word gaps are measured as before.
    """
    if not any(c.text in _SPACING_ACCENTS for c in row):
        return row
    ordered = sorted(row, key=_X0)
    composed: dict[int, str] = {}
    dropped: set[int] = set()
    for k, accent in enumerate(ordered):
        if accent.text not in _SPACING_ACCENTS:
            continue
        width = accent.x1 - accent.x0
        if width <= 0:
            continue
        best, best_overlap = -1, _ACCENT_OVERLAP * width
        for j in range(max(0, k - 3), min(len(ordered), k + 4)):
            letter = ordered[j]
            if j == k or j in dropped or not composed.get(j, letter.text)[:1].isalpha():
                continue
            overlap = min(accent.x1, letter.x1) - max(accent.x0, letter.x0)
            if overlap >= best_overlap:
                best, best_overlap = j, overlap
        if best < 0:
            continue
        base = composed.get(best, ordered[best].text)
        if base[:1] in _DOTLESS and _SPACING_ACCENTS[accent.text] not in ("\u0327", "\u0328"):
            base = _DOTLESS[base[:1]] + base[1:]
        composed[best] = unicodedata.normalize("NFC", base + _SPACING_ACCENTS[accent.text])
        dropped.add(k)
    if not dropped:
        return row
    keep = {id(ordered[j]) for j in dropped}
    letters = {id(ordered[j]): text for j, text in composed.items()}
    return [
        dataclasses.replace(c, text=letters[id(c)]) if id(c) in letters else c
        for c in row
        if id(c) not in keep
    ]


def _attach_small(rows: list[list[Char]]) -> list[list[Char]]:
    """Rows of small characters (superscripts, footnote marks, stacked fractions, limits under
    a big operator) joined to the larger row they overlap, so they do not become lines of their
    own mid-sentence.

    A short row of smaller type joins a larger row when its baseline is on that row's or raised
    or lowered by a fraction of its size (``MARK_RAISE``, ``MARK_DROP``: a mark); failing that,
    when it stands within that row's span over or under at most one of its letters (a limit, a
    numerator: nothing to interleave with). A line of smaller type set tight under a larger one
    (a title under a name) is neither: its box overlaps the larger line's, but merged the two
    would interleave letter by letter, so it stays a line of its own. Marks far apart on one
    height (a footnote's mark in the left column, a limit in the right) are placed apart, each
    with the row it belongs to.
    """
    if len(rows) < 2:
        return rows
    stats = [_row_stats(r) for r in rows]
    extents: dict[int, tuple[list[float], list[float]]] = {}

    def extent(k: int) -> tuple[list[float], list[float]]:
        """Row ``k``'s letters' left and right edges, each sorted (made once per row)."""
        if k not in extents:
            extents[k] = (sorted(c.x0 for c in rows[k]), sorted(c.x1 for c in rows[k]))
        return extents[k]

    def stands_clear(k: int, x0: float, x1: float) -> bool:
        """Whether the strip from x0 to x1 lies within row ``k`` over at most one letter."""
        starts, ends = extent(k)
        if x0 < starts[0] or x1 > ends[-1]:
            return False
        return bisect.bisect_left(starts, x1) - bisect.bisect_right(ends, x0) <= 1

    def beside(k: int, piece: list[Char]) -> bool:
        """Whether ``piece`` stands just before or after text of row ``k``, over none of it."""
        starts, ends = extent(k)
        x0, x1 = min(c.x0 for c in piece), max(c.x1 for c in piece)
        at, end = bisect.bisect_left(starts, x1), bisect.bisect_right(ends, x0)
        if at != end:
            return False  # a letter of row k lies under the piece
        reach = stats[k][2]
        return (at < len(starts) and starts[at] - x1 <= reach) or (
            end > 0 and x0 - ends[end - 1] <= reach
        )

    def target_of(
        i: int, chars: list[Char], stat: tuple[float, float, float, float], marks_only: bool = False
    ) -> int:
        top, bottom, size, baseline = stat
        x0, x1 = min(c.x0 for c in chars), max(c.x1 for c in chars)
        smaller = _MARK_SIZE if len(chars) <= 3 else _SMALL_PRINT
        near = [
            k
            for k in (i - 2, i - 1, i + 1, i + 2)
            if 0 <= k < len(rows)
            and stats[k][2] > size / smaller
            and min(bottom, stats[k][1]) - max(top, stats[k][0]) > 0
        ]
        marked = [
            k
            for k in near
            if -MARK_RAISE * stats[k][2] <= baseline - stats[k][3] <= MARK_DROP * stats[k][2]
        ]
        clear = [k for k in near if stats[k][2] > size / _SMALL_PRINT and stands_clear(k, x0, x1)]
        for candidates in (marked, [] if marks_only else clear):
            if candidates:  # the largest type (the first of equals)
                return max(candidates, key=lambda k: (stats[k][2], -candidates.index(k)))
        return i

    target = list(range(len(rows)))
    apart: dict[int, list[tuple[list[Char], int]]] = {}  # row -> its pieces and their rows
    for i, row in enumerate(rows):
        if len(row) > 8:  # a line of small print (a footnote), not a mark; but it can hold ...
            moved = [
                (mark, k)
                for mark in _marks_of_another_row(row, stats[i])
                if (k := target_of(i, mark, _row_stats(mark), marks_only=True)) != i
                and beside(k, mark)
            ]
            if moved:  # ... the mark of a line beside it (another column's), clustered here
                ids = {id(c) for mark, _ in moved for c in mark}
                apart[i] = [([c for c in row if id(c) not in ids], i), *moved]
            continue
        target[i] = whole = target_of(i, row, stats[i])
        pieces = _segments(row) if len(row) > 1 else [row]
        if len(pieces) > 1:
            # A piece goes where it belongs on its own, else where the whole row goes.
            targets = [
                k if (k := target_of(i, piece, _row_stats(piece))) != i else whole
                for piece in pieces
            ]
            if len(set(targets)) > 1:
                apart[i] = list(zip(pieces, targets, strict=True))
                target[i] = i
    if target == list(range(len(rows))) and not apart:
        return rows

    def root(k: int) -> int:
        while target[k] != k:
            k = target[k]
        return k

    merged: dict[int, list[Char]] = {}
    for i, row in enumerate(rows):
        for piece, k in apart.get(i, [(row, target[i])]):
            merged.setdefault(root(k), []).extend(piece)
    return [merged[k] for k in sorted(merged)]


def _marks_of_another_row(
    row: list[Char], stat: tuple[float, float, float, float]
) -> list[list[Char]]:
    """The pieces of a row that may be another row's marks: a segment of at most three
    characters of smaller type, two font sizes or more from the row's other text (a footnote's
    mark at the left column's foot, clustered with the right column's line at its height)."""
    size = stat[2]
    if not any(c.size < _MARK_SIZE * size for c in row):
        return []
    pieces = _segments(row)
    found = []
    for k, piece in enumerate(pieces):
        if len(piece) > 3 or not all(c.size < _MARK_SIZE * size for c in piece):
            continue
        x0, x1 = min(c.x0 for c in piece), max(c.x1 for c in piece)
        before = max(c.x1 for c in pieces[k - 1]) if k else -math.inf
        after = min(c.x0 for c in pieces[k + 1]) if k + 1 < len(pieces) else math.inf
        if min(x0 - before, after - x1) >= _MARK_APART * size:
            found.append(piece)
    return found


def _row_stats(row: list[Char]) -> tuple[float, float, float, float]:
    """(top, bottom, median size, median baseline) of a row's characters."""
    return (
        min(c.top for c in row),
        max(c.bottom for c in row),
        statistics.median(c.size for c in row),
        statistics.median(c.baseline for c in row),
    )


def _segments(row: list[Char]) -> list[list[Char]]:
    """A row split where it leaves a gap wider than ``SEGMENT_GAP`` font sizes."""
    ordered = sorted(row, key=_X0)
    segments: list[list[Char]] = [[ordered[0]]]
    right = ordered[0].x1
    for c in ordered[1:]:
        if c.x0 - right > SEGMENT_GAP * (c.size if c.size >= 4.0 else 4.0):
            segments.append([c])
        else:
            segments[-1].append(c)
        if c.x1 > right:
            right = c.x1
    return segments


def _glyphs(chars: list[Char]) -> list[list[Char]]:
    """Characters grouped by the glyph that drew them (a ligature's letters are one group)."""
    groups: list[list[Char]] = []
    for c in chars:
        if groups and c.glyph == groups[-1][0].glyph:
            groups[-1].append(c)
        else:
            groups.append([c])
    return groups


def _dedupe(chars: list[Char]) -> list[Char]:
    """Overprinted copies (fake bold, shadows) dropped: the same glyph drawn again at nearly the
    same place. Compared glyph by glyph, so the two ``f`` of an ``ff`` ligature (one glyph, one
    box) are both kept, and a narrow letter beside a wide ligature is not taken for its copy."""
    kept: list[tuple[str, Char]] = []
    out: list[Char] = []
    for group in _glyphs(chars):
        c = group[0]
        text = "".join(g.text for g in group) if len(group) > 1 else c.text
        width = c.x1 - c.x0
        tol = (width if width >= 1.0 else 1.0) * 0.35
        for t, k in kept[-6:]:
            if t == text and abs(k.x0 - c.x0) < tol and abs(k.top - c.top) < tol:
                break  # a copy
        else:
            kept.append((text, c))
            out.extend(group)
    return out


def _logical(chars: list[Char]) -> list[Char]:
    """Characters in reading order: PDFium's (logical) order where the run is right-to-left."""
    if not any(c.rtl for c in chars) or any(c.index < 0 for c in chars):
        return chars  # left-to-right: already sorted by x
    ordered = sorted(chars, key=_INDEX)
    # A ligature (lam-alef), or a word drawn as one glyph, is one glyph mapped to several
    # characters that PDFium's bidi pass reversed with the run: put each glyph's characters
    # back in their mapped order (its marks, which are not right-to-left, with them).
    out: list[Char] = []
    for group in _glyphs(ordered):
        if len(group) > 1 and any(c.rtl for c in group):
            # A space drawn after the glyph follows its last character in reading order.
            spaced = any(c.space for c in group)
            for c in group:
                c.space = False
            group[0].space = spaced
            group = group[::-1]
        out.extend(group)
    return out


def _text(chars: list[Char], tracking: float | None = None) -> str:
    """The words of a run of characters, separated where the page separates them.

    ``tracking``: the letter spacing of the line the run is part of (``_tracking``), if known.
    A tatweel stroke is dropped but counts as part of the letter it lengthens: the gap to the
    next letter is measured from the stroke's end, and a space after it is kept."""
    parts: list[str] = []
    previous: Char | None = None
    if tracking is None:
        tracking = _tracking(chars)
    for c in chars:
        if TATWEEL in c.text:
            if not c.text.strip(TATWEEL):  # a stroke alone: fold it into the letter before
                if previous is not None:
                    previous = dataclasses.replace(
                        previous,
                        x0=min(previous.x0, c.x0),
                        x1=max(previous.x1, c.x1),
                        space=previous.space or c.space,
                    )
                continue
            c = dataclasses.replace(c, text=c.text.replace(TATWEEL, ""))
        if previous is not None and _combining(c.text):
            # A mark drawn over or under the letter before it (Thai vowels and tone marks,
            # Devanagari signs): part of that letter, never a word of its own. The next
            # letter's gap is measured from the letter, whose advance the mark does not have;
            # the spaces PDFium generates around a mark placed back over its letter are not
            # the page's (a real space still leaves its gap after the letter, and a space
            # glyph drawn after the mark is one: a justified line's gap may be narrower).
            parts.append(c.text)
            previous = dataclasses.replace(previous, space=c.wide_space)
            continue
        if previous is not None:
            # (Conditionals, not min, max and sorted: this runs for every character.)
            ahead, behind = c.x0 - previous.x1, previous.x0 - c.x1
            gap = ahead if ahead >= behind else behind
            small, large = (
                (c.size, previous.size) if c.size <= previous.size else (previous.size, c.size)
            )
            if _unspaced(previous.text, c.text):
                # Chinese and Japanese put no space between words: a narrow gap between two
                # of their characters is the type's tracking (spread to justify, or glyphs set
                # one by one in a font narrower than their advance), where PDFium guesses a
                # space; a space glyph the page draws ("新山 祐介") or a wide gap ("第 7.9 条
                # 服务") stays one.
                if _unspaced_break(previous, c, gap, max(small, 1.0)):
                    parts.append(" ")
            elif (
                # Letter-spaced type ("I N S T A L L A T I O N"): the spacing is the line's,
                # between every two characters, and PDFium's guessed spaces with it; a word
                # ends at a space the page draws or where the gap passes the spacing by as
                # much as a word gap.
                (previous.wide_space or previous.dropped_after if tracking else previous.space)
                or gap > tracking + WORD_GAP * max(small, 1.0)
                # A superscript or footnote mark, smaller and off the baseline: its own token.
                # Small capitals on the baseline ("URL" + "s" in texinfo's @sc) are one word.
                or (
                    small < 0.75 * large
                    and abs(c.baseline - previous.baseline) > _OFF_BASELINE * large
                )
            ):
                parts.append(" ")
        parts.append(c.text)
        previous = c
    text = "".join(parts)
    return text.replace("\u00ad ", "\u00ad").strip()


#: Letter spacing (tracking) is told from at least this many pairs of letters with no space
#: glyph between them …
_TRACKED_GAPS = 4
#: … this share of which stand apart (a space PDFium put there, or a gap past a word gap) and
#: lie within this many font sizes of the median gap: a heading spread by tracking, not words
#: set apart.
_TRACKED_SHARE = 0.7
_TRACKED_SPREAD = 0.08
#: The end of the Cyrillic block: Latin, Greek and Cyrillic lie before it. Other scripts are
#: left as they were (a chart of Bhaiksuki letters has the evenness of tracked type).
_TRACKED_SCRIPTS_END = "\u0530"


def _tracking(chars: list[Char]) -> float:
    """The letter spacing a run of characters is set with (points), 0.0 when it is set solid.

    Why: designed documents spread headings and capitals by tracking (``Tc``, or a glyph
    positioned after each letter): every two letters then stand apart, PDFium puts a space
    between them (or the gap passes a word gap) and they read "I N S T A L L A T I O N", where a
    viewer shows one word. Tracked type is told by most pairs of letters standing so apart, by
    gaps of about one width; words are set apart by a space glyph or a wider gap still."""
    if len(chars) <= _TRACKED_GAPS:
        return 0.0
    # More pairs of letters set solid than the share allows, and the run is set solid (most
    # runs, told after a few letters).
    solid, most_solid = 0, (1.0 - _TRACKED_SHARE) * (len(chars) - 1)
    gaps: list[float] = []
    sizes: list[float] = []
    for a, b in itertools.pairwise(chars):
        if a.wide_space or a.dropped_after:
            continue
        last, first = a.text[-1:], b.text[:1]
        if not (last < _TRACKED_SCRIPTS_END and first < _TRACKED_SCRIPTS_END):
            continue  # letter spacing is told in Latin, Greek and Cyrillic type only
        if not (last.isalpha() and first.isalpha()):
            continue
        gap = b.x0 - a.x1
        size = a.size if a.size < b.size else b.size
        if not (a.space or gap > WORD_GAP * size):
            solid += 1
            if solid > most_solid:
                return 0.0
        gaps.append(gap)
        sizes.append(size)
    if len(gaps) < _TRACKED_GAPS or solid > (1.0 - _TRACKED_SHARE) * len(gaps):
        return 0.0
    size = max(statistics.median(sizes), 1.0)
    median = statistics.median(gaps)
    if not 0.0 < median < SEGMENT_GAP * size:
        return 0.0
    close = sum(abs(g - median) <= _TRACKED_SPREAD * size for g in gaps)
    return median if close >= _TRACKED_SHARE * len(gaps) else 0.0


#: A gap wider than this (in font sizes) between two such characters is a space: tracking
#: that justifies a line or glyphs set narrower than their advance leave 0.1-0.3 …
_UNSPACED_GAP = 0.45
#: … and a space glyph the page draws, where it widens the gap past this. A space PDFium
#: puts at a ``TJ`` adjustment (how Word and InDesign justify CJK lines) is not one.
_UNSPACED_WIDE_SPACE_GAP = 0.25
#: CJK punctuation set in the left half of its em (closing) and in the right half (opening):
#: their glyph boxes leave half an em empty, which is no gap.
_CLOSING = frozenset("、。，．：；！？）」』】〕〉》｝］")
_OPENING = frozenset("（「『【〔〈《｛［")
#: Characters of scripts written without spaces between words (Han, kana, their punctuation
#: and full-width forms, vertical forms); Hangul is not among them: Korean spaces its words.
_UNSPACED = re.compile(
    "[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\ufe10-\ufe1f\ufe30-\ufe4f\uff00-\uff60\uff66-\uff9f"
    "\U00020000-\U0003ffff]"
)


def _unspaced(before: str, after: str) -> bool:
    """Whether two characters side by side are both of a script written without spaces."""
    if before[-1:] < "\u2e80" or after[:1] < "\u2e80":  # every one of them lies above
        return False
    return bool(_UNSPACED.match(before[-1]) and _UNSPACED.match(after[0]))


def _unspaced_break(before: Char, after: Char, gap: float, size: float) -> bool:
    """Whether the gap between two characters of scripts written without spaces is one."""
    if before.text[-1] in _CLOSING or after.text[0] in _OPENING:
        gap -= 0.5 * size
    if before.wide_space:
        return gap > _UNSPACED_WIDE_SPACE_GAP * size
    return gap > _UNSPACED_GAP * size


def _combining(text: str) -> bool:
    """Whether ``text`` is only combining marks (nonspacing or enclosing: ``Mn``, ``Me``)."""
    if not text or text[0] < _FIRST_MARK:
        return False  # most text: no mark comes before U+0300
    return all(unicodedata.category(ch) in ("Mn", "Me") for ch in text)


#: The first combining mark of Unicode (COMBINING GRAVE ACCENT): no character below it is one.
_FIRST_MARK = "\u0300"


def _union(chars: list[Char]) -> tuple[float, float, float, float]:
    x0s, tops, x1s, bottoms = zip(*[c.box for c in chars], strict=True)
    return (min(x0s), min(tops), max(x1s), max(bottoms))


@dataclass(slots=True)
class _Seg:
    chars: list[Char]
    x0: float
    x1: float
    top: float
    bottom: float
    size: float


def _make_seg(chars: list[Char]) -> _Seg:
    return _Seg(
        chars,
        min(c.x0 for c in chars),
        max(c.x1 for c in chars),
        min(c.top for c in chars),
        max(c.bottom for c in chars),
        statistics.median(c.size for c in chars),
    )


# -- columns ----------------------------------------------------------------------------------


class _Run:
    """The rows of a run from one start row, added one at a time, and its column gutter.

    A gutter candidate is a strip that no segment of the run crosses: a hole in the union of
    the segments' x-extents at least ``MIN_GUTTER`` wide. The union is kept as sorted blocks
    of covered x, neighbours closer than ``MIN_GUTTER`` merged into one block (a hole only
    narrows as rows come, so a hole too narrow now is never a gutter). Each block keeps its
    segments' widths sorted, so a candidate's column test counts by bisection. Adding a row
    costs its own segments, not the run's; the search over a page is near-linear in its
    segments where testing every run afresh was quadratic.
    """

    def __init__(self) -> None:
        self.starts: list[float] = []  # each block's left edge (the least x0 in it)
        self.ends: list[float] = []  # each block's right edge (the greatest x1 in it)
        self.widths: list[list[float]] = []  # each block's segment widths, ascending
        self.bullets: list[int] = []  # each block's segments that are a bullet alone
        #: Each block's segments that open with a letter of either case, and with a small one
        #: (a sentence wrapped onto the next line: a column of text has some, a table's
        #: column of names or labels none).
        self.cased: list[int] = []
        self.lower: list[int] = []
        self.sizes: list[float] = []  # every segment's font size, ascending

    def add(self, row: list[_Seg]) -> None:
        for seg in row:
            self._add(seg)

    def _add(self, seg: _Seg) -> None:
        x0, x1 = seg.x0, seg.x1
        starts, ends = self.starts, self.ends
        bisect.insort(self.sizes, seg.size)
        # The blocks whose hole to the segment would be narrower than a gutter: the last one
        # starting at or before x0 (those before it end a gutter's width before its start),
        # then those starting after x0 and less than a gutter's width after x1.
        at = bisect.bisect_right(starts, x0) - 1
        first = at if at >= 0 and x0 - ends[at] < MIN_GUTTER else at + 1
        last = at + 1
        while last < len(starts) and starts[last] - x1 < MIN_GUTTER:
            last += 1
        bullet = int(len(seg.chars) == 1 and seg.chars[0].text in BULLETS)
        opening = seg.chars[0].text[:1] if seg.chars else ""
        lower = int(opening.islower())
        cased = int(lower or opening.isupper())
        if last - first == 1 and first == at:  # inside (or just past) one block: the usual case
            if x1 > ends[at]:
                ends[at] = x1
            bisect.insort(self.widths[at], x1 - x0)
            self.bullets[at] += bullet
            self.cased[at] += cased
            self.lower[at] += lower
            return
        widths = [x1 - x0]
        if last > first:
            x0 = min(x0, starts[first])
            x1 = max(x1, ends[last - 1])
            for block in self.widths[first:last]:
                widths += block
            widths.sort()
            bullet += sum(self.bullets[first:last])
            cased += sum(self.cased[first:last])
            lower += sum(self.lower[first:last])
        starts[first:last] = [x0]
        ends[first:last] = [x1]
        self.widths[first:last] = [widths]
        self.bullets[first:last] = [bullet]
        self.cased[first:last] = [cased]
        self.lower[first:last] = [lower]

    def gutter(self) -> float | None:
        """The x of a gutter the run leaves free, with column-wide text on both sides; None if
        there is free space but no such gutter; ``-1.0`` if no strip is free at all.

        A side's wide segments (wider than half the side) all lie in one block: the blocks of a
        side are disjoint and apart, so at most one is wider than half of it, and a segment is
        no wider than its block. Each hole's test is one bisection in the widest block of each
        side (kept as running maxima), not one per block: a call costs the run's blocks times
        their logarithm, where counting block by block cost their square (a wide spreadsheet's
        page of 96 narrow columns took seconds)."""
        starts, ends, widths = self.starts, self.ends, self.widths
        n = len(starts)
        if n < 2:
            return -1.0
        lo, hi = starts[0], ends[-1]
        sizes = self.sizes
        half = len(sizes) // 2
        size = sizes[half] if len(sizes) % 2 else (sizes[half - 1] + sizes[half]) / 2
        column = MIN_COLUMN_EMS * size
        counts = list(itertools.accumulate(len(b) for b in widths))  # segments up to block k
        # The widest block among blocks 0..k (left of hole k) and among k+1..n-1 (right of it).
        widest_left = [0] * n
        for k in range(1, n):
            w = widest_left[k - 1]
            widest_left[k] = k if ends[k] - starts[k] > ends[w] - starts[w] else w
        widest_right = [n - 1] * n
        for k in range(n - 2, -1, -1):
            w = widest_right[k + 1]
            widest_right[k] = k if ends[k] - starts[k] >= ends[w] - starts[w] else w
        holes = sorted(range(n - 1), key=lambda k: ends[k] - starts[k + 1])
        for k in holes:  # widest first
            g0, g1 = ends[k], starts[k + 1]
            lw, rw = g0 - lo, hi - g1
            if lw < column or rw < column:
                continue
            # Column text, not a table: each side's segments are mostly (half or more) wide.
            cut = 0.5 * lw
            block = widths[widest_left[k]]
            wide = len(block) - bisect.bisect_right(block, cut)
            if 2 * wide < counts[k]:
                continue
            cut = 0.5 * rw
            block = widths[widest_right[k + 1]]
            wide = len(block) - bisect.bisect_right(block, cut)
            if 2 * wide < counts[-1] - counts[k]:
                continue
            return (g0 + g1) / 2
        if 3 <= n <= _MAX_SPLIT_BLOCKS:
            return self._split_of_columns(column, counts, holes)
        return None

    def _split_of_columns(self, column: float, counts: list[int], holes: list[int]) -> float | None:
        """A gutter between columns where a side may itself be columns: three text columns (a
        newsletter's, a brochure's) or three text boxes side by side on a slide, whose second
        and third together are no column of wide text. The blocks must fall into consecutive
        groups, each column text held to more than a side above (``_MIN_COLUMN_LINES`` lines,
        a bullet set apart not counted, ``_COLUMN_WIDE_SHARE`` of them wider than half the
        group); the gutter is the widest hole between two groups. Only over a few blocks, and
        only where enough of the run's lines are half a column wide (each group's wide lines
        are, and they are its share). A group whose lines (four or more of them opening with a
        letter) all open with a capital is a table's column of names or labels, not text: a
        sentence wraps onto lines that open in lower case."""
        starts, ends, widths = self.starts, self.ends, self.widths
        n = len(starts)
        marks = self.bullets  # a bullet set apart from its item's text is no line of the column
        wide_anywhere = sum(len(b) - bisect.bisect_right(b, 0.5 * column) for b in widths)
        if wide_anywhere < _COLUMN_WIDE_SHARE * (counts[-1] - sum(marks)):
            return None

        lines_before = [0]
        for block, mark in zip(widths, marks, strict=True):
            lines_before.append(lines_before[-1] + len(block) - mark)
        known: dict[tuple[int, int], bool] = {}

        def text(a: int, b: int) -> bool:  # blocks a..b (inclusive) are one column of text
            key = (a, b)
            if key not in known:
                width = ends[b] - starts[a]
                lines = lines_before[b + 1] - lines_before[a]
                ok = width >= column and lines >= _MIN_COLUMN_LINES
                if ok and sum(self.cased[a : b + 1]) >= _MIN_COLUMN_LINES:
                    ok = sum(self.lower[a : b + 1]) > 0  # every line a capital's: a table's
                if ok:
                    block = widths[max(range(a, b + 1), key=lambda k: ends[k] - starts[k])]
                    wide = len(block) - bisect.bisect_right(block, 0.5 * width)
                    ok = wide >= _COLUMN_WIDE_SHARE * lines
                known[key] = ok
            return known[key]

        # The first and last groups first: where either fails (a table's narrow column at
        # an end), the rest is not looked at.
        if not (any(text(0, b) for b in range(n - 1)) and any(text(a, n - 1) for a in range(1, n))):
            return None
        # head[k]: blocks 0..k-1 fall into column groups; tail[k]: blocks k..n-1 do.
        head = [True] + [False] * n
        for b in range(1, n + 1):
            head[b] = any(head[a] and text(a, b - 1) for a in range(b))
        if not head[n]:
            return None
        tail = [False] * n + [True]
        for a in range(n - 1, -1, -1):
            tail[a] = any(tail[b + 1] and text(a, b) for b in range(a, n))
        # The widest hole between two groups; of holes about as wide (columns set evenly), the
        # middle one, so that columns inside columns go a few levels deep, not one a level.
        between = [k for k in holes if head[k + 1] and tail[k + 1]]
        if not between:
            return None
        widest = starts[between[0] + 1] - ends[between[0]]
        k = min(
            (k for k in between if starts[k + 1] - ends[k] >= widest - 1.0),
            key=lambda k: abs(2 * k + 2 - n),
        )
        return (ends[k] + starts[k + 1]) / 2


#: Rows a column run may extend without finding a valid gutter before the search stops.
_MAX_WEAK_RUN = 40
#: Columns whose sides are columns themselves are looked for among at most this many blocks
#: (a page of a wide table's many narrow columns is no such page, and each look costs their cube).
_MAX_SPLIT_BLOCKS = 8
#: Such a column holds at least this many lines, this share of them wider than half of it
#: (a table's header over narrow values, a form's labels in a row, are none).
_MIN_COLUMN_LINES = 4
_COLUMN_WIDE_SHARE = 0.7
#: What opens a list item: bullets, dashes, check marks (a segment of one alone is no line).
BULLETS = frozenset("•◦‣▪▫■□●○◆◇►▶➢➤✓✔–—-*")


def _mostly_rtl(rows: list[list[_Seg]]) -> bool:
    chars = [c for row in rows for seg in row for c in seg.chars]
    return sum(c.rtl for c in chars) * 2 > len(chars)


def _side_by_side(left: list[list[_Seg]], right: list[list[_Seg]]) -> bool:
    """Whether two sides of a gutter stand beside each other, as columns do: each has text
    and their heights overlap. A chapter title set flush right above short lines set flush
    left (Sphinx's LaTeX) leaves a free strip between them, but one comes after the other."""
    if not (left and right):
        return False
    top = max(min(s.top for s in left[0]), min(s.top for s in right[0]))
    bottom = min(max(s.bottom for s in left[-1]), max(s.bottom for s in right[-1]))
    return bottom > top


def _centred_over(row: list[_Seg], gutter: float, run: list[list[_Seg]]) -> bool:
    """Whether a run's first row is centred over its gutter, clear of the gutter and of the
    columns' outer edges on both sides: the names of two authors side by side above a paper's
    two columns. A column's line starts at its column's edge or ends beside the gutter."""
    left = [s for s in row if s.x1 <= gutter]
    right = [s for s in row if s.x0 >= gutter]
    if not left or not right or len(left) + len(right) != len(row):
        return False
    clear = _CENTRED_CLEAR * statistics.median(s.size for s in row)
    x0, x1 = min(s.x0 for s in left), max(s.x1 for s in right)
    if not (
        gutter - max(s.x1 for s in left) >= clear
        and min(s.x0 for s in right) - gutter >= clear
        and abs((gutter - x0) - (x1 - gutter)) <= clear
    ):
        return False
    lo = min(s.x0 for r in run for s in r)
    hi = max(s.x1 for r in run for s in r)
    return x0 - lo >= clear and hi - x1 >= clear


#: How far (font sizes) a centred row stands clear of the gutter and of the columns' outer
#: edges, and at most how far off centre it may be.
_CENTRED_CLEAR = 1.5


#: Columns inside columns, at most this deep (five text boxes side by side split four times).
_MAX_DEPTH = 5


def _order(rows: list[list[_Seg]], depth: int = 0) -> list[list[list[_Seg]]]:
    """Rows grouped into column blocks in reading order: each block a list of rows."""
    if depth >= _MAX_DEPTH:
        return [rows] if rows else []  # no column found here could be split: none looked for
    blocks: list[list[list[_Seg]]] = []
    i = 0
    full: list[list[_Seg]] = []
    while i < len(rows):
        # The longest run of rows from i that shares a gutter (at least 3 rows).
        j = i + 1
        best: tuple[int, float] | None = None
        run = _Run()
        run.add(rows[i])
        while j <= len(rows):
            g = None
            if j - i >= 2:
                run.add(rows[j - 1])
                g = run.gutter()
            if g == -1.0:
                break  # a row crosses every strip: the run ends before it
            if g is not None:
                best = (j, g)
            elif j - i > _MAX_WEAK_RUN and (best is None or j - best[0] > _MAX_WEAK_RUN):
                break  # free strips but no columns beside them for long: bound the search
            j += 1
        if (
            best is not None
            and best[0] - i > 3
            and _centred_over(rows[i], best[1], rows[i : best[0]])
        ):
            full.append(rows[i])  # a title block's row above the columns, not their first
            i += 1
            continue
        if best is not None and best[0] - i >= 3:
            end, gutter = best
            left = [r for r in ([s for s in row if s.x1 <= gutter] for row in rows[i:end]) if r]
            right = [r for r in ([s for s in row if s.x0 >= gutter] for row in rows[i:end]) if r]
            if _side_by_side(left, right):
                if full:
                    blocks.append(full)
                    full = []
                sides = [_order(left, depth + 1), _order(right, depth + 1)]
                if _mostly_rtl(rows[i:end]):
                    sides.reverse()  # right-to-left script: the right column comes first
                blocks += sides[0] + sides[1]
                i = end
                continue
        full.append(rows[i])
        i += 1
    if full:
        blocks.append(full)
    return blocks


# -- underscores drawn as rules ---------------------------------------------------------------


def _drawn_marks(
    page: pypdfium2.PdfPage, chars: list[Char], height: float, left: float, bottom: float
) -> list[Char]:
    """``chars`` with an ``_`` for each underscore drawn as a rule, not a glyph, and a ``•``
    for each list bullet drawn as a dot (``_drawn_bullets``).

    TeX (texinfo's ``@code`` in a font without an underscore: a definition line's
    ``ffi_get_version``) draws ``_`` as a short thin rule at the baseline, so the identifier
    would read ``ffi get version``. A rule is read as ``_`` when it is about a character wide,
    lies on the baseline of the word characters just left and right of it, and no character
    is drawn over it: an underline spans and lies under its glyphs, a table rule is long."""
    raw = page.raw
    count = pdfium_c.FPDFPage_CountObjects(raw)
    if count > 5000 or not chars:
        return chars
    rules: list[tuple[float, float, float, float]] = []  # x0, top, x1, bottom (top-left origin)
    dots: list[tuple[float, float, float, float]] = []  # as rules: what may be a list's bullet
    l_, b_, r_, t_ = (ctypes.c_float() for _ in range(4))
    for k in range(count):
        obj = pdfium_c.FPDFPage_GetObject(raw, k)
        if pdfium_c.FPDFPageObj_GetType(obj) != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        segments = pdfium_c.FPDFPath_CountSegments(obj)
        if not 2 <= segments <= _MAX_DOT_SEGMENTS or not pdfium_c.FPDFPageObj_GetBounds(
            obj, ctypes.byref(l_), ctypes.byref(b_), ctypes.byref(r_), ctypes.byref(t_)
        ):
            continue
        x0, x1 = l_.value - left, r_.value - left
        top, bot = height - (t_.value - bottom), height - (b_.value - bottom)
        if (
            segments <= 5
            and 0 < bot - top <= 2.0
            and 1.0 <= x1 - x0 <= 12.0
            and not any(
                pdfium_c.FPDFPathSegment_GetType(pdfium_c.FPDFPath_GetPathSegment(obj, s))
                == pdfium_c.FPDF_SEGMENT_BEZIERTO
                for s in range(segments)
            )
            and _seen_on_paper(obj)
        ):
            rules.append((x0, top, x1, bot))
        elif (
            1.5 <= x1 - x0 <= 8.0
            and abs((bot - top) - (x1 - x0)) <= 0.25 * (x1 - x0)
            and _inked(obj)
        ):
            dots.append((x0, top, x1, bot))
        if len(rules) > 2000 or len(dots) > 2000:
            return chars
    if not (rules or dots):
        return chars
    rows: dict[int, list[Char]] = {}  # upright characters by their baseline, 2 pt a bucket
    for c in chars:
        if c.index >= 0:
            rows.setdefault(int(c.baseline // 2), []).append(c)
    added: list[Char] = _drawn_bullets(dots, rows) if dots else []
    for x0, top, x1, bot in sorted(rules):
        middle = (top + bot) / 2
        near = [
            c for b in range(int(middle // 2) - 2, int(middle // 2) + 3) for c in rows.get(b, [])
        ]
        on_line = [c for c in near if abs(c.baseline - middle) <= 0.2 * c.size]
        if not on_line:
            continue
        size = max(c.size for c in on_line)
        if bot - top > 0.2 * size or not 0.25 * size <= x1 - x0 <= 0.9 * size:
            continue
        slack = 0.15 * size
        if any(c.x0 < x1 - slack and c.x1 > x0 + slack for c in on_line):
            continue  # a glyph drawn over it: an underline, or a strike-through
        before = [c for c in on_line if x0 - 0.3 * size <= c.x1 <= x0 + slack]
        after = [c for c in on_line if x1 - slack <= c.x0 <= x1 + 0.3 * size]
        if not (before and after):
            continue
        # The last of a ligature's letters (one box) is the one before the rule.
        head = max(before, key=lambda c: (c.x1, c.index))
        tail = min(after, key=lambda c: (c.x0, c.index))
        if not (_word_char(head.text) and _word_char(tail.text)):
            continue
        if abs(head.baseline - tail.baseline) > 0.1 * size:
            continue
        underscore = Char(
            "_", x0, head.top, x1, head.bottom, (x0, head.box[1], x1, head.box[3]),
            head.size, head.bold, False, head.index, head.italic,
        )  # fmt: skip
        underscore.glyph = -2 - len(added)
        underscore.baseline = head.baseline
        underscore.mono = head.mono and tail.mono
        head.space = False  # PDFium's space for the gap the rule filled
        rows.setdefault(int(head.baseline // 2), []).append(underscore)
        added.append(underscore)
    return chars + added if added else chars


#: A list bullet drawn as a path: a disc or ring (Béziers, a browser's circle of up to ~50
#: segments) or a square.
_MAX_DOT_SEGMENTS = 64


def _drawn_bullets(
    dots: list[tuple[float, float, float, float]], rows: dict[int, list[Char]]
) -> list[Char]:
    """A ``•`` for each dot drawn where a list item's bullet goes.

    Browsers (Chrome's and Firefox's "Save as PDF") draw an HTML list's bullets as small discs,
    rings and squares, no glyph, so every item would read as a plain line. A dot is a bullet
    when it is square-ish, 15-60% of the text size beside it, in the middle of the x-height of
    a line's first word that starts within two and a half ems to its right, with no character
    before it on that line (a dot between words is a separator, a dot on a letter an accent or
    a chart's marker)."""
    added: list[Char] = []
    for x0, top, x1, bot in sorted(dots):
        middle = (top + bot) / 2
        near = [
            c
            for b in range(int(middle // 2) - 2, int(middle // 2) + 8)
            for c in rows.get(b, [])
            if c.top <= middle <= c.baseline
        ]
        after = [c for c in near if x1 <= c.x0 <= x1 + 2.5 * c.size and not c.text.isspace()]
        if not after:
            continue
        first = min(after, key=lambda c: (c.x0, c.index))
        size = first.size
        if not 0.15 * size <= x1 - x0 <= 0.6 * size:
            continue
        if not first.baseline - 0.65 * size <= middle <= first.baseline - 0.1 * size:
            continue
        if any(
            c.x1 > x0 - 3 * size and c.x0 < x1 and abs(c.baseline - first.baseline) <= 0.3 * size
            for c in near
        ):
            continue  # a character before it on the line, or over it
        bullet = Char(
            "•", x0, first.top, x1, first.bottom, (x0, first.box[1], x1, first.box[3]),
            size, False, False, first.index, False,
        )  # fmt: skip
        bullet.glyph = -2 - 100_000 - len(added)
        bullet.baseline = first.baseline
        bullet.space = True
        rows.setdefault(int(first.baseline // 2), []).append(bullet)
        added.append(bullet)
    return added


#: A colour as PDFium gives it: red, green, blue, alpha, each 0-255.
_Rgba = tuple[int, int, int, int]


def _paints(path: ctypes.c_void_p) -> list[_Rgba | None] | None:
    """The colours a path is painted in: its fill's if it is filled, then its stroke's if it
    is stroked (None for a colour PDFium cannot read); None where it cannot say how the path
    is drawn."""
    fill_mode, stroke = ctypes.c_int(), ctypes.c_int()
    if not pdfium_c.FPDFPath_GetDrawMode(path, ctypes.byref(fill_mode), ctypes.byref(stroke)):
        return None
    paints: list[_Rgba | None] = []
    for painted, get_colour in (
        (fill_mode.value != pdfium_c.FPDF_FILLMODE_NONE, pdfium_c.FPDFPageObj_GetFillColor),
        (bool(stroke.value), pdfium_c.FPDFPageObj_GetStrokeColor),
    ):
        if painted:
            rgba = [ctypes.c_uint() for _ in range(4)]
            read = get_colour(path, *(ctypes.byref(c) for c in rgba))
            paints.append(
                (rgba[0].value, rgba[1].value, rgba[2].value, rgba[3].value) if read else None
            )
    return paints


def _seen_on_paper(path: ctypes.c_void_p) -> bool:
    """Whether a path is painted in a colour that shows on white paper (or in one PDFium
    cannot read).

    Pygments styles that mark whitespace (Sphinx's LaTeX of the Requests and Flask guides) draw
    a near-white line under each space of a code block: shaped like a drawn underscore, but
    unseen, and reading it as one turned ``import requests`` into ``import_requests``."""
    paints = _paints(path)
    return paints is None or any(rgba is None or _visible(rgba) for rgba in paints)


def _inked(path: ctypes.c_void_p) -> bool:
    """Whether a path is painted in a text's colour (its fill's, else its stroke's): black or a
    dark grey, as a list's bullets are; a chart legend's colour keys are not."""
    paints = _paints(path)
    if not paints or paints[0] is None:
        return False
    r, g, b, a = paints[0]
    return a > 0 and max(r, g, b) <= 128 and max(r, g, b) - min(r, g, b) <= 40


def _visible(rgba: _Rgba) -> bool:
    """Not transparent, and darker than near-white (any channel below 224 of 255)."""
    r, g, b, a = rgba
    return a > 0 and min(r, g, b) < 224


#: Symbol-font codes that Word and LibreOffice write as private-use characters (U+F000 plus the
#: font's own code): Adobe's Symbol encoding (Symbol, OpenSymbol: a list's bullet is U+F0B7) …
_SYMBOL_CODES = {
    0xB7: "•", 0xAE: "→", 0xDE: "⇒", 0xB4: "×", 0xB8: "÷", 0xA3: "≤", 0xB3: "≥", 0xB9: "≠",
    0xB1: "±", 0xB0: "°", 0xA5: "∞", 0xD6: "√", 0xE5: "∑",
}  # fmt: skip
#: … and the bullets Wingdings gives Word's lists (▪ ➢ ❖ ✓ ■ ❑).
_WINGDINGS_CODES = {0xA7: "▪", 0xD8: "➢", 0x76: "❖", 0xFC: "✓", 0x6E: "■", 0x71: "❑"}


def _symbol_font_char(font: str, code: int) -> str | None:
    """The character a symbol font's private-use code stands for, where the font is known: a
    list bullet read as nothing left its item a bare line (a bold one taken for a heading)."""
    name = font.lower()
    if "wingdings" in name:
        return _WINGDINGS_CODES.get(code - 0xF000)
    if "symbol" in name:
        return _SYMBOL_CODES.get(code - 0xF000)
    return None


def _word_char(text: str) -> bool:
    return bool(text) and (text[-1].isalnum() or text[-1] == "_")


# -- tables -----------------------------------------------------------------------------------


def _edges(
    page: pypdfium2.PdfPage,
    rotation: int,
    width: float,
    height: float,
    left: float,
    bottom: float,
) -> list[dict[str, Any]]:
    """Ruling lines (thin paths, rectangle sides) in pdfplumber's edge form (top-left origin),
    on the page as shown, as its characters are (``/Rotate`` applied: a table on a page turned
    for landscape has its rules turned with its text)."""
    _, _, to_shown = _frame(rotation, width, height)
    edges: list[dict[str, Any]] = []
    raw = page.raw
    n = pdfium_c.FPDFPage_CountObjects(raw)
    if n > 5000:
        return edges
    l_, b_, r_, t_ = (ctypes.c_float() for _ in range(4))
    for k in range(n):
        obj = pdfium_c.FPDFPage_GetObject(raw, k)
        if pdfium_c.FPDFPageObj_GetType(obj) != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        if not pdfium_c.FPDFPageObj_GetBounds(
            obj, ctypes.byref(l_), ctypes.byref(b_), ctypes.byref(r_), ctypes.byref(t_)
        ):
            continue
        ax, ay = to_shown(l_.value - left, b_.value - bottom)
        bx, by = to_shown(r_.value - left, t_.value - bottom)
        x0, x1 = min(ax, bx), max(ax, bx)
        top, bot = min(ay, by), max(ay, by)
        w, h = x1 - x0, bot - top
        segs = pdfium_c.FPDFPath_CountSegments(obj)
        curved = any(
            pdfium_c.FPDFPathSegment_GetType(pdfium_c.FPDFPath_GetPathSegment(obj, s))
            == pdfium_c.FPDF_SEGMENT_BEZIERTO
            for s in range(min(segs, 8))
        )
        if curved:
            continue
        if h <= 3 and w > 3:
            edges.append(_edge("h", x0, (top + bot) / 2, x1, (top + bot) / 2))
        elif w <= 3 and h > 3:
            edges.append(_edge("v", (x0 + x1) / 2, top, (x0 + x1) / 2, bot))
        elif w > 3 and h > 3 and segs <= 6:
            edges += [
                _edge("h", x0, top, x1, top),
                _edge("h", x0, bot, x1, bot),
                _edge("v", x0, top, x0, bot),
                _edge("v", x1, top, x1, bot),
            ]
        if len(edges) > 1500:
            return []
    return edges


def _edge(orientation: str, x0: float, top: float, x1: float, bottom: float) -> dict[str, Any]:
    return {
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "width": x1 - x0,
        "height": bottom - top,
        "orientation": orientation,
        "object_type": "line",
    }


#: Rules across that end within this many points of each other end at one side of a table …
_SIDE_TOLERANCE = 1.5
#: … whose rows are joined by at least this many column rules (three columns or more: a box
#: split in two, a diagram's frames, are no open table).
_SIDE_COLUMN_RULES = 2


class _ByHeight:
    """Characters by the height of their centres, to take those between two heights by
    bisection (the two readings ``_tables`` tries look at the same page's bands)."""

    def __init__(self, chars: list[Char]) -> None:
        self.chars = sorted(chars, key=lambda c: (c.box[1] + c.box[3]) / 2)
        self.heights = [(c.box[1] + c.box[3]) / 2 for c in self.chars]

    def between(self, top: float, bottom: float, *, with_bottom: bool = True) -> list[Char]:
        """Those whose centre lies from ``top`` to ``bottom`` (``bottom`` itself included or
        not)."""
        lo = bisect.bisect_left(self.heights, top)
        hi = (bisect.bisect_right if with_bottom else bisect.bisect_left)(self.heights, bottom)
        return self.chars[lo:hi]


def _open_sides(edges: list[dict[str, Any]], chars: _ByHeight) -> list[dict[str, Any]]:
    """The sides a table drawn open leaves out, as vertical edges: where rules across end at
    one x, between two of them that column rules join (inner verticals reaching from one to the
    other), if the column the side closes holds text in most of those rows.

    Why: many reports (Korean and Japanese government papers, financial statements) rule their
    tables across and between columns but draw no border at the left and right; without those
    sides the first and last columns have no cells, and their text fell out of the table. A
    column that is mostly empty is no table's (ruled paper under prose, a form's empty
    fields). Rules drawn a cell or a row at a time (LaTeX's, LibreOffice's) are joined first."""
    from pdfplumber import table as plumb

    joined = plumb.merge_edges(edges, 3, 3, 3, 3)
    across = sorted(
        (e for e in joined if e["orientation"] == "h" and e["width"] > 20), key=itemgetter("top")
    )
    down = [e for e in joined if e["orientation"] == "v"]
    if len(across) < 3 or not down:
        return []
    sides: list[dict[str, Any]] = []
    for end in ("x0", "x1"):
        clusters: list[list[dict[str, Any]]] = []
        for e in sorted(across, key=itemgetter(end)):
            if clusters and e[end] - clusters[-1][-1][end] <= _SIDE_TOLERANCE:
                clusters[-1].append(e)
            else:
                clusters.append([e])
        for cluster in clusters:
            if len(cluster) < 3:
                continue
            x = statistics.median(e[end] for e in cluster)
            left = min(e["x0"] for e in cluster)
            right = max(e["x1"] for e in cluster)
            inner = [
                v
                for v in down
                if left + 3 * _SIDE_TOLERANCE < v["x0"] < right - 3 * _SIDE_TOLERANCE
            ]
            rules = sorted({round(e["top"], 1) for e in cluster})

            # A table's column rules run from one of its rules to another (a drawn box's sides
            # start and end anywhere).
            ruled = [v for v in inner if _on_rule(rules, v["top"]) and _on_rule(rules, v["bottom"])]
            closed: list[dict[str, Any]] = []
            with_text = 0
            for upper, lower in itertools.pairwise(rules):
                columns = sorted(
                    {
                        round(v["x0"], 1)
                        for v in ruled
                        if v["top"] <= upper + _SIDE_TOLERANCE
                        and v["bottom"] >= lower - _SIDE_TOLERANCE
                    }
                )
                if len(columns) < _SIDE_COLUMN_RULES:
                    continue
                closed.append(_edge("v", x, upper, x, lower))
                # The column this side closes: from the nearest column rule to the side.
                near = columns[0] if end == "x0" else columns[-1]
                low, high = min(near, x), max(near, x)
                band = chars.between(upper, lower)
                with_text += any(low < (c.box[0] + c.box[2]) / 2 < high for c in band)
            if len(closed) >= 2 and with_text * 2 > len(closed):
                sides += closed  # two rows or more (one ruled box with a rule or two is none)
    return sides


def _on_rule(rules: list[float], y: float) -> bool:
    """Whether ``y`` lies on one of ``rules`` (sorted heights), within ``_SIDE_TOLERANCE``."""
    k = bisect.bisect_left(rules, y - _SIDE_TOLERANCE)
    return k < len(rules) and rules[k] <= y + _SIDE_TOLERANCE


def _tables(edges: list[dict[str, Any]], chars: list[Char]) -> list[tuple[Table, set[int]]]:
    """Validated ruled tables and the ids of the characters they hold. Two more readings are
    tried where the rules allow them, and kept where they put more of the page's text in
    tables: tables drawn open at their sides closed (``_open_sides``), and tables ruled across
    only given their columns' gutters as rules (``_gutter_rules``). (A form's rules end at one x
    too, around empty fields: closed, its boxes join into tables of mostly empty cells that are
    no tables, and the boxes it had are lost.)"""
    if len(edges) < 3:
        return []
    upright = _ByHeight([c for c in chars if c.index >= 0])
    readings = [_ruled_tables(edges, chars) if len(edges) >= 6 else []]
    for extra in (_open_sides(edges, upright), _gutter_rules(edges, upright)):
        if extra:
            readings.append(_ruled_tables(edges + extra, chars))
    # The reading that holds the most characters, then the most inside its rules (a column
    # closed by ``_open_sides`` holds a cell over two lines whole, where text read beside the
    # rules is split at the rows); the plain one where they tie.
    return max(
        readings,
        key=lambda found: (
            sum(len(inside) for _, inside in found),
            sum(table.enclosed for table, _ in found),
        ),
    )


#: Rules across whose ends lie this close (points) are the rules of one table (a thick rule
#: drawn as a filled box reaches a little past the thin ones).
_RULE_ENDS = 3.0
#: A gap at least this wide (in the median font size of the rows) between a table's columns,
#: on every one of its rows, is a column's gutter.
_GUTTER = 1.0


def _one_row(band: list[Char], gutters: list[float]) -> bool:
    """Whether the text between two rules is one row of the table: a line, or lines of which
    at most one reaches more than one column (a cell's text wrapped beside one-line cells).
    Two lines across the columns are two rows the rules do not part (booktabs rules only the
    header and the foot), and a rule every few lines of a page is no table's."""
    lines = _rows(band)
    if len(lines) > 4:
        return False
    return sum(len(_columns_reached(line, gutters)) > 1 for line in lines) <= 1


def _columns_reached(chars: list[Char], gutters: list[float]) -> set[int]:
    """The columns (between ``gutters``) that ``chars`` stand in."""
    return {bisect.bisect(gutters, (c.x0 + c.x1) / 2) for c in chars}


def _gutter_rules(edges: list[dict[str, Any]], chars: _ByHeight) -> list[dict[str, Any]]:
    """Column rules for tables ruled across only: where three or more rules across share both
    ends and no rule runs down between them, a vertical edge at each side and in each gutter
    that the text of every row between the rules leaves open.

    Why: Word's and LaTeX's plainer table styles (booktabs, "Plain Table") rule rows, not
    columns; with no cells such a table was read as lines, a wrapped cell's second line a line
    of its own ("Berries Blueberry, Strawberry, 150", "Cranberry")."""
    from pdfplumber import table as plumb

    down = [e for e in edges if e["orientation"] == "v"]
    pieces = [e for e in edges if e["orientation"] == "h"]
    if len(pieces) < 3:
        return []
    # A rule drawn a cell at a time (LibreOffice, Word) is one rule once its pieces are joined.
    across = sorted(
        (e for e in plumb.merge_edges(pieces, 3, 3, 3, 3) if e["width"] > 40),
        key=lambda e: (round(e["x0"]), round(e["x1"]), e["top"]),
    )
    groups: list[list[dict[str, Any]]] = []
    for e in across:
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and abs(e["x0"] - last["x0"]) <= _RULE_ENDS
            and abs(e["x1"] - last["x1"]) <= _RULE_ENDS
        ):
            groups[-1].append(e)
        else:
            groups.append([e])
    rules: list[dict[str, Any]] = []
    for group in groups:
        ys = sorted({round(e["top"], 1) for e in group})
        if len(ys) < 3:
            continue
        x0 = statistics.median(e["x0"] for e in group)
        x1 = statistics.median(e["x1"] for e in group)
        top, bottom = ys[0], ys[-1]
        if any(
            x0 + 3 * _SIDE_TOLERANCE < v["x0"] < x1 - 3 * _SIDE_TOLERANCE
            and v["top"] < bottom
            and v["bottom"] > top
            for v in down
        ):
            continue  # ruled down as well: the ruled reading's
        bands: list[list[Char]] = []
        inked: list[tuple[float, float]] = []
        sizes: list[float] = []
        for upper, lower in itertools.pairwise(ys):
            band = [c for c in chars.between(upper, lower) if x0 <= (c.box[0] + c.box[2]) / 2 <= x1]
            if band:
                bands.append(band)
                inked += [(c.box[0], c.box[2]) for c in band]
                sizes += [c.size for c in band]
        if len(bands) < 2:
            continue
        gap = _GUTTER * statistics.median(sizes)
        inked.sort()
        gutters: list[float] = []
        reach = inked[0][1]
        for start, end in inked[1:]:
            if start - reach >= gap:
                gutters.append((start + reach) / 2)
            reach = max(reach, end)
        if not gutters or not all(_one_row(band, gutters) for band in bands):
            continue
        if sum(len(_columns_reached(band, gutters)) > 1 for band in bands) < 2:
            continue  # two rows across the columns at least (a form's field is no table)
        if _typewriter([c for band in bands for c in band]):
            continue  # a code listing ruled line by line: its indentation is no gutter
        # A header set above the first rule (as Word's plain tables and booktabs set it): the
        # line just above it, if none of its words crosses a gutter, is the first row.
        size = statistics.median(sizes)
        head = chars.between(top - 3.0 * size, top, with_bottom=False)
        head = [c for c in head if x0 <= (c.box[0] + c.box[2]) / 2 <= x1]
        head = _rows(head)[-1] if head else []  # the line nearest the rule
        if head and not any(c.box[0] < x < c.box[2] for c in head for x in gutters):
            top = min(c.box[1] for c in head) - 1.0
            rules.append(_edge("h", x0, top, x1, top))
        rules += [_edge("v", x, top, x, bottom) for x in (x0, *gutters, x1)]
    return rules


def _ruled_tables(edges: list[dict[str, Any]], chars: list[Char]) -> list[tuple[Table, set[int]]]:
    from pdfplumber import table as plumb

    merged = plumb.merge_edges(edges, 3, 3, 3, 3)
    cells = _intersections_to_cells(_edges_to_intersections(merged, 3.0))
    found = []
    # The upright characters by the height of their centres: each table takes those between
    # its top and bottom by bisection (then in page order), not a pass over the whole page
    # per table (a form of many ruled boxes cost boxes x characters).
    by_height = sorted(
        ((ch.box[1] + ch.box[3]) / 2, k) for k, ch in enumerate(chars) if ch.index >= 0
    )
    heights = [h for h, _ in by_height]
    for group in plumb.cells_to_tables(cells):
        tops = sorted({round(c[1], 1) for c in group})
        lefts = sorted({round(c[0], 1) for c in group})
        if len(tops) < 2 or len(lefts) < 2:
            continue
        x0 = min(c[0] for c in group)
        top = min(c[1] for c in group)
        x1 = max(c[2] for c in group)
        bottom = max(c[3] for c in group)
        cell_chars: dict[tuple[float, float, float, float], list[Char]] = {}
        inside: set[int] = set()
        cell_at = _CellIndex(group, (x0, top, x1, bottom))
        band = [
            chars[k]
            for k in sorted(
                k
                for _, k in by_height[
                    bisect.bisect_left(heights, top) : bisect.bisect_right(heights, bottom)
                ]
            )
        ]
        for ch in band:
            cx, cy = (ch.box[0] + ch.box[2]) / 2, (ch.box[1] + ch.box[3]) / 2
            if not (x0 <= cx <= x1 and top <= cy <= bottom):
                continue
            cell = cell_at.find(cx, cy)
            if cell is not None:
                cell_chars.setdefault(cell, []).append(ch)
                inside.add(id(ch))
        if not inside:
            continue
        filled = sum(1 for c in group if c in cell_chars)
        texts = {c: _cell_text(v) for c, v in cell_chars.items()}
        mean_len = statistics.mean(len(t) for t in texts.values()) if texts else 0
        # A figure or a syntax diagram drawn with boxes: mostly empty cells, or long prose.
        if filled / len(group) < 0.4 or mean_len > 120:
            continue
        rows, boxes, bands, header_rows = _grid_rows(group, texts)
        if len(rows) < 2:
            continue
        enclosed = len(inside)
        _widen(rows, boxes, bands, (x0, top, x1, bottom), band, inside)
        found.append((Table(rows, boxes, top, enclosed=enclosed, header_rows=header_rows), inside))
    return found


#: A ruled table's header takes at most this many rows (one whose first cells span all its
#: rows has a one-row header, not one of every row).
_MAX_HEADER_ROWS = 3


def _clusters(values: Iterable[float], tolerance: float = 1.0) -> list[float]:
    """Sorted coordinates with those within ``tolerance`` of a kept one dropped (a rule's
    ends, drawn by two strokes, differ by a fraction of a point)."""
    kept: list[float] = []
    for value in sorted(values):
        if not kept or value - kept[-1] > tolerance:
            kept.append(value)
    return kept


def _grid_rows(
    group: list[tuple[float, float, float, float]], texts: dict[Any, str]
) -> tuple[
    list[list[str]], list[tuple[float, float, float, float]], list[tuple[float, float]], int
]:
    """A ruled table's rows as the grid its rules draw, so every row's cells stand under their
    columns: a merged cell's text in every row it spans down, and across its columns in the
    header (a group over the columns under it), once in the body and where it is the row's
    only cell with text (a title, a group's label); a place no cell covers is empty. It was read by
    the cells whose tops lie on each row's: a cell spanning down was missing from the rows
    below, whose cells then stood a column to the left. Also each row's box and band (top to
    the next row's top), rows of no text left out, and how many rows the header takes: those
    the first row's cells span down over, at most ``_MAX_HEADER_ROWS``."""
    xs = _clusters(x for c in group for x in (c[0], c[2]))
    ys = _clusters(y for c in group for y in (c[1], c[3]))

    def at(coordinates: list[float], value: float) -> int:
        k = bisect.bisect_left(coordinates, value - 1.0)
        return min(k, len(coordinates) - 1)

    grid: list[list[str]] = [[""] * (len(xs) - 1) for _ in range(len(ys) - 1)]
    reach: list[list[tuple[float, float, float, float] | None]] = [
        [None] * (len(xs) - 1) for _ in range(len(ys) - 1)
    ]
    # The rows where one cell alone holds text: a title or a group's label over the row.
    starting = collections.Counter(at(ys, cell[1]) for cell in group if texts.get(cell))
    # The header: the first row that is no title (one cell with text, spanning half the
    # columns or more, of three or more) and the rows its cells with text span down over;
    # the titles above it with it.
    wide = {
        at(ys, cell[1])
        for cell in group
        if texts.get(cell)
        and len(xs) > 3  # two columns' "2021" over "¥ | 201,683" is their header
        and 2 * (at(xs, cell[2]) - at(xs, cell[0])) >= len(xs) - 1
    }
    top_row = min((r for r in starting if not (starting[r] == 1 and r in wide)), default=0)
    first_row_down = 1
    for cell in group:
        if at(ys, cell[1]) == top_row and texts.get(cell):
            first_row_down = max(first_row_down, at(ys, cell[3]) - top_row)
    header_end = top_row + min(first_row_down, _MAX_HEADER_ROWS)
    for cell in group:
        c0, c1 = at(xs, cell[0]), max(at(xs, cell[2]), at(xs, cell[0]) + 1)
        r0, r1 = at(ys, cell[1]), max(at(ys, cell[3]), at(ys, cell[1]) + 1)
        text = texts.get(cell, "")
        label = starting[r0] == 1
        for r in range(r0, r1):
            for c in range(c0, c1):
                if r < len(grid) and c < len(grid[r]) and reach[r][c] is None:
                    repeat = c == c0 or (r < header_end and not label)
                    grid[r][c] = text if repeat else ""
                    reach[r][c] = cell
    rows: list[list[str]] = []
    boxes: list[tuple[float, float, float, float]] = []
    bands: list[tuple[float, float]] = []
    header_rows = 1
    for r, values in enumerate(grid):
        covering = [cell for cell in reach[r] if cell is not None]
        if not any(values) or not covering:
            continue
        if r < header_end:
            header_rows = len(rows) + 1
        rows.append(values)
        bands.append((ys[r], ys[r + 1]))
        boxes.append((min(c[0] for c in covering), ys[r], max(c[2] for c in covering), ys[r + 1]))
    return rows, boxes, bands, min(header_rows, max(1, len(rows) - 1))


def _tables_as_shown(
    edges: list[dict[str, Any]], chars: list[Char], rotation: int, width: float, height: float
) -> list[tuple[Table, set[int]]]:
    """``_tables`` on the page as shown (``edges`` are), so that a table on a page turned for
    landscape has its rows across the shown page, not down it; its row boxes back on the
    unrotated page, as every box is (``Table.top`` stays in the reading frame, as
    ``Line.top``)."""
    if rotation == 0:  # shown and unrotated are one frame
        return _tables(edges, chars)
    originals: dict[int, int] = {}
    shown = []
    for c in chars:
        copy = dataclasses.replace(c, box=(c.x0, c.top, c.x1, c.bottom))
        originals[id(copy)] = id(c)
        shown.append(copy)
    found = []
    for table, inside in _tables(edges, shown):
        table.row_boxes = [_unrotated(rotation, width, height, b) for b in table.row_boxes]
        found.append((table, {originals[k] for k in inside}))
    return found


def _unrotated(
    rotation: int, width: float, height: float, box: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    """A shown-page box (``_frame``) on the unrotated page, top-left origin."""
    x0, top, x1, bottom = box
    if rotation == 90:
        return top, height - x1, bottom, height - x0
    if rotation == 180:
        return width - x1, height - bottom, width - x0, height - top
    if rotation == 270:
        return width - bottom, x0, width - top, x1
    return box


_Point = tuple[float, float]


def _edges_to_intersections(
    edges: list[dict[str, Any]], tolerance: float
) -> dict[_Point, dict[str, list[dict[str, Any]]]]:
    """pdfplumber's ``table.edges_to_intersections`` (the same points, edges and order): each
    vertical rule tested against the horizontal rules at its height, found by bisection, not
    against every horizontal rule of the page."""
    vertical = sorted((e for e in edges if e["orientation"] == "v"), key=itemgetter("x0", "top"))
    horizontal = sorted((e for e in edges if e["orientation"] == "h"), key=itemgetter("top", "x0"))
    tops = [h["top"] for h in horizontal]
    intersections: dict[_Point, dict[str, list[dict[str, Any]]]] = {}
    for v in vertical:
        # A window a point wider than the test, which is then made as pdfplumber makes it.
        lo = bisect.bisect_left(tops, v["top"] - tolerance - 1.0)
        hi = bisect.bisect_right(tops, v["bottom"] + tolerance + 1.0)
        for h in horizontal[lo:hi]:
            if (
                (v["top"] <= (h["top"] + tolerance))
                and (v["bottom"] >= (h["top"] - tolerance))
                and (v["x0"] >= (h["x0"] - tolerance))
                and (v["x0"] <= (h["x1"] + tolerance))
            ):
                at = intersections.setdefault((v["x0"], h["top"]), {"v": [], "h": []})
                at["v"].append(v)
                at["h"].append(h)
    return intersections


def _intersections_to_cells(
    intersections: dict[_Point, dict[str, list[dict[str, Any]]]],
) -> list[tuple[float, float, float, float]]:
    """pdfplumber's ``table.intersections_to_cells``: the same cells in the same order, from
    each point the smallest cell whose four corners its edges join.

    pdfplumber scans every later point for those below and to the right of each point and
    builds the sets of edges at both ends of every link it tests, so a chart's grid of a few
    hundred crossings cost a page a twentieth of a second on 137 characters. Here each point
    knows its column and row (points below and to the right, in the same order), the edge
    sets are built once per point, and each link is tested once."""
    vertical = {
        p: {(e["x0"], e["top"], e["x1"], e["bottom"]) for e in at["v"]}
        for p, at in intersections.items()
    }
    horizontal = {
        p: {(e["x0"], e["top"], e["x1"], e["bottom"]) for e in at["h"]}
        for p, at in intersections.items()
    }

    def connects(p1: _Point, p2: _Point) -> bool:
        if p1[0] == p2[0] and not vertical[p1].isdisjoint(vertical[p2]):
            return True
        return p1[1] == p2[1] and not horizontal[p1].isdisjoint(horizontal[p2])

    points = sorted(intersections)
    columns: dict[float, list[_Point]] = {}
    rows: dict[float, list[_Point]] = {}
    place: dict[_Point, tuple[int, int]] = {}
    for p in points:  # by x then y: each column top to bottom, each row left to right
        column, row = columns.setdefault(p[0], []), rows.setdefault(p[1], [])
        place[p] = (len(column), len(row))
        column.append(p)
        row.append(p)
    cells = []
    for p in points:
        in_column, in_row = place[p]
        right = rows[p[1]][in_row + 1 :]
        linked: dict[_Point, bool] = {}  # p's links to the points on its right, as tested
        found = None
        for below in columns[p[0]][in_column + 1 :]:
            if not connects(p, below):
                continue
            for corner in right:
                link = linked.get(corner)
                if link is None:
                    link = linked[corner] = connects(p, corner)
                if not link:
                    continue
                bottom_right = (corner[0], below[1])
                if (
                    bottom_right in intersections
                    and connects(bottom_right, corner)
                    and connects(bottom_right, below)
                ):
                    found = (p[0], p[1], bottom_right[0], bottom_right[1])
                    break
            if found is not None:
                break
        if found is not None:
            cells.append(found)
    return cells


class _CellIndex:
    """The first cell of a table (in its cells' order) that holds a point, found among the few
    cells of the point's bucket on a coarse grid instead of over every cell."""

    def __init__(
        self,
        cells: list[tuple[float, float, float, float]],
        bbox: tuple[float, float, float, float],
    ) -> None:
        self.cells = cells
        self.x0, self.top, x1, bottom = bbox
        self.n = max(1, math.isqrt(len(cells)))
        self.step_x = max(x1 - self.x0, 1e-9) / self.n
        self.step_y = max(bottom - self.top, 1e-9) / self.n
        self.buckets: dict[tuple[int, int], list[int]] = {}
        for k, (c0, c1, c2, c3) in enumerate(cells):
            for bx in range(self._bx(c0), self._bx(c2) + 1):
                for by in range(self._by(c1), self._by(c3) + 1):
                    self.buckets.setdefault((bx, by), []).append(k)

    def _bx(self, x: float) -> int:  # monotone in x: a cell's buckets span its points'
        return min(max(int((x - self.x0) / self.step_x), 0), self.n - 1)

    def _by(self, y: float) -> int:
        return min(max(int((y - self.top) / self.step_y), 0), self.n - 1)

    def find(self, cx: float, cy: float) -> tuple[float, float, float, float] | None:
        for k in self.buckets.get((self._bx(cx), self._by(cy)), ()):
            cell = self.cells[k]
            if cell[0] <= cx <= cell[2] and cell[1] <= cy <= cell[3]:
                return cell
        return None


def _widen(
    rows: list[list[str]],
    boxes: list[tuple[float, float, float, float]],
    bands: list[tuple[float, float]],
    bbox: tuple[float, float, float, float],
    chars: list[Char],
    inside: set[int],
) -> None:
    """Columns the rules do not enclose (a booktabs table ruled only between some columns):
    short runs of text beside the grid, on most of its rows, become cells of those rows.
    ``chars``: the page's characters in page order, those between the table's top and bottom
    at least (the row bands lie within them)."""
    x0, _, x1, _ = bbox
    beside: list[tuple[list[list[Char]], list[list[Char]]]] = []
    # The characters outside the grid by the height of their centres, so that each band
    # takes its own by bisection (then in page order, as they came).
    free = [
        ((ch.box[1] + ch.box[3]) / 2, k)
        for k, ch in enumerate(chars)
        if ch.index >= 0 and id(ch) not in inside
    ]
    free.sort()
    heights = [h for h, _ in free]
    for band_top, band_bottom in bands:
        lo = bisect.bisect_left(heights, band_top)
        hi = bisect.bisect_right(heights, band_bottom)
        band = [chars[k] for k in sorted(k for _, k in free[lo:hi])]
        sides: list[list[list[Char]]] = []
        for side in ([c for c in band if c.box[2] <= x0], [c for c in band if c.box[0] >= x1]):
            sides.append(_segments(side) if side else [])
        left, right = sides
        kept_left: list[list[Char]] = []
        edge = x0
        for seg in reversed(left):
            sx0, sx1 = min(c.box[0] for c in seg), max(c.box[2] for c in seg)
            if edge - sx1 > 40 or sx1 - sx0 > 160:
                break
            kept_left.insert(0, seg)
            edge = sx0
        kept_right: list[list[Char]] = []
        edge = x1
        for seg in right:
            sx0, sx1 = min(c.box[0] for c in seg), max(c.box[2] for c in seg)
            if sx0 - edge > 40 or sx1 - sx0 > 160:
                break
            kept_right.append(seg)
            edge = sx1
        beside.append((kept_left, kept_right))
    with_extra = sum(1 for left, right in beside if left or right)
    if with_extra * 2 < len(rows):
        return
    n_left = max(len(left) for left, _ in beside)
    n_right = max(len(right) for _, right in beside)
    for k, (left, right) in enumerate(beside):
        cells_left = [""] * (n_left - len(left)) + [_cell_text(seg) for seg in left]
        cells_right = [_cell_text(seg) for seg in right] + [""] * (n_right - len(right))
        rows[k] = cells_left + rows[k] + cells_right
        absorbed = [c for seg in left + right for c in seg]
        inside.update(id(c) for c in absorbed)
        if absorbed:
            bx0, bt, bx1, bb = boxes[k]
            boxes[k] = (
                min(bx0, *(c.box[0] for c in absorbed)),
                bt,
                max(bx1, *(c.box[2] for c in absorbed)),
                bb,
            )


def join_wrapped(lines: Iterable[tuple[str, bool]]) -> str:
    """Lines of one text (a table cell's, a heading's) as one line, each given with whether it
    ran to the width it was set in, so that the next line goes on with it: a space between
    two, none where Chinese or Japanese ran on ("漱石" was read "漱 石"). A line broken short
    (two names one under the other: "新山 祐介", "関根 聡") keeps its space."""
    out = ""
    ran_on = False
    for line, full in lines:
        if not line:
            continue
        if out and not (ran_on and _unspaced(out[-1], line[0])):
            out += " "
        out += line
        ran_on = full
    return out


def _cell_text(chars: list[Char]) -> str:
    vertical = _vertical_cell_text(chars)
    if vertical is not None:
        return vertical
    # A cell's rows are its text wrapped at the cell's width: they run on. (Where the break is
    # Japanese line breaking's, a row ends short of the width by the characters it pushed on,
    # so how far a row reaches does not tell a wrap from a list of names one per row.)
    return join_wrapped(
        (_text(_logical(_dedupe(sorted(row, key=_X0)))), True) for row in _rows(chars)
    )


def _vertical_cell_text(chars: list[Char]) -> str | None:
    """A cell set in vertical writing (a Japanese form's header cell): its columns from right
    to left, each read down; None for a cell written across.

    Told as ``_turn_vertical_writing`` tells a page, by the content's order: each character
    below the one before more often than beside it. Read across, "備考欄" in two columns was
    "欄 備 考"."""
    if len(chars) < 2 or not all(_UNSPACED.fullmatch(c.text) for c in chars):
        return None
    ordered = sorted(chars, key=_INDEX)
    steps = [_step(a, b) for a, b in itertools.pairwise(ordered)]
    if not steps.count(_BELOW) > steps.count(_BESIDE):
        return None
    columns: list[list[Char]] = [[ordered[0]]]
    for step, c in zip(steps, ordered[1:], strict=True):
        if step == _BELOW:
            columns[-1].append(c)
        else:
            columns.append([c])
    columns.sort(key=lambda column: -max(c.x1 for c in column))
    return "".join(c.text for column in columns for c in column)


# -- the page ---------------------------------------------------------------------------------


def _line(segs: list[_Seg], column: int, rotated: bool) -> Line:
    chars = [c for s in segs for c in s.chars]
    # Letter spacing from the whole line: words set apart by a gap wider than a segment's are
    # runs of their own, too short to tell it alone ("Run", "the").
    tracking = _tracking(chars)
    runs = [_text(_logical(_dedupe(s.chars)), tracking) for s in segs]
    rtl = any(c.rtl for c in chars) and sum(c.rtl for c in chars) * 2 > len(chars)
    opens_bold, opens_italic = (False, False) if rtl else _first_word_emphasis(runs, segs)
    closes_bold, closes_italic = (False, False) if rtl else _last_word_emphasis(runs, segs)
    if rtl:
        runs.reverse()  # a right-to-left line: its segments from right to left
    text = " ".join(r for r in runs if r)
    sizes = [c.size for c in chars]
    return Line(
        text=text,
        box=_union(chars),
        top=min(s.top for s in segs),
        bottom=max(s.bottom for s in segs),
        x0=min(s.x0 for s in segs),
        x1=max(s.x1 for s in segs),
        size=statistics.median(sizes),
        bold=all(c.bold for c in chars),
        column=column,
        rotated=rotated,
        italic=all(c.italic for c in chars),
        mono=all(c.mono for c in chars),
        largest=max((c.size for c in chars if c.text.isalnum()), default=0.0),
        opens_bold=opens_bold,
        opens_italic=opens_italic,
        closes_bold=closes_bold,
        closes_italic=closes_italic,
    )


def _first_word_emphasis(runs: list[str], segs: list[_Seg]) -> tuple[bool, bool]:
    """Whether a left-to-right line's first word is set bold, italic, throughout: its letters
    and digits, where it has any (``teams.`` closing a bold run keeps its full stop upright)."""
    return _edge_word_emphasis(zip(runs, segs, strict=True), last=False)


def _last_word_emphasis(runs: list[str], segs: list[_Seg]) -> tuple[bool, bool]:
    """Whether a left-to-right line's last word is set bold, italic, throughout (its letters
    and digits, where it has any)."""
    return _edge_word_emphasis(zip(reversed(runs), reversed(segs), strict=True), last=True)


def _edge_word_emphasis(runs: Iterable[tuple[str, _Seg]], last: bool) -> tuple[bool, bool]:
    """Bold, italic of the first (``last``: the last) word of the first run that has one."""
    for run, seg in runs:
        if run.strip():
            words = run.split()
            word = len(words[-1] if last else words[0])
            glyphs = [c for c in seg.chars if not c.text.isspace()]
            chars = glyphs[-word:] if last else glyphs[:word]
            letters = [c for c in chars if c.text.isalnum()] or chars
            if not letters:
                break
            return all(c.bold for c in letters), all(c.italic for c in letters)
    return False, False


def _code_line(segments: list[list[Char]]) -> list[list[Char]]:
    """A row's typewriter segments rejoined where the next starts on the previous one's
    character grid, a few characters after it ends: one line of code with its aligned
    comment (``x = 1      # one``), never two columns whose halves are read apart.

    The line so far keeps its right edge, its typewriter count and its typewriter advances
    sorted, so each segment costs its own characters (and a bisection), not the line's: a row
    of many aligned fields would otherwise cost its length squared."""
    out = [list(segments[0])]
    right = max(c.x1 for c in segments[0])
    advances = sorted(c.x1 - c.x0 for c in segments[0] if c.mono)
    for seg in segments[1:]:
        previous = out[-1]
        seg_advances = sorted(c.x1 - c.x0 for c in seg if c.mono)
        seg_right = max(c.x1 for c in seg)
        on_grid = False
        if len(advances) * 5 >= len(previous) * 4 and len(seg_advances) * 5 >= len(seg) * 4:
            advance = _median_of_two(advances, seg_advances)
            if advance > 0.5:
                gap = seg[0].x0 - right
                steps = (seg[0].x0 - previous[0].x0) / advance
                on_grid = gap <= CODE_GAP_CHARS * advance and abs(steps - round(steps)) < 0.15
        if on_grid or _code_spaces_between(previous[-1], seg[0]):
            previous.extend(seg)
            right = max(right, seg_right)
            for a in seg_advances:
                bisect.insort(advances, a)
            continue
        out.append(list(seg))
        right = seg_right
        advances = seg_advances
    return out


def _code_spaces_between(last: Char, first: Char) -> bool:
    """Whether the gap between two typewriter characters of one size is one or two of their
    own character cells, on their grid: spaces inside inline code that a sentence set ragged
    (``{hook_name:  callback_function}`` at a line's end), not a column gutter."""
    if not (last.mono and first.mono) or abs(last.size - first.size) > 0.05 * last.size:
        return False
    advance = last.x1 - last.x0
    if advance <= 0.5:
        return False
    steps = (first.x0 - last.x0) / advance
    return 1.8 <= steps <= 3.2 and abs(steps - round(steps)) < 0.1


def _median_of_two(a: list[float], b: list[float]) -> float:
    """``statistics.median`` of two sorted lists taken together, without joining them."""
    n = len(a) + len(b)
    if n % 2:
        return _kth_of_two(a, b, n // 2)
    return (_kth_of_two(a, b, n // 2 - 1) + _kth_of_two(a, b, n // 2)) / 2


def _kth_of_two(a: list[float], b: list[float], k: int) -> float:
    """The ``k``-th smallest (from 0) of two sorted lists taken together, by bisection on how
    many of it come from ``a``."""
    lo, hi = max(0, k + 1 - len(b)), min(k + 1, len(a))
    while lo < hi:  # the least i with a[i] >= b[k - i] (i of the k + 1 smallest from a)
        i = (lo + hi) // 2
        if a[i] < b[k - i]:
            lo = i + 1
        else:
            hi = i
    i = lo
    candidates = []
    if i > 0:
        candidates.append(a[i - 1])
    if k - i >= 0:
        candidates.append(b[k - i])
    return max(candidates)


#: A gap is a justified line's stretched space, not a segment break, when it is at most this
#: many times the line's usual word space (TeX stretches a sentence's end about twice as much).
JUSTIFIED_GAP = 2.5


class _Gutters:
    """Where a page's rows leave a strip free: a gap of one row is a column gutter, not a
    justified line's stretched space, where most rows with text on both sides of it leave it
    free too (LaTeX's two columns are 10 pt apart, about two and a half stretched spaces)."""

    def __init__(self, rows: list[list[list[Char]]]) -> None:
        self.spans = [
            [(min(c.x0 for c in seg), max(c.x1 for c in seg)) for seg in row] for row in rows
        ]
        self._seen: dict[int, bool] = {}  # by whole point: a page asks about few strips
        self._starts: list[float] | None = None  # every segment's left edge, when first asked

    def gutter_at(self, x: float) -> bool:
        key = round(x)
        if key not in self._seen:
            self._seen[key] = self._free(float(key))
        return self._seen[key]

    def _free(self, x: float) -> bool:
        across = covered = 0
        for spans in self.spans:
            if spans[0][0] < x < spans[-1][1]:  # text on both sides of x
                across += 1
                covered += any(x0 < x < x1 for x0, x1 in spans)
        # This row is one of them; a gutter needs three others beside it.
        return across >= 4 and covered * 2 < across

    def column_edge(self, x: float) -> bool:
        """Whether lines of four rows or more start at ``x`` (within a point): a column's left
        edge, or a table column's. Words inside justified lines start where they fall."""
        if self._starts is None:
            self._starts = sorted(x0 for spans in self.spans for x0, _ in spans)
        starts = self._starts
        return bisect.bisect_right(starts, x + 1.0) - bisect.bisect_left(starts, x - 1.0) >= 4


def _justified(segments: list[list[Char]], gutters: _Gutters | None = None) -> list[list[Char]]:
    """A row's segments rejoined where the gap between them is no wider than a stretched
    word space of the same row (at least four words apart): a justified line whose spaces
    grew past ``SEGMENT_GAP``, read as one line instead of two columns. Never across a gap
    the page's other rows leave free as a gutter (``gutters``)."""
    if len(segments) < 2:
        return segments
    spaces = []
    for seg in segments:
        for a, b in itertools.pairwise(seg):
            if _word_break(a, b):
                spaces.append(b.x0 - a.x1)
    if len(spaces) < 4:
        return _evenly_stretched(segments, gutters)
    space = statistics.median(spaces)
    out = [list(segments[0])]
    left, right = min(c.x0 for c in segments[0]), max(c.x1 for c in segments[0])  # out[-1]'s
    for seg in segments[1:]:
        seg_right = max(c.x1 for c in seg)
        # A column's line (as wide as a column, of several words: no margin's name) before a
        # strip the page leaves free: a gutter.
        column_gutter = (
            gutters is not None
            and right - left >= MIN_COLUMN_EMS * max(out[-1][-1].size, 1.0)
            and _words_at_least(out[-1], 4)
            and gutters.gutter_at((right + seg[0].x0) / 2)
        )
        if seg[0].x0 - right <= JUSTIFIED_GAP * space and not column_gutter:
            out[-1].extend(seg)
            right = max(right, seg_right)
        else:
            out.append(list(seg))
            left, right = min(c.x0 for c in seg), seg_right
    return _evenly_stretched(out, gutters)


def _evenly_stretched(segments: list[list[Char]], gutters: _Gutters | None) -> list[list[Char]]:
    """Segments rejoined across runs of gaps of one width (two or more in a row), none before a
    column's edge (where other rows' lines start too): a justified line of a narrow column
    ("Volunteers  are  needed  for  the") whose spaces are stretched far past the row's usual
    space, which is another column's (``_justified`` measures the row as one). Whether a strip
    is left free (``gutter_at``) misleads here: on a short page of stretched lines, word gaps
    fall on one x in enough rows by chance."""
    if len(segments) < 3:
        return segments  # two gaps at least make a run
    rights = [max(c.x1 for c in seg) for seg in segments]
    gaps = [
        (b[0].x0 - right, max(a[-1].size, b[0].size, 1.0))
        for a, b, right in zip(segments, segments[1:], rights, strict=False)
    ]
    stretched = [
        gap <= _STRETCHED_EMS * size
        and not (gutters is not None and gutters.column_edge(seg[0].x0))
        for (gap, size), seg in zip(gaps, segments[1:], strict=True)
    ]
    join = [False] * len(gaps)
    for k, (gap, _) in enumerate(gaps):
        if not stretched[k]:
            continue
        for other in (k - 1, k + 1):  # a neighbouring gap of the same width
            if (
                0 <= other < len(gaps)
                and stretched[other]
                and abs(gaps[other][0] - gap) <= _EVEN_GAP * max(gap, gaps[other][0])
            ):
                join[k] = True
    out = [list(segments[0])]
    for seg, joined in zip(segments[1:], join, strict=True):
        if joined:
            out[-1].extend(seg)
        else:
            out.append(list(seg))
    return out


#: A justified line's stretched space is at most this many font sizes wide …
_STRETCHED_EMS = 2.5
#: … and its neighbours are as wide, give or take this share (one line's spaces stretch alike).
_EVEN_GAP = 0.15


def _word_break(a: Char, b: Char) -> bool:
    """Whether the gap from ``a`` to ``b``, the next character of its row, parts two words."""
    return b.x0 - a.x1 > WORD_GAP * max(min(a.size, b.size), 1.0)


def _words_at_least(chars: list[Char], words: int) -> bool:
    """Whether ``chars`` (in x order) hold at least ``words`` words."""
    found = 1
    for a, b in itertools.pairwise(chars):
        if _word_break(a, b):
            found += 1
            if found >= words:
                return True
    return found >= words


def _typewriter(chars: list[Char]) -> bool:
    return sum(c.mono for c in chars) * 5 >= len(chars) * 4


def _lines(chars: list[Char], rotated: bool) -> list[Line]:
    split = [_segments(row) for row in _rows(chars)]
    gutters = _Gutters(split)
    rows = [[_make_seg(s) for s in _code_line(_justified(segs, gutters))] for segs in split]
    out: list[Line] = []
    for column, block in enumerate(_order(rows)):
        for segs in block:
            if segs:
                out.append(_line(sorted(segs, key=lambda s: s.x0), column, rotated))
    return [line for line in out if line.text]


def read_page(
    page: pypdfium2.PdfPage,
    number: int,
    glyph_names: GlyphNames | None = None,
    metrics: FontMetrics | None = None,
    textpage: pypdfium2.PdfTextPage | None = None,
    artifacts: bool = False,
) -> PageRead:
    """One page's lines and tables in reading order (the page is not closed here);
    ``glyph_names``: the document's, for fonts without a ToUnicode map, ``metrics``: for fonts
    whose metrics PDFium invented (``read_chars``); ``textpage``: the page's, kept open by the
    caller for its own reading (else one is loaded and closed here); ``artifacts``: leave out
    what a tagged PDF marks as artifacts."""
    left, bottom, right, top = page.get_cropbox()
    width, height = abs(right - left), abs(top - bottom)
    out = PageRead(number, width, height)
    own = textpage is None
    text = page.get_textpage() if textpage is None else textpage
    try:
        chars = read_chars(page, text, out, glyph_names, metrics, artifacts)
        if not pdf_fonts.sets_vertical_cjk():
            out.fontless_runs, out.fontless_fonts = pdf_fonts.runs_without_text(page, text)
    finally:
        if own:
            text.close()
    rotation = page.get_rotation() % 360
    if rotation == 0:
        chars = _drawn_marks(page, chars, height, left, bottom)
    out.image_area = _image_share(page, width * height)
    upright = [c for c in chars if c.index >= 0]
    turned = [c for c in chars if c.index < 0]
    tables: list[tuple[Table, set[int]]] = []
    if upright:
        edges = _edges(page, rotation, width, height, left, bottom)
        if edges:
            tables = _tables_as_shown(edges, upright, rotation, width, height)
    taken: set[int] = set()
    for _, ids in tables:
        taken |= ids
    body = [c for c in upright if id(c) not in taken]
    if out.columns:
        # Vertical writing on a page written across, outside tables (a table's cell reads its
        # own, ``_cell_text``): turned to read as lines of its own.
        present = {id(c) for c in body}
        shown_w, shown_h, _ = _frame(rotation, width, height)
        for column in out.columns:
            if all(id(c) in present for c in column):
                _turn_column(column, shown_w, shown_h)
        turned += [c for c in body if c.index < 0]
        body = [c for c in body if c.index >= 0]
    lines = _lines(body, rotated=False)
    # Tables go where they sit: before the first line below their top in reading order.
    ordered: list[Line | Table] = list(lines)
    for table, _ in sorted(tables, key=lambda t: t[0].top):
        at = next(
            (k for k, it in enumerate(ordered) if isinstance(it, Line) and it.top > table.top),
            len(ordered),
        )
        ordered.insert(at, table)
    for quarter in sorted({c.index for c in turned}, reverse=True):
        ordered.extend(_lines([c for c in turned if c.index == quarter], rotated=True))
    out.items = ordered
    return out


def _image_share(page: pypdfium2.PdfPage, area: float) -> float:
    """How much of the page images cover (those inside form XObjects too)."""
    if area <= 0:
        return 0.0
    covered = 0.0
    for n, obj in enumerate(page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3)):
        if n >= 500:
            break
        try:
            x0, y0, x1, y1 = obj.get_bounds()
        except pypdfium2.PdfiumError:
            continue
        covered += max(x1 - x0, 0) * max(y1 - y0, 0)
    return min(covered / area, 1.0)


_LEADER = re.compile(r"(?:\s*\.){4,}|(?:\s*…)+|(?:\s*·){4,}|_{4,}")


def strip_leaders(text: str) -> tuple[str, bool]:
    """A TOC line without its leader dots (``Intro ....... 3`` -> ``Intro 3``), and whether it had
    them before a page number."""
    match = re.search(r"(?:(?:\s*\.){4,}|(?:\s*…)+|(?:\s*·){4,}|_{4,})\s*(\S{1,6})\s*$", text)
    if not match:
        return text, False
    return f"{text[: match.start()].rstrip()} {match.group(1)}", True


def is_hyphen_end(text: str) -> bool:
    return len(text) >= 2 and text[-1] in HYPHENS and text[-2].isalpha()
