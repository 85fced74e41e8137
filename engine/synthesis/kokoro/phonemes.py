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
from engine.synthesis.lexicon import prepare_mapped, segment_spans
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
    owners: tuple[int, ...] = ()
    """For each token, the whitespace-separated word of the text it voices; -1 for a space
    or for punctuation before or after a word's sounds (a pause is no part of the word)."""


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
    return owned_phonemes(text, voice, mapper)[0]


def owned_phonemes(
    text: str, voice: str, mapper: Callable[[str], str] = lambda ipa: ipa
) -> tuple[str, list[int]]:
    """`clause_phonemes(text, ...)` and, for each of its characters, the whitespace-separated
    word of `text` it voices (-1: a space between words). espeak-ng may join words ("in the"
    as one) or split one ("2024" as four): a clause whose phoneme words do not pair one to one
    with its words is shared by each word's phonemes said alone (see `_share`)."""
    lib = EspeakLib.instance()
    prepared, origin = prepare_mapped(text)
    word_of = _word_index(text)
    owner_at = [word_of[o] for o in origin]  # prepared text position -> word of `text`
    pieces: list[tuple[str, list[int]]] = []
    for chunk, is_ipa, at, shown in segment_spans(prepared):
        shown_words = _words_at(shown, at)
        if is_ipa:
            lead = " " if pieces else ""
            mapped = mapper(chunk)
            owners = _share(mapped, [(w, owner_at[p]) for w, p in shown_words], None)
            pieces.append((lead + mapped, [-1] * len(lead) + owners))
            continue
        flat = " ".join(w for w, _p in shown_words)  # NB: what `" ".join(chunk.split())` gives
        flat_at = [p + j for w, p in shown_words for j in range(len(w) + 1)]
        for m in _CLAUSE.finditer(flat):
            words, punct = m.group(1), m.group(2)
            if not words and not punct:
                continue
            ipa = lib.phonemes(words, voice) if words.strip() else ""
            lead = " " if pieces and (words[:1].isspace() or chunk[:1].isspace() or not pieces[-1][0]) else ""
            mapped = mapper(ipa)
            said = [(w, owner_at[flat_at[m.start(1) + p]]) for w, p in _words_at(words, 0)]
            owners = _share(mapped, said, lambda w: mapper(lib.phonemes(w, voice)))
            marks, mark_owners = _punctuation(
                punct, [owner_at[flat_at[m.start(2) + j]] for j in range(len(punct))]
            )
            pieces.append((lead + mapped + marks, [-1] * len(lead) + owners + mark_owners))
    chars = [c for piece, _o in pieces for c in piece]
    owners = [o for _p, piece_owners in pieces for o in piece_owners]
    return _squash(chars, owners)


def _word_index(text: str) -> list[int]:
    """For each character of `text`, the index of its whitespace-separated word (-1: space)."""
    out = [-1] * len(text)
    for k, m in enumerate(re.finditer(r"\S+", text)):
        out[m.start() : m.end()] = [k] * (m.end() - m.start())
    return out


def _words_at(text: str, at: int) -> list[tuple[str, int]]:
    """`text.split()` with where each word starts (offset by `at`)."""
    out, k = [], 0
    for w in text.split():
        k = text.index(w, k)
        out.append((w, at + k))
        k += len(w)
    return out


def _share(mapped: str, said: list[tuple[str, int]], alone: Callable[[str], str] | None) -> list[int]:
    """The owner of each character of `mapped` (a clause's phonemes) among the words `said`
    ((word, owner) in order). Where the phoneme words pair one to one with the words, each
    takes its own. Else each word said alone (`alone`; None: its written length stands in)
    gives its length, and phoneme words and words are paired in order, several phoneme words
    to a word (espeak-ng split it) or a phoneme word shared by several words (it joined them,
    each taking a share of its letters by its length alone), the lengths agreeing best."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"\S+", mapped)]
    out = [-1] * len(mapped)
    if not said or not runs:
        return out
    if len(runs) == len(said):
        for (a, b), (_w, o) in zip(runs, said, strict=True):
            out[a:b] = [o] * (b - a)
        return out
    solo = [max(1, len("".join((alone(w) if alone is not None else w).split()))) for w, _o in said]
    for (r0, r1), (w0, w1) in _pair([b - a for a, b in runs], solo):
        a, b = runs[r0][0], runs[r1 - 1][1]
        letters = [j for j in range(a, b) if not mapped[j].isspace()]
        total, done = sum(solo[w0:w1]), 0
        for k in range(w0, w1):
            lo, hi = round(len(letters) * done / total), round(len(letters) * (done + solo[k]) / total)
            for j in letters[lo:hi]:
                out[j] = said[k][1]
            done += solo[k]
    return out


_MAX_GROUP = 5
"""At most this many words joined into one phoneme word, or phoneme words from one word."""


def _pair(runs: list[int], words: list[int]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Phoneme words (their lengths) and words (their lengths said alone) paired in order:
    ((first run, end), (first word, end)) groups, one side of each a single item; the pairing
    whose groups' lengths differ least (each group beyond one to one costs a letter)."""
    inf = float("inf")
    n, m = len(runs), len(words)
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    step: dict[tuple[int, int], tuple[int, int]] = {}
    cost[0][0] = 0.0
    for i in range(n + 1):
        for j in range(m + 1):
            if cost[i][j] == inf:
                continue
            for di, dj in [(1, k) for k in range(1, _MAX_GROUP + 1)] + [
                (k, 1) for k in range(2, _MAX_GROUP + 1)
            ]:
                if i + di > n or j + dj > m:
                    continue
                c = cost[i][j] + abs(sum(runs[i : i + di]) - sum(words[j : j + dj])) + (di + dj - 2)
                if c < cost[i + di][j + dj]:
                    cost[i + di][j + dj], step[(i + di, j + dj)] = c, (i, j)
    if cost[n][m] == inf:  # more than _MAX_GROUP to one somewhere: everything as one group
        return [((0, n), (0, m))]
    groups, at = [], (n, m)
    while at != (0, 0):
        prev = step[at]
        groups.append(((prev[0], at[0]), (prev[1], at[1])))
        at = prev
    return groups[::-1]


