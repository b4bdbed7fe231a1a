"""OCR of PDF pages without a usable text layer: Tesseract, run locally and offline.

Why Tesseract: measured on the corpus scans and on scans of the English corpus PDFs
(``benchmarks/ocr_bench.py``, BENCHMARKS.md "## OCR") it finds as many of the reference's words
as RapidOCR (whose wheel carries its ONNX models, but which needs onnxruntime, not installed
here), gives a box and a confidence per *word* (RapidOCR: per line), keeps reading order on
turned pages (RapidOCR's falls to 0.1-0.5 there) and costs 3-5 times less CPU a page.

Why orientation: Tesseract's layout analysis assumes upright text; the corpus scans turned by
90 and 180 degrees give no right word without orientation detection. The page is rendered as a
viewer shows it (its ``/Rotate`` applied) and read as it is; when that reading is not clearly
right (few words, low confidence, words not running left to right), Tesseract's OSD says how
the page is turned and the image is turned before it is read again. Where OSD gives up (too
little text) or is unsure, each of the four turns is read and the most confident kept.

Languages (``OcrSettings.auto_languages``, on by default): a page is read with
``OcrSettings.languages`` first; when that reading is not clearly right, OSD also names the
page's script, and a page in a script none of those languages reads (Arabic, Han, Cyrillic...)
is read again with the script's installed language. A Latin page whose words are clearly of
another installed language (``quality.identify_language``: Polish read as English loses every
diacritic) is read again with that language first. Measured on a dense English page, reading
every page with five Latin languages at once (``eng+deu+fra+spa+pol``) costs 1.4 times as
much and still misread a Polish page's first line; identifying the language costs a second
reading only on pages not in the configured languages.

Coordinates: every ``OcrWord.box`` is ``(x0, top, x1, bottom)`` in PDF points on the
*unrotated* page (its user space, ``/Rotate`` not applied), measured from the top-left corner
of the page's crop box, ``top < bottom``: the convention of ``models.PageBox`` with its default
origin ``"top-left"``. So a word's box is where its glyphs would be in a text layer, whatever
turn the image needed to be read.
"""

from __future__ import annotations

import contextvars
import functools
import io
import math
import os
import re
import shutil
import subprocess
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agrag_pipeline.fingerprints import file_sha256
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import ParseTimeoutError

if TYPE_CHECKING:
    import pypdfium2
    from PIL.Image import Image

    from agrag_pipeline.settings import OcrSettings

#: The engine's name in fingerprints.
ENGINE = "tesseract"

#: The four turns (clockwise degrees) a page can need.
ROTATIONS = (0, 90, 180, 270)

#: OSD confidences under this are checked by reading all four turns (OSD's own scale; a
#: correctly detected page of two lines of text scores about 3, a wrong guess well under 1).
MIN_OSD_CONFIDENCE = 1.5

#: A reading of the page as it is counts as upright with at least this many words of three
#: letters or more, most of them along the x axis, and this median confidence (0-100).
UPRIGHT_MIN_WORDS = 3
UPRIGHT_MIN_CONFIDENCE = 80.0

#: Tokens that are only rule lines, underscores or bars: what Tesseract makes of table rules,
#: underlines and scanner edges, never words.
_RULE_TOKEN = re.compile(r"^[\s|_~=\-.,:;'\"`^]+$")

#: A page read with fewer words than this is not worth identifying the language of.
_MIN_WORDS_TO_TELL = 10

#: Tokens without a letter or digit are kept only at this confidence or above.
_SYMBOL_MIN_CONFIDENCE = 60.0


class OcrUnavailableError(RuntimeError):
    """Tesseract, or a language's trained data, is not installed on this machine.

    Not a ``DocumentError``: the document is fine, the machine lacks a part, and every scanned
    page would fail the same way until it is installed.
    """


@dataclass(frozen=True, slots=True)
class OcrWord:
    """One recognised word: its text, box on the unrotated page (points), confidence 0-100.

    ``block`` and ``line`` number Tesseract's layout blocks and text lines on the page, both in
    reading order (``line`` counts across the page, so two words share a line only when they
    are on one); ``paragraph`` likewise counts paragraphs across the page.
    """

    text: str
    box: tuple[float, float, float, float]
    confidence: float
    block: int
    line: int
    paragraph: int = 0


