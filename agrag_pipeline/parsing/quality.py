"""Reading quality: a score in [0, 1] for how well a document's text was read, and why not 1.

Why: a parse can succeed and still give wrong text (a ligature that lost a letter, two lines
interleaved letter by letter, OCR in the wrong language, text decoded with the wrong code page,
a shrunk scan read as noise), and nothing said so. The score makes such a document stand out:
``parse_document`` computes it once per parse and records it in the document's metadata
(``reading_quality``, ``reading_quality_reasons``, ``language``), stored with the sections and
shown on their partition; the sections asset check ``reading_quality`` warns below
``parsing.quality.warn_below``.

Signals, cheap and linear in the text (a long text is sampled: ``MAX_SAMPLE_CHARS``), measured
for each script that holds a tenth of the letters and weighed by its share:

- **unknown words**: the share of words missing from the word list of the text's language
  (``wordfreq``'s lists: Apache-2.0 code, CC-BY-SA 4.0 data, read at run time, never copied
  here). The language is the script's candidate whose list knows most of the words, if any
  clearly does (``identify_language``). Clean text has unknown words too (names, terms, code):
  only the share beyond ``UNKNOWN_ALLOWANCE`` counts. Chinese, Japanese and Korean, written
  without spaces, are checked character by character;
- **misread words**: distinct lower-case words one letter off a common word ("diferent"):
  rare in clean text, the mark of a ligature that lost a letter or an OCR slip;
- **odd letter sequences**: letter trigrams no word of the language has ("tsheev", two lines'
  letters interleaved; letters decoded wrongly): the signal that still speaks when the words
  are so garbled that no language is recognised;
- **garbled words**: letters of two scripts in one word, letters split by a symbol
  ("p³atnoœci"), an unknown Latin word of five letters without a vowel;
- **mojibake**: text decoded with the wrong code page (``ftfy``'s badness, Apache-2.0);
- **letter-spaced runs** ("d i f f e r e n t"), replacement characters (U+FFFD, ``(cid:N)``,
  private use);
- **unmapped glyphs** a PDF's fonts did not map to characters, **unset characters** its
  fonts, not embedded, left out where no installed font covers them (``pdf_fonts``), and the
  **OCR confidence** of the words OCR read (all measured by the parser, in the document's
  metadata: ``glyphs``, ``unmapped_glyphs``, ``unset_glyphs``, ``ocr_words``,
  ``ocr_confidence``).

Each signal gives a penalty in [0, 1]; the score is the product of ``1 - penalty``, and the
reasons are the signals that lowered it by a point or more, largest first, with examples.
Weights and allowances are measured on the corpus and on each defect (BENCHMARKS.md,
"Reading quality").
"""

from __future__ import annotations

import functools
import gzip
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

#: Keys of what the score records in ``Document.metadata``.
SCORE_KEY = "reading_quality"
REASONS_KEY = "reading_quality_reasons"
LANGUAGE_KEY = "language"
#: Keys the PDF parser records for the score (PDFs and images; absent elsewhere).
GLYPHS_KEY = "glyphs"
UNMAPPED_KEY = "unmapped_glyphs"
UNSET_KEY = "unset_glyphs"
OCR_WORDS_KEY = "ocr_words"
OCR_CONFIDENCE_KEY = "ocr_confidence"

#: A text longer than ``MAX_SAMPLE_CHARS`` is scored on ``SAMPLE_WINDOWS`` windows of
#: ``WINDOW_CHARS`` spread evenly over it, each cut at line (else word) ends, so the score costs
#: the same for a 10 KB chapter as for a 5 MB dump (it was ~90% of a Markdown parse + chunk).
#: The signals a window can miss and a C-level pass finds are counted over the whole text
#: (``_whole_text_counts``). Sizes measured on the corpus and its defects (BENCHMARKS.md,
#: "Reading quality": the verdicts and languages unchanged).
SAMPLE_WINDOWS = 8
WINDOW_CHARS = 256
MAX_SAMPLE_CHARS = SAMPLE_WINDOWS * WINDOW_CHARS
#: Fewer words (characters, for Chinese, Japanese and Korean) than this say nothing about a
#: language: the word signals stay silent.
MIN_WORDS = 20
#: A script is measured when it holds this share of the letters.
MIN_SCRIPT_SHARE = 0.1
#: Share of unknown words clean text has anyway (names, terms, code, abbreviations); corpus
#: documents reach 0.16, tables of names 0.24.
UNKNOWN_ALLOWANCE = 0.2
#: The same for characters of Chinese, Japanese and Korean missing from their lists.
UNKNOWN_CHARACTER_ALLOWANCE = 0.02
#: Misread words are lower case (names are capitalised) and at least this long, counted once
#: each among at least ``MIN_MISREAD_VOCABULARY`` distinct words (one typo in a short note is no
#: defect); clean text has this share anyway (terms one letter off a word: "deref", "toml").
MIN_MISREAD_LETTERS = 5
MIN_MISREAD_VOCABULARY = 50
MISREAD_ALLOWANCE = 0.01
#: Share of letter trigrams no word of the language has in clean text (names, terms, foreign
#: words): corpus documents reach 0.02, a list of the languages of translations 0.08.
SEQUENCE_ALLOWANCE = 0.04
#: A language is recognised when its "small" list knows this share of the words, or a smaller
#: share but clearly more than the runner-up's; the candidates compared are the script's
#: ``_SHORTLIST`` languages whose most frequent words the text uses most. Measured: English
#: prose 0.8-1.0, a Polish invoice read by English OCR 0.49, placeholder Latin (lorem ipsum)
#: 0.28-0.40 with runners-up close behind.
MIN_KNOWN_SHARE = 0.45
MIN_CLEAR_SHARE = 0.3
CLEAR_MARGIN = 1.5
_SHORTLIST = 4
#: How many of a language's most frequent words identify it, and how many count as common
#: (a misread word is one letter away from one of these).
_PROFILE_WORDS = 400
_COMMON_WORDS = 20_000
#: What each signal costs per share of the text it affects (1.0: a share of 0.1 costs 0.1).
_WEIGHTS = {
    "unknown": 2.0,
    "misread": 8.0,
    "sequences": 5.0,
    "garbled": 4.0,
    "mojibake": 8.0,
    "spaced": 0.6,
    "replacement": 10.0,
    "unmapped": 2.0,
}
#: Mean OCR confidence (Tesseract, 0-100) at or above which OCR text costs nothing; clean scans
#: read at 88-96, noise at 40-60.
GOOD_OCR_CONFIDENCE = 85.0

