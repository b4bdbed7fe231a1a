"""The reading-quality score (``parsing.quality``): each defect of issue 20 lowers it visibly
against the same text read right, clean documents score high, and it is stored with the
sections and checked (a warning, never a failure).

Every defect is a real one: the ``ff`` a ligature loses, two real lines interleaved letter by
letter as PDFium gave them, real bytes decoded with the wrong code page, real Tesseract output
in the wrong language and from a scan shrunk by a wrong resolution tag.
"""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path

import pypdfium2
import pytest

from agrag_pipeline.parsing import ParsedDocument, parse_document, quality
from agrag_pipeline.settings import OcrSettings, ParsingSettings, QualitySettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WARN_BELOW = QualitySettings().warn_below
ENGLISH_ONLY = ParsingSettings(ocr=OcrSettings(languages=["eng"], auto_languages=False))
#: What a clean text scores at least, and how much a defect takes off at least.
CLEAN = 0.95
VISIBLE = 0.05


def _score(parsed: ParsedDocument) -> float:
    return float(parsed.document.metadata[quality.SCORE_KEY])


def _reasons(parsed: ParsedDocument) -> str:
    return str(parsed.document.metadata.get(quality.REASONS_KEY, ""))


def _text_document(text: str, name: str) -> ParsedDocument:
    return parse_document(text.encode("utf-8"), name)


# -- each defect lowers the score ------------------------------------------------------------


def test_words_that_lost_a_ligature_letter_lower_the_score(corpus_dir: Path) -> None:
    # A paper's text (open access, CC BY) as a parser that drops the second f of every "ff"
    # ligature gives it: "different" -> "diferent", "effect" -> "efect".
    key = "jats/pone.0234687.nxml"
    clean = parse_document((corpus_dir / key).read_bytes(), key)
    broken = _text_document(clean.text_layer.replace("ff", "f"), "ligatures.txt")
    assert _score(clean) >= CLEAN
    assert _score(broken) <= _score(clean) - VISIBLE
    assert "one letter off a common word" in _reasons(broken)
    # An example named is a word that lost an f (a long text is scored on a sample, so which
    # of them it names depends on where its windows fall).
    misread = re.search(r"one letter off a common word \(e\.g\. ([^)]*)\)", _reasons(broken))
    assert misread, _reasons(broken)
    examples = re.findall(r"'(\w+)'", misread.group(1))
    clean_words = set(re.findall(r"\w+", clean.text_layer.lower()))
    assert examples and any(
        any(w[:i] + "f" + w[i:] in clean_words for i, c in enumerate(w) if c == "f")
        for w in examples
    ), examples


def _interleaved(first: str, second: str) -> str:
    """Two lines drawn over each other, read letter by letter as x orders them."""
    return "".join(a + b for a, b in itertools.zip_longest(first, second, fillvalue=""))


def test_two_lines_interleaved_letter_by_letter_lower_the_score(corpus_dir: Path) -> None:
    # "SChhrai iMrmuaken" for "Shri Mukesh" over "Chairman": each pair of a real page's lines.
    key = "pdf/multi_page.pdf"
    clean = parse_document((corpus_dir / key).read_bytes(), key)
    lines = [line for line in clean.text_layer.splitlines() if line.strip()][:60]
    pairs = [_interleaved(a, b) for a, b in zip(lines[::2], lines[1::2], strict=False)]
    page = _text_document("\n".join(lines), "page.txt")
    broken = _text_document("\n".join(pairs), "interleaved.txt")
    assert _score(page) >= CLEAN
    assert _score(broken) < WARN_BELOW
    assert _score(broken) <= _score(page) - VISIBLE
    assert "letter sequences occur in no word" in _reasons(broken)


@pytest.mark.parametrize(
    ("written", "read_as", "looks_like"),
    [("cp1250", "cp1252", "Wartoœæ"), ("utf-8", "cp1252", "WartoÅ›Ä‡")],
)
def test_text_decoded_with_the_wrong_code_page_lowers_the_score(
    written: str, read_as: str, looks_like: str
) -> None:
    # "Wartoœæ p³atnoœci": Polish written in one code page and decoded in another before it
    # reached us (the file itself is valid UTF-8, so nothing else notices).
    text = (FIXTURES / "invoice_pl.txt").read_text("utf-8")
    clean = _text_document(text, "faktura.txt")
    mojibake = text.encode(written).decode(read_as, errors="replace")
    assert looks_like in mojibake
    broken = _text_document(mojibake, "faktura.txt")
    assert _score(clean) >= CLEAN and clean.document.metadata[quality.LANGUAGE_KEY] == "pl"
    assert _score(broken) < WARN_BELOW
    assert "wrong code page" in _reasons(broken)