@dataclass(frozen=True, slots=True)
class OcrPage:
    """The words of one page in reading order.

    ``index`` is the page's 0-based index in the document; ``rotation`` the clockwise degrees
    (0, 90, 180, 270) the page, as a viewer shows it, was turned to be read; ``width`` and
    ``height`` the unrotated page's size in points (the space the boxes are in).
    """

    index: int
    rotation: int
    words: list[OcrWord]
    width: float = 0.0
    height: float = 0.0
    #: How the rotation was decided: "upright" (read as it is with high confidence), "osd",
    #: "tried" (OSD unsure: all four turns read, the most confident kept) or "off".
    orientation_source: str = "off"
    warnings: list[str] = field(default_factory=list)
    #: The script OSD saw ("Latin", "Arabic", "Korean", ...), "" when OSD did not run or gave up.
    script: str = ""
    #: The Tesseract languages the kept reading used ("pol+eng").
    languages: str = ""

    @property
    def text(self) -> str:
        """The words joined by spaces within a line and newlines between lines (for tests and
        quick looks; the PDF parser builds its own text layer from the words)."""
        lines: list[list[str]] = []
        last = None
        for word in self.words:
            if word.line != last:
                lines.append([])
                last = word.line
            lines[-1].append(word.text)
        return "\n".join(join_words(words) for words in lines)


def _unspaced(ch: str) -> bool:
    """A character of a script written without spaces between words (Chinese, Japanese), or
    their punctuation."""
    if "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef":
        return True
    return unicodedata.name(ch, "").startswith(("CJK", "HIRAGANA", "KATAKANA"))


def join_words(words: list[str]) -> str:
    """One line's words as its script writes them: separated by spaces, except where both
    sides are Chinese or Japanese (Tesseract splits those lines into words all the same)."""
    out = ""
    for word in words:
        if out and word and not (_unspaced(out[-1]) and _unspaced(word[0])):
            out += " "
        out += word
    return out


# -- engine --------------------------------------------------------------------------------------
#
# Tesseract is run as a subprocess directly rather than through pytesseract: it must run with
# OMP_THREAD_LIMIT=1 (its OpenMP threads halve the speed on a loaded machine: 0.6 s a page with
# one thread, 1.1 s with two, measured here), and setting that in os.environ for pytesseract
# would also pin the embedding model's threads in this process. The image goes in on stdin as
# PGM, the TSV or OSD report comes back on stdout: no temporary files.

_ENV_OVERRIDES = {"OMP_THREAD_LIMIT": "1"}


class _TesseractFailed(RuntimeError):
    """Tesseract exited with an error (its stderr is the message)."""


def _binary() -> str:
    found = shutil.which("tesseract")
    if found is None:
        raise OcrUnavailableError(
            "Tesseract is not installed (no `tesseract` on PATH): scanned PDF pages cannot be "
            f"read; install it with `{_install_hint(['eng'])}`"
        )
    return found


def _execute(
    args: list[str], stdin: bytes | None, timeout: float
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **_ENV_OVERRIDES}
    return subprocess.run(
        [_binary(), *args], input=stdin, capture_output=True, timeout=timeout, env=env, check=False
    )


def _install_hint(languages: list[str]) -> str:
    packages = " ".join(f"tesseract-ocr-{code.lower().replace('_', '-')}" for code in languages)
    return f"apt-get install tesseract-ocr {packages}".rstrip()


@functools.lru_cache(maxsize=1)
def _tesseract() -> tuple[str, Path | None, frozenset[str]]:
    """Version, trained-data folder and installed languages; cached per process."""
    version_run = _execute(["--version"], None, 30)
    first = (version_run.stdout or version_run.stderr).decode("utf-8", "replace").splitlines()
    version = first[0].split()[-1] if first else "unknown"
    listing = _execute(["--list-langs"], None, 30)
    output = listing.stdout.decode("utf-8", "replace")
    folder = re.search(
        r'languages in "([^"]+)"', output + listing.stderr.decode("utf-8", "replace")
    )
    languages = frozenset(line.strip() for line in output.splitlines()[1:] if line.strip())
    return version, Path(folder.group(1)) if folder else None, languages


