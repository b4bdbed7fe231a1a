"""PDF: text, reading order, headings and tables from PDFium (pypdfium2); OCR where text is missing.

Pages are read one at a time (``pdf_layout.read_page``: clean words, columns, rotated text,
ruled tables) and closed; only their lines are kept (what the text layer needs anyway), so
memory grows with the text, not with every page's characters. Then, over the whole document:

- running headers, footers and page numbers (lines in the top or bottom margin whose text,
  digits aside, repeats on most pages; or a lone page number there; or a short line at body
  size with a page number at one end that repeats on another page, or on a one-page excerpt
  where the number is no year, as in a date) are left out of the text layer and counted in a
  warning: the references leave them out and a sentence must never be cut by one;
- table-of-contents lines (leader dots before a page number) lose their leaders; their pages
  give no headings;
- footnotes (small type at the foot of a column, opening with a mark) stay text of their page,
  after its body, never a running footer;
- hyphenated line ends are joined (``compu-`` + ``tation`` -> ``computation``) in the text
  layer, which is ours to define: every offset is exact against what is stored; across a page
  break too (the next page's first line is written on, before the page's footnotes); the hyphen
  of a compound is kept: one the document writes hyphenated inside a line elsewhere, or two
  words of its language that joined make none (``self-contained``, by ``wordfreq``).

Text layer: lines joined by ``"\\n"``, paragraphs and column breaks by ``"\\n\\n"``, pages by
``PAGE_SEPARATOR`` (a line, where a sentence runs on from one page's body to the next); a
paragraph starts where a line is set apart by more than the page's usual line gap, or, after a
line that ends a sentence, by a third of a line or a first-line indent (texinfo's and many LaTeX
classes' paragraphs); a line going on with a sentence the line above left open (lower case
after no sentence end) stays in its paragraph though it measures a little smaller (a short last
line mostly in the typewriter face); a table as pipe rows (``| a | b |``, header row then
``| - |``), a header longer than ``MAX_HEADER_CHARS`` is no header (it would be repeated in
every chunk of the table).
``ParsedDocument.layout`` has one ``LayoutSpan`` per line and table row, boxes in PDF points on
the unrotated page from its top-left corner.

Headings: from the outline (bookmarks): each entry on the line(s) of its page that read exactly
as its title, with or without the number the page shows (outline "Widgets", line "2.1.8
Widgets"), set in heading type, at the outline's level: never a body sentence that starts with
the title. Otherwise from typography measured over the whole document, precision first: lines
set clearly larger than the body size, or bold at body size when the body is not bold (italic
only in Title Case), standing as their own paragraph, short, not code (nor a function's
definition line), a caption, an author list or a sentence; a heading wrapped over two lines is
one heading; levels rank the heading styles over the whole document, so they agree across pages.

OCR (``parsing.ocr``, Tesseract): a page with no visible text, mostly unmapped glyphs, or an
invisible text layer over an image is read by OCR when ``ParsingSettings.ocr.enabled``; its
words become lines like any other. A document that still has no text raises
``EmptyDocumentError`` with the reason and the pages.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

import pypdfium2
import pypdfium2.raw as pdfium_c

from agrag_pipeline.models import Document, PageBox
from agrag_pipeline.parsing import pdf_fonts, pdf_layout, pdf_tags
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.parsed import LayoutSpan, ParsedDocument
from agrag_pipeline.parsing.pdf_font_metrics import FontMetrics
from agrag_pipeline.parsing.pdf_glyph_names import GlyphNames
from agrag_pipeline.parsing.pdf_layout import Line, PageRead, Table, join_wrapped
from agrag_pipeline.parsing.pdf_tags import TaggedHeadings
from agrag_pipeline.parsing.textlayer import cell_text, pipe_row
from agrag_pipeline.parsing.tree import MAX_HEADING_LEVEL, HeadingMark, TableMark, build_sections

if TYPE_CHECKING:
    from agrag_pipeline.settings import ParsingSettings

MEDIA_TYPE = "application/pdf"
PAGE_SEPARATOR = "\n\n"
MAX_PAGES = 2000
#: A table header row longer than this is written as a body row (not repeated per chunk).
MAX_HEADER_CHARS = 160
#: Typography: a heading is set at least this much larger than the body size …
_LARGER = 1.12
#: … or slightly larger and standing alone (a line of its own paragraph).
_SLIGHTLY_LARGER = 1.05
#: How much smaller than the body a bold or italic line may be set and still carry a title the
#: file declares (its outline, its tags): Word's bold 12.3 pt subheadings over 13.3 pt text
#: (0.92) in a government report lost 26 of its 55 outline entries at the 0.95 that judging by
#: typography alone keeps.
_DECLARED_EMPHASIS_FLOOR = 0.85
#: … and is a short line.
_MAX_HEADING_CHARS = 150
_MAX_HEADING_WORDS = 18
#: A title page's title wraps over at most this many lines.
_MAX_TITLE_LINES = 3
_CAPTION = re.compile(r"^(fig(ure)?|table|tab|listing|algorithm|chart)\.?\s*\d", re.I)
_PAGE_NUMBER = re.compile(
    r"^(page\s*)?[-–—(]?\s*(\d{1,4}|\d{1,3}[-–.]\d{1,4}|[ivxlcdm]{1,6})\s*[-–—)]?"
    r"(\s*(of|/)\s*\d{1,4})?$",
    re.I,
)
#: A page number spelled as one: a word (``Page 3``, ``3 of 9``) or dashes/brackets around it.
_SPELLED_PAGE_NUMBER = re.compile(r"page|of|/|[-–—()]", re.I)
#: A number with a decimal point: a value (``75.9``) on a page of its own, not a page number.
_DECIMAL = re.compile(r"\d+\.\d+")
_RUNNING_HEAD = re.compile(r"^(\d{1,4})\s.*\S|.*\S\s(\d{1,4})$")
#: A number that is a year of a date, not a page number.
_YEAR = re.compile(r"1[89]\d\d|2[01]\d\d")
_NUMBERED = re.compile(r"^(\d+(\.\d+)*\.?|[A-Z]\.|[IVX]+\.)\s")
#: A code signature, set apart (larger, or bold) in reference manuals but no heading: a name
#: and a parameter list that declares (``(void)``, a pointer, an ``_identifier``), or a
#: definition line ending in its bracketed kind (texinfo's ``@deftypefun``:
#: ``size_t ffi_get_closure_size (void) [Function]``).
_SIGNATURE = re.compile(
    r"\w\s*\((\s*void\s*|[^()]*[*&_][^()]*)\)|\S\s+\[[A-Z][a-z]+( [A-Za-z]+)?\]$"
)
#: Mathematical symbols a heading may hold: ASCII ones (``C++``, ``<head>``, ``a | b``).
_PLAIN_MATH = frozenset("+<>|~")
_LETTER_RUN = re.compile(r"[^\W\d_]+")
#: What opens a list item of a PDF's text: bullets, dashes, check boxes.
_BULLETS = pdf_layout.BULLETS | {"·"}
#: Bullets that only a list uses (a dash also opens a line of dialogue).
_DOT_BULLETS = _BULLETS - {"-", "–", "—", "*"}
#: A sentence ending a line: where a paragraph may end.
_SENTENCE_END = re.compile(r"[.:!?][\"'”’)\]]*$")
#: Between paragraphs, beyond the usual line gap (in font sizes): clearly more space …
_PARAGRAPH_GAP = 0.45
#: … or, after a line that ends a sentence, a smaller space (texinfo's and many LaTeX classes'
#: ``\parskip``: about a third of a line) or a first-line indent of one to four font sizes.
_PARSKIP = 0.25
#: Lines of one paragraph differ in measured size by at most 5% (more is a change of type),
#: or by at most this much where the sentence runs on from one to the next (``_runs_on``).
_RUN_ON_SIZE = 0.15
_INDENT = (0.8, 4.0)
#: … or by at most this share of the smaller's size where it holds letters of the larger's
#: size (its median measures the typewriter face most of it is in: ``_holds_size_of``).
_MIXED_SIZE = 0.3


@dataclass(slots=True)
class _Written:
    start: int
    end: int
    page: int
    text: str
    size: float
    bold: bool
    italic: bool
    top: float
    bottom: float
    paragraph_start: bool
    role: str
    mono: bool = False


def parse(
    raw: bytes,
    document: Document,
    *,
    parsing: ParsingSettings | None = None,
    max_pages: int = MAX_PAGES,
) -> ParsedDocument:
    """The text layer, layout and sections of a PDF."""
    key = document.source_key
    deadline = current_deadline(key)
    try:
        pdf = pypdfium2.PdfDocument(raw)
    except pypdfium2.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise CorruptDocumentError(key, "the PDF is encrypted and needs a password") from None
        raise CorruptDocumentError(
            key, f"not a readable PDF (truncated or corrupt?): {message}"
        ) from None
    warnings: list[str] = []
    ocr_log = _OcrLog()
    glyph_names = GlyphNames(raw)  # read only if a page has characters PDFium left unmapped
    metrics = FontMetrics(raw)  # read only for a font whose metrics PDFium invented
    try:
        count = len(pdf)
        if count > max_pages:
            raise DocumentTooLargeError(
                key, f"{count} pages is over the limit of {max_pages} pages"
            )
        # A tagged PDF marks what is no content (running heads and feet, page numbers).
        marks_artifacts = bool(pdfium_c.FPDFCatalog_IsTagged(pdf.raw))
        box_notes: dict[int, str] = {}  # page number -> the boxes mended to read it

        def read_pages(artifacts: bool) -> tuple[list[PageRead], dict[int, str], TaggedHeadings]:
            pages: list[PageRead] = []
            tagged = TaggedHeadings()
            unreadable: dict[int, str] = {}  # page number -> what PDFium said
            for index in range(count):
                deadline.check(f"page {index + 1}")
                try:
                    page = pdf[index]
                except pypdfium2.PdfiumError as exc:
                    # A damaged page (a page tree whose count or kids are wrong, a page object
                    # lost to a bad edit) costs that page, not the pages PDFium can read.
                    unreadable[index + 1] = str(exc)
                    continue
                if mended := pdf_layout.mend_page_boxes(page):
                    box_notes[index + 1] = mended
                textpage = page.get_textpage()
                try:
                    read = pdf_layout.read_page(
                        page, index + 1, glyph_names, metrics, textpage, artifacts
                    )
                    if _needs_ocr(read):
                        read = _ocr(page, index, read, parsing, ocr_log)
                    tagged.read_page(page, index + 1, textpage)
                finally:
                    textpage.close()
                    page.close()
                pages.append(read)
            return pages, unreadable, tagged

        pages, unreadable, tagged = read_pages(marks_artifacts)
        left_out = sum(read.artifacts for read in pages)
        if left_out * 2 > sum(read.chars for read in pages):
            # Artifacts as many as half the text kept: the producer marked content so (a form's
            # field labels, all its text). The pages are read whole; repetition judges margins.
            ocr_log = _OcrLog()
            pages, unreadable, tagged = read_pages(False)
        if unreadable and not pages:
            number, problem = next(iter(unreadable.items()))
            raise CorruptDocumentError(key, f"no page can be read (page {number}: {problem})")
        if unreadable:
            numbers = sorted(unreadable)
            verb = "is" if len(numbers) == 1 else "are"
            warnings.append(
                f"{_pages(numbers)} could not be read and {verb} left out "
                f"(PDFium: {unreadable[numbers[0]]})"
            )
        warnings += [f"page {number}: {note}" for number, note in sorted(box_notes.items())]
        outline = _outline(pdf)
        browser_printed = _printed_by_a_browser(pdf)
    finally:
        pdf.close()
    deadline.check("CJK text in fonts the file does not embed")
    unset_warning = _count_unset(raw, pages)
    furniture = _mark_furniture(pages, browser_printed)
    toc_pages = _mark_toc(pages)
    _mark_footnotes(pages)
    _move_floats_out_of_sentences(pages)
    builder = _LayerBuilder(
        _compounds(pages),
        lambda: _Dictionary.of(pages, _vocabulary(pages)),
        hyphens_are_text=browser_printed,
    )
    for k, read in enumerate(pages):
        builder.add_page(read, pages[k + 1] if k + 1 < len(pages) else None)
    text = builder.text()
    warnings += ocr_log.warnings()
    unmapped = sum(p.unmapped for p in pages)
    document.metadata.update(ocr_log.measures(pages))
    if unmapped:
        warnings.append(f"{unmapped} glyphs without a Unicode mapping were left out of the text")
    if unset_warning:
        warnings.append(unset_warning)
    off_page = sum(p.off_page for p in pages)
    if off_page:
        warnings.append(f"{off_page} characters drawn outside the page's visible box left out")
    artifacts = sum(p.artifacts for p in pages)
    if artifacts:
        warnings.append(
            f"{artifacts} characters the file tags as artifacts (running heads and feet, page "
            "numbers) left out"
        )
    if furniture:
        warnings.append(f"{furniture} running header/footer or page-number lines left out")
    if toc_pages:
        warnings.append(f"table of contents on page(s) {', '.join(map(str, toc_pages))}")
    if not text.strip():
        if unset_warning:
            raise EmptyDocumentError(key, unset_warning)
        if not ocr_log.found_nothing(count) or (parsing is not None and parsing.ocr.require_text):
            raise EmptyDocumentError(key, ocr_log.why_empty(count))
        warnings.append("no text: OCR found no words (a photo, a drawing or a blank page?)")
        return ParsedDocument(document=document, text_layer="", warnings=warnings)
    lines = builder.lines
    body = _body_style(lines)
    headings = _declared_headings(outline, tagged, lines, body, warnings)
    if not headings:
        headings = _typographic_headings(lines)
    parsed = ParsedDocument(
        document=document, text_layer=text, layout=builder.layout, warnings=warnings
    )
    parsed.sections = build_sections(text, document, headings, builder.tables, locate=parsed.locate)
    return parsed


# -- fonts missing on this machine ------------------------------------------------------------


def _count_unset(raw: bytes, pages: list[PageRead]) -> str:
    """Counts the CJK characters PDFium dropped for want of a font on each page read
    (``PageRead.unset``, scored by ``quality``) and returns the warning that names them and
    the fonts of the runs PDFium gave no text for (``pdf_fonts``); "" when nothing was lost."""
    by_index = {read.number - 1: read for read in pages}  # the file's page index: pages
    suspect = {k: _page_text(read) for k, read in by_index.items() if read.fontless_runs}
    if not suspect:
        return ""
    counted = pdf_fonts.characters_lost(raw, suspect)
    if isinstance(counted, str):  # pdfminer could not count them: what it said instead
        lost_on = list(suspect)
        what = "text on {pages} may be missing from the text: its fonts"
        said = f"{counted}; "
    else:
        for k, lost in counted.items():
            by_index[k].unset = lost
        lost_on = [k for k in suspect if by_index[k].unset]
        if not lost_on:
            return ""
        unset = sum(p.unset for p in pages)
        what = f"{unset} CJK characters on {{pages}} are missing from the text: their fonts"
        said = ""
    fonts = set().union(*(by_index[k].fontless_fonts for k in lost_on))
    return (
        what.format(pages=_pages([by_index[k].number for k in lost_on]))
        + f" ({', '.join(sorted(fonts))}) are not embedded in the file and no installed font "
        f"covers them ({said}install one, e.g. Debian's fonts-noto-cjk, and parse again)"
    )


def _page_text(read: PageRead) -> str:
    return "\n".join(map(_item_text, read.items))


def _item_text(item: Line | Table) -> str:
    """A line's text, or a table's cells in reading order."""
    return item.text if isinstance(item, Line) else " ".join(map(" ".join, item.rows))


# -- OCR --------------------------------------------------------------------------------------


@dataclass
class _OcrLog:
    """Which pages needed OCR and what became of them (for warnings and the failure reason)."""

    read: list[int] = field(default_factory=list)
    empty: list[int] = field(default_factory=list)
    off: list[int] = field(default_factory=list)
    unavailable: list[int] = field(default_factory=list)
    reason: str = ""
    engine: str = ""
    words: int = 0
    confidence: float = 0.0  # summed over ``words``
    languages: list[str] = field(default_factory=list)  # Tesseract's, per page ("pol+eng")
    #: What OCR said of its pages ("page 2: the page looks like Arabic script, ...").
    notes: list[str] = field(default_factory=list)

    def measures(self, pages: list[PageRead]) -> dict[str, int | float | str]:
        """What the reading-quality score (``parsing.quality``) needs from the parse: glyphs
        read from text layers and those without a Unicode map; words OCR read, and how sure."""
        from agrag_pipeline.parsing import quality

        out: dict[str, int | float | str] = {
            quality.GLYPHS_KEY: sum(p.chars for p in pages if p.number not in self.read),
            quality.UNMAPPED_KEY: sum(p.unmapped for p in pages),
        }
        unset = sum(p.unset for p in pages)
        if unset:
            out[quality.UNSET_KEY] = unset
        if self.words:
            out[quality.OCR_WORDS_KEY] = self.words
            out[quality.OCR_CONFIDENCE_KEY] = round(self.confidence / self.words, 1)
            out["ocr_languages"] = ", ".join(self.languages)
        return out

    def warnings(self) -> list[str]:
        out = list(self.notes)
        if self.read:
            out.append(f"text by OCR ({self.engine}) on {_pages(self.read)}")
        if self.empty:
            out.append(f"no text layer and OCR found no text on {_pages(self.empty)}")
        if self.off:
            out.append(f"no usable text layer on {_pages(self.off)} (OCR is turned off)")
        if self.unavailable:
            out.append(
                f"no usable text layer on {_pages(self.unavailable)} and OCR is "
                f"unavailable: {self.reason}"
            )
        return out

    def found_nothing(self, count: int) -> bool:
        """OCR read every page that had no text and found no words: a picture, not a failure."""
        return bool(count) and not self.off and not self.unavailable

    def why_empty(self, count: int) -> str:
        if not count:
            return "the PDF has no pages"
        if self.off:
            return f"no text layer on {_pages(self.off)} and OCR is turned off"
        if self.unavailable:
            return (
                f"no text layer on {_pages(self.unavailable)} and OCR is unavailable: {self.reason}"
            )
        return f"no text layer and OCR found no text on {_pages(self.empty or [1])}"


def _needs_ocr(read: PageRead) -> bool:
    """No text, mostly unmapped glyphs, or an invisible text layer over a scanned image that
    does not read as words of a language.

    Invisible text with no image under it is kept as text (a searchable layer someone meant
    to be found); over an image it is a scanner's OCR layer, kept when it reads well (a page
    whose text layer is right is never replaced by OCR: ``quality``), re-read by OCR otherwise,
    and kept where OCR cannot run.
    """
    if read.chars + read.artifacts == 0 or read.unmapped > read.chars + read.artifacts:
        return True  # a page of artifacts alone (a running head over a figure) has its text
    visible = read.chars - read.invisible
    return read.invisible > visible and read.image_area >= 0.25 and not _reads_well(read)


#: An invisible text layer reads well with at least this reading-quality score and a language
#: recognised in it (too few words to tell: OCR decides).
_READS_WELL = 0.9


def _reads_well(read: PageRead) -> bool:
    from agrag_pipeline.parsing import quality

    measured = quality.assess(_page_text(read))
    return measured.language is not None and measured.score >= _READS_WELL


def _ocr(
    page: pypdfium2.PdfPage,
    index: int,
    read: PageRead,
    parsing: ParsingSettings | None,
    log: _OcrLog,
) -> PageRead:
    from agrag_pipeline.parsing import ocr
    from agrag_pipeline.settings import ParsingSettings

    settings = (parsing or ParsingSettings()).ocr
    number = index + 1
    if not settings.enabled:
        log.off.append(number)
        return read
    try:
        result = ocr.ocr_page(page, index, settings)
    except ocr.OcrUnavailableError as exc:
        log.unavailable.append(number)
        log.reason = str(exc)
        return read
    log.notes += [w for w in result.warnings if "OCR found no words" not in w]
    words = [w for w in result.words if w.text.strip()]
    if not words:
        log.empty.append(number)
        return read
    log.read.append(number)
    log.engine = ocr.ENGINE
    log.words += len(words)
    log.confidence += sum(w.confidence for w in words)
    if result.languages not in log.languages:
        log.languages.append(result.languages)
    out = PageRead(number, read.width, read.height)
    groups: dict[tuple[int, int], list[ocr.OcrWord]] = {}
    for word in words:
        groups.setdefault((word.block, word.line), []).append(word)
    previous_block = None
    for (block, _), group in groups.items():
        x0 = min(w.box[0] for w in group)
        top = min(w.box[1] for w in group)
        x1 = max(w.box[2] for w in group)
        bottom = max(w.box[3] for w in group)
        line = Line(
            text=ocr.join_words([w.text.strip() for w in group]),
            box=(x0, top, x1, bottom),
            top=top,
            bottom=bottom,
            x0=x0,
            x1=x1,
            size=max(bottom - top, 1.0) * 0.8,
            bold=False,
            column=block,
        )
        line.paragraph_start = block != previous_block
        previous_block = block
        out.items.append(line)
    out.chars = sum(len(w.text) for w in words)
    return out


# -- document pass: furniture, TOC ------------------------------------------------------------


#: A line that only says a block goes on over a page break: Sphinx's "(continues on next
#: page)" and "(continued from previous page)" at the edges of a code block, LaTeX
#: longtable's "Continued on next page". Page furniture, wherever it falls.
_CONTINUED = re.compile(
    r"\(?\s*(?:continue[sd]?|cont\.)\s+(?:on|from)\s+(?:the\s+)?"
    r"(?:next|previous|following|preceding)\s+page\s*\)?",
    re.IGNORECASE,
)


#: Sphinx's marks of a code line wrapped to fit the page: the visible space it broke at, and
#: the arrow that opens the rest.
_WRAPPED_SPACE = "\u2423"
_WRAPPED = "\u02d3\u2192"


def _furniture_key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.casefold().split()))


def _number_shape(text: str) -> str:
    """A page number's shape: ``12`` and ``xiv`` are ``#``, ``3.12`` is ``#.#``."""
    return re.sub(r"\b[ivxlcdm]+\b", "#", _furniture_key(text))