_LATIN = "en de fr es it pt nl pl cs sk sl sh sv da nb fi hu ro tr id ms ca lt lv vi fil is"
#: wordfreq languages per script: the candidates a text in that script is measured against.
SCRIPT_LANGUAGES: dict[str, tuple[str, ...]] = {
    "Latin": tuple(_LATIN.split()),
    "Cyrillic": ("ru", "uk", "bg", "mk"),
    "Greek": ("el",),
    "Arabic": ("ar", "fa", "ur"),
    "Hebrew": ("he",),
    "Devanagari": ("hi",),
    "Bengali": ("bn",),
    "Tamil": ("ta",),
    "Han": ("zh", "ja"),
    "Kana": ("ja",),
    "Hangul": ("ko",),
}
#: Scripts written without spaces between words: read character by character. Kanji and kana
#: are one part of a text (Japanese), as are hanja and hangul (Korean).
_CHARACTER_SCRIPTS = frozenset({"Han", "Kana", "Hangul"})
_COMPATIBLE = ({"Han", "Kana"}, {"Han", "Hangul"})

_VOWELS = frozenset("aeiouyáàâäãåāăąéèêëēėęěíìîïīįıóòôöõøōőœúùûüūůűųýÿæ")
#: Characters that may join two letters inside a word.
_JOINERS = frozenset("-‐‑–'’._/&@:+·")
_CID = re.compile(r"\(cid:\d+\)")
#: Web and mail addresses, HTML entities: no words, whatever their letters.
_ADDRESS = re.compile(r"://|^www\.|@|\.(com|org|net|html?)\b|&#?\w+;", re.I)
_LETTER_RUN = re.compile(r"[^\W\d_]+")
_SPACED_RUN = re.compile(r"(?<!\S)(?:[^\W\d_] ){3,}[^\W\d_](?!\S)")
_STRIP = ".,;:!?()[]{}\"'“”‘’«»„‚<>*#|`~^="
_ASCII_LETTER = re.compile(r"[A-Za-z]")
_ASCII_DIGIT = re.compile(r"[0-9]")
#: Lines (words) that hold a non-ASCII character, or else no ASCII vowel.
_NOT_ASCII_LINE = re.compile(r"^.*[^\x00-\x7f].*$", re.MULTILINE)
_MAYBE_GARBLED = re.compile(r"^(?:.*[^\x00-\x7f].*|[^aeiouyAEIOUY\n]*)$", re.MULTILINE)


@dataclass(frozen=True)
class Penalty:
    """One signal that lowered the score: by how much (0-1) and why, in words a reader follows."""

    signal: str
    penalty: float
    reason: str


@dataclass(frozen=True)
class ReadingQuality:
    """A document's reading-quality score, its language and script, and what lowered it."""

    score: float
    language: str | None = None
    script: str | None = None
    penalties: tuple[Penalty, ...] = ()
    #: The measured shares behind the penalties (their text's main script), for benchmarks.
    measures: dict[str, float] = field(default_factory=dict)

    @property
    def reasons(self) -> list[str]:
        return [p.reason for p in self.penalties]

    def metadata(self) -> dict[str, str]:
        """What is recorded in ``Document.metadata`` (strings, as the sections table keeps)."""
        out = {SCORE_KEY: f"{self.score:.2f}"}
        if self.penalties:
            out[REASONS_KEY] = "; ".join(self.reasons)
        if self.language:
            out[LANGUAGE_KEY] = self.language
        return out


# -- word lists ----------------------------------------------------------------------------------


@functools.cache
def _wordlists(wordlist: str) -> dict[str, str]:
    """wordfreq's installed lists of one size, by language. Read once: each call of
    ``wordfreq.available_languages`` globs its data folder (it was most of a Markdown parse)."""
    import wordfreq

    return dict(wordfreq.available_languages(wordlist))


def _available(language: str) -> bool:
    return language in _wordlists("small")


def _buckets(language: str, wordlist: str, limit: int | None = None) -> Iterator[list[str]]:
    """A wordfreq list's frequency buckets, most frequent first, ``limit`` words at most.

    wordfreq's documented "cBpack" format (``wordfreq.read_cBpack``): a gzipped msgpack list,
    a header, then one list of words per centibel of frequency. Read as a stream, so the head of
    a list costs only what it holds. ``wordlist``: "small" or "best" (the largest there is).
    """
    import msgpack

    path = _wordlists(wordlist)[language]
    seen = 0
    with gzip.open(path, "rb") as stream:
        unpacker = msgpack.Unpacker(stream, raw=False)
        unpacker.read_array_header()
        header = unpacker.unpack()
        if not isinstance(header, dict) or header.get("format") != "cB":
            raise ValueError(f"unexpected word list header in {path}: {header!r}")
        for bucket in unpacker:
            yield bucket
            seen += len(bucket)
            if limit is not None and seen >= limit:
                return


@functools.lru_cache(maxsize=64)
def _profile(language: str) -> frozenset[str]:
    """The language's most frequent words: what tells languages apart at a glance."""
    words: list[str] = []
    for bucket in _buckets(language, "small", _PROFILE_WORDS):
        words += bucket
    return frozenset(words[:_PROFILE_WORDS])


#: 4: the word sets serve English's words in other languages' text, the letter trigrams and the
#: characters of Chinese, Japanese and Korean (each kept on its own); identifying a language
#: asks ``_small_list``. 413 documents of every kind read 17 lists (16 with 16 kept).
@functools.lru_cache(maxsize=4)
def _small(language: str) -> frozenset[str]:
    """The language's "small" list: 30-60 thousand words, about 4 MB, read in 0.1 s."""
    return frozenset(w for bucket in _buckets(language, "small") for w in bucket)


class _WordList:
    """A word list held as its words' sorted hashes, 8 bytes a word, where a set of the words
    takes 100-130 (a small list 4-8 MB, a largest one 37-76 MB): so the lists of every
    language a folder holds stay loaded. A word counts as in the list when its hash is one of
    the list's: Python's 64-bit string hash, so a word outside it is taken for one in it with
    odds of about 1 in 10^14 per look-up. The verdicts on words asked about are kept (words
    recur from document to document; a binary search per word cost more than a set's look-up)."""

    __slots__ = ("_hashes", "_seen")

    def __init__(self, buckets: Iterable[list[str]]) -> None:
        """The list from its words, bucket by bucket (each bucket's words can go once hashed)."""
        parts = [np.fromiter(map(hash, b), dtype=np.int64, count=len(b)) for b in buckets]
        hashes = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        hashes.sort()  # in place: ``np.unique`` took 10x as long, and a hash twice does no harm
        self._hashes = hashes
        self._seen: dict[str, bool] = {}

    def holding(self, words: Iterable[str]) -> set[str]:
        """Those of ``words`` in the list."""
        seen = self._seen
        held: set[str] = set()
        new: list[str] = []
        for word in words:
            verdict = seen.get(word)
            if verdict is None:
                new.append(word)
            elif verdict:
                held.add(word)
        if new and len(self._hashes):
            wanted = np.fromiter(map(hash, new), dtype=np.int64, count=len(new))
            at = self._hashes.searchsorted(wanted)
            found = (self._hashes.take(at, mode="clip") == wanted).tolist()
            held.update(itertools.compress(new, found))
            if len(seen) + len(new) > _CACHED_LIST_WORDS:
                seen.clear()
            for word, verdict in zip(new, found, strict=True):
                if len(word) <= _CACHED_WORD_CHARS:
                    seen[word] = verdict
        return held