def test_ocr_in_the_wrong_language_lowers_the_score() -> None:
    # The Polish invoice whose text only OCR can read (its codes are glyph ids), read by
    # Tesseract in English: "Wartość płatności Łódź" -> "Wartosé ptatnosci t6dz".
    right = parse_document((FIXTURES / "unicode_cid_pl_zh.pdf").read_bytes(), "right.pdf")
    raw = (FIXTURES / "glyph_id_cid_pl.pdf").read_bytes()
    wrong = parse_document(raw, "faktura.pdf", parsing=ENGLISH_ONLY)
    assert "ptatnosci" in wrong.text_layer  # the defect is real
    assert _score(right) >= CLEAN
    assert _score(wrong) < WARN_BELOW
    assert "not in the pl word list" in _reasons(wrong)


def test_a_chinese_scan_read_as_english_lowers_the_score() -> None:
    # Chinese read by Tesseract in English: "Python (Jk#&) Ht » eM AMAIA".
    raw = (FIXTURES / "scan_zh.png").read_bytes()
    wrong = parse_document(raw, "scan_zh.png", parsing=ENGLISH_ONLY)
    assert not any("\u4e00" <= c <= "\u9fff" for c in wrong.text_layer)
    assert _score(wrong) < WARN_BELOW
    assert "OCR read" in _reasons(wrong)