def check_available(settings: OcrSettings) -> None:
    """Raise ``OcrUnavailableError`` unless Tesseract and every language needed are installed."""
    _, _, installed = _tesseract()
    wanted = list(settings.languages) + (["osd"] if settings.detect_orientation else [])
    missing = [code for code in wanted if code not in installed]
    if missing:
        raise OcrUnavailableError(
            f"Tesseract has no trained data for {', '.join(missing)} (parsing.ocr.languages"
            f"{' and detect_orientation' if 'osd' in missing else ''}; installed: "
            f"{', '.join(sorted(installed)) or 'none'}): install it with "
            f"`{_install_hint([c for c in missing])}`"
        )


#: wordfreq language (``quality.identify_language``) -> Tesseract language (its trained data,
#: Debian's tesseract-ocr-<code>): what a page whose words are of that language is read with.
TESSERACT_LANGUAGES: dict[str, str] = {
    "en": "eng", "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "pt": "por", "nl": "nld",
    "pl": "pol", "cs": "ces", "sk": "slk", "sl": "slv", "sh": "hrv", "sv": "swe", "da": "dan",
    "nb": "nor", "fi": "fin", "hu": "hun", "ro": "ron", "tr": "tur", "id": "ind", "ms": "msa",
    "ca": "cat", "lt": "lit", "lv": "lav", "vi": "vie", "fil": "fil", "is": "isl",
    "ru": "rus", "uk": "ukr", "bg": "bul", "mk": "mkd", "el": "ell", "ar": "ara", "fa": "fas",
    "ur": "urd", "he": "heb", "hi": "hin", "bn": "ben", "ta": "tam",
}  # fmt: skip


def _auto_languages(installed: frozenset[str]) -> list[str]:
    """The installed languages ``auto_languages`` may choose, in a stable order."""
    candidates = {c for codes in SCRIPT_LANGUAGES.values() for c in codes}
    candidates.update(TESSERACT_LANGUAGES.values())
    return sorted(c for c in candidates if c in installed)


def engine_fingerprint(settings: OcrSettings) -> dict[str, str]:
    """What decides the OCR text: engine, version, languages (trained data hashed), settings.

    With ``auto_languages`` every installed language it may choose is part of it: installing
    one changes what a page could be read with.

    Part of the sections' parse fingerprint. Never raises: without Tesseract the version reads
    ``"unavailable"`` (the Dagster definitions compute this at load, and must load anyway).
    """
    base = {
        "engine": ENGINE,
        "enabled": str(settings.enabled).lower(),
        "languages": "+".join(settings.languages),
        "dpi": str(settings.dpi),
        "min_confidence": f"{settings.min_confidence:g}",
        "detect_orientation": str(settings.detect_orientation).lower(),
        "auto_languages": str(settings.auto_languages).lower(),
    }
    if settings.require_text:  # only when set, so the default keeps stored parses current
        base["require_text"] = "true"
    if not settings.enabled:
        return base
    try:
        version, folder, installed = _tesseract()
    except OcrUnavailableError:
        return {**base, "version": "unavailable"}
    base["version"] = version
    needed = list(settings.languages) + (["osd"] if settings.detect_orientation else [])
    if settings.auto_languages:
        needed += [c for c in _auto_languages(installed) if c not in needed]
    for code in needed:
        path = folder / f"{code}.traineddata" if folder else None
        if path is not None and code in installed and path.is_file():
            base[f"traineddata.{code}"] = file_sha256(path)
        else:
            base[f"traineddata.{code}"] = "missing"
    return base


# -- recognition -------------------------------------------------------------------------------


def _turn(image: Image, degrees: int) -> Image:
    """``image`` turned clockwise by ``degrees`` (a multiple of 90)."""
    from PIL import Image as PILImage

    transpose = {
        90: PILImage.Transpose.ROTATE_270,  # PIL names counter-clockwise turns
        180: PILImage.Transpose.ROTATE_180,
        270: PILImage.Transpose.ROTATE_90,
    }
    return image if degrees % 360 == 0 else image.transpose(transpose[degrees % 360])


def _unturn(a: float, b: float, turn: int, width: float, height: float) -> tuple[float, float]:
    """A point of an image turned clockwise by ``turn`` from a ``width`` x ``height`` image,
    back in the unturned image's coordinates."""
    if turn == 90:
        return b, height - a
    if turn == 180:
        return width - a, height - b
    if turn == 270:
        return width - b, a
    return a, b