def _mark_furniture(pages: list[PageRead], browser_printed: bool = False) -> int:
    """Mark running headers/footers and page numbers; return how many lines were marked.

    Furniture runs: a line repeats on other pages, a page number's shape too (``12``, ``xiv``
    are ``#``). A page number without another is one at the foot, or one spelled as such
    (``Page 3``, ``- 3 -``): a one-page figure's top label (``75.9`` above a bar) is text.
    Without repetition (a one-page document) a margin line is still known by what it says: it
    ends in the page's number over the page count (``file:///…/notes.html 1/1``), or, on a page
    a browser printed, it opens with the date and time of printing."""
    zone: list[list[Line]] = []
    close: list[list[Line]] = []  # smaller type close to the body: furniture if it runs
    feet: set[int] = set()  # the lines in a page's bottom margin, by id
    for read in pages:
        lines = [i for i in read.items if isinstance(i, Line) and not i.rotated]
        margin = 0.15 * read.height
        candidates = []
        near: list[Line] = []
        # By place on the page, not reading order: a right-aligned head beside short code
        # lines reads as a column of its own, after them (Sphinx's LaTeX).
        by_top = sorted(lines, key=lambda line: line.box[1])
        for line in by_top[:2]:  # at the top, set apart from the lines below its own
            below = next((o for o in by_top if o.box[1] >= line.box[3]), None)
            if line.box[3] > margin:
                continue
            if below is None or below.box[1] - line.box[3] >= 0.8 * line.size:
                candidates.append(line)
            elif _smaller_apart(line, below, below.box[1] - line.box[3]):
                near.append(line)
        by_bottom = sorted(lines, key=lambda line: -line.box[3])
        for line in by_bottom[:2]:  # at the bottom, set apart from the lines above its own
            above = next((o for o in by_bottom if o.box[3] <= line.box[1]), None)
            if line.box[1] < read.height - margin:
                continue
            if above is None or line.box[1] - above.box[3] >= 0.8 * line.size:
                candidates.append(line)
                feet.add(id(line))
            elif _smaller_apart(line, above, line.box[1] - above.box[3]):
                near.append(line)
        taken = {id(c): c for c in candidates}
        zone.append(list(taken.values()))
        close.append([n for n in {id(n): n for n in near}.values() if id(n) not in taken])
    counts: Counter[str] = Counter()
    numbers: Counter[str] = Counter()  # pages with a page-number-shaped line, by its shape
    #: A margin line's band, read whole: a running head that some pages split in two (the
    #: date apart from the title where the body's columns cut the band) still runs as one.
    band_keys: dict[int, str] = {}
    for candidates, near in zip(zone, close, strict=True):
        band_keys.update(_band_keys([*candidates, *near]))
        counts.update(
            {_furniture_key(c.text) for c in [*candidates, *near]}
            | {band_keys[id(c)] for c in [*candidates, *near] if id(c) in band_keys}
        )
        numbers.update(
            {_number_shape(c.text) for c in candidates if _PAGE_NUMBER.match(c.text.strip())}
        )
    needed = max(2, (len(pages) + 1) // 2)
    sizes: Counter[float] = Counter()
    for read in pages:
        for item in read.items:
            if isinstance(item, Line):
                sizes[round(item.size * 2) / 2] += len(item.text)
    body = sizes.most_common(1)[0][0] if sizes else 0.0

    def runs(line: Line) -> bool:
        band = band_keys.get(id(line))
        return len(pages) >= 2 and (
            counts[_furniture_key(line.text.strip())] >= needed
            or (band is not None and counts[band] >= needed)
        )

    marked = 0
    for candidates in zone:
        for line in candidates:
            text = line.text.strip()
            key = _furniture_key(text)
            numbered = _RUNNING_HEAD.match(text)
            if numbered and numbered.group(1) and line.size <= body * _FOOTNOTE_SIZE:
                numbered = None  # a footnote ("1 See ..." in small type), not a running head
            page_number = bool(_PAGE_NUMBER.match(text)) and (
                numbers[_number_shape(text)] >= 2
                or bool(_SPELLED_PAGE_NUMBER.search(text))
                or (id(line) in feet and not _DECIMAL.fullmatch(text))
            )
            if (
                runs(line)
                or page_number
                # A running head with its page number ("Study on X — Annex 209"), no larger
                # than the body text (a title would be). It runs: it repeats on another page;
                # a one-page excerpt has none, so there the number must not be a year
                # ("May 5, 2023" at the top of a memo is its date).
                or (
                    numbered
                    and len(text.split()) >= 3
                    and line.size <= body * 1.05
                    and (
                        counts[key] >= 2
                        if len(pages) >= 2
                        else not _YEAR.fullmatch(numbered.group(1) or numbered.group(2))
                        # A one-page document's only text is its content, not its head.
                        and _text_besides(pages[0], line) > len(text)
                    )
                )
            ):
                line.role = "furniture"
                marked += 1
    for near in close:
        for line in near:
            if runs(line):
                line.role = "furniture"
                marked += 1
    for position, (read, candidates, near) in enumerate(zip(pages, zone, close, strict=True)):
        of_count = re.compile(rf"(?<![\d/]){position + 1}\s*/\s*{len(pages)}$")
        for line in [*candidates, *near]:
            text = line.text.strip()
            if line.role != "furniture" and (
                of_count.search(text)
                or (
                    browser_printed
                    and line.box[1] < read.height / 2
                    and _PRINTED_AT.match(text) is not None
                )
            ):
                line.role = "furniture"
                marked += 1
    marked += _mark_lone_running_heads(pages, zone, body)
    marked += _mark_band_mates(zone)
    for read in pages:
        for item in read.items:
            if isinstance(item, Line) and _CONTINUED.fullmatch(item.text.strip()):
                item.role = "furniture"
                marked += 1
    return marked


#: The date and time a browser prints at the top of each page (Chrome: ``12/7/26, 12:30 PM``,
#: or the locale's ``07.12.26, 12:30``).
_PRINTED_AT = re.compile(
    r"\d{1,4}[./-]\d{1,2}[./-]\d{1,4},?\s+\d{1,2}[:.]\d{2}(?:\s*[AP]M)?\b", re.I
)


def _band_keys(lines: list[Line]) -> dict[int, str]:
    """The furniture key of each band of two or more of a page's margin lines that share a
    height, its lines read left to right; by the lines' ids."""
    keys: dict[int, str] = {}
    for line in lines:
        band = sorted(
            (o for o in lines if o.box[1] < line.box[3] and line.box[1] < o.box[3]),
            key=lambda o: o.box[0],
        )
        if len(band) >= 2:
            keys[id(line)] = _furniture_key(" ".join(o.text.strip() for o in band))
    return keys


def _smaller_apart(line: Line, neighbour: Line, gap: float) -> bool:
    """A margin line set in smaller type than the body line beside it, with some space
    between: a browser's print header or footer (the date and title, the address and "2/63")
    sits half a line from the page's text. Not apart enough to be taken alone (a footnote's
    last line looks the same), it is furniture only where it runs on most pages."""
    return line.size <= 0.85 * neighbour.size and gap >= 0.2 * line.size


def _text_besides(read: PageRead, line: Line) -> int:
    """How many characters the page's other lines and tables hold."""
    return sum(len(_item_text(i)) for i in read.items if i is not line)


def _mark_band_mates(zone: list[list[Line]]) -> int:
    """Mark the other pieces of a margin band that holds furniture: a running foot split in
    two ("4" and "Chapter 1. Quickstart", parted by a right-aligned line above them) is one
    running foot, though only its page number is known as such."""
    marked = 0
    for candidates in zone:
        for line in candidates:
            if line.role == "furniture":
                continue
            if any(
                other.role == "furniture"
                and other.box[1] < line.box[3]
                and line.box[1] < other.box[3]
                for other in candidates
            ):
                line.role = "furniture"
                marked += 1
    return marked


def _printed_number(text: str) -> tuple[str, int] | None:
    """The page number a margin line prints, at its start or end, if any, with its kind:
    ``("arabic", 37)``, or ``("roman", 4)`` for a front matter's ``iv``."""
    found = _RUNNING_HEAD.match(text) or _PAGE_NUMBER.match(text)
    if found is not None:
        digits = next((g for g in found.groups() if g and g.isdigit()), None)
        if digits is not None:
            return "arabic", int(digits)
    found = _ROMAN_RUNNING_HEAD.match(text) or _PAGE_NUMBER.match(text)
    numeral = (
        next((g for g in found.groups() if g and _ROMAN.fullmatch(g)), None) if found else None
    )
    return ("roman", _roman_value(numeral)) if numeral else None


#: A front matter's running head: its roman page number and the head in capitals
#: (``iv CONTENTS``, ``PREFACE vii``), as LaTeX's two-sided books set them.
_ROMAN_RUNNING_HEAD = re.compile(
    r"^([ivxlc]{1,6})\s+[^a-z]*[A-Z][^a-z]*$|^[^a-z]*[A-Z][^a-z]*\s([ivxlc]{1,6})$"
)
_ROMAN = re.compile(r"[ivxlcdm]{1,6}")
_ROMAN_DIGITS = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _roman_value(numeral: str) -> int:
    values = [_ROMAN_DIGITS[c] for c in numeral.lower()]
    return sum(-v if v < after else v for v, after in zip(values, [*values[1:], 0], strict=True))


def _mark_lone_running_heads(pages: list[PageRead], zone: list[list[Line]], body: float) -> int:
    """Mark the running heads that occur once: a chapter of two pages shows its head
    ("Chapter 7: Comparing Three Files 37") on one page only, so repetition cannot find it.
    It is known by its number instead: the page number this page prints, where the document's
    other running heads and page numbers put it (the printed number less the page's position,
    shared by at least two marked pages, arabic and roman apart). A heading or a sentence in
    the margin that ends in a number is marked only where that number is the page's own; a
    front matter's head of two words only where it is set in capitals (``iv CONTENTS``)."""
    offsets: Counter[tuple[str, int]] = Counter()
    for position, candidates in enumerate(zone):
        for line in candidates:
            printed = _printed_number(line.text.strip()) if line.role == "furniture" else None
            if printed is not None:
                offsets[printed[0], printed[1] - position] += 1
    known = {offset for offset, n in offsets.items() if n >= 2}
    marked = 0
    for position, candidates in enumerate(zone):
        for line in candidates:
            text = line.text.strip()
            printed = _printed_number(text)
            if (
                line.role != "furniture"
                and printed is not None
                and (printed[0], printed[1] - position) in known
                and (
                    (_RUNNING_HEAD.match(text) and len(text.split()) >= 3)
                    or (printed[0] == "roman" and _ROMAN_RUNNING_HEAD.match(text))
                )
                and line.size <= body * 1.05
                and not _YEAR.fullmatch(str(printed[1]))
            ):
                line.role = "furniture"
                marked += 1
    return marked


def _mark_toc(pages: list[PageRead]) -> list[int]:
    """Strip leader dots; mark lines of table-of-contents pages; return those pages."""
    toc_pages = []
    for read in pages:
        led = 0
        lines = [i for i in read.items if isinstance(i, Line)]
        for line in lines:
            stripped, had = pdf_layout.strip_leaders(line.text)
            if had:
                line.text = stripped
                line.role = "toc-entry"
                led += 1
        if led >= 3 and led >= 0.3 * len(lines):
            toc_pages.append(read.number)
            for line in lines:  # entries without leaders too; the page's title stays text
                if line.role == "text" and re.search(r"\s\d{1,4}$", line.text):
                    line.role = "toc"
    return toc_pages


#: Footnotes are set at most this size against the body text …
_FOOTNOTE_SIZE = 0.92
#: … and the first begins with its mark: a number, a symbol, "(1)" or "[1]".
_FOOTNOTE_MARK = re.compile(r"^(?:\d{1,3}|[*†‡§¶]{1,3}|\(\d{1,3}\)|\[\d{1,3}\])\s*\S")


def _body_size(pages: list[PageRead]) -> float:
    sizes: Counter[float] = Counter()
    for read in pages:
        for item in read.items:
            if isinstance(item, Line) and item.role == "text":
                sizes[round(item.size * 2) / 2] += len(item.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _mark_footnotes(pages: list[PageRead]) -> None:
    """Mark the footnotes at the foot of each page (role ``"footnote"``): the last lines of a
    column block, in the lower half of the page, set smaller than the body, the first of them
    opening with a footnote mark. They stay text of their page, written after its body."""
    body = _body_size(pages)
    if not body:
        return
    for read in pages:
        blocks: dict[int, list[Line]] = {}
        for item in read.items:
            if isinstance(item, Line) and not item.rotated and item.role != "furniture":
                blocks.setdefault(item.column, []).append(item)
        for lines in blocks.values():
            k = len(lines)
            while (
                k > 0
                and lines[k - 1].role == "text"
                and lines[k - 1].size <= body * _FOOTNOTE_SIZE
                and lines[k - 1].top >= read.height / 2
            ):
                k -= 1
            run = lines[k:]
            if not run or k == 0 or not _FOOTNOTE_MARK.match(run[0].text):
                continue
            if run[0].top - lines[k - 1].bottom < 0.5 * run[0].size:
                continue  # set tight under the body: small print of the text, no footnote
            for line in run:
                line.role = "footnote"


def _pages(numbers: list[int]) -> str:
    """``"page 3"`` or ``"pages 1–3, 5"``."""
    return f"page {numbers[0]}" if len(numbers) == 1 else f"pages {_ranges(numbers)}"


def _ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1–3, 5"``."""
    parts: list[str] = []
    start = previous = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == previous + 1:
            previous = n
            continue
        parts.append(f"{start}–{previous}" if previous > start else str(start))
        if n is not None:
            start = previous = n
    return ", ".join(parts)


# -- text layer -------------------------------------------------------------------------------


_COMPOUND = re.compile(r"(?<![\w-])(\w+)-(\w+)(?![\w-])")


def _printed_by_a_browser(pdf: pypdfium2.PdfDocument) -> bool:
    """Whether the PDF is a web page printed by Chrome (or Edge, Opera, Brave, Electron: the
    Skia engine's PDF backend). A browser breaks lines only at spaces and after hyphens and
    does not hyphenate (CSS ``hyphens: manual``, the default), so a hyphen at a line end is
    the text's own: "right-hand", not hyphenation to undo."""
    try:
        producer = pdf.get_metadata_value("Producer")
    except Exception:
        return False  # unreadable metadata: a document like any other
    return producer.startswith("Skia/PDF")


def _compounds(pages: list[PageRead]) -> frozenset[str]:
    """Hyphenated compounds the document writes inside a line (``self-contained``) and never
    as one word: a line-end hyphen that splits one of them is the compound's and is kept."""
    hyphenated: set[str] = set()
    words: set[str] = set()
    for read in pages:
        for item in read.items:
            if not isinstance(item, Line):
                continue
            lowered = item.text.lower()
            hyphenated.update(f"{a}-{b}" for a, b in _COMPOUND.findall(lowered))
            words.update(lowered.split())
    return frozenset(c for c in hyphenated if c.replace("-", "") not in words)


def _vocabulary(pages: list[PageRead]) -> frozenset[str]:
    """The words the document writes whole (lower case): every word of a line but its first
    and its last, which may be the halves of a word split at a line end. A technical word the
    word list lacks (``autoprint`` in the sed manual) is a word of its document."""
    words: set[str] = set()
    for read in pages:
        for item in read.items:
            if isinstance(item, Line):
                words.update(re.findall(r"\w+", item.text.lower())[1:-1])
    return frozenset(words)


def _sentence_goes_on(last: _Written | Line, item: Line) -> bool:
    """Whether ``item`` goes on with a sentence that ``last``, a body line, left open: it
    opens in lower case, in the same type, and neither is code."""
    if item.role != "text" or item.mono:
        return False
    size = max(min(last.size, item.size), 1.0)
    return (
        last.role == "text"
        and not last.mono
        and not _SENTENCE_END.search(last.text.rstrip())
        and item.text[:1].islower()
        and abs(last.size - item.size) <= 0.05 * size
        and (last.bold, last.italic) == (item.bold, item.italic)
    )


class _LayerBuilder:
    def __init__(
        self,
        compounds: frozenset[str] = frozenset(),
        dictionary: Callable[[], _Dictionary | None] | None = None,
        hyphens_are_text: bool = False,
    ) -> None:
        self.compounds = compounds
        #: Every hyphen at a line end is the text's own (``_printed_by_a_browser``): kept, and
        #: the line joined to the next without a space (``right-`` + ``hand``, ``--`` +
        #: ``storage.tsdb.path``).
        self.hyphens_are_text = hyphens_are_text
        #: The document language's word list, looked up at the first hyphen that needs it.
        self._dictionary = dictionary
        self._looked_up: list[_Dictionary | None] = []
        #: The first line(s) of the next page, written already: they end a word this page split.
        self.carried: list[Line] = []
        self.parts: list[str] = []
        self.pos = 0
        self.layout: list[LayoutSpan] = []
        self.lines: list[_Written] = []
        self.tables: list[TableMark] = []
        #: A page's footnotes held back while its last sentence goes on over the page break:
        #: written after that sentence's paragraph, with their page and its line spacing.
        self._held_notes: list[tuple[Line, int, float]] = []

    def text(self) -> str:
        return "".join(self.parts)

    def _put(self, text: str) -> int:
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        return start

    def _span(self, start: int, page: int, box: tuple[float, float, float, float]) -> None:
        x0, top, x1, bottom = box
        self.layout.append(
            LayoutSpan(
                start=start,
                end=self.pos,
                box=PageBox(
                    page=page,
                    x0=min(x0, x1),
                    y0=min(top, bottom),
                    x1=max(x0, x1),
                    y1=max(top, bottom),
                ),
            )
        )

    def add_page(self, read: PageRead, following_page: PageRead | None = None) -> None:
        """The page's lines and tables in reading order (its footnotes at the foot of their
        column); a word split by the page break (``interna-`` at the foot, ``tionalization``
        on top of the next page) is joined: the next page's first line is written right after
        the split one, before the footnotes under it."""
        kept = [
            i
            for i in read.items
            if not any(i is c for c in self.carried)
            and not (isinstance(i, Line) and i.role == "furniture")
        ]
        self.carried = []
        items = kept
        # The body's last line: a word it splits goes on at the top of the next page.
        last_body = max(
            (k for k, i in enumerate(items) if not (isinstance(i, Line) and i.role == "footnote")),
            default=-1,
        )
        if not items:
            self._write_held_notes()
            return
        # A sentence the last page left open goes on in the same paragraph.
        continued = self._continues(items[0])
        if not continued:
            self._write_held_notes()
        if self.pos:
            self._put("\n" if continued else PAGE_SEPARATOR)
        leading = _leading(items)
        # This page's footnotes wait for the end of a sentence the page break cuts.
        body_end = items[last_body] if last_body >= 0 else None
        following_first = _continuation(following_page)[:1] if following_page else []
        if (
            isinstance(body_end, Line)
            and following_first
            and last_body < len(items) - 1
            and all(isinstance(i, Line) and i.role == "footnote" for i in items[last_body + 1 :])
            and _sentence_goes_on(body_end, following_first[0])
            and not pdf_layout.is_hyphen_end(body_end.text)
        ):
            holding = [
                (i, read.number, leading) for i in items[last_body + 1 :] if isinstance(i, Line)
            ]
            items = items[: last_body + 1]
        else:
            holding = []
        previous: Line | Table | None = None
        joined = False  # the previous line ended in a hyphen that was joined to this one
        wrap_gap = ""  # what the previous line's wrap mark stands for, if it ended in one
        indents = _code_indents(items)
        for k, item in enumerate(items):
            if isinstance(item, Table):
                if previous is not None:
                    self._put("\n\n")
                self._add_table(item, item.page or read.number)
                previous, joined = item, False
                continue
            text = item.text
            # A code line wrapped to fit (Sphinx: "␣" at the end, "˓→" at the start of the
            # rest) is one line of the source: written on, the marks left out.
            rewrapped = isinstance(previous, Line) and text.startswith(_WRAPPED)
            if rewrapped:
                text = text[len(_WRAPPED) :]
            elif not joined and id(item) in indents:
                text = " " * indents[id(item)] + text
            paragraph = (previous is None and not (k == 0 and continued)) or (
                previous is not None and _paragraph_break(previous, item, leading)
            )
            if paragraph and previous is not None and self._held_notes:
                self._write_held_notes()  # the sentence cut by the page break has ended
            if previous is not None and not joined:
                self._put(wrap_gap if rewrapped else "\n\n" if paragraph else "\n")
            item.paragraph_start = paragraph and not joined and not rewrapped
            following: Line | Table | None = items[k + 1] if k + 1 < len(items) else None
            wrap_gap = ""
            if (
                isinstance(following, Line)
                and following.text.startswith(_WRAPPED)
                and text.endswith(_WRAPPED_SPACE)
            ):
                text, wrap_gap = text[: -len(_WRAPPED_SPACE)], " "
            carry: list[Line] = []
            if k == last_body and following_page is not None:
                carry = _continuation(following_page)
                following = carry[0] if carry else None
            text, join_next = self._line_end(
                text,
                following,
                bool(carry)
                or (isinstance(following, Line) and not _paragraph_break(item, following, leading)),
            )
            self._write(item, text, read.number)
            previous, joined = item, join_next
            if join_next and carry and following_page is not None:
                self._carry(carry, following_page.number)
                previous, joined = None, False
                if k + 1 < len(items):
                    self._put("\n\n")
        if not holding:
            self._write_held_notes()
        self._held_notes += holding

    def _continues(self, item: Line | Table) -> bool:
        """Whether ``item``, first on its page, goes on with a sentence that the body's last
        line (the last written, no footnote) left open."""
        return (
            bool(self.lines) and isinstance(item, Line) and _sentence_goes_on(self.lines[-1], item)
        )

    def _write_held_notes(self) -> None:
        """The footnotes held back from the page before, as paragraphs of their own, a word
        split at a line end joined as in the body."""
        notes, self._held_notes = self._held_notes, []
        previous: Line | None = None
        joined = False
        for n, (line, page, leading) in enumerate(notes):
            paragraph = previous is None or _paragraph_break(previous, line, leading)
            if self.pos and not joined:
                self._put("\n\n" if paragraph else "\n")
            line.paragraph_start = paragraph and not joined
            following = notes[n + 1][0] if n + 1 < len(notes) else None
            text, joined = self._line_end(
                line.text,
                following,
                following is not None and not _paragraph_break(line, following, leading),
            )
            self._write(line, text, page)
            previous = line

    def _line_end(
        self, text: str, following: Line | Table | None, may_join: bool
    ) -> tuple[str, bool]:
        """A line's text as written, and whether it joins ``following``: a word split at the
        line end (a hyphen PDFium marked soft, or one before a line that opens in lower case)
        is joined where ``may_join``, a compound keeping its hyphen; a soft hyphen not joined
        is written as "-"."""
        if (
            self.hyphens_are_text
            and may_join
            and isinstance(following, Line)
            and len(text) >= 2
            and text[-1] in pdf_layout.HYPHENS
            and not text[-2].isspace()
        ):
            return text[:-1] + "-", True
        if (
            may_join
            and isinstance(following, Line)
            and pdf_layout.is_hyphen_end(text)
            and (text[-1] == "\u00ad" or following.text[:1].islower())
        ):
            return text[:-1] + ("-" if self._keeps_hyphen(text, following) else ""), True
        if text.endswith("\u00ad"):  # a hyphen drawn at a line end that is not joined
            return text[:-1] + "-", False
        return text, False

    def _carry(self, lines: list[Line], page: int) -> None:
        """The next page's first lines, written on after the word they finish."""
        for n, line in enumerate(lines):
            text = line.text
            following = lines[n + 1] if n + 1 < len(lines) else None
            if following is not None:
                text = text[:-1] + ("-" if self._keeps_hyphen(text, following) else "")
            elif text.endswith("\u00ad"):
                text = text[:-1] + "-"
            line.paragraph_start = False
            self._write(line, text, page)
        self.carried = lines

    def _write(self, item: Line, text: str, page: int) -> None:
        text = text.replace("\u00ad", "")
        start = self._put(text)
        page = item.page or page
        self._span(start, page, item.box)
        self.lines.append(
            _Written(
                start,
                self.pos,
                page,
                text,
                item.size,
                item.bold,
                item.italic,
                item.top,
                item.bottom,
                item.paragraph_start,
                item.role if not item.rotated else "rotated",
                item.mono,
            )
        )

    def _keeps_hyphen(self, text: str, following: Line | Table | None) -> bool:
        """A hyphen ending a line (PDFium marks every such hyphen soft) is kept when the word
        it splits is a compound: one the document hyphenates inside a line elsewhere, or, by
        the word list of the document's language, two words whose joining is no word
        (``self-contained``); otherwise it is hyphenation and dropped (``compu-tation``)."""
        if not isinstance(following, Line):
            return False
        if self.hyphens_are_text:
            return True
        head = re.findall(r"\w+$", text[:-1])
        tail = re.findall(r"^\w+", following.text)
        if not (head and tail):
            return False
        if f"{head[0]}-{tail[0]}".lower() in self.compounds:
            return True
        if not self._looked_up:
            self._looked_up.append(self._dictionary() if self._dictionary else None)
        dictionary = self._looked_up[0]
        return dictionary is not None and dictionary.compound(head[0], tail[0])

    def _add_table(self, table: Table, page: int) -> None:
        rows = [[cell_text(c) for c in row] for row in table.rows]
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        header_text = " ".join(rows[0])
        head = table.header_rows if len(rows) > table.header_rows else 1
        has_header = len(rows) > head and len(header_text) <= MAX_HEADER_CHARS
        spans: list[tuple[int, int]] = []
        header: tuple[int, int] | None = None
        first = self.pos
        for index, (row, box) in enumerate(zip(rows, table.row_boxes, strict=False)):
            if index:
                self._put("\n")
            start = self._put(pipe_row(row))
            self._span(start, page, box)
            spans.append((start, self.pos))
            if index == head - 1 and has_header:
                self._put("\n")
                self._put(pipe_row(["-"] * width))
                header = (spans[0][0], self.pos)
        body = tuple(spans[head:]) if header else tuple(spans)
        self.tables.append(TableMark(first, self.pos, header, body))


#: A float's caption: "Table 2.1:", "Figure 3.", "Fig. 4", "TABLE II", "Listing 1", ...
_CAPTION = re.compile(
    r"(?:table|figure|fig\.|listing|algorithm|scheme|chart|exhibit|plate|abbildung|tabelle"
    r"|tableau|tabla|figura)\s*[A-Z]?[\dIVXLC]+(?:[.\-]\d+)*[.:]?(?:\s|$)",
    re.IGNORECASE,
)
#: A float this long (lines and tables) is no float set between a sentence's two halves.
_MAX_FLOAT_ITEMS = 80


def _move_floats_out_of_sentences(pages: list[PageRead]) -> int:
    """Put a float (a table or figure with its caption) that reading order sets between the
    two halves of a sentence after the paragraph that sentence ends; return how many moved.

    LaTeX sets floats at the top or foot of a page or column, so a sentence the page (column)
    break cuts reads "... find the", the table and its caption, then "mean speed: ...": the
    float moves after "... surface.", keeping its own page. Only where a full line leaves the
    sentence open at the break, the line after the float goes on with it (lower case, same
    type) and the float holds a caption or a table and no line of prose."""
    moved = 0
    body_size = _body_size(pages)
    cut: Line | None = None  # the previous page's body ends on this line, its sentence open
    for n, read in enumerate(pages):
        lines = _BodyLines.of(read, body_size)
        items = read.items
        above: Line | Table | None = None  # the body item before ``k`` (no running head)
        k = 0
        while k < len(items):
            if _aside(items[k]):
                k += 1
                continue
            # The sentence left open on this page, or at the last page's end.
            before = cut if above is None else lines.cut_line(above)
            found = _float_between(items, k, before, above is not None) if before else None
            if found is None:
                above = items[k]
                k += 1
                continue
            end, resume = found
            after = _paragraph_end(items, resume)
            items[k:after] = items[resume:after] + items[k:end] + items[end:resume]
            moved += 1
            above = next(i for i in reversed(items[:after]) if not _aside(i))
            k = after
        for previous, item in itertools.pairwise(items):
            cut_line = lines.cut_line(previous, ragged=True)
            if (
                cut_line is not None
                and isinstance(item, Line)
                and item.column != cut_line.column
                and _sentence_goes_on(cut_line, item)
            ):
                item.goes_on = True  # "... based on" | "a set of ..." across a column break
        if n + 1 < len(pages):
            moved += _float_at_foot(read, pages[n + 1], lines)
        body = [i for i in read.items if not _aside(i)]
        cut = lines.cut_line(body[-1]) if body else None
    return moved


def _aside(item: Line | Table) -> bool:
    return isinstance(item, Line) and item.role in ("footnote", "furniture")


@dataclass(frozen=True, slots=True)
class _BodyLines:
    """What a full line of a page's body text is: in the body's size, as wide as the widest
    such line of its column."""

    size: float
    full: dict[int, float]

    @classmethod
    def of(cls, read: PageRead, body_size: float) -> _BodyLines:
        widest: dict[int, float] = {}
        for item in read.items:
            if isinstance(item, Line) and _in_body_type(item, body_size):
                widest[item.column] = max(widest.get(item.column, 0.0), item.x1 - item.x0)
        return cls(body_size, {column: 0.9 * width for column, width in widest.items()})

    def full_line(self, item: Line | Table, share: float = 1.0) -> bool:
        return (
            isinstance(item, Line)
            and _in_body_type(item, self.size)
            and item.x1 - item.x0 >= share * self.full.get(item.column, float("inf"))
        )

    def cut_line(self, item: Line | Table, ragged: bool = False) -> Line | None:
        """``item`` if it is a full line of body text that leaves its sentence open: where a
        page or column break cuts a sentence. ``ragged``: full as a line set ragged right is,
        where the next word did not fit (a narrow column's line may end a long word short)."""
        if not (isinstance(item, Line) and self.full_line(item, _RAGGED if ragged else 1.0)):
            return None
        text = item.text.rstrip()
        if _SENTENCE_END.search(text) or pdf_layout.is_hyphen_end(text):
            return None
        return item if _mostly_letters(text) else None  # a table's row is no sentence


#: A ragged line is full at this share of what a justified one is (0.9 of its column's widest).
_RAGGED = 0.7


def _in_body_type(item: Line, body_size: float) -> bool:
    return (
        item.role == "text"
        and not item.rotated
        and not item.mono
        and abs(item.size - body_size) <= max(0.5, 0.06 * body_size)
    )


def _float_between(
    items: list[Line | Table], k: int, before: Line, column_break: bool
) -> tuple[int, int] | None:
    """``(end, resume)`` where ``items[k:end]`` is a float set inside the sentence ``before``
    leaves open and ``items[resume]`` goes on with it (``items[end:resume]``: furniture); on
    one page, only across a column break (a float inside one column stands between
    paragraphs). The float holds a caption or a table, and no line of prose: a line in the
    body's type as wide as ``before`` that is no caption is text the sentence did not reach."""
    captioned = False
    caption: Line | None = None  # the caption's line just before, while the caption goes on
    width = before.x1 - before.x0
    leading: float | None = None  # the page's, measured at the first caption
    for j in range(k, min(len(items), k + _MAX_FLOAT_ITEMS)):
        item = items[j]
        if isinstance(item, Table):
            captioned, caption = True, None
            continue
        if item.role == "furniture":
            continue
        if item.role != "text" or item.rotated:
            return None  # a footnote, a contents line: no float
        if leading is None and caption is not None:
            leading = _leading(items)
        if (
            caption is not None
            and leading is not None
            and (
                not _paragraph_break(caption, item, leading)
                or (pdf_layout.is_hyphen_end(caption.text) and item.text[:1].islower())
            )
        ):
            caption = item  # a caption's next line ("trace. The trunk trace ...")
            continue
        caption = None
        if _sentence_goes_on(before, item):
            if j == k or not captioned or (column_break and item.column == before.column):
                return None
            end = j
            while end > k and _aside(items[end - 1]):
                end -= 1  # furniture between the float and the sentence stays where it is
            return end, j
        if _CAPTION.match(item.text.strip()):
            captioned, caption = True, item
        elif (
            abs(item.size - before.size) <= 0.05 * max(before.size, 1.0)
            and (item.bold, item.italic, item.mono) == (before.bold, before.italic, before.mono)
            and item.x1 - item.x0 >= 0.9 * width
        ):
            return None  # prose in the body's type: the text goes on otherwise
    return None


def _float_at_foot(read: PageRead, following: PageRead, lines: _BodyLines) -> int:
    """A float set at the foot of ``read`` after a sentence that goes on at the top of
    ``following``: moved there, after that sentence's paragraph, keeping its own page."""
    body = [i for i in read.items if not _aside(i)]
    top = next((i for i in following.items if not _aside(i)), None)
    if not isinstance(top, Line):
        return 0
    # The float starts after the page's last full line of body text.
    last = next(
        (
            pos
            for pos in range(len(body) - 2, max(-1, len(body) - 2 - _MAX_FLOAT_ITEMS), -1)
            if lines.full_line(body[pos])
        ),
        None,
    )
    before = lines.cut_line(body[last]) if last is not None else None
    if last is None or before is None:
        return 0
    block = body[last + 1 :]
    if _float_between([*block, top], 0, before, column_break=False) != (len(block), len(block)):
        return 0
    for item in block:
        item.page = read.number
    read.items = [i for i in read.items if not any(i is b for b in block)]
    start = following.items.index(top)
    after = _paragraph_end(following.items, start)
    following.items[after:after] = block
    return 1


def _paragraph_end(items: list[Line | Table], start: int) -> int:
    """The index after the last line of the paragraph that ``items[start]`` is in."""
    leading = _leading(items)
    end = start + 1
    while end < len(items):
        item = items[end]
        if not (isinstance(item, Line) and item.role == "text"):
            break
        if _paragraph_break(items[end - 1], item, leading):
            break
        end += 1
    return end


def _continuation(read: PageRead) -> list[Line]:
    """The first line of a page's body (after its running header), if it is body text, and
    the lines after it that finish a word it splits in turn (at most three)."""
    lines: list[Line] = []
    for item in read.items:
        if isinstance(item, Line) and item.role == "furniture":
            continue
        if not (isinstance(item, Line) and item.role == "text" and not item.rotated):
            break
        if lines and not (
            len(lines) < 4
            and item.column == lines[-1].column
            and pdf_layout.is_hyphen_end(lines[-1].text)
            and item.text[:1].islower()
        ):
            break
        lines.append(item)
    return lines


#: Zipf frequencies (``wordfreq``; 1 is once in a hundred million words): a part of a split
#: word at least this frequent is a word …
_KNOWN_ZIPF = 2.0
#: … the joined word less frequent than this is none (``selfcontained``) …
_UNKNOWN_ZIPF = 1.0
#: … or, both parts being common words (at least ``_COMMON_ZIPF``), a rare spelling of their
#: compound (``wellknown``, ``highlevel``), while a rare real word (``counterbalancing``) is
#: more frequent than that.
_RARE_ZIPF = 1.7
_COMMON_ZIPF = 4.0


class _Dictionary:
    """The document language's word frequencies (``wordfreq``), to tell hyphenation from a
    compound at a line end."""

    def __init__(self, language: str, vocabulary: frozenset[str] = frozenset()) -> None:
        self.language = language
        #: The document's own words (``_vocabulary``): known words though the list lacks them.
        self.vocabulary = vocabulary

    @classmethod
    def of(
        cls, pages: list[PageRead], vocabulary: frozenset[str] = frozenset()
    ) -> _Dictionary | None:
        """For the language the document's text is recognised as; None when none is."""
        from agrag_pipeline.parsing import quality

        sample: list[str] = []
        size = 0
        for read in pages:
            for item in read.items:
                if isinstance(item, Line) and item.role == "text":
                    sample.append(item.text)
                    size += len(item.text)
            if size > 20000:
                break
        if not sample:
            return None
        try:
            language, _ = quality.identify_language("\n".join(sample))
        except Exception:  # a missing word list is no reason to refuse a document
            return None
        return cls(language, vocabulary) if language else None

    def zipf(self, text: str) -> float:
        import wordfreq

        return float(wordfreq.zipf_frequency(text, self.language))

    def compound(self, head: str, tail: str) -> bool:
        """Whether ``head-tail`` split at a line end is a compound rather than one word: both
        parts are words and joined they make none (``self-contained``, ``well-known``); a
        joined word the list knows is hyphenation (``compu-tation``, ``counter-balancing``).
        The document's own words count as known: a part it writes whole is a word
        (``no-autoprint``), a joined word it writes whole is no compound."""
        if (head + tail).lower() in self.vocabulary:
            return False
        parts = min(
            _KNOWN_ZIPF if part.lower() in self.vocabulary else self.zipf(part)
            for part in (head, tail)
        )
        if parts < _KNOWN_ZIPF:
            return False
        joined = self.zipf(head + tail)
        return joined < _UNKNOWN_ZIPF or (joined < _RARE_ZIPF and parts >= _COMMON_ZIPF)


def _leading(items: list[Line | Table]) -> float:
    """The page's usual gap between two lines of a paragraph, in font sizes: the lower
    quartile of its line gaps, so that a short page of spaced paragraphs (half its gaps
    between paragraphs) does not pass for one of loose lines."""
    gaps = []
    for a, b in itertools.pairwise(items):
        if isinstance(a, Line) and isinstance(b, Line) and a.column == b.column:
            size = max(min(a.size, b.size), 1.0)
            gap = (b.top - a.bottom) / size
            if -0.5 < gap < 2.0:
                gaps.append(gap)
    return sorted(gaps)[len(gaps) // 4] if gaps else 0.2


def _runs_on(previous: Line, line: Line) -> bool:
    """Whether ``line`` goes on with the sentence ``previous`` left open: neither is code, the
    previous line ends with no sentence end and this one opens in lower case. Such a line is
    the same paragraph though it measures a little smaller: a short last line set mostly in
    the typewriter face (``instead of ffi_prep_cif.``, ``not ‘furry rat’.``) does."""
    return (
        not previous.mono
        and not line.mono
        and not _SENTENCE_END.search(previous.text.rstrip())
        and line.text[:1].islower()
    )


def _emphasis_runs_on(previous: Line, line: Line) -> bool:
    """Whether a bold (italic) line wrapped into ``line``, which opens in that face and leaves
    it: a run-in head over two lines ("Unreported social security and" / "Medicare tax on
    wages. If you are"); or a bold phrase that begins inside ``previous`` wrapped onto a line
    set bold throughout ("which long-standing, well-known" / "conventions the team follows").
    It ends no sentence, and ``line``'s first word would not have fit after it; a heading
    stands short of that."""
    bold = (previous.bold and line.opens_bold and not line.bold) or (
        previous.closes_bold and not previous.bold and line.bold
    )
    italic = (previous.italic and line.opens_italic and not line.italic) or (
        previous.closes_italic and not previous.italic and line.italic
    )
    return (
        (bold or italic)
        and not _SENTENCE_END.search(previous.text.rstrip())
        and _wrapped_before(previous, line)
    )


def _wrapped_before(previous: Line, line: Line) -> bool:
    """Whether ``line``'s first word (and a space) would have run past the right edge of the
    two lines had it been set after ``previous``: why a line breaks where it does."""
    text = line.text.strip()
    if not text:
        return False
    per_char = (line.x1 - line.x0) / len(text)
    word = len(text.split()[0]) * per_char
    space = 0.25 * max(line.size, 1.0)
    return previous.x1 + space + word > max(line.x1, previous.x1) - space


def _holds_size_of(previous: Line, line: Line) -> bool:
    """Whether the smaller of two lines holds letters of the other's size: it measures smaller
    only for the typewriter face most of it is in (``‘--binary-files=text’ option.``), no
    smaller type."""
    small, large = (previous, line) if previous.size < line.size else (line, previous)
    return not small.mono and abs(small.largest - large.size) <= 0.05 * large.size


def _sentence_open(previous: Line, line: Line) -> bool:
    """Whether ``line`` goes on with the sentence ``previous`` left open, as far as the two
    tell: no sentence end before, no capital to open a new one (``(/projects/).``, ``‘ms=01``,
    ``--quiet, or --silent option.``), no indent. A capital after an open line is a definition's
    term and its description, or an example and the prose after it, as often as a name going
    on; an indented line after one is a term's description (``Q[exit-code]``, ``(quit) This``)."""
    return (
        not previous.mono
        and not line.mono
        and not _SENTENCE_END.search(previous.text.rstrip())
        and not line.text[:1].isupper()
        and line.x0 - previous.x0 < _INDENT[0] * min(previous.size, line.size)
    )


def _paragraph_break(previous: Line | Table, line: Line, leading: float) -> bool:
    if isinstance(previous, Table):
        return True
    if previous.rotated != line.rotated:
        return True
    if previous.column != line.column:
        return not line.goes_on  # a column break inside a sentence is no paragraph break
    gap = line.top - previous.bottom
    size = max(min(previous.size, line.size), 1.0)
    if gap > (max(leading, 0.0) + _PARAGRAPH_GAP) * size or gap < -2 * size:
        return True
    # Another weight or slant parts paragraphs (a title over its byline, "by Anonymous"),
    # unless a bold or italic run wraps into the line: a run-in head over two lines.
    # Not inside a listing: a code line's face is its syntax colouring (a comment in italic,
    # a line that opens with ``return`` in bold).
    emphasis = previous.bold != line.bold or previous.italic != line.italic
    if emphasis and not (previous.mono and line.mono) and not _emphasis_runs_on(previous, line):
        return True
    apart = abs(previous.size - line.size)
    if apart > 0.05 * size and not (
        (apart <= _RUN_ON_SIZE * size and _runs_on(previous, line))
        or (
            apart <= _MIXED_SIZE * size
            and _holds_size_of(previous, line)
            and _sentence_open(previous, line)
        )
    ):
        return True
    # Typeset manuals part paragraphs by less: a small extra space or a first-line indent,
    # after a sentence's end (never inside code, whose indents are its own).
    if previous.mono or line.mono or not _SENTENCE_END.search(previous.text.rstrip()):
        return False
    if gap > (max(leading, 0.0) + _PARSKIP) * size:
        return True
    if line.text[:1] in _DOT_BULLETS and previous.text[:1] in _DOT_BULLETS:
        return False  # a list item under another, indented: its sublist, not a new paragraph
    return _INDENT[0] * size <= line.x0 - previous.x0 <= _INDENT[1] * size


# -- headings ---------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def _outline(pdf: pypdfium2.PdfDocument) -> list[tuple[int, str, int | None]]:
    """(level from 1, title, 1-based page or None) of each outline entry, in outline order."""
    entries: list[tuple[int, str, int | None]] = []
    try:
        for item in pdf.get_toc(max_depth=64):
            title = (item.get_title() or "").strip()
            if not title:
                continue
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            entries.append((item.level + 1, title, index + 1 if index is not None else None))
            if len(entries) > 5000:
                break
    except Exception:
        return []  # a broken outline is no reason to refuse a readable document
    return entries


#: A heading's leading label: "2.1.8", "A.2", "B.", "IV.", "Chapter 3", "Appendix A".
_LABEL = re.compile(
    r"^\s*(?:(?:chapter|section|part)\s+\S+?[.:]?|appendix\s+[A-Z](?:\.\d+)*\.?:?"
    r"|\d+(?:[.\-]\d+)*\.?|[A-Z](?:\.\d+)+\.?|[A-Z]\.|[IVXLC]+\.)\s+",
    re.IGNORECASE,
)
_LABEL_WORD = re.compile(r"^\s*(?:chapter|appendix|section|part)\s+", re.IGNORECASE)
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen"
    "|fifteen|sixteen|seventeen|eighteen|nineteen|twenty"
)
#: What a book's chapter page sets on its own line(s) above the title: LaTeX's ``Chapter 1``,
#: Sphinx's ``CHAPTER`` / ``ONE``, ``Appendix A``, ``Part II``, in a few languages.
_CHAPTER_WORDS = (
    r"chapter|lecture|lesson|unit|kapitel|chapitre|cap[ií]tulo|capitolo|hoofdstuk|rozdzia[łl]"
    r"|глава"
)
_APPENDIX_WORDS = r"appendix|anhang|annexe|ap[eé]ndice|bijlage|приложение"
_PART_WORDS = r"part|book|teil|partie|parte|deel|часть"
_DIVISION = f"(?:{_CHAPTER_WORDS}|{_APPENDIX_WORDS}|{_PART_WORDS})"
_ORDINAL = rf"(?:\d+|[IVXLCDM]+|[A-Z]|{_NUMBER_WORDS})"
_DIVISION_LABEL = re.compile(rf"{_DIVISION}(?:\s+{_ORDINAL}\.?)?", re.IGNORECASE)
_ORDINAL_LINE = re.compile(rf"{_ORDINAL}\.?", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(_norm(text)))


def _title_keys(text: str) -> set[tuple[str, ...]]:
    """A title's words, with and without its leading label (``2.1.8 Widgets`` is also
    ``Widgets``): an outline entry may carry the number its heading line shows, or not."""
    keys = {_words(text), _words(_LABEL.sub("", text, count=1))}
    keys.add(_words(_LABEL_WORD.sub("", text, count=1)))  # "Appendix A X": the outline's "A X"
    keys.discard(())
    return keys


@dataclass(frozen=True, slots=True)
class _BodyStyle:
    size: float
    bold: bool
    italic: bool

    def stands_out(self, line: _Written, emphasis_floor: float = 0.95) -> bool:
        """Set as a heading is: larger than the body, or bold (italic) where the body is not,
        in type not much smaller than the body's (``emphasis_floor`` of its size)."""
        if line.size >= self.size * _SLIGHTLY_LARGER:
            return True
        emphasis = (line.bold and not self.bold) or (line.italic and not self.italic)
        return emphasis and line.size >= self.size * emphasis_floor


def _body_style(lines: list[_Written]) -> _BodyStyle | None:
    body_lines = [line for line in lines if line.role == "text"]
    if not body_lines:
        return None
    total = sum(len(line.text) for line in body_lines)
    bold = sum(len(line.text) for line in body_lines if line.bold)
    italic = sum(len(line.text) for line in body_lines if line.italic)
    size = _weighted_median([(line.size, len(line.text)) for line in body_lines])
    return _BodyStyle(size, bold * 2 > total, italic * 2 > total)


def _match(
    lines: list[_Written],
    index: int,
    titles: set[tuple[str, ...]],
    body: _BodyStyle,
    cut: bool = False,
) -> int | None:
    """Index of the last line of a heading that reads exactly as one of ``titles`` (with or
    without its label) starting at ``lines[index]``, all of it set in heading type; else None.

    Exact, not a prefix: a body sentence that starts with the title ("Widgets are ...") is
    never the heading; a heading wrapped over up to four lines is. A title the file declares
    may be set in emphasis smaller than the body (Word's bold 11 pt headings over 12 pt text),
    down to ``_DECLARED_EMPHASIS_FLOOR`` of its size; a list item or a sentence in the body's
    own type that reads as the title never is.

    ``cut``: the title is long enough to have been cut short by the file's producer (Word's
    outline keeps 60 characters: "... Road Safety Forum in Melbou"); a heading that starts with
    it, its last word a word's start, is the heading, with the following lines set like it."""
    accumulated: tuple[str, ...] = ()
    for last in range(index, min(index + 4, len(lines))):
        line = lines[last]
        if line.page != lines[index].page or line.role not in ("text", "rotated"):
            return None
        if not body.stands_out(line, _DECLARED_EMPHASIS_FLOOR):
            return None
        accumulated += _words(line.text)
        if not accumulated:
            return None
        keys = _title_keys(" ".join(lines[k].text for k in range(index, last + 1)))
        if keys & titles:
            return last
        if cut and any(_starts_cut(k, t) for t in titles for k in keys):
            return _last_line_set_like(lines, index, last, body)
        if not any(t[: len(k)] == k for t in titles for k in keys):
            return None
    return None


#: An outline title this long may have been cut short by the producer (Word: 60 characters).
_CUT_TITLE = 40


def _starts_cut(words: tuple[str, ...], title: tuple[str, ...]) -> bool:
    """``words`` start with ``title``, whose last word may be cut."""
    n = len(title)
    return (
        len(words) >= n > 0 and words[: n - 1] == title[:-1] and words[n - 1].startswith(title[-1])
    )


def _last_line_set_like(lines: list[_Written], first: int, last: int, body: _BodyStyle) -> int:
    """The last line of the heading running from ``first`` past ``last``: the following lines
    of its page in its type (size, weight), up to four lines in all."""
    head = lines[first]
    while last + 1 < min(first + 4, len(lines)):
        line = lines[last + 1]
        same_type = abs(line.size - head.size) <= 0.3 and line.bold == head.bold
        if line.page != head.page or line.role != head.role or line.paragraph_start:
            break
        if not same_type or not body.stands_out(line, _DECLARED_EMPHASIS_FLOOR):
            break
        last += 1
    return last


def _declared_headings(
    outline: list[tuple[int, str, int | None]],
    tagged: TaggedHeadings,
    lines: list[_Written],
    body: _BodyStyle | None,
    warnings: list[str],
) -> list[HeadingMark]:
    """The headings the file declares, by its outline or its tags, whichever finds more of its
    lines (the outline on a tie); none where it declares none (typography decides then).

    Each with the document's title put above it where it leaves the title out
    (``_under_title``). The tags count with the headings set by hand in a tagged heading's look
    (``_with_lines_set_alike``): a tutorial tagging only its "Table of Contents", as its one
    outline entry, has its lettered sections in that look, and they are its headings too."""
    if body is None:
        return []
    by_outline: list[HeadingMark] = []
    outline_warnings: list[str] = []
    if outline:
        by_outline = _under_title(
            _outline_headings(outline, lines, body, outline_warnings), lines, body
        )
    by_tags: list[HeadingMark] = []
    tag_warnings: list[str] = []
    if tagged.cut_short:
        warnings.append(
            f"the structure tree is larger than {pdf_tags.MAX_ELEMENTS:,} elements: its "
            "headings were not followed"
        )
    if tagged.plausible():
        by_tags = _outline_headings(
            tagged.levelled(), lines, body, tag_warnings, declared_by="tagged headings"
        )
        title: HeadingMark | None = None
        if by_tags and not tagged.has_title:
            # A title set large on the first page and tagged as a paragraph (a form's, a
            # tutorial's whose only tagged heading is its "Table of Contents"): the title an
            # outline leaves out. Tags that start at ``H2`` leave level 1 free for it.
            titled = _under_title(
                by_tags, lines, body, make_room=min(mark.level for mark in by_tags) == 1
            )
            title = titled[0] if len(titled) > len(by_tags) else None
            by_tags = titled
        by_tags = _with_lines_set_alike(by_tags, lines, title)
    if len(by_tags) > len(by_outline):
        warnings += tag_warnings
        return by_tags
    warnings += outline_warnings
    return by_outline


def _style_key(line: _Written) -> tuple[float, bool, bool, bool]:
    return (round(line.size * 2) / 2, line.bold, line.italic, line.mono)


def _with_lines_set_alike(
    marks: list[HeadingMark], lines: list[_Written], title: HeadingMark | None = None
) -> list[HeadingMark]:
    """The tagged headings, and the headings typography finds in the type of one of them, at
    its level: an author who gave some headings a heading style and set others of that look by
    hand ("C. SLEEP SCHEDULE" tagged ``H2``, "A. SLEEP ENVIRONMENT" above it a paragraph in the
    same bold capitals; Word's appendices styled by hand). ``title``, the one ``_under_title``
    found: a line in its look on its own page is more of the cover ("Clinical Guidance / For
    the Assessment of / Bed Rails"), on a later page a part's title."""
    if not marks:
        return marks
    first_line = {line.start: line for line in lines}
    cover = first_line.get(title.start) if title is not None else None
    levels: dict[tuple[float, bool, bool, bool], int] = {}
    for mark in marks:
        if (line := first_line.get(mark.start)) is not None:
            levels.setdefault(_style_key(line), mark.level)
    taken = [(mark.start, mark.end) for mark in marks]
    alike: list[HeadingMark] = []
    for found in _typographic_headings(lines):
        line = first_line.get(found.start)
        level = levels.get(_style_key(line)) if line is not None else None
        if level is None or any(s < found.end and found.start < e for s, e in taken):
            continue
        if (
            cover is not None
            and line is not None
            and (line.page, _style_key(line)) == (cover.page, _style_key(cover))
        ):
            continue  # in the title's look on the title's page: more of the cover
        alike.append(HeadingMark(found.start, found.end, level, found.text))
    return sorted(marks + alike, key=lambda mark: mark.start)


def _outline_headings(
    entries: list[tuple[int, str, int | None]],
    lines: list[_Written],
    body: _BodyStyle,
    warnings: list[str],
    declared_by: str = "outline entries",
) -> list[HeadingMark]:
    """Each outline entry on the line(s) of its page that read as its title in heading type,
    at the outline's level; the heading's text is the line's (``2.1.8 Widgets``)."""
    marks: list[HeadingMark] = []
    used: set[int] = set()
    missing = 0
    by_page: dict[int, list[int]] = {}
    for i, line in enumerate(lines):
        if line.role in ("text", "rotated"):
            by_page.setdefault(line.page, []).append(i)
    everywhere = [i for ids in by_page.values() for i in ids]
    for level, title, page in entries:
        titles = _title_keys(title)
        found = None
        if titles:
            for i in by_page.get(page, []) if page is not None else everywhere:
                if i in used:
                    continue
                last = _match(lines, i, titles, body, cut=len(title) >= _CUT_TITLE)
                if last is not None:
                    found = (i, last)
                    break
        if found is None:
            missing += 1
            continue
        first, last = found
        first = _division_label_above(lines, first, body, used)
        used.update(range(first, last + 1))
        text = _joined_heading(" ".join(lines[k].text.split()) for k in range(first, last + 1))
        marks.append(HeadingMark(lines[first].start, lines[last].end, min(max(level, 1), 6), text))
    if missing:
        warnings.append(f"{missing} {declared_by} were not found in the text")
    marks.sort(key=lambda m: m.start)
    return marks


#: A heading's line of at least this many characters (spaces aside) ran to the width it was
#: set in, and a Chinese or Japanese line of it goes on in the next with no space; a shorter one
#: was broken there (names one under the other on a title slide).
_FULL_HEADING_LINE = 8


def _full_heading_line(line: str) -> bool:
    return len(line) - line.count(" ") >= _FULL_HEADING_LINE


def _code_indents(items: list[Line | Table]) -> dict[int, int]:
    """How many spaces each line of a code listing is indented by, by the line's id: its left
    edge past the listing's leftmost line, in the typewriter face's character widths. A
    listing is a run of lines in that face, one after another in a column, blank lines between
    them included: YAML and Python mean their indentation, and a PDF draws it as a position."""
    indents: dict[int, int] = {}
    run: list[Line] = []
    for item in [*items, None]:
        if _listing_line(item) and (
            not run or (item.column == run[-1].column and item.page == run[-1].page)
        ):
            run.append(item)
            continue
        widths = sorted((ln.x1 - ln.x0) / len(ln.text) for ln in run if len(ln.text) >= 4)
        if len(run) >= 2 and widths:
            advance = widths[len(widths) // 2]
            left = min(ln.x0 for ln in run)
            for ln in run:
                spaces = round((ln.x0 - left) / advance) if advance > 0 else 0
                if 0 < spaces <= _MAX_CODE_INDENT:
                    indents[id(ln)] = spaces
        run = [item] if _listing_line(item) else []
    return indents


def _listing_line(item: Line | Table | None) -> TypeGuard[Line]:
    """A line of a code listing: set in the typewriter face throughout, upright, not blank."""
    return isinstance(item, Line) and item.mono and not item.rotated and bool(item.text.strip())


#: More than this many spaces is no indentation (a line set apart, a column of its own).
_MAX_CODE_INDENT = 40


def _ends_compound_hyphen(text: str) -> bool:
    return len(text) >= 2 and text[-1] == "-" and text[-2].isalnum()


def _joined_heading(lines: Iterable[str]) -> str:
    """A heading's lines as one line (``pdf_layout.join_wrapped``); a line that ends in a
    compound's kept hyphen goes on without a space (``self-`` + ``contained``)."""
    parts: list[str] = []
    for line in lines:
        if parts and _ends_compound_hyphen(parts[-1]):
            parts[-1] += line
        else:
            parts.append(line)
    return join_wrapped((line, _full_heading_line(line)) for line in parts)


def _division_label_above(
    lines: list[_Written], first: int, body: _BodyStyle, used: set[int]
) -> int:
    """Where a heading starts once the label its page sets above the title is taken in
    (``Chapter 1`` over ``Where Rivers Begin``; ``CHAPTER`` / ``ONE`` over ``QUICKSTART``), so
    the label reads as part of its heading, not as the last line of the section before."""

    def label_line(k: int) -> bool:
        line = lines[k]
        return (
            k not in used
            and line.page == lines[first].page
            and line.role == "text"
            and body.stands_out(line)
        )

    above = first - 1
    if above < 0 or not label_line(above):
        return first
    if _is_division_label(lines[above].text):
        return above
    if (
        _is_ordinal_line(lines[above].text)
        and above > 0
        and label_line(above - 1)
        and _is_division_label(lines[above - 1].text)
    ):
        return above - 1
    return first


def _is_division_label(text: str) -> bool:
    """``Chapter 1``, ``Appendix A``, ``CHAPTER``: a division's label line."""
    return _DIVISION_LABEL.fullmatch(text.strip()) is not None


def _is_ordinal_line(text: str) -> bool:
    """``ONE``, ``II``: the number a bare label line (``CHAPTER``) has on the line below."""
    return _ORDINAL_LINE.fullmatch(text.strip()) is not None


def _division_labels(lines: list[_Written], candidates: list[int]) -> set[int]:
    """The candidate lines that are a division's label over the title candidate right after
    them on the same page (``Chapter 1`` / ``Where Rivers Begin``; ``CHAPTER`` / ``ONE`` /
    ``QUICKSTART``): read as part of that title's heading, never as a heading level."""
    is_candidate = set(candidates)
    labels: set[int] = set()
    for i in candidates:
        text = lines[i].text
        bare_word_above = i - 1 in labels and _is_division_label(lines[i - 1].text)
        if not (_is_division_label(text) or (bare_word_above and _is_ordinal_line(text))):
            continue
        nxt = i + 1
        if nxt in is_candidate and lines[nxt].page == lines[i].page:
            labels.add(i)
    return labels


def _under_title(
    headings: list[HeadingMark], lines: list[_Written], body: _BodyStyle, make_room: bool = True
) -> list[HeadingMark]:
    """The outline's headings under the document's title, where the outline leaves it out.

    A book's or manual's outline starts at its first chapter, and the title page's title
    (``GNU Wget 1.24.5``, ``Comparing and Merging Files``) is then no heading: its chunks would
    carry no document name, where the same manual's HTML carries its ``<h1>``. The title is
    the first page's first line in about its largest type before the first heading, larger than
    the body and mostly letters (with the lines of its size that follow it, up to three); the
    outline's levels move one down under it (``make_room``; else they stay, level 1 free).
    """
    if not headings:
        return headings
    first_page, first_heading = lines[0].page, headings[0].start
    before = [
        line
        for line in itertools.takewhile(
            lambda line: line.page == first_page and line.end <= first_heading, lines
        )
        if line.role == "text"
    ]
    if not before:
        return headings
    candidates = [
        i
        for i, line in enumerate(before)
        if line.size >= body.size * _LARGER and _mostly_letters(line.text)
    ]
    if not candidates:
        return headings  # the first page's type is the body's: no title page
    largest = max(before[i].size for i in candidates)
    # The first line in about the largest type: a version or date line set larger is no title.
    at = next(i for i in candidates if before[i].size >= largest * 0.9)
    run = [before[at]]
    for line in before[at + 1 : at + _MAX_TITLE_LINES]:
        if abs(line.size - run[0].size) > 0.5:
            break
        run.append(line)
    text = _joined_heading(" ".join(line.text.split()) for line in run)
    if not _looks_like_heading(text):
        return headings
    title = HeadingMark(run[0].start, run[-1].end, 1, text)
    if not make_room:
        return [title, *headings]
    return [title] + [
        HeadingMark(h.start, h.end, min(h.level + 1, MAX_HEADING_LEVEL), h.text) for h in headings
    ]


def _mostly_letters(text: str) -> bool:
    """Half or more of the non-space characters are letters (not ``2021-09-20 v1.9a``)."""
    shown = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in shown) * 2 >= len(shown) > 0


def _weighted_median(values: list[tuple[float, int]]) -> float:
    ordered = sorted(values)
    half = sum(w for _, w in ordered) / 2
    seen = 0
    for value, weight in ordered:
        seen += weight
        if seen >= half:
            return value
    return ordered[-1][0] if ordered else 0.0


def _looks_like_heading(text: str) -> bool:
    if not (2 <= len(text) <= _MAX_HEADING_CHARS) or not any(c.isalpha() for c in text):
        return False
    if len(text.split()) > _MAX_HEADING_WORDS or _CAPTION.match(text):
        return False
    if text.count(",") >= 2 or "@" in text or "http" in text.lower():
        return False  # author lists, affiliations, addresses
    if text.startswith("(") and text.endswith(")"):
        return False  # an aside: "(Please select all that apply)"
    if _SIGNATURE.search(text):
        return False  # a function's definition line in an API reference
    if _formula(text):
        return False  # a displayed equation, set larger than the text around it
    if text[0] in _BULLETS:
        return False  # a list item: a slide's bullets are set as large as headings elsewhere
    return text[-1] not in ".,;" or bool(_NUMBERED.match(text) and len(text.split()) <= 2)


def _formula(text: str) -> bool:
    """A line of a displayed formula: a relation or an operator of mathematics (``=``, ``∑``,
    ``≤``, ``−``; not an arrow) and no word of four letters or more, or nothing but names of
    one or two letters (``dx``, ``C z``: a fraction's or a limit's part on a line of its own).
    "Proof for n ≥ 3" and "3 × 3 matrices" are headings; "a²+b²=c²" is none."""
    runs = _LETTER_RUN.findall(text)
    if any(len(run) >= 4 for run in runs):
        return False
    if any(
        unicodedata.category(c) == "Sm" and c not in _PLAIN_MATH and not "\u2190" <= c <= "\u21ff"
        for c in text
    ):
        return True
    # Latin names only: two-character words of Chinese or Japanese are words ("第1章 概要").
    short = bool(runs) and all(len(run) <= 2 and run.isascii() for run in runs)
    return short and not text.isupper() and (len(runs) > 1 or runs[0].islower())


def _title_case(text: str) -> bool:
    """Every word of four letters or more capitalised ("Boots Self-Locking Nut")."""
    long_words = [w for w in _LETTER_RUN.findall(text) if len(w) >= 4]
    return bool(long_words) and all(w[0].isupper() for w in long_words)


#: Lines of one heading style in a row, with no body text between them, that are no headings.
_LABEL_RUN = 3


def _without_label_runs(
    lines: list[_Written], candidates: list[tuple[int, tuple[float, bool, bool]]], body: float
) -> list[tuple[int, tuple[float, bool, bool]]]:
    """The candidates less runs of ``_LABEL_RUN`` or more of one style on one page with no
    body-size text between them (a line of another heading style counts as text): a syntax
    diagram's lines between their smaller call-outs, a cover's bullet list, a form's labels.
    A heading opens text. A heading wrapped onto the next line is one of the run, not two;
    numbered lines ("4. DISCUSSION", "5. ADJOURNMENT": an agenda's items) stay headings."""
    style_of = dict(candidates)
    by_style: dict[tuple[float, bool, bool], list[int]] = {}
    for index, style in candidates:
        by_style.setdefault(style, []).append(index)
    dropped: set[int] = set()
    for style, indexes in by_style.items():
        run, units = [indexes[0]], 1
        for before, after in zip(indexes, [*indexes[1:], None], strict=True):
            if (
                after is not None
                and lines[after].page == lines[before].page
                and not any(
                    _opens_text(lines[k], style_of.get(k), style, body)
                    for k in range(before + 1, after)
                )
            ):
                run.append(after)
                units += not _wrapped_onto(lines[before], lines[after], after - before)
                continue
            if units >= _LABEL_RUN and not all(_NUMBERED.match(lines[i].text.strip()) for i in run):
                dropped.update(run)
            if after is not None:
                run, units = [after], 1
    return [c for c in candidates if c[0] not in dropped]


#: A line that opens with an item's number ("4. ", "1.2 ", "B. ") starts a heading of its own.
_ITEM_NUMBER = re.compile(r"^(\d+\.(\d+\.?)*|[A-Z]\.|[IVX]+\.)\s")


def _opens_text(
    line: _Written,
    line_style: tuple[float, bool, bool] | None,
    style: tuple[float, bool, bool],
    body: float,
) -> bool:
    """Whether ``line``, between two candidate headings of ``style``, is text they open: a line
    of body size, or a candidate of another style (``line_style``)."""
    if line.role != "text":
        return False
    if line_style is not None:
        return line_style != style
    return line.size >= body * 0.95 and any(c.isalpha() for c in line.text)


def _wrapped_onto(line: _Written, following: _Written, apart: int) -> bool:
    """Whether ``following`` (``apart`` lines on) goes on with the heading ``line`` wraps."""
    return (
        apart == 1
        and following.page == line.page
        and following.top - line.bottom < 0.9 * following.size
        and not _ITEM_NUMBER.match(following.text.strip())
    )


def _heading_levels(
    found: list[tuple[int, tuple[float, bool, bool]]],
) -> dict[tuple[float, bool, bool], int]:
    """Each heading style's rank (its level, up to ``MAX_HEADING_LEVEL``): larger first, bold
    before regular. Styles seen on the first page only and larger than every style after it
    (a cover's or title block's title, subtitle, edition) share rank 1, so that a cover of
    many sizes does not push the body's headings down to level 6, where they would all be
    siblings."""
    styles = sorted({style for _, style in found}, key=lambda s: (-s[0], not s[1], not s[2]))
    first = min((page for page, _ in found), default=0)
    later = {style for page, style in found if page != first}
    largest_later = max((style[0] for style in later), default=None)
    cover = {
        style
        for style in styles
        if style not in later and largest_later is not None and style[0] > largest_later
    }
    level_of = {style: 1 for style in cover}
    rank = 1 if cover else 0
    for style in styles:
        if style not in cover:
            rank += 1
            level_of[style] = rank
    return level_of


#: A heading set in the typewriter face measures this much of the heading's size: a web page's
#: ``<code>`` is 0.9 em of what holds it (an ``h4`` of body size gives 0.9 of the body).
_CODE_FACE_SIZE = 0.85
#: A name of code: ``rate()``, ``count_values``, ``os.path.join``, ``std::vec``, ``<rule>``.
_CODE_NAME = re.compile(r"[\w.:@$<>-]+(?:\(\))?")


def _code_face_heading(lines: list[_Written], i: int, body: float) -> bool:
    """Whether a line set in the typewriter face is a heading, not code: an API reference's
    ``abs()`` or ``sum`` over its description (a web page's ``<h2><code>abs()</code></h2>``).
    It is one name (a call's empty parentheses allowed), standing alone, larger than the body
    or bold; a line of a listing has lines of its face and size beside it, and a bold line of
    code is a statement (``BEGIN { count = 0 }``), no name."""
    line = lines[i]
    if not _CODE_NAME.fullmatch(line.text.strip()):
        return False
    for k in (i - 1, i + 1):
        if 0 <= k < len(lines) and lines[k].mono and abs(lines[k].size - line.size) < 0.5:
            return False
    return line.size >= body * _LARGER or (line.bold and line.size >= body * _CODE_FACE_SIZE)


def _typographic_headings(lines: list[_Written]) -> list[HeadingMark]:
    body_lines = [line for line in lines if line.role == "text"]
    if not body_lines:
        return []
    weights: Counter[float] = Counter()
    bold_chars = total = 0
    for line in body_lines:
        weights[round(line.size * 2) / 2] += len(line.text)
        total += len(line.text)
        bold_chars += len(line.text) if line.bold else 0
    body = _weighted_median([(line.size, len(line.text)) for line in body_lines])
    body_bold = bold_chars * 2 > total
    candidates: list[tuple[int, tuple[float, bool, bool]]] = []
    for i, line in enumerate(lines):
        if line.role != "text" or not _looks_like_heading(line.text.strip()):
            continue
        if line.mono and not _code_face_heading(lines, i, body):
            continue  # code is no heading
        wrapped = bool(candidates) and candidates[-1][0] == i - 1
        if not (line.paragraph_start or wrapped):
            continue
        size = line.size
        following = lines[i + 1] if i + 1 < len(lines) else None
        standalone = following is None or following.paragraph_start
        if size >= body * _LARGER or (size >= body * _SLIGHTLY_LARGER and standalone):
            candidates.append((i, (round(size * 2) / 2, line.bold, line.italic)))
        elif (
            ((line.bold and not body_bold) or (line.italic and _title_case(line.text)))
            and size >= body * (_CODE_FACE_SIZE if line.mono else 0.95)
            and len(line.text) <= 90
            and len(line.text.split()) <= 12
            and not line.text.rstrip().endswith("?")
            and (following is None or following.paragraph_start)
        ):
            # Bold at body size, standing alone: below every larger size; italic only in Title
            # Case (an italic sentence is emphasis, a code comment or a term: no heading).
            candidates.append((i, (0.0, line.bold, line.italic)))
    # Where too much stands out (a third of the text), typography says nothing: first the
    # body-size emphasis goes, then everything.
    total_chars = sum(len(line.text) for line in body_lines)

    def too_many(found: list[tuple[int, tuple[float, bool, bool]]]) -> bool:
        return sum(len(lines[i].text) for i, _ in found) > total_chars / 3

    if too_many(candidates):
        candidates = [c for c in candidates if c[1][0] > 0]
        if too_many(candidates):
            return []
    # After that measure: a form whose every label stands out says nothing, runs or not.
    candidates = _without_label_runs(lines, candidates, body)
    labels = _division_labels(lines, [i for i, _ in candidates])
    level_of = _heading_levels(
        [(lines[i].page, style) for i, style in candidates if i not in labels]
    )
    marks: list[HeadingMark] = []
    origins: list[tuple[tuple[float, bool, bool], str | None]] = []  # per mark: style, label
    previous: tuple[int, tuple[float, bool, bool]] | None = None
    label: tuple[int, str] | None = None  # (start, text) of the label lines above a title
    for index, style in candidates:
        line = lines[index]
        if index in labels:
            text = line.text.strip()
            label = (line.start, text) if label is None else (label[0], f"{label[1]} {text}")
            previous = None
            continue
        if label is not None:
            text = f"{label[1]} {line.text.strip()}"
            marks.append(HeadingMark(label[0], line.end, _capped(level_of[style]), text))
            origins.append((style, label[1]))
            label, previous = None, (index, style)
            continue
        prev_line = lines[index - 1] if index else None
        if (
            previous is not None
            and prev_line is not None
            and previous[1] == style
            and _wrapped_onto(prev_line, line, index - previous[0])
        ):  # a heading wrapped onto a second line: one heading
            last = marks[-1]
            if _ends_compound_hyphen(last.text):
                joined = last.text + line.text.strip()
            else:
                ran_on = _full_heading_line(prev_line.text.strip())
                joined = join_wrapped(((last.text, ran_on), (line.text.strip(), False)))
            marks[-1] = HeadingMark(last.start, line.end, last.level, joined)
        else:
            text = line.text.strip()
            marks.append(HeadingMark(line.start, line.end, _capped(level_of[style]), text))
            origins.append((style, None))
        previous = (index, style)
    marks = _levels_by_numbering(marks, [(s, level_of[s], label) for s, label in origins])
    return [m for m in marks if len(m.text) <= _MAX_HEADING_CHARS * 2]


#: A section number opening a heading: ``2``, ``2.1``, ``2.1.3.``, ``1.Scope`` (parts of one or
#: two digits, so that a year or a quantity is none).
_SECTION_NUMBER = re.compile(r"(\d{1,2}(?:\.\d{1,2}){0,5})(?:\.?\s+\S|\.(?=[^\W\d_]))")
#: A division label that names a chapter (numbered like ``1``, its sections ``1.1``); a part,
#: a book or an appendix is not counted in the sections' numbers.
_CHAPTER_LABEL = re.compile(rf"(?:{_CHAPTER_WORDS})\b", re.IGNORECASE)
_APPENDIX_LABEL = re.compile(rf"(?:{_APPENDIX_WORDS})\b", re.IGNORECASE)
_NUMBER_WORD_VALUES = {word: n for n, word in enumerate(_NUMBER_WORDS.split("|"), start=1)}


def _levels_by_numbering(
    marks: list[HeadingMark], styles: list[tuple[tuple[float, bool, bool], int, str | None]]
) -> list[HeadingMark]:
    """Heading levels from the headings' section numbers, where they number a hierarchy.

    Levels by type size alone are ranks of styles: where a chapter's title is set in the same
    type as its sections (Sphinx's ``CHAPTER ONE`` / ``QUICKSTART`` and ``1.1 A Minimal
    Application``), or one section in another style than its siblings, the ranks make
    siblings of parent and child. Section numbers say the nesting outright: ``1.4.1`` is under
    ``1.4``, under chapter 1. A number counts when it follows the one before it (the next at
    its depth or a first child, gaps allowed: ``1.`` after ``2.3`` is a list item, not a
    section; a first number the next does not follow is none: a cover's ``12 Months``), and
    only where at least three count and one is two parts deep. ``styles``:
    each mark's style, the style's rank (``_heading_levels``, not capped) and its division
    label, if any.
    """
    numbers: list[tuple[int, ...] | None] = []
    current: tuple[int, ...] = ()
    first: int | None = None  # the index of the only number counted so far, if one
    for index, (mark, (_, _, label)) in enumerate(zip(marks, styles, strict=True)):
        number = _chapter_number(label, current) if label else _section_number(mark.text)
        if number is not None and not _follows(number, current) and first is not None:
            numbers[first] = None  # a lone first number the next does not follow: no section's
            current = ()
        if number is not None and _follows(number, current):
            first = index if not current else None
            current = number
        else:
            number = None
        numbers.append(number)
    numbered = [(i, n) for i, n in enumerate(numbers) if n]
    if len(numbered) < 3 or not any(len(n) > 1 for _, n in numbered):
        return marks
    ranks = [rank for _, rank, _ in styles]
    tops = [ranks[i] for i, n in numbered if len(n) == 1]
    base = min(tops) if tops else max(1, min(ranks[i] - len(n) + 1 for i, n in numbered))
    placed = {i: _capped(base + len(n) - 1) for i, n in numbered}
    # An unnumbered heading: as the numbered ones of its style mostly are; a style of none
    # below every numbered heading of a style ranked above it (its own rank where none is).
    by_style: dict[tuple[float, bool, bool], Counter[int]] = {}
    for i, _ in numbered:
        by_style.setdefault(styles[i][0], Counter())[placed[i]] += 1
    below_ranked: dict[int, int] = {}  # rank -> the level an unnumbered style of it takes
    leveled: list[HeadingMark] = []
    for i, (mark, (style, rank, label)) in enumerate(zip(marks, styles, strict=True)):
        level = placed.get(i)
        if level is None and label is not None and _APPENDIX_LABEL.match(label):
            level = _capped(base)  # an appendix stands beside the chapters
        if level is None and style in by_style:
            level = by_style[style].most_common(1)[0][0]
        if level is None:
            if rank not in below_ranked:
                above = [placed[j] for j, _ in numbered if ranks[j] < rank]
                below_ranked[rank] = _capped(max(above) + 1 if above else rank)
            level = below_ranked[rank]
        leveled.append(HeadingMark(mark.start, mark.end, level, mark.text))
    return leveled


def _capped(rank: int) -> int:
    return min(rank, MAX_HEADING_LEVEL)


def _section_number(text: str) -> tuple[int, ...] | None:
    found = _SECTION_NUMBER.match(text)
    return tuple(int(part) for part in found.group(1).split(".")) if found else None


def _chapter_number(label: str, current: tuple[int, ...]) -> tuple[int, ...] | None:
    """A chapter label's number (``Chapter 3``, ``CHAPTER ONE``), else the next chapter's; a
    label of a part or an appendix has none."""
    if not _CHAPTER_LABEL.match(label):
        return None
    last = label.split()[-1].rstrip(".").lower()
    if last.isdigit():
        return (int(last),)
    if last in _NUMBER_WORD_VALUES:
        return (_NUMBER_WORD_VALUES[last],)
    return (current[0] + 1,) if current else (1,)


def _follows(number: tuple[int, ...], current: tuple[int, ...]) -> bool:
    """Whether section ``number`` can come after ``current``: later, and a sibling or child of
    ``current`` or of one of its ancestors (``2.4``, ``2.3.1`` or ``3`` after ``2.3``)."""
    if not current:
        return True
    return number > current and number[:-1] == current[: len(number) - 1]