def _scan(corpus_dir: Path, dpi: int) -> bytes:
    """The top half of a handbook page as a 96-dpi page export, tagged ``dpi`` dots per inch."""
    pdf = pypdfium2.PdfDocument(corpus_dir / "pdf" / "amt_handbook_sample.pdf")
    try:
        image = pdf[0].render(scale=96 / 72, grayscale=True).to_pil()
    finally:
        pdf.close()
    half = image.crop((0, 0, image.width, image.height // 2))
    out = io.BytesIO()
    half.save(out, "PNG", dpi=(dpi, dpi))
    return out.getvalue()


def test_ocr_of_a_scan_shrunk_by_a_wrong_resolution_tag_lowers_the_score(
    corpus_dir: Path,
) -> None:
    # Tagged 300 dpi, the 96-dpi export is taken for a page a third of its size: OCR renders its
    # text at 9 pixels and reads noise ("provided te ane ce f te is camped").
    right = parse_document(_scan(corpus_dir, 96), "export.png")
    shrunk = parse_document(_scan(corpus_dir, 300), "export.png")
    assert _score(right) >= WARN_BELOW
    assert _score(shrunk) < WARN_BELOW
    assert _score(shrunk) <= _score(right) - VISIBLE
    assert "mean confidence" in _reasons(shrunk)


# -- clean documents score high --------------------------------------------------------------


OFFICE_AND_DATA = ("docx", "pptx", "xlsx", "csv", "jats")


def test_clean_office_data_and_article_documents_of_the_corpus_score_high(
    corpus_dir: Path,
) -> None:
    # PDFs, HTML and Markdown: test_parsing_corpus.py; the scans: test_parsing_pdf_ocr.py.
    low = {}
    for folder in OFFICE_AND_DATA:
        for path in sorted((corpus_dir / folder).iterdir()):
            if not path.is_file() or path.name.startswith(("LICENSE", "README")):
                continue
            key = f"{folder}/{path.name}"
            parsed = parse_document(path.read_bytes(), key)
            if parsed.text_layer.strip() and _score(parsed) < WARN_BELOW:
                low[key] = _reasons(parsed)
    assert low == {}


def test_a_short_note_placeholder_text_and_a_table_of_names_are_not_flagged() -> None:
    lorem = (
        "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod tempor "
        "invidunt ut labore et dolore magna aliquyam erat, sed diam voluptua. At vero eos et "
        "accusam et justo duo dolores et ea rebum. Stet clita kasd gubergren, no sea takimata "
        "sanctus est Lorem ipsum dolor sit amet."
    )
    assert quality.assess(lorem).score == 1.0
    assert quality.assess("Meeting moved to Tuesday, room 4.").score == 1.0
    names = "\n".join(
        f"{n},{first},{last},{city}"
        for n, (first, last, city) in enumerate(
            [
                ("Sheryl", "Baxter", "East Leonard"),
                ("Preston", "Lozano", "Jimmychester"),
                ("Roy", "Berry", "Isabelborough"),
                ("Linda", "Olsen", "Bensonview"),
                ("Joanna", "Bender", "West Priscilla"),
                ("Aimee", "Downs", "Lake Charlotte"),
                ("Darren", "Peck", "Lake Ana"),
                ("Brett", "Mullen", "Kimport"),
            ]
            * 2
        )
    )
    assert quality.assess(names).score >= WARN_BELOW


# -- recorded, stored, checked ---------------------------------------------------------------


def test_the_score_is_stored_with_the_sections_reported_on_reuse_and_checked_as_a_warning(
    tmp_path: Path,
) -> None:
    from agrag_pipeline.pipeline import PARSER_METADATA, build_sections, run_document
    from agrag_pipeline.runtime import Runtime
    from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
    from agrag_pipeline.validation import check_sections

    raw = tmp_path / "raw"
    raw.mkdir()
    text = (FIXTURES / "invoice_pl.txt").read_text("utf-8")
    (raw / "clean.txt").write_text(text, "utf-8")
    (raw / "mojibake.txt").write_text(text.encode("cp1250").decode("cp1252"), "utf-8")
    runtime = Runtime.from_files(DEFAULT_SETTINGS_PATH, raw, tmp_path / "warehouse")
    outcomes = {}
    for name in ("clean.txt", "mojibake.txt"):
        document = run_document(runtime, name, embed=False).document
        assert document.id is not None
        stored = runtime.warehouse.table_metadata("sections", document.id) or {}
        score = float(stored[PARSER_METADATA + quality.SCORE_KEY])
        reused = build_sections(runtime.warehouse, document)
        assert reused.reused
        assert float(reused.parsed.document.metadata[quality.SCORE_KEY]) == score
        outcomes[name] = {o.name: o for o in check_sections(runtime.warehouse, name)}
    clean, broken = outcomes["clean.txt"], outcomes["mojibake.txt"]
    assert clean["reading_quality"].passed
    assert not broken["reading_quality"].passed
    assert broken["reading_quality"].severity == "warn"  # a warning: the document is kept
    assert "wrong code page" in broken["reading_quality"].description
    assert broken["reading_quality"].metadata["score"] < WARN_BELOW
    assert broken["section_spans_reproduce_text"].passed
    # The threshold is the settings': at 0 nothing warns.
    lenient = check_sections(runtime.warehouse, "mojibake.txt", warn_below=0.0)
    assert {o.name: o.passed for o in lenient}["reading_quality"]


# -- the cost is bounded, what a sample misses is still caught -------------------------------


def _long_text(corpus_dir: Path, size: int) -> str:
    """Real prose (a paper's text, open access, CC BY; ASCII only, so it holds no undecoded
    character) repeated to ``size`` characters."""
    key = "jats/pone.0234687.nxml"
    text = parse_document((corpus_dir / key).read_bytes(), key).text_layer
    text = text.encode("ascii", "ignore").decode()
    return (text * (size // len(text) + 1))[:size]


def test_the_score_reads_a_bounded_sample_of_a_5_mb_text(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every character the score's per-word and library-regex work reads (wordfreq's tokenizer,
    # ftfy's mojibake measure, the script count) is counted: a 5 MB text costs what a few KB do.
    import wordfreq

    read: list[int] = []
    for owner, name in (
        (wordfreq, "tokenize"),
        (quality, "_badness"),  # ftfy's measure, its regex run near non-ASCII characters
        (quality, "script_shares"),
    ):
        original = getattr(owner, name)

        def counted(text: str, *rest: object, _original=original) -> object:  # type: ignore[no-untyped-def]
            read.append(len(text))
            return _original(text, *rest)

        monkeypatch.setattr(owner, name, counted)
    text = _long_text(corpus_dir, 5_000_000) + " end."  # a text no cache has seen
    measured = quality.assess(text)
    assert measured.language == "en" and measured.score >= CLEAN
    # Each reads the sample (a few KB), some twice (the text's words, then its main script's).
    assert read and max(read) <= quality.MAX_SAMPLE_CHARS <= 4096
    assert sum(read) <= 8 * quality.MAX_SAMPLE_CHARS


def test_undecodable_characters_a_sample_misses_are_still_counted(corpus_dir: Path) -> None:
    # A 5 MB text, clean but for one stretch of 2,000 U+FFFD (a damaged block decoded with
    # errors replaced) where no window of the sample falls: the pass over the whole text finds
    # them. So are C1 control characters (mojibake) in another stretch.
    text = _long_text(corpus_dir, 5_000_000)
    assert "\ufffd" not in quality._sample(text)
    middle = len(text) // 2  # between the fourth window and the fifth
    damaged = text[:middle] + "\ufffd" * 2_000 + text[middle:]
    assert "\ufffd" not in quality._sample(damaged)
    clean, broken = quality.assess(text), quality.assess(damaged)
    assert clean.score >= CLEAN
    assert broken.score <= clean.score - VISIBLE
    assert "2000 characters could not be decoded" in "; ".join(broken.reasons)
    controls = text[:middle] + "we\x92re here \x84\x84 " * 5000 + text[middle:]
    measured = quality.assess(controls)
    assert measured.score <= clean.score - VISIBLE
    assert "wrong code page" in "; ".join(measured.reasons)


def test_a_long_document_decoded_with_the_wrong_code_page_throughout_is_still_flagged() -> None:
    # Real bytes read wrong: a Polish invoice written in UTF-8 and in cp1250, decoded as
    # cp1252, repeated to 300 KB, so it is scored on a sample. Flagged like the short one.
    invoice = (FIXTURES / "invoice_pl.txt").read_text("utf-8")
    for encoding in ("utf-8", "cp1250"):
        misread = invoice.encode(encoding).decode("cp1252", "replace")
        long = "\n".join([misread] * (300_000 // len(misread) + 1))
        assert len(long) > 100 * quality.MAX_SAMPLE_CHARS
        short_score = quality.assess(misread).score
        measured = quality.assess(long)
        assert short_score < WARN_BELOW
        assert measured.score < WARN_BELOW, (encoding, measured.reasons)


# -- structured data and code ----------------------------------------------------------------


def test_structured_data_and_code_are_not_flagged_for_key_paths_and_identifiers() -> None:
    # Real files written by others (fixtures/README.md): an element dump's key paths
    # ("metadata.file_directory", "element_id"), code identifiers and markup names are words of
    # no language; read as prose, simple.ndjson scored 0.42.
    folder = FIXTURES / "structured"
    scores = {}
    for path in sorted(folder.iterdir()):
        parsed = parse_document(path.read_bytes(), path.name)
        if parsed.text_layer.strip():
            scores[path.name] = (_score(parsed), _reasons(parsed))
    assert len(scores) >= 10
    assert {name: s for name, s in scores.items() if s[0] < CLEAN} == {}
    # What is not about words still counts: the same file read with the wrong code page.
    text = (folder / "simple.ndjson").read_text("utf-8").replace("e", "é")
    misread = text.encode("utf-8").decode("cp1252").encode("utf-8")
    broken = parse_document(misread, "simple.ndjson")
    assert _score(broken) < WARN_BELOW
    assert "wrong code page" in _reasons(broken)


def test_the_trigram_verdicts_keep_no_more_language_sets_than_the_trigram_sets_kept() -> None:
    """Each set of languages compared keeps its trigram set (1-2 MB) in the verdict cache: a
    corpus in many languages must not keep one per language for the life of the worker."""
    languages = [c for c in quality.SCRIPT_LANGUAGES["Latin"] if quality._available(c)][:12]
    assert len(languages) == 12
    for language in languages:
        words = sorted(quality._profile(language))[:300]
        quality.assess(" ".join(words) + ".")
    assert len(quality._ODD_TRIGRAMS) <= 8  # as many as `_known_trigrams` keeps