#: Skew (degrees) the projection search covers either way, its coarse and fine steps, and the
#: least skew worth straightening: Tesseract reads a page skewed by 0.5 degrees as well as a
#: straight one, and loses lines from about 2-3 degrees (a page skewed by 10 gives no word).
MAX_SKEW = 20.0
_SKEW_COARSE_STEP = 1.0
_SKEW_FINE_STEP = 0.1
MIN_SKEW = 0.5

#: The page is measured at most this many pixels on its longer side (a 200 dpi Letter page is
#: halved) and on at most this many ink pixels (every n-th kept): the cost stays bounded.
_SKEW_MAX_SIDE = 1200
_SKEW_MAX_INK = 250_000


def estimate_skew(image: Image) -> float:
    """How many degrees the text lines of ``image`` (grayscale) run counter-clockwise from the
    horizontal, within ``MAX_SKEW``; 0.0 when the page has too little ink to tell.

    Projection profile: the ink pixels of a downscaled, binarised page are projected onto the
    axis across the lines at each candidate angle (1-degree steps, then 0.1 degrees around the
    best); at the lines' own angle they fall into few narrow bands, so the profile's sum of
    squares peaks there. Each angle costs one ``numpy.bincount`` over the ink pixels, so the
    whole search is bounded by ``_SKEW_MAX_INK`` whatever the page.
    """
    import numpy as np

    factor = max(1, math.ceil(max(image.size) / _SKEW_MAX_SIDE))
    small = image.reduce(factor) if factor > 1 else image
    ink = np.asarray(small) < 128
    ys, xs = np.nonzero(ink)
    if len(ys) < 200 or len(ys) > 0.5 * ink.size:  # blank, or a photograph / inverted page
        return 0.0
    if len(ys) > _SKEW_MAX_INK:
        step = math.ceil(len(ys) / _SKEW_MAX_INK)
        ys, xs = ys[::step], xs[::step]
    yf, xf = ys.astype(np.float64), xs.astype(np.float64)

    def score(degrees: float) -> float:
        theta = math.radians(degrees)
        across = yf * math.cos(theta) + xf * math.sin(theta)
        bins = np.bincount((across - across.min()).astype(np.int64)).astype(np.float64)
        return float(np.dot(bins, bins))

    def best(candidates: list[float]) -> float:
        # Ties go to the angle nearest zero: a straight page stays as it is.
        return max(candidates, key=lambda d: (score(d), -abs(d)))

    coarse = round(MAX_SKEW / _SKEW_COARSE_STEP)
    angle = best([i * _SKEW_COARSE_STEP for i in range(-coarse, coarse + 1)])
    fine = round(_SKEW_COARSE_STEP / _SKEW_FINE_STEP)
    angle = best([angle + i * _SKEW_FINE_STEP for i in range(-fine, fine + 1)])
    return round(angle, 1)


@dataclass(frozen=True, slots=True)
class _Skew:
    """A page image straightened: turned by ``degrees`` clockwise (the measured skew) about its
    centre, grown to keep its corners; ``size`` is the image's size before (to map boxes back)."""

    degrees: float
    size: tuple[int, int]
    straightened_size: tuple[int, int]

    def back(self, x: float, y: float) -> tuple[float, float]:
        """A point of the straightened image in the image before it was straightened."""
        theta = math.radians(self.degrees)  # the text ran this far counter-clockwise
        dx, dy = x - self.straightened_size[0] / 2, y - self.straightened_size[1] / 2
        # Undo a clockwise turn by theta (y down): turn counter-clockwise by theta.
        bx = dx * math.cos(theta) + dy * math.sin(theta)
        by = -dx * math.sin(theta) + dy * math.cos(theta)
        return bx + self.size[0] / 2, by + self.size[1] / 2


def _straighten(image: Image) -> tuple[Image, _Skew | None]:
    """``image`` with its skew (``estimate_skew``) turned out when it is over ``MIN_SKEW``; the
    skew, or None when left as is.

    The corners the turn uncovers are filled with the page's most common shade (its paper):
    white corners around a grey page made Tesseract's threshold take the whole page for ink
    and read no word (a grey 200-dpi brochure spread skewed by 3 degrees, measured).
    """
    from PIL import Image as PILImage

    degrees = estimate_skew(image)
    if abs(degrees) < MIN_SKEW:
        return image, None
    histogram = image.histogram()
    paper = max(range(256), key=histogram.__getitem__)
    straight = image.rotate(
        -degrees, resample=PILImage.Resampling.BICUBIC, expand=True, fillcolor=paper
    )
    return straight, _Skew(degrees, image.size, straight.size)