#: Verdicts kept per word list (``_WordList``): about 1 MB a list at most.
_CACHED_LIST_WORDS = 8192


@functools.cache
def _small_list(language: str) -> _WordList:
    """The language's "small" list as identifying a language asks it (is this word in it?):
    every list a run meets stays loaded (14 MB for all 42). As word sets, 16 kept, a folder of
    mixed documents shortlisted more languages than were kept and read lists again and again:
    42% of the score's CPU on the benchmark suite's corpus."""
    return _WordList(_buckets(language, "small"))


@dataclass(frozen=True)
class _Lexicon:
    words: _WordList  # the largest list: what counts as a word
    common: frozenset[str]  # what a misread word is one letter away from
    alphabet: str  # the letters its words are made of


#: How many languages' largest lists and letter trigrams stay loaded: the European Union's 24
#: official languages, in turn, read none again (an lru cache read one per document when its
#: languages came in turn, more than it kept).
_KEPT_LANGUAGES = 24


#: The largest lists (300-600 thousand words, 0.1-0.3 s to read each), their words kept as
#: hashes (``_WordList``: 6-9 MB a list with its common words). As word sets (37-76 MB each) 3
#: were kept, and a folder of documents in five languages in turn read a list again for every
#: document (0.1-0.24 s each, a hundred times the rest of the score).
@functools.lru_cache(maxsize=_KEPT_LANGUAGES)
def _lexicon(language: str) -> _Lexicon:
    common: list[str] = []

    def buckets() -> Iterator[list[str]]:  # read once: the common words kept as they pass
        for bucket in _buckets(language, "best"):
            if len(common) < _COMMON_WORDS:
                common.extend(bucket[: _COMMON_WORDS - len(common)])
            yield bucket

    words = _WordList(buckets())
    alphabet = "".join(sorted({c for w in common for c in w if c.isalpha()}))
    return _Lexicon(words, frozenset(common), alphabet)


@functools.lru_cache(maxsize=8)
def _characters(language: str) -> frozenset[str]:
    """Every character of the language's words (Chinese, Japanese, Korean)."""
    return frozenset(c for word in _small(language) for c in word)


def _letter_trigrams(word: str) -> list[str]:
    marked = f"^{word}$"
    return [marked[i : i + 3] for i in range(len(marked) - 2)]


@functools.lru_cache(maxsize=_KEPT_LANGUAGES)
def _trigrams(language: str) -> frozenset[str]:
    """Every three-letter sequence (word starts and ends marked) of the language's words: about
    1 MB, 0.1-0.3 s to make."""
    return frozenset(t for word in _small(language) for t in _letter_trigrams(word))


# -- scripts and tokens ----------------------------------------------------------------------

_Fn = TypeVar("_Fn", bound=Callable[..., Any])
#: Verdicts about a word are kept across documents (words recur): up to this many per function,
#: for words up to this long, so a cache holds a few MB at most whatever the documents hold.
_CACHED_WORDS = 32768
_CACHED_WORD_CHARS = 40


def _per_word_cache(fn: _Fn) -> _Fn:
    """``fn(word, ...)`` with its results kept for short words (see ``_CACHED_WORDS``)."""
    cached = functools.lru_cache(maxsize=_CACHED_WORDS)(fn)

    @functools.wraps(fn)
    def lookup(word: str, *rest: Any) -> Any:
        return cached(word, *rest) if len(word) <= _CACHED_WORD_CHARS else fn(word, *rest)

    return cast(_Fn, lookup)


@functools.lru_cache(maxsize=8192)
def _script(ch: str) -> str:
    """The script of a letter, from its Unicode name ("LATIN SMALL LETTER A" -> "Latin")."""
    name = unicodedata.name(ch, "")
    first = name.split(" ", 1)[0]
    if first in ("FULLWIDTH", "HALFWIDTH"):
        first = name.split(" ", 2)[1]
    if first == "CJK":
        return "Han"
    if first in ("HIRAGANA", "KATAKANA"):
        return "Kana"
    return first.capitalize() if first else "Unknown"


def _part(script: str) -> str:
    """The part of a text a script belongs to: kanji go with kana, hanja with hangul."""
    return "Han" if script in ("Kana", "Hangul") else script


def script_shares(text: str) -> list[tuple[str, float]]:
    """The scripts of ``text``'s letters with their shares, largest first. Chinese, Japanese and
    Korean are named by what sets them apart: kana make Han text Japanese ("Kana"), hangul
    Korean ("Hangul")."""
    if text.isascii():  # ASCII letters are Latin: the one script, if any letter
        return [("Latin", 1.0)] if _ASCII_LETTER.search(text) else []
    # Per distinct character (in order of first appearance, so ties order as per letter).
    counts: Counter[str] = Counter()
    for c, n in Counter(text).items():
        if c.isalpha():
            counts[_script(c)] += n
    total = sum(counts.values())
    if not total:
        return []
    parts: Counter[str] = Counter()
    for script, n in counts.items():
        parts[_part(script)] += n
    out = []
    for part, n in parts.most_common():
        if part == "Han" and counts.get("Hangul", 0) * 2 >= n:
            part = "Hangul"
        elif part == "Han" and counts.get("Kana", 0) >= 0.05 * n:
            part = "Kana"
        out.append((part, n / total))
    return out


def dominant_script(text: str) -> str | None:
    """The script most letters of ``text`` are written in, or None without letters."""
    shares = script_shares(text)
    return shares[0][0] if shares else None


def _without(text: str, spans: Iterable[tuple[int, int]]) -> str:
    parts, at = [], 0
    for start, end in sorted(spans):
        parts.append(text[at:start])
        at = max(at, end)
    parts.append(text[at:])
    return "\n".join(parts)


def _sample(text: str) -> str:
    """``text`` itself when short, else ``SAMPLE_WINDOWS`` windows spread evenly over it (the
    first at its start, the last at its end), each cut after the first and before the last line
    end in it (else space), so no window starts or ends inside a word."""
    if len(text) <= MAX_SAMPLE_CHARS:
        return text
    step = (len(text) - WINDOW_CHARS) / (SAMPLE_WINDOWS - 1)
    parts = []
    for k in range(SAMPLE_WINDOWS):
        start = round(k * step)
        window = text[start : start + WINDOW_CHARS]
        if k == SAMPLE_WINDOWS - 1:  # the text's end is an end
            parts.append(_whole_lines(window + "\n"))
        else:
            parts.append(_whole_lines(window) if start else window[: _last_break(window)])
    return "\n".join(parts)


