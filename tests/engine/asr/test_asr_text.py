"""Text normalisation and word error rate: what a line check compares (no model needed)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.asr import normalise, wer, word_errors
from engine.asr.text import number_words, ordinal_words
from engine.asr.wer import align


def test_case_punctuation_and_numbers_are_spoken_forms() -> None:
    assert normalise("Room 12, at 3.5%!") == ["room", "twelve", "at", "three", "point", "five", "percent"]
    assert normalise("The 21st of May, 2024.") == [
        "the",
        "twenty",
        "first",
        "of",
        "may",
        "two",
        "thousand",
        "twenty",
        "four",
    ]
    assert normalise("DON'T—stop… it’s 1,000 & more") == [
        "don't",
        "stop",
        "it's",
        "one",
        "thousand",
        "and",
        "more",
    ]
    assert normalise("") == []


def test_number_words() -> None:
    assert number_words(0) == ["zero"]
    assert number_words(115) == ["one", "hundred", "fifteen"]
    assert number_words(3_000_042) == ["three", "million", "forty", "two"]
    assert ordinal_words(12) == ["twelfth"] and ordinal_words(40) == ["fortieth"]
    assert ordinal_words(103) == ["one", "hundred", "third"]


def test_script_digits_and_heard_words_compare_equal() -> None:
    """Whisper writes '12th' where the script says 'twelfth' (and the other way round)."""
    assert wer(normalise("the night of the twelfth"), normalise("The night of the 12th?")) == 0.0


def test_word_errors_counts_each_kind() -> None:
    e = word_errors(["a", "b", "c", "d"], ["a", "x", "c", "d", "e"])
    assert (e.substitutions, e.deletions, e.insertions, e.n_reference) == (1, 0, 1, 4)
    assert e.wer == 0.5
    assert word_errors(["a", "b", "c", "d"], ["a", "d"]).deletions == 2
    assert wer([], []) == 0.0 and wer([], ["x"]) == 1.0


words = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=12)


@given(words, words)
def test_alignment_covers_both_sides_in_order(ref: list[str], hyp: list[str]) -> None:
    ops = align(ref, hyp)
    assert [i for i, _ in ops if i is not None] == list(range(len(ref)))
    assert [j for _, j in ops if j is not None] == list(range(len(hyp)))
    e = word_errors(ref, hyp)
    assert e.substitutions + e.deletions + e.insertions <= max(len(ref), len(hyp))
    assert wer(ref, ref) == 0.0


@given(st.text(max_size=200))
def test_normalise_takes_any_text(text: str) -> None:
    for w in normalise(text):
        assert w and w == w.lower() and not any(ch in w for ch in ' .,!?;:"')


def test_a_short_line_is_marked_only_when_a_word_went_unheard() -> None:
    from engine.asr import LineCheck

    assert not LineCheck(1.0, "Oh.", (), 0.3, deletions=0, n_words=1).flagged  # 'Halt!' misheard
    assert LineCheck(1.0, "", (), 0.3, deletions=1, n_words=1).flagged  # nothing heard
    assert LineCheck(0.5, "a b", (), 0.3, deletions=0, n_words=4).flagged