#: When the page being read must be done (``time.monotonic()``), set by ``ocr_page``: the
#: page's budget covers all its Tesseract calls (reading, OSD, the other turns) together.
_PAGE_ENDS_AT: contextvars.ContextVar[float] = contextvars.ContextVar(
    "agrag_ocr_page_ends_at", default=math.inf
)


def _timeout(settings: OcrSettings, index: int) -> tuple[float, str]:
    """Seconds the next Tesseract call may take, and which budget that is (for the message)."""
    deadline = current_deadline()
    deadline.check(f"page {index + 1} (OCR)")
    page_left = min(settings.page_timeout_s, _PAGE_ENDS_AT.get() - time.monotonic())
    if deadline.remaining < page_left:
        return max(deadline.remaining, 0.001), "the document's time budget"
    if page_left <= 0:
        raise ParseTimeoutError(
            deadline.source_key,
            f"OCR of page {index + 1} took over {settings.page_timeout_s:g} s "
            "(parsing.ocr.page_timeout_s)",
        )
    return page_left, "parsing.ocr.page_timeout_s"


def _pgm(image: Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PPM")  # a grayscale ("L") image is written as PGM
    return buffer.getvalue()


def _run(args: list[str], image: Image, index: int, settings: OcrSettings) -> str:
    """Tesseract on ``image`` under the page's time budget; its stdout. A timeout names the page;
    a missing language is ``OcrUnavailableError``; any other failure is ``_TesseractFailed``."""
    timeout, budget = _timeout(settings, index)
    try:
        done = _execute(["-", "stdout", "--dpi", str(settings.dpi), *args], _pgm(image), timeout)
    except subprocess.TimeoutExpired as exc:
        page_budget = budget == "parsing.ocr.page_timeout_s"
        limit = settings.page_timeout_s if page_budget else current_deadline().seconds
        raise ParseTimeoutError(
            current_deadline().source_key,
            f"OCR of page {index + 1} took over {limit:g} s ({budget})",
        ) from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        if "Failed loading language" in message or "couldn't load any languages" in message:
            raise OcrUnavailableError(
                f"Tesseract cannot load {args}: {message.splitlines()[0]}; install the "
                f"languages with `{_install_hint(list(settings.languages))}`"
            )
        raise _TesseractFailed(message or f"tesseract exited with {done.returncode}")
    return done.stdout.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class _Osd:
    rotation: int  # clockwise degrees to turn the image to read it
    confidence: float
    script: str
    script_confidence: float


def _osd(image: Image, index: int, settings: OcrSettings) -> _Osd | None:
    """Tesseract's orientation and script guess, None if it gives up (too little text)."""
    try:
        report = _run(["--psm", "0"], image, index, settings)
    except _TesseractFailed:
        return None  # "Too few characters": a page with little or no text
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in report.splitlines())
    )
    try:
        return _Osd(
            int(fields["Rotate"]) % 360,
            float(fields["Orientation confidence"]),
            fields.get("Script", ""),
            float(fields.get("Script confidence", "0") or 0),
        )
    except (KeyError, ValueError):
        return None


#: Scripts OSD names and the Tesseract languages that read them (Debian tesseract-ocr-<code>).
#: A page in one of these scripts, read with none of its languages, gives garbage: say so.
SCRIPT_LANGUAGES: dict[str, tuple[str, ...]] = {
    "Arabic": ("ara", "fas", "urd", "pus", "uig"),
    "Armenian": ("hye",),
    "Bengali": ("ben", "asm"),
    "Cyrillic": ("rus", "ukr", "bel", "bul", "mkd", "srp", "kaz", "kir", "mon", "tgk", "uzb_cyrl"),
    "Devanagari": ("hin", "mar", "nep", "san"),
    "Ethiopic": ("amh", "tir"),
    "Georgian": ("kat", "kat_old"),
    "Greek": ("ell", "grc"),
    "Gujarati": ("guj",),
    "Gurmukhi": ("pan",),
    "Han": ("chi_sim", "chi_tra", "jpn"),
    "HanS": ("chi_sim",),
    "HanT": ("chi_tra",),
    "Hangul": ("kor",),
    "Hebrew": ("heb", "yid"),
    "Japanese": ("jpn",),
    "Kannada": ("kan",),
    "Khmer": ("khm",),
    "Korean": ("kor",),
    "Lao": ("lao",),
    "Malayalam": ("mal",),
    "Myanmar": ("mya",),
    "Oriya": ("ori",),
    "Sinhala": ("sin",),
    "Tamil": ("tam",),
    "Telugu": ("tel",),
    "Thai": ("tha",),
    "Tibetan": ("bod",),
}