def _last_break(window: str) -> int:
    """Where ``window`` ends at a line (else word) end: the last break in its second half."""
    half = len(window) // 2
    end = window.rfind("\n", half)
    if end < 0:
        end = window.rfind(" ", half)
    return end if end >= 0 else len(window)


def _whole_lines(window: str) -> str:
    """``window`` without its first and last partial line (else word)."""
    half = len(window) // 2
    start = window.find("\n", 0, half)
    if start < 0:
        start = window.find(" ", 0, half)
    return window[start + 1 : _last_break(window)]


@_per_word_cache
def _in_script(token: str, script: str | None) -> bool:
    """Most of the token's letters are of ``script`` (None: any)."""
    if token.isascii():  # ASCII letters are Latin
        return (script is None or script == "Latin") and _ASCII_LETTER.search(token) is not None
    letters = [c for c in token if c.isalpha()]
    if not letters:
        return False
    if script is None:
        return True
    return sum(_part(_script(c)) == _part(script) for c in letters) * 2 > len(letters)


@_per_word_cache
def _is_word(token: str, script: str | None) -> bool:
    if token.isascii():
        if token.isalpha():  # the common case: letters only
            return len(token) >= 2 and (script is None or script == "Latin")
        return (
            len(_ASCII_LETTER.findall(token)) >= 2
            and _ASCII_DIGIT.search(token) is None
            and (script is None or script == "Latin")
        )
    return (
        sum(c.isalpha() for c in token) >= 2
        and not any(c.isdigit() for c in token)
        and _in_script(token, script)
    )


#: A text is tokenised several times per score (language, words, sequences): the last few
#: results are kept. They are tuples, so no caller can change what another gets.
@functools.lru_cache(maxsize=4)
def _word_tokens(text: str, language: str, script: str | None = None) -> tuple[str, ...]:
    """wordfreq's words of ``text`` (lower case, as its lists have them) with two letters or
    more and no digit ("ch12" or a hexadecimal id is no word, and no misreading).

    Where wordfreq's tokens of the text are those of its whitespace-separated runs one after
    the other (``_runs_tokenize_alone``), each distinct run's words are kept across texts
    (``_RUN_WORDS``: runs recur, as words do) and the runs not seen yet are tokenised in one
    call; else the text is tokenised whole.
    """
    import wordfreq

    if not _runs_tokenize_alone(text, language):
        return _words_of(wordfreq.tokenize(text, language), script)
    runs = text.split()
    key = (language, script)
    cache = _RUN_WORDS.setdefault(key, {})
    known: dict[str, tuple[str, ...]] = {}
    missing: list[str] = []
    for run in dict.fromkeys(runs):
        found = cache.get(run)
        if found is None:
            missing.append(run)
        else:
            known[run] = found
    if missing:
        split = _tokenize_runs(missing, language)
        if split is None:  # a run holds every separator there is: the text whole, as ever
            return _words_of(wordfreq.tokenize(text, language), script)
        words = set(_words_of([t for tokens in split for t in tokens], script))
        cached_chars = _RUN_CHARS.get(key, 0)
        if (
            len(cache) + len(missing) > _CACHED_RUNS
            or cached_chars + sum(map(len, missing)) > _CACHED_RUN_CHARS
        ):
            cache.clear()
            cached_chars = 0
        for run, tokens in zip(missing, split, strict=True):
            kept = known[run] = tuple([t for t in tokens if t in words])
            if len(run) <= _CACHED_RUN_LENGTH:
                cache[run] = kept
                cached_chars += len(run)
        _RUN_CHARS[key] = cached_chars
    return tuple([t for run in runs for t in known[run]])


def _words_of(tokens: Sequence[str], script: str | None) -> tuple[str, ...]:
    """The tokens that are words (``_word_tokens``), in order."""
    latin = script is None or script == "Latin"
    words = {  # each distinct token looked at once; ASCII words of letters at a glance
        t
        for t in set(tokens)
        if (latin and len(t) >= 2 and t.isascii() and t.isalpha()) or _is_word(t, script)
    }
    return tuple([t for t in tokens if t in words])


#: Words of whitespace-separated runs, by (language, script) and run (``_word_tokens``): at
#: most this many runs, holding at most the characters of as many runs of
#: ``_CACHED_WORD_CHARS`` (measured: ~13 MB at the limit for English, per language and script
#: scored; then the cache starts again).
_CACHED_RUNS = 65536
_RUN_WORDS: dict[tuple[str, str | None], dict[str, tuple[str, ...]]] = {}
#: Runs up to this long are kept, as many as the characters of ``_CACHED_RUNS`` runs of
#: ``_CACHED_WORD_CHARS`` allow (``_RUN_CHARS``: what each cache holds), so the cache's size is
#: bounded as before. Longer than a word, for the paths, links and identifiers of technical text
#: ("(ch14-02-publishing-to-crates-io.md)"): the Rust book's runs of 41-400 characters were
#: tokenised again in every document that held them (5% of its score's CPU).
_CACHED_RUN_LENGTH = 400
_CACHED_RUN_CHARS = _CACHED_RUNS * _CACHED_WORD_CHARS
_RUN_CHARS: dict[tuple[str, str | None], int] = {}
#: Symbols that part runs tokenised in one call (``_tokenize_runs``): each is a token of its
#: own, the same after wordfreq's preprocessing, and the first one no run holds is used.
_RUN_SEPARATORS = ("\u2603", "\u2602", "\u2604", "\u260e")


def _tokenize_runs(runs: list[str], language: str) -> list[list[str]] | None:
    """wordfreq's tokens of each run, from one call over the runs joined by a separator
    symbol on a line of its own; None where every separator occurs in a run (or the tokens
    do not part as expected)."""
    import wordfreq

    joined = "\n".join(runs)
    separator = next((s for s in _RUN_SEPARATORS if s not in joined), None)
    if separator is None:
        return None
    tokens = wordfreq.tokenize(f"\n{separator}\n".join(runs), language)
    split: list[list[str]] = [[]]
    for token in tokens:
        if token == separator:
            split.append([])
        else:
            split[-1].append(token)
    return split if len(split) == len(runs) else None


#: Characters around which a run's tokens may depend on what stands beside the run (a mark
#: or format character that follows whitespace joins it in a grapheme or a word-break
#: sequence; a prepended character joins the space after it; U+202F, whitespace to Python,
#: joins words to Unicode's word breaks, as "_" does): a text holding one is tokenised whole.
_CONTEXT_CHARACTERS = (
    r"[\p{M}\p{Cf}\p{GCB=Prepend}\p{GCB=Extend}\p{GCB=SpacingMark}\p{GCB=ZWJ}"
    r"\p{WB=Extend}\p{WB=Format}\p{WB=ZWJ}\p{WB=ExtendNumLet}]"
)


