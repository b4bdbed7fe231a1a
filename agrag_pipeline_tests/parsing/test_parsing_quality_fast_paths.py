"""The reading-quality score's fast paths give what the libraries give (issue 25).

The score runs ftfy's mojibake regex only near non-ASCII characters and keeps wordfreq's tokens
per whitespace-separated run across texts. Both are shortcuts to the same result: here they are
compared with the libraries' own calls on real text and on generated text that probes where a
shortcut could go wrong (whitespace of every kind between runs, marks and word-joining
characters beside it, mojibake at the text's start and at windows' edges).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import ftfy.badness
import wordfreq

from agrag_pipeline.parsing import parse_document, quality

#: Every character Python splits at.
WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
#: Letters, digits and symbols of several scripts, apostrophes and ``@s`` (wordfreq's own
#: cases), and characters that tie a run to what stands beside it: combining marks, format
#: characters, a prepended sign, a halfwidth sound mark.
PIECES = [
    *"abcXYZéüßİıŁœ'’.,:;-_@0123456789()!?«»/&#%",
    *"αβγΣςабвгЖ中文字ひらがなカタカナ한국ไทยשלוםمرحباनमसत",
    *["@s", "☃", "😀", "🇫🇷", "ﬁ", "¨", "Ⅻ", "㎏", "\ufffd", "\ue000"],
    *["\u0301", "\u00ad", "\u200d", "\u0600", "\u0d4e", "\uff9e", "\u093f", "\u202f"],
]


def _corpus_samples(corpus_dir: Path) -> list[str]:
    texts = []
    for folder in ("markdown/rust-book", "html", "jats"):
        for path in [p for p in sorted((corpus_dir / folder).iterdir()) if p.is_file()][:25]:
            parsed = parse_document(path.read_bytes(), path.relative_to(corpus_dir).as_posix())
            texts.append(quality._sample(parsed.text_layer))
    return texts


def _generated(rnd: random.Random) -> str:
    parts = []
    for _ in range(rnd.randint(1, 20)):
        parts.append("".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 6))))
        parts.append(rnd.choice(WHITESPACE) * rnd.randint(1, 2))
    return "".join(parts)


def test_tokens_kept_by_run_are_wordfreqs_tokens_of_the_whole_text(corpus_dir: Path) -> None:
    rnd = random.Random(25)
    texts = _corpus_samples(corpus_dir) + [_generated(rnd) for _ in range(3000)]
    languages = ["en", "de", "pl", "tr", "ru", "ar", "he", "hi", "sh", "vi"]
    by_runs = 0
    for text in texts:
        language = rnd.choice(languages)
        script = rnd.choice([None, "Latin", "Cyrillic", "Arabic"])
        want = quality._words_of(wordfreq.tokenize(text, language), script)
        by_runs += quality._runs_tokenize_alone(text, language)
        for _ in range(2):  # the second time from the runs kept
            quality._word_tokens.cache_clear()
            assert quality._word_tokens(text, language, script) == want, (language, text)
    assert by_runs > len(texts) // 10  # the shortcut was taken, not only the whole text


def test_a_run_beside_a_word_joining_or_mark_character_is_tokenised_with_the_whole_text() -> None:
    # U+202F is whitespace to Python and a word-joining character to Unicode's word breaks:
    # wordfreq gives one token across it. A mark after whitespace joins the whitespace.
    for text in ("a\u202fb c", "x \u0301y", "\u0600 1"):
        assert not quality._runs_tokenize_alone(text, "en")
        quality._word_tokens.cache_clear()
        assert quality._word_tokens(text, "en") == quality._words_of(
            wordfreq.tokenize(text, "en"), None
        )
    assert wordfreq.tokenize("ab\u202fcd ef", "en") == ["ab\u202fcd", "ef"]
    assert quality._runs_tokenize_alone("ab cd\u3000ef\u2028gh", "en")


def test_the_mojibake_count_near_non_ascii_characters_is_ftfys(corpus_dir: Path) -> None:
    rnd = random.Random(20)
    suspects = "ÂÃÎÐŒœ×²³ØÙà√≈‚вЂВГРСўĀāβ€ΒΓΞΟ°µ©®™¢£¥§¶«»–—\xa0\xad\x92\x84"
    texts = _corpus_samples(corpus_dir)
    for _ in range(5000):
        parts = []
        for _ in range(rnd.randint(1, 8)):
            parts.append("".join(rnd.choice("ab z.,\n") for _ in range(rnd.randint(0, 18))))
            parts.append("".join(rnd.choice(suspects) for _ in range(rnd.randint(1, 4))))
        texts.append("".join(parts))
    texts += ["Ã ", "x\nÃ tail", "naïve café", "we\x92re here", "ASCII only, no signs."]
    for text in texts:
        assert quality._badness(text) == ftfy.badness.badness(text), text