def _script_warning(osd: _Osd | None, index: int, settings: OcrSettings) -> str | None:
    if osd is None or osd.script not in SCRIPT_LANGUAGES:
        return None
    codes = SCRIPT_LANGUAGES[osd.script]
    if any(code in settings.languages for code in codes) or f"script/{osd.script}" in (
        settings.languages
    ):
        return None
    if settings.auto_languages and any(code in _tesseract()[2] for code in codes):
        return None  # read with that language instead (``_page_languages``)
    return (
        f"page {index + 1}: the page looks like {osd.script} script, which none of "
        f"parsing.ocr.languages ({', '.join(settings.languages)}) reads: add e.g. {codes[0]!r} "
        f"(`{_install_hint(list(codes[:1]))}`)"
    )


_TSV_COLUMNS = 12  # level page block par line word left top width height conf text


def _tsv_words(report: str) -> list[tuple[int, int, int, float, float, float, float, float, str]]:
    """Word rows of Tesseract's TSV: (block, par, line, left, top, width, height, conf, text)."""
    rows = []
    for row in report.splitlines()[1:]:
        cells = row.split("\t", _TSV_COLUMNS - 1)
        if len(cells) != _TSV_COLUMNS or cells[0] != "5":  # level 5: a word
            continue
        rows.append(
            (
                int(cells[2]),
                int(cells[3]),
                int(cells[4]),
                float(cells[6]),
                float(cells[7]),
                float(cells[8]),
                float(cells[9]),
                float(cells[10]),
                cells[11],
            )
        )
    return rows


#: A page with fewer dark pixels than this share is blank (scanner specks at most): not read.
_BLANK_INK_SHARE = 1e-4


def _blank(image: Image) -> bool:
    """No ink on the page: reading it (four turns, since OSD gives up) would only find noise."""
    histogram = image.histogram()  # grayscale: 256 bins
    dark = sum(histogram[:128])
    return dark < _BLANK_INK_SHARE * image.width * image.height