def _runs_tokenize_alone(text: str, language: str) -> bool:
    """wordfreq's tokens of ``text`` are those of its whitespace-separated runs, one run after
    the other: its regex tokenizer never makes a token across whitespace (a token starts at a
    word character and ends at a word boundary, which whitespace is), its preprocessing
    works character by character (case folding, NFC or NFKC, marks, transliteration), and
    around a run only whitespace or the text's edge stands, the same to it unless the run
    starts with a mark or format character or ends with a prepended one, or the text holds
    U+202F (``_CONTEXT_CHARACTERS``; every other whitespace character parts words). Checked
    against wordfreq over every Python whitespace character between runs of many scripts.
    Not for languages tokenised otherwise (MeCab, jieba)."""
    if not _regex_tokenized(language):
        return False
    if text.isascii():
        return True
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES)
    return not any(map(_context_character, set(rest.decode("utf-8", "surrogatepass"))))


@functools.lru_cache(maxsize=64)
def _regex_tokenized(language: str) -> bool:
    from wordfreq.language_info import get_language_info

    return bool(get_language_info(language)["tokenizer"] == "regex")


@functools.lru_cache(maxsize=8192)
def _context_character(ch: str) -> bool:
    return _context_pattern().match(ch) is not None


@functools.cache
def _context_pattern() -> Any:
    import regex

    return regex.compile(_CONTEXT_CHARACTERS, regex.V1)


@functools.lru_cache(maxsize=4)
def _raw_tokens(text: str, script: str | None = None) -> tuple[str, ...]:
    """Whitespace-separated tokens with a letter, outer punctuation stripped, case kept."""
    if script is not None:  # those of the tokens with a letter that are in ``script``
        tokens = _raw_tokens(text)
        distinct = set(tokens)
        # A token is kept for its letter: an ASCII one is Latin at a glance.
        in_script = {
            t for t in distinct if (script == "Latin" and t.isascii()) or _in_script(t, script)
        }
        if len(in_script) == len(distinct):
            return tokens
        return tuple([t for t in tokens if t in in_script])
    raws = text.split()
    kept: dict[str, str | None] = {}
    for raw in set(raws):
        stripped = raw.strip(_STRIP)
        if stripped.isascii():  # ``_in_script(stripped, None)`` for ASCII, without its call
            keep = stripped.isalpha() or _ASCII_LETTER.search(stripped) is not None
        else:
            keep = _in_script(stripped, None)
        kept[raw] = stripped if keep else None
    return tuple([token for raw in raws if (token := kept[raw]) is not None])


# -- language --------------------------------------------------------------------------------


def _candidates(script: str | None) -> list[str]:
    return [c for c in SCRIPT_LANGUAGES.get(script or "", ()) if _available(c)]


def _known_count(counts: Counter[str], language: str) -> int:
    """How many of the counted tokens are in the language's small list."""
    return sum(map(counts.__getitem__, _small_list(language).holding(counts)))


