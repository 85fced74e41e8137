"""Text -> Kokoro tokens: espeak-ng's IPA (American or British English), mapped onto the
symbol set Kokoro-82M was trained on, with punctuation kept and clauses split to fit the
model's context.

Kokoro's English symbols fold common diphthongs and affricates into single letters
(aɪ->I, aʊ->W, eɪ->A, oʊ->O, ɔɪ->Y, British əʊ->Q, dʒ->ʤ, tʃ->ʧ) and, for American
English, drop vowel length and write the flap as T; espeak-ng spells these out. The tables
below are that mapping; `to_kokoro` applies them longest first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from engine.synthesis.espeak_lib import EspeakLib
from engine.synthesis.lexicon import prepare, segments
from engine.synthesis.text import pack

MAX_TOKENS = 510
"""Kokoro's context is 512 positions, two of them the boundary tokens."""

_COMMON = {
    "aɪ": "I", "aʊ": "W", "eɪ": "A", "ɔɪ": "Y", "dʒ": "ʤ", "tʃ": "ʧ", "r": "ɹ", "g": "ɡ",
    "x": "k", "ɬ": "l", "ʍ": "w", "ɫ": "l", "ɚː": "ɚ", "e": "ɛ", "ɜ": "ɜ",
}  # fmt: skip
AMERICAN = {
    **_COMMON, "oʊ": "O", "əʊ": "O", "ɜː": "ɜɹ", "ɾ": "T", "ɐ": "ə", "iː": "i", "uː": "u",
    "ɑː": "ɑ", "ɔː": "ɔ", "ɪə": "ɪɹ", "eə": "ɛɹ", "ʊə": "ʊɹ", "ː": "",
}  # fmt: skip
BRITISH = {**_COMMON, "əʊ": "Q", "oʊ": "Q", "eə": "ɛː", "ɾ": "t", "ɜː": "ɜː"}
_DROP = "\u0361\u035c\u203f\u02d1-\u0329\u030d\u0325\u032f"
"""Tie bars, linking marks, half-length, syllabicity and voicing diacritics."""
_CLAUSE = re.compile(r"([^.,;:!?…—\"“”()]*)([.,;:!?…—\"“”()]*)")


@dataclass(frozen=True)
class Phonemized:
    phonemes: str
    tokens: list[int]
    unknown: str
    """Symbols that had no Kokoro equivalent and were dropped (empty when all mapped)."""


def to_kokoro(ipa: str, table: Mapping[str, str]) -> str:
    """Map espeak-ng IPA onto Kokoro's symbols (longest match first)."""
    ipa = unicodedata.normalize("NFC", ipa)
    ipa = "".join(ch for ch in ipa if ch not in _DROP)
    keys = sorted(table, key=len, reverse=True)
    out, k = [], 0
    while k < len(ipa):
        for key in keys:
            if ipa.startswith(key, k):
                out.append(table[key])
                k += len(key)
                break
        else:
            out.append(ipa[k])
            k += 1
    return "".join(out)


def clause_phonemes(text: str, voice: str, mapper: Callable[[str], str] = lambda ipa: ipa) -> str:
    """espeak-ng's IPA for `text` (read with `voice`) clause by clause, with the clause
    punctuation kept, through `mapper` (a backend's symbol set); the pronunciation lexicon is
    applied first and inline IPA (`[word](/ipa/)`) is taken as written."""
    lib = EspeakLib.instance()
    pieces: list[str] = []
    for chunk, is_ipa in segments(prepare(text)):
        if is_ipa:
            lead = " " if pieces else ""
            pieces.append(lead + mapper(chunk))
            continue
        for words, punct in _CLAUSE.findall(" ".join(chunk.split())):
            if not words and not punct:
                continue
            ipa = lib.phonemes(words, voice) if words.strip() else ""
            lead = " " if pieces and (words[:1].isspace() or chunk[:1].isspace() or not pieces[-1]) else ""
            pieces.append(lead + mapper(ipa) + punct.replace("—", " — ").strip())
    return " ".join("".join(pieces).split())


class Phonemizer:
    """English text to Kokoro phonemes and token ids, clause by clause."""

    def __init__(self, vocab: Mapping[str, int], british: bool = False) -> None:
        self.vocab = dict(vocab)
        self.british = british
        self.voice = "en" if british else "en-us"
        self.table = BRITISH if british else AMERICAN

    def phonemes(self, text: str) -> str:
        """Kokoro phonemes with the text's punctuation in place."""
        return clause_phonemes(text, self.voice, lambda ipa: to_kokoro(ipa, self.table))

    def __call__(self, text: str) -> Phonemized:
        ph = self.phonemes(text)
        tokens = [self.vocab[c] for c in ph if c in self.vocab]
        unknown = "".join(sorted({c for c in ph if c not in self.vocab}))
        return Phonemized(ph, tokens, unknown)

    def split(
        self, text: str, max_tokens: int = MAX_TOKENS, first_tokens: int | None = None
    ) -> list[Phonemized]:
        """Phonemize, then cut at clause punctuation (or spaces) so each part fits the context.
        With `first_tokens`, the first part ends at the first clause boundary that keeps it
        that short, so streaming can start on it while the rest is voiced."""
        whole = self(text)
        limit = first_tokens or max_tokens
        if len(whole.tokens) <= limit:
            return [whole] if whole.tokens else []
        pieces: list[str] = []
        for piece in re.split(r"(?<=[.,;:!?…])\s+", whole.phonemes):
            while len(piece) > max_tokens:  # one clause longer than the context: cut at a space
                cut = piece.rfind(" ", 0, max_tokens) if " " in piece[:max_tokens] else max_tokens
                pieces.append(piece[:cut])
                piece = piece[cut:].strip()
            pieces.append(piece)
        return [self._tokenize(p) for p in pack(pieces, max_tokens, limit) if p]

    def _tokenize(self, ph: str) -> Phonemized:
        tokens = [self.vocab[c] for c in ph if c in self.vocab]
        return Phonemized(ph, tokens, "".join(sorted({c for c in ph if c not in self.vocab})))


def length_buckets(lengths: Sequence[int], max_batch: int, bucket: int = 32) -> Iterator[list[int]]:
    """Indices grouped by token-length bucket, at most `max_batch` a group (less padding)."""
    groups: dict[int, list[int]] = {}
    for k, n in enumerate(lengths):
        groups.setdefault(n // bucket, []).append(k)
    for _, idx in sorted(groups.items()):
        for start in range(0, len(idx), max_batch):
            yield idx[start : start + max_batch]