@dataclass(slots=True)
class _Read:
    words: list[OcrWord]
    score: float
    #: Words of three letters or more, and how many of them lie along the image's x axis.
    long_words: int = 0
    horizontal: int = 0

    @property
    def confidently_upright(self) -> bool:
        """A reading of the image as it is that needs no orientation check: enough words, read
        with high confidence, running left to right. Measured on the corpus pages: upright
        readings score a median of 96, readings of a turned page 20-37."""
        if self.long_words < UPRIGHT_MIN_WORDS or self.horizontal < 0.8 * self.long_words:
            return False
        confidences = sorted(w.confidence for w in self.words if _long(w.text))
        return confidences[len(confidences) // 2] >= UPRIGHT_MIN_CONFIDENCE


def _long(text: str) -> bool:
    return sum(c.isalnum() for c in text) >= 3


def _read(
    image: Image,
    index: int,
    settings: OcrSettings,
    turn: int,
    unrotated: tuple[float, float],
    page_points: tuple[float, float],
    languages: list[str] | None = None,
    skew: _Skew | None = None,
) -> _Read:
    """Recognise ``image`` (already turned, and straightened by ``skew`` if given) and map its
    word boxes to unrotated page points; in ``languages`` (default: ``settings.languages``)."""
    codes = "+".join(languages or settings.languages)
    try:
        report = _run(["-l", codes, "--psm", "3", "tsv"], image, index, settings)
    except _TesseractFailed:
        return _Read([], 0.0)
    width_px, height_px = unrotated
    sx, sy = page_points[0] / width_px, page_points[1] / height_px
    lines: dict[tuple[int, int, int], int] = {}
    paragraphs: dict[tuple[int, int], int] = {}
    words: list[OcrWord] = []
    score = 0.0
    long_words = horizontal = 0
    for block, par, line, left, top, width, height, confidence, raw in _tsv_words(report):
        text = raw.strip()
        if not text or confidence < settings.min_confidence:
            continue
        if _RULE_TOKEN.match(text) or (
            not any(c.isalnum() for c in text) and confidence < _SYMBOL_MIN_CONFIDENCE
        ):
            continue
        line_no = lines.setdefault((block, par, line), len(lines))
        par_no = paragraphs.setdefault((block, par), len(paragraphs))
        x0, y0, x1, y1 = left, top, left + width, top + height
        if skew is not None:  # the box's corners in the turned image before it was straightened
            corners = [skew.back(x, y) for x in (x0, x1) for y in (y0, y1)]
            x0, x1 = min(c[0] for c in corners), max(c[0] for c in corners)
            y0, y1 = min(c[1] for c in corners), max(c[1] for c in corners)
        xa, ya = _unturn(x0, y0, turn, width_px, height_px)
        xb, yb = _unturn(x1, y1, turn, width_px, height_px)
        box = (
            max(0.0, min(xa, xb) * sx),
            max(0.0, min(ya, yb) * sy),
            min(page_points[0], max(xa, xb) * sx),
            min(page_points[1], max(ya, yb) * sy),
        )
        words.append(OcrWord(text, box, confidence, block, line_no, par_no))
        score += confidence * sum(c.isalnum() for c in text)
        if _long(text):
            long_words += 1
            horizontal += width >= height
    return _Read(words, score, long_words, horizontal)


#: The most pixels a page is rendered with for OCR: an A4 page at the highest ``dpi`` setting
#: (600: 34.8 million) and an A1 drawing at the default 200 (31 million) fit. A larger page
#: (a poster, a map, a page stretched to the 200-inch limit of PDF) is rendered at the
#: resolution that fits: at 200 dpi a 200-inch page took 3.3 GB and timed out.
MAX_RENDER_PIXELS = 40_000_000


def ocr_page(page: pypdfium2.PdfPage, index: int, settings: OcrSettings) -> OcrPage:
    """Render ``page`` at ``settings.dpi``, find its orientation, read its words.

    ``index`` is the page's 0-based index (messages say ``page index + 1``). Raises
    ``OcrUnavailableError`` when Tesseract or a language is missing, ``ParseTimeoutError``
    past ``settings.page_timeout_s`` or the document's time budget.
    """
    check_available(settings)
    token = _PAGE_ENDS_AT.set(time.monotonic() + settings.page_timeout_s)
    try:
        return _ocr_page(page, index, settings)
    finally:
        _PAGE_ENDS_AT.reset(token)


def _ocr_page(page: pypdfium2.PdfPage, index: int, settings: OcrSettings) -> OcrPage:
    left, bottom, right, top = page.get_cropbox()
    page_points = (abs(right - left), abs(top - bottom))
    page_rotation = page.get_rotation() % 360
    warnings: list[str] = []
    fitting = _fitting_dpi(page_points, settings.dpi)
    if fitting < settings.dpi:
        width_in, height_in = (points / 72.0 for points in page_points)
        warnings.append(
            f"page {index + 1} is {width_in:.0f} x {height_in:.0f} in: read by OCR at "
            f"{fitting} dpi, not {settings.dpi} (at most {MAX_RENDER_PIXELS / 1e6:.0f} "
            "million pixels a page)"
        )
        settings = settings.model_copy(update={"dpi": fitting})  # Tesseract is told it too
    # As a viewer shows it (/Rotate applied): the orientation reported is relative to that.
    shown = page.render(scale=settings.dpi / 72.0, grayscale=True).to_pil()
    width_px, height_px = shown.size
    unrotated = (height_px, width_px) if page_rotation in (90, 270) else (width_px, height_px)

    # A skewed scan (a page laid askew on the scanner) is straightened before it is read, each
    # turn measured as it is read (a sideways page's lines run across only once it is turned).
    straightened: dict[int, tuple[Image, _Skew | None]] = {}

    def read(rotation: int, languages: list[str] | None = None) -> _Read:
        turn = (page_rotation + rotation) % 360
        if rotation not in straightened:
            straightened[rotation] = _straighten(_turn(shown, rotation))
        image, skew = straightened[rotation]
        return _read(image, index, settings, turn, unrotated, page_points, languages, skew)

    guess: _Osd | None = None
    if _blank(shown):
        rotation, source, best = 0, "off", _Read([], 0.0)
    elif not settings.detect_orientation:
        rotation, source, best = 0, "off", read(0)
    else:
        # Most scans are upright: read the page as it is first, and only when that reading is
        # not clearly right ask OSD which way it is turned (OSD costs about 0.8 s of a dense
        # page's 2 s; a turned page pays one extra reading instead).
        tried = {0: read(0)}
        if tried[0].confidently_upright:
            rotation, source, best = 0, "upright", tried[0]
        else:
            guess = _osd(shown, index, settings)
            script_warning = _script_warning(guess, index, settings)
            if script_warning:
                warnings.append(script_warning)
            if guess is not None and guess.confidence >= MIN_OSD_CONFIDENCE:
                rotation, source = guess.rotation, "osd"
                best = tried[rotation] if rotation in tried else read(rotation)
            else:
                # OSD gave up or is unsure: read every turn, keep the most confident reading.
                tried.update({r: read(r) for r in ROTATIONS if r not in tried})
                rotation = max(ROTATIONS, key=lambda r: (tried[r].score, -r))
                source, best = "tried", tried[rotation]
    languages = list(settings.languages)
    if settings.auto_languages and best.words:
        if guess is None and settings.detect_orientation and not _in_languages(best, settings):
            # Read "confidently" but not as any configured language (Japanese read as English
            # gives "Python 1990 FCAD HBO Guido"): OSD tells the script.
            guess = _osd(shown, index, settings)
        chosen = _page_languages(guess, best, settings)
        if chosen != languages:
            again = read(rotation, chosen)
            if again.words:
                best, languages = again, chosen
    if not best.words:
        warnings.append(f"page {index + 1}: OCR found no words")
    return OcrPage(
        index=index,
        rotation=rotation,
        words=best.words,
        width=page_points[0],
        height=page_points[1],
        orientation_source=source,
        warnings=warnings,
        script=guess.script if guess is not None else "",
        languages="+".join(languages),
    )


def _fitting_dpi(page_points: tuple[float, float], dpi: int) -> int:
    """``dpi``, or the highest whole resolution at which the page stays within
    ``MAX_RENDER_PIXELS``."""
    area = (page_points[0] / 72.0) * (page_points[1] / 72.0)  # square inches
    if area * dpi * dpi <= MAX_RENDER_PIXELS:
        return dpi
    return max(1, math.floor(math.sqrt(MAX_RENDER_PIXELS / area)))


def _in_languages(reading: _Read, settings: OcrSettings) -> bool:
    """The words read are clearly of one of the configured languages, or too few to tell (a
    page of figures or a caption is not worth asking OSD about)."""
    from agrag_pipeline.parsing import quality

    if sum(sum(c.isalpha() for c in w.text) >= 2 for w in reading.words) < _MIN_WORDS_TO_TELL:
        return True
    language, _ = quality.identify_language(" ".join(w.text for w in reading.words), "Latin")
    return TESSERACT_LANGUAGES.get(language or "") in settings.languages


def _page_languages(guess: _Osd | None, reading: _Read, settings: OcrSettings) -> list[str]:
    """The languages to read a page with (``auto_languages``): the configured ones, led by the
    installed language of the script OSD saw when none of them reads it, or by the installed
    language the words read so far are clearly in (``quality.identify_language``)."""
    from agrag_pipeline.parsing import quality

    _, _, installed = _tesseract()
    configured = list(settings.languages)
    if guess is not None and guess.script in SCRIPT_LANGUAGES:
        codes = SCRIPT_LANGUAGES[guess.script]
        found = [c for c in codes if c in installed]
        if any(c in configured for c in codes) or not found:
            return configured
        return [found[0], *configured]
    text = " ".join(w.text for w in reading.words)
    language, _ = quality.identify_language(text, "Latin")
    code = TESSERACT_LANGUAGES.get(language or "")
    if code is None or code in configured or code not in installed:
        return configured
    return [code, *configured]


__all__ = [
    "ENGINE",
    "OcrPage",
    "OcrUnavailableError",
    "OcrWord",
    "check_available",
    "engine_fingerprint",
    "ocr_page",
]