@functools.lru_cache(maxsize=16)
def _profiled_by(candidates: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Each word of the candidates' profiles -> the candidates whose profile holds it."""
    by_word: dict[str, list[str]] = {}
    for c in candidates:
        for word in _profile(c):
            by_word.setdefault(word, []).append(c)
    return {word: tuple(cs) for word, cs in by_word.items()}


def _shortlist(
    tokens: Sequence[str], script: str | None, counts: Counter[str] | None = None
) -> list[str]:
    """The script's ``_SHORTLIST`` candidates whose most frequent words ``tokens`` use most
    (``counts``: ``Counter(tokens)``, if known)."""
    candidates = _candidates(script)
    # Every candidate's count in one walk over the distinct tokens in some profile (found by
    # a set intersection in C).
    used = dict.fromkeys(candidates, 0)
    by_word = _profiled_by(tuple(candidates))
    if counts is None:
        counts = Counter(tokens)
    for token in by_word.keys() & counts.keys():
        n = counts[token]
        for c in by_word[token]:
            used[c] += n
    return sorted(candidates, key=lambda c: -used[c])[:_SHORTLIST]


def identify_language(text: str, script: str | None = None) -> tuple[str | None, float]:
    """The wordfreq language of ``text`` (its words in ``script``, by default its main script),
    and the share of those words its list knows; None when no language is clearly recognised.

    Used by OCR too (``ocr``): a Latin page read with ``eng`` whose words are Polish is read
    again with ``pol``.
    """
    script = script or dominant_script(text)
    candidates = _candidates(script)
    if not candidates:
        return None, 0.0
    if script in _CHARACTER_SCRIPTS:
        return candidates[0], 1.0
    tokens = _word_tokens(text, "en", script)[:5000]
    if not tokens:
        return None, 0.0
    # Shortlisted by their most frequent words (the head of each list: fast), decided by the
    # share of words each one's list knows: placeholder Latin is "Italian" by a hair, and is
    # no language at all.
    counts = Counter(tokens)
    shortlist = _shortlist(tokens, script, counts)
    if "en" in candidates and "en" not in shortlist:
        shortlist.append("en")
    shares = sorted(
        ((_known_count(counts, c) / len(tokens), c) for c in shortlist),
        reverse=True,
    )
    best_share, best = shares[0]
    runner_up = shares[1][0] if len(shares) > 1 else 0.0
    clear = best_share >= MIN_CLEAR_SHARE and best_share >= CLEAR_MARGIN * runner_up
    if best_share < MIN_KNOWN_SHARE and not clear:
        return None, best_share
    return best, best_share


# -- the score ------------------------------------------------------------------------------


def assess(
    text: str,
    metadata: dict[str, Any] | None = None,
    tables: Iterable[tuple[int, int]] = (),
    *,
    prose: bool = True,
) -> ReadingQuality:
    """The reading quality of a text layer and of what its parser measured (``metadata``).

    ``tables`` are spans of the text the word signals leave out while enough words remain:
    cells hold names, codes and figures that no word list knows. ``prose=False`` (structured
    data and code: key paths, identifiers, markup names) leaves out the signals that ask a word
    list whether a word is one (unknown, misread and vowel-less words): there they are no defect.
    """
    full = _sample(text)
    sample = _sample(_without(text, tables)) if tables else full
    if len(_raw_tokens(sample)) < MIN_WORDS:
        sample = full
    parts = [(s, share) for s, share in script_shares(sample) if share >= MIN_SCRIPT_SHARE]
    penalties: list[Penalty] = []
    measures: dict[str, float] = {}
    languages: list[str] = []
    for k, (script, share) in enumerate(parts):
        part_measures: dict[str, float] = measures if k == 0 else {}
        language, found = _script_penalties(sample, script, part_measures, prose)
        if language:
            languages.append(language)
        for p in found:
            reason = p.reason if len(parts) == 1 else f"{script} text: {p.reason}"
            penalties.append(Penalty(p.signal, p.penalty * share, reason))
    raw = _raw_tokens(full)
    penalties += _character_penalties(full, raw, measures, text)
    penalties += _parser_penalties(metadata or {}, measures)
    penalties = sorted(
        (p for p in penalties if p.penalty >= _MIN_PENALTY), key=lambda p: -p.penalty
    )
    score = math.prod(1.0 - p.penalty for p in penalties)
    return ReadingQuality(
        score=round(max(0.0, min(1.0, score)), 4),
        language="+".join(languages) or None,
        script=parts[0][0] if parts else None,
        penalties=tuple(penalties),
        measures=measures,
    )


def _share_penalty(signal: str, share: float) -> float:
    return min(1.0, _WEIGHTS[signal] * max(share, 0.0))


#: A penalty under this lowers no score (``assess`` leaves it out).
_MIN_PENALTY = 0.01


def _penalty(signal: str, penalty: float, reason: Callable[[], str]) -> list[Penalty]:
    """The penalty if it counts, its reason (examples counted and quoted) written only then."""
    return [Penalty(signal, penalty, reason())] if penalty >= _MIN_PENALTY else []


def _examples(words: Iterable[str], n: int = 3) -> str:
    shown = [w for w, _ in Counter(words).most_common(n)]
    return ", ".join(f"'{_printable(w[:30])}'" for w in shown)


def _printable(text: str) -> str:
    """Control and invisible characters as escapes (a reason is read on a screen)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _script_penalties(
    sample: str, script: str, measures: dict[str, float], prose: bool = True
) -> tuple[str | None, list[Penalty]]:
    """The language of ``sample``'s text in ``script`` and what its words cost."""
    if script in _CHARACTER_SCRIPTS:
        return _character_script_penalties(sample, script, measures)
    raw = _raw_tokens(sample, script)
    if len(raw) < MIN_WORDS:
        return None, []
    language, known_share = identify_language(sample, script)
    measures["language_share"] = known_share
    if language is None:
        # No language we know (placeholder Latin, names and figures, or letters so garbled
        # that no list knows them): only the letter sequences words are built of can tell.
        tokens = _word_tokens(sample, "en", script)
        return None, _sequence_penalties(sample, script, _shortlist(tokens, script)[:2], measures)
    return language, _word_penalties(sample, script, raw, language, measures, prose)


def _character_script_penalties(
    sample: str, script: str, measures: dict[str, float]
) -> tuple[str | None, list[Penalty]]:
    language, _ = identify_language(sample, script)
    if language is None:
        return None, []
    characters = [c for c in sample if c.isalpha() and _script(c) in _CHARACTER_SCRIPTS]
    if len(characters) < MIN_WORDS:
        return language, []
    known = _characters(language)
    unknown = [c for c in characters if c not in known]
    share = len(unknown) / len(characters)
    measures["unknown"] = share
    return language, _penalty(
        "unknown",
        _share_penalty("unknown", (share - UNKNOWN_CHARACTER_ALLOWANCE) * 4),
        lambda: (
            f"{share:.0%} of the characters are in no word of the {language} word list "
            f"(e.g. {_examples(unknown)})"
        ),
    )


def _edits(word: str, alphabet: str) -> Iterator[str]:
    """Every string one edit from ``word``: a letter left out, swapped, changed or added."""
    for i in range(len(word) + 1):
        head, tail = word[:i], word[i:]
        if tail:
            yield head + tail[1:]
            if len(tail) > 1:
                yield head + tail[1] + tail[0] + tail[2:]
            for c in alphabet:
                if c != tail[0]:
                    yield head + c + tail[1:]
        for c in alphabet:
            yield head + c + tail


#: Unknown words recur from document to document (terms, names in code): each is looked at once.
@_per_word_cache
def _one_letter_off(word: str, language: str) -> bool:
    """``word`` is one edit away from a common word of ``language``."""
    lexicon = _lexicon(language)
    return not lexicon.common.isdisjoint(_edits(word, lexicon.alphabet))


def _word_penalties(
    sample: str,
    script: str,
    raw: Sequence[str],
    language: str,
    measures: dict[str, float],
    prose: bool = True,
) -> list[Penalty]:
    lexicon = _lexicon(language)
    # English words in another language's text (terms, names of things) are words too.
    english = _small("en") if language != "en" and _available("en") else frozenset()
    tokens = _word_tokens(sample, language, script)
    total = max(len(tokens), 1)
    distinct_tokens = set(tokens)
    distinct_raw = set(raw)
    vocabulary = {
        t for t in distinct_raw if len(t) >= MIN_MISREAD_LETTERS and t.islower() and t.isalpha()
    }
    # An ASCII word with a vowel is never garbled (``_garbled``): most words, left out by one
    # regex over the distinct words a line each (no word holds a line break); outside prose
    # an ASCII word is never (a vowel-less identifier is no defect).
    maybe_garbled = (_MAYBE_GARBLED if prose else _NOT_ASCII_LINE).findall("\n".join(distinct_raw))
    # Every word asked about, looked up in the list at once.
    listed = lexicon.words.holding(
        distinct_tokens | vocabulary | {t.lower() for t in maybe_garbled}
    )

    def known(word: str) -> bool:
        return word in listed or word in english

    unknown_words = distinct_tokens - listed - english
    unknown = [t for t in tokens if t in unknown_words]
    misread = (
        [w for w in sorted(vocabulary) if not known(w) and _one_letter_off(w, language)]
        if prose
        else []
    )
    garbled_words = {t for t in maybe_garbled if _garbled(t, known(t.lower()))}
    garbled = [t for t in raw if t in garbled_words] if garbled_words else []
    unknown_share = len(unknown) / total
    misread_share = len(misread) / max(len(vocabulary), MIN_MISREAD_VOCABULARY)
    garbled_share = len(garbled) / max(len(raw), 1)
    measures.update(unknown=unknown_share, misread=misread_share, garbled=garbled_share)
    garbled_penalty = _penalty(
        "garbled",
        _share_penalty("garbled", garbled_share),
        lambda: (
            f"{len(garbled)} words mix scripts or are split by symbols (e.g. {_examples(garbled)})"
        ),
    )
    sequences = _sequence_penalties(sample, script, [language, "en"], measures, language)
    if not prose:
        return [*garbled_penalty, *sequences]
    return [
        *_penalty(
            "unknown",
            _share_penalty("unknown", unknown_share - UNKNOWN_ALLOWANCE),
            lambda: (
                f"{unknown_share:.0%} of the words are not in the {language} word list "
                f"(e.g. {_examples(unknown)})"
            ),
        ),
        *_penalty(
            "misread",
            _share_penalty("misread", misread_share - MISREAD_ALLOWANCE),
            lambda: (
                f"{len(misread)} words are one letter off a common word (e.g. {_examples(misread)})"
            ),
        ),
        *garbled_penalty,
        *sequences,
    ]


def _junk(ch: str) -> bool:
    """A character that never stands between two letters of a word: a non-ASCII symbol,
    superscript digit or punctuation mark ("p³atnoœci", "za¿ó³æ"), a control or unassigned one.
    ASCII punctuation is not junk: code and markup put it inside words."""
    if ch.isalnum() or ch in _JOINERS or ord(ch) < 0x80:
        return False
    return unicodedata.category(ch) in ("No", "So", "Sk", "Sc", "Po", "Co", "Cn", "Cc", "Cs")


def _garbled(token: str, known: bool) -> bool:
    """A word no language writes: letters of two scripts, letters split by a symbol, or an
    unknown Latin word of five letters or more without a vowel."""
    if token.isascii():
        # All Latin, and no ASCII character is junk: only the vowel-less word is left to find.
        if known:
            return False
        lowered = (token if token.isalpha() else "".join(_ASCII_LETTER.findall(token))).lower()
        return (
            len(lowered) >= 5
            and not any(c in _VOWELS for c in lowered)
            and not _ADDRESS.search(token)
        )
    letters = [c for c in token if c.isalpha()]
    if len(letters) < 2 or _ADDRESS.search(token):
        return False
    for run in _LETTER_RUN.findall(token):  # markup may glue words of two scripts: not a word
        scripts = {_script(c) for c in run}
        if len(scripts) > 1 and not any(scripts <= group for group in _COMPATIBLE):
            return True
    for a, b, c in zip(token, token[1:], token[2:], strict=False):
        if _junk(b) and a.isalpha() and c.isalpha() and _script(a) not in _CHARACTER_SCRIPTS:
            return True
    if known or {_script(c) for c in letters} != {"Latin"}:
        return False
    lowered = "".join(letters).lower()
    return len(lowered) >= 5 and not any(c in _VOWELS for c in lowered)


def _sequence_penalties(
    sample: str,
    script: str,
    languages: list[str],
    measures: dict[str, float],
    language: str | None = None,
) -> list[Penalty]:
    """Letter sequences no word of ``languages`` has ("tsheev", "ionfg": two lines' letters
    interleaved; shifted or misdecoded letters): rare in real text, names included."""
    languages = [c for c in dict.fromkeys(languages) if _available(c)]
    if not languages:
        return []
    known = _known_trigrams(tuple(languages))
    # Words of four letters or more: shorter ones are as often abbreviations ("zh", "pt").
    tokens = _word_tokens(sample, languages[0], script)
    long_words = {t for t in set(tokens) if t.isalpha() and len(t) > 3}
    words = [t for t in tokens if t in long_words]
    if len(words) < MIN_WORDS:
        return []
    odd_grams = all_grams = 0
    odd_words: set[str] = set()
    cache = _ODD_TRIGRAMS.get(known)
    if cache is None:
        if len(_ODD_TRIGRAMS) >= _CACHED_LANGUAGE_SETS:
            del _ODD_TRIGRAMS[next(iter(_ODD_TRIGRAMS))]  # the set compared longest ago
        cache = _ODD_TRIGRAMS[known] = {}
    if len(cache) > _CACHED_WORDS:
        cache.clear()
    for word, n in Counter(words).items():  # each distinct word looked at once
        found = cache.get(word)
        if found is None:
            found = _odd_trigrams(word, known)
            if len(word) <= _CACHED_WORD_CHARS:
                cache[word] = found
        odd_here, grams_here = found
        if odd_here:
            odd_words.add(word)
        odd_grams += odd_here * n
        all_grams += grams_here * n
    share = odd_grams / all_grams
    measures["odd_sequences"] = share
    where = f"the {language} word list" if language else f"any of {', '.join(languages)}"
    return _penalty(
        "sequences",
        _share_penalty("sequences", share - SEQUENCE_ALLOWANCE),
        lambda: (
            f"{share:.0%} of the letter sequences occur in no word of {where} "
            f"(e.g. {_examples([w for w in words if w in odd_words])})"
        ),
    )


#: Words recur from document to document: each one's trigrams are looked up once, kept by
#: the trigram set (one per languages compared) and word (at most ``_CACHED_WORDS`` of up to
#: ``_CACHED_WORD_CHARS`` each per set), for 8 of the sets ``_known_trigrams`` keeps: each key
#: holds its trigram set, so more than that keeps would hold sets it has let go.
_ODD_TRIGRAMS: dict[frozenset[str], dict[str, tuple[int, int]]] = {}
_CACHED_LANGUAGE_SETS = 8


def _odd_trigrams(word: str, known: frozenset[str]) -> tuple[int, int]:
    """How many of ``word``'s letter trigrams are not in ``known``, and how many it has."""
    grams = _letter_trigrams(word)
    return len(grams) - sum(map(known.__contains__, grams)), len(grams)


@functools.lru_cache(maxsize=_KEPT_LANGUAGES)
def _known_trigrams(languages: tuple[str, ...]) -> frozenset[str]:
    """The trigrams of any of ``languages`` (a text's language and English: about 0.5 MB)."""
    return frozenset().union(*(_trigrams(c) for c in languages))


#: What ``_whole_text_counts`` finds in one C-level pass. Mojibake: C1 control characters, and
#: UTF-8 read as windows-1252 or Latin-1, a lead byte's letter ("Ã", "â") followed by its
#: continuation bytes' characters ("Ã©", "â€™"): the sequences ``ftfy``'s measure finds most
#: in such text. Undecoded: U+FFFD, private use characters, ``(cid:N)``.
_C1 = "\x80-\x9f"
#: What windows-1252 makes of a UTF-8 continuation byte (0x80-0xBF): Latin-1's C1 and symbols,
#: and the 27 characters windows-1252 puts at 0x80-0x9F.
_CONTINUATION = "\x80-\xbf" + bytes(range(0x80, 0xA0)).decode("cp1252", "ignore")
_PRIVATE_USE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_UNDECODED = f"\ufffd{_PRIVATE_USE}"
#: One character class first, so the regex engine scans for it in C and tries the rest only
#: there (an alternation first would be tried at every character: 8x slower on the Rust book).
_CHEAP_SIGNALS = re.compile(
    f"[{_C1}\xc2-\xef{_UNDECODED}]"
    f"(?:(?<=[\xc2-\xdf])[{_CONTINUATION}]|(?<=[\xe0-\xef])[{_CONTINUATION}]{{2}}"
    f"|(?<=[{_C1}{_UNDECODED}]))"
)
_UNDECODED_CHARACTER = re.compile(f"[{_UNDECODED}]")
#: The first character of every sign ``_CHEAP_SIGNALS`` finds.
_SIGNAL_START = re.compile(f"[{_C1}\xc2-\xef{_UNDECODED}]")
_ASCII_BYTES = bytes(range(0x80))


@dataclass(frozen=True)
class _WholeTextCounts:
    mojibake: list[int]  # where each sign of mojibake is
    replaced: int  # U+FFFD, private use, (cid:N)


def _whole_text_counts(text: str) -> _WholeTextCounts:
    """The character signals one C-level pass over the whole text finds (a sample can miss a
    bad stretch): in ASCII text only ``(cid:N)``."""
    replaced = len(_CID.findall(text)) if "(cid:" in text else 0
    if text.isascii():
        return _WholeTextCounts([], replaced)
    # Every sign starts with a character of ``_SIGNAL_START``: looked for among the text's
    # non-ASCII characters only (the ASCII bytes of its UTF-8 deleted in C), the regex run
    # only where one is there (6x faster on the Rust book, whose files have a few curly
    # quotes and dashes, none of them such a character).
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES)
    if _SIGNAL_START.search(rest.decode("utf-8", "surrogatepass")) is None:
        return _WholeTextCounts([], replaced)
    mojibake: list[int] = []
    for match in _CHEAP_SIGNALS.finditer(text):
        if _UNDECODED_CHARACTER.match(match.group()):
            replaced += 1
        else:
            mojibake.append(match.start())
    return _WholeTextCounts(mojibake, replaced)