def _punctuation(punct: str, owners: list[int]) -> tuple[str, list[int]]:
    """A clause's closing punctuation as the phonemes carry it (a dash set apart by spaces)."""
    chars: list[str] = []
    out: list[int] = []
    for c, o in zip(punct, owners, strict=True):
        chars += [" ", c, " "] if c == "—" else [c]
        out += [-1, o, -1] if c == "—" else [o]
    while chars and chars[0].isspace():
        chars, out = chars[1:], out[1:]
    while chars and chars[-1].isspace():
        chars, out = chars[:-1], out[:-1]
    return "".join(chars), out


def _squash(chars: list[str], owners: list[int]) -> tuple[str, list[int]]:
    """`" ".join("".join(chars).split())`, each kept character with its owner."""
    text: list[str] = []
    out: list[int] = []
    for c, o in zip(chars, owners, strict=True):
        if not c.isspace():
            text.append(c)
            out.append(o)
        elif text and text[-1] != " ":
            text.append(" ")
            out.append(-1)
    if text and text[-1] == " ":
        text.pop()
        out.pop()
    return "".join(text), out


class Phonemizer:
    """English text to Kokoro phonemes and token ids, clause by clause."""

    def __init__(self, vocab: Mapping[str, int], british: bool = False) -> None:
        self.vocab = dict(vocab)
        self.british = british
        self.voice = "en" if british else "en-us"
        self.table = BRITISH if british else AMERICAN

    def phonemes(self, text: str) -> str:
        """Kokoro phonemes with the text's punctuation in place."""
        return self._owned(text)[0]

    def _owned(self, text: str) -> tuple[str, list[int]]:
        ph, owners = owned_phonemes(text, self.voice, lambda ipa: to_kokoro(ipa, self.table))
        return ph, _inside_words(ph, owners)

    def __call__(self, text: str) -> Phonemized:
        return self._tokenize(*self._owned(text))

    def split(
        self, text: str, max_tokens: int = MAX_TOKENS, first_tokens: int | None = None
    ) -> list[Phonemized]:
        """Phonemize, then cut at clause punctuation (or spaces) so each part fits the context.
        With `first_tokens`, the first part ends at the first clause boundary that keeps it
        that short, so streaming can start on it while the rest is voiced."""
        ph, owners = self._owned(text)
        whole = self._tokenize(ph, owners)
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
        parts, at = [], 0
        for p in pack(pieces, max_tokens, limit):
            part_owners, at = _follow(p, ph, owners, at)
            if p:
                parts.append(self._tokenize(p, part_owners))
        return parts

    def _tokenize(self, ph: str, owners: Sequence[int]) -> Phonemized:
        tokens = [self.vocab[c] for c in ph if c in self.vocab]
        kept = tuple(o for c, o in zip(ph, owners, strict=True) if c in self.vocab)
        return Phonemized(ph, tokens, "".join(sorted({c for c in ph if c not in self.vocab})), kept)


_MARKS = set(';:,.!?—…"“”()')


def _inside_words(ph: str, owners: list[int]) -> list[int]:
    """`owners` with a word's punctuation before its first sound or after its last one
    unowned (a word of punctuation only, such as a dash, keeps its own)."""
    sounds: dict[int, tuple[int, int]] = {}
    for j, (c, o) in enumerate(zip(ph, owners, strict=True)):
        if o >= 0 and c not in _MARKS:
            first, _last = sounds.get(o, (j, j))
            sounds[o] = (first, j)
    out = list(owners)
    for j, (c, o) in enumerate(zip(ph, owners, strict=True)):
        span = sounds.get(o)
        if o >= 0 and c in _MARKS and span is not None and not span[0] < j < span[1]:
            out[j] = -1
    return out


def _follow(part: str, whole: str, owners: Sequence[int], at: int) -> tuple[list[int], int]:
    """The owners of `part`'s characters, `part` being `whole` from `at` on with spaces at
    its cuts dropped or added; and where in `whole` the next part starts."""
    out: list[int] = []
    for c in part:
        while at < len(whole) and whole[at] != c and whole[at].isspace():
            at += 1
        if at < len(whole) and whole[at] == c:
            out.append(owners[at])
            at += 1
        else:
            out.append(-1)  # a space the packing put where a cut had none
    return out, at


def length_buckets(lengths: Sequence[int], max_batch: int, bucket: int = 32) -> Iterator[list[int]]:
    """Indices grouped by token-length bucket, at most `max_batch` a group (less padding)."""
    groups: dict[int, list[int]] = {}
    for k, n in enumerate(lengths):
        groups.setdefault(n // bucket, []).append(k)
    for _, idx in sorted(groups.items()):
        for start in range(0, len(idx), max_batch):
            yield idx[start : start + max_batch]