def _character_penalties(
    sample: str, raw: Sequence[str], measures: dict[str, float], text: str | None = None
) -> list[Penalty]:
    """Mojibake, letter-spaced runs and undecoded characters in ``sample``; ``text``, when the
    sample is drawn from it, is searched whole for C1 controls and undecoded characters, each
    weighed by the words the whole text has (estimated from the sample's share of it)."""
    import ftfy.badness

    words = max(len(raw), 1)
    whole = _whole_text_counts(text if text is not None else sample)
    scale = len(text) / max(len(sample), 1) if text is not None else 1.0
    whole_words = max(words * scale, 1.0)
    out = []
    bad = _badness(sample)
    found = (
        [_around(sample, m.start()) for m in ftfy.badness.BADNESS_RE.finditer(sample)]
        if bad
        else []
    )
    share = bad / words
    if text is not None and text is not sample and whole.mojibake:
        # Counted over the whole text, where a sample's few windows see a scattered defect
        # too often or too rarely.
        bad, share = len(whole.mojibake), len(whole.mojibake) / whole_words
        found = [_around(text, at) for at in whole.mojibake[:100]]
    measures["mojibake"] = share
    if bad:
        out.append(
            Penalty(
                "mojibake",
                _share_penalty("mojibake", share),
                f"{bad} character sequences look like text decoded with the wrong code page "
                f"(e.g. {_examples(found)})",
            )
        )
    spaced = _SPACED_RUN.findall(sample)
    letters = sum(len(run) // 2 + 1 for run in spaced)
    measures["spaced"] = letters / words
    if spaced:
        out.append(
            Penalty(
                "spaced",
                _share_penalty("spaced", letters / words),
                f"{len(spaced)} runs of letters set apart by spaces (e.g. {_examples(spaced)})",
            )
        )
    replaced = whole.replaced
    measures["replacement"] = replaced / whole_words
    if replaced:
        out.append(
            Penalty(
                "replacement",
                _share_penalty("replacement", replaced / whole_words),
                f"{replaced} characters could not be decoded (U+FFFD, '(cid:N)', private use)",
            )
        )
    return out


def _badness(text: str) -> int:
    """``ftfy.badness.badness(text)``, its regex run only near the non-ASCII characters.

    Every alternative of ftfy's ``BADNESS_RE`` needs a non-ASCII character (ASCII text has no
    mojibake), and no match is longer than ``_BADNESS_WIDTH``: a match lies within that many
    characters of a non-ASCII one. So the regex is run on the windows that reach that far
    either side of each run of non-ASCII characters (windows that touch are one), from the
    same string with ``pos``/``endpos`` (``^`` still means the text's start): the same
    matches, at C speed over most of an English text instead of the whole regex at every
    character (it was ~12% of the score).
    """
    import ftfy.badness

    if text.isascii():
        return 0
    reach = _badness_width()
    if reach is None:
        return ftfy.badness.badness(text)
    find = ftfy.badness.BADNESS_RE.findall
    total = 0
    start = end = -1
    for m in _NON_ASCII_RUN.finditer(text):
        a, b = m.start() - reach, m.end() + reach
        if a > end:
            if end >= 0:
                total += len(find(text, max(start, 0), end))
            start = a
        end = b
    total += len(find(text, max(start, 0), end))
    return total


@functools.cache
def _badness_width() -> int | None:
    """The longest match ftfy's ``BADNESS_RE`` can make (7 characters in ftfy 6.3), so a
    window around a non-ASCII character reaches every match that holds it; None where that
    cannot be told (then the regex reads the whole text, as ``ftfy.badness.badness``)."""
    import ftfy.badness

    try:
        _, longest = re._parser.parse(  # type: ignore[attr-defined]
            ftfy.badness.BADNESS_RE.pattern, ftfy.badness.BADNESS_RE.flags
        ).getwidth()
    except Exception:  # a private parser: gone or changed in another Python
        return None
    return int(longest) if longest < 100 else None  # not an unbounded repeat


_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def _around(text: str, at: int) -> str:
    """The whitespace-delimited word of ``text`` that holds position ``at``."""
    start = max(text.rfind(" ", 0, at), text.rfind("\n", 0, at)) + 1
    ends = [e for e in (text.find(" ", at), text.find("\n", at)) if e >= 0]
    return text[start : min(ends) if ends else len(text)].strip(_STRIP) or text[at]


def _number(metadata: dict[str, Any], key: str) -> float:
    try:
        value = float(metadata.get(key, 0) or 0)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def _parser_penalties(metadata: dict[str, Any], measures: dict[str, float]) -> list[Penalty]:
    out = []
    glyphs = _number(metadata, GLYPHS_KEY)
    missing = {
        "unmapped": (
            _number(metadata, UNMAPPED_KEY),
            "{missing} of {total} glyphs have no Unicode mapping and were left out",
        ),
        "unset": (
            _number(metadata, UNSET_KEY),
            "{missing} of {total} characters are in fonts the file does not embed and no "
            "installed font covers, and are missing",
        ),
    }
    for signal, (count, reason) in missing.items():
        if count:
            share = count / max(glyphs + count, 1.0)
            measures[signal] = share
            total = int(glyphs + count)
            out.append(
                Penalty(
                    signal,
                    _share_penalty("unmapped", share),
                    reason.format(missing=int(count), total=total),
                )
            )
    ocr_words = _number(metadata, OCR_WORDS_KEY)
    if ocr_words:
        confidence = _number(metadata, OCR_CONFIDENCE_KEY)
        measures["ocr_confidence"] = confidence
        shortfall = max(0.0, GOOD_OCR_CONFIDENCE - confidence) / GOOD_OCR_CONFIDENCE
        out.append(
            Penalty(
                "ocr_confidence",
                min(1.0, 1.5 * shortfall),
                f"OCR read {int(ocr_words)} words with a mean confidence of {confidence:.0f}%",
            )
        )
    return out


__all__ = [
    "LANGUAGE_KEY",
    "REASONS_KEY",
    "SCORE_KEY",
    "Penalty",
    "ReadingQuality",
    "assess",
    "dominant_script",
    "identify_language",
    "script_shares",
]
