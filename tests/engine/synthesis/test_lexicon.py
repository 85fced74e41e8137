"""The pronunciation lexicon: entries, inline IPA, and what each backend's phonemes become."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.errors import CastError
from engine.core.types import Voice
from engine.synthesis import lexicon
from engine.synthesis.espeak import synthesize_text
from engine.synthesis.kokoro.phonemes import AMERICAN, clause_phonemes, to_kokoro
from engine.synthesis.lexicon import Lexicon, for_espeak, ipa_to_espeak, plain_text, segments

WORCESTER = "ˈwʊstər"


@pytest.fixture(autouse=True)
def no_user_lexicon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(lexicon.USER_LEXICON_ENV, str(tmp_path / "none.toml"))
    monkeypatch.setattr(lexicon, "_user", None)
    yield
    lexicon.use_project_lexicon(Lexicon())
    monkeypatch.setattr(lexicon, "_user", None)


def test_entries_apply_to_whole_words_any_case() -> None:
    lex = Lexicon.from_mapping({"Worcester": f"/{WORCESTER}/", "Nguyen": "win"})
    assert lex.apply("WORCESTER and worcestershire, Nguyen.") == (
        f"[WORCESTER](/{WORCESTER}/) and worcestershire, win."
    )
    marked = lex.apply("Go to Worcester")
    assert lex.apply(marked) == marked  # applying twice changes nothing
    assert segments(marked) == [("Go to ", False), (WORCESTER, True)]
    assert plain_text(marked) == "Go to Worcester"


def test_bad_entries_name_the_word() -> None:
    with pytest.raises(CastError, match=r"'Worcester'.*between slashes"):
        Lexicon.from_mapping({"Worcester": "/ˈwʊs"})
    with pytest.raises(CastError, match=r"'x'.*respelling"):
        Lexicon.from_mapping({"x": 3})
    with pytest.raises(CastError, match="is not a word"):
        Lexicon.from_mapping({"two  spaces!": "x"})
    with pytest.raises(CastError, match="expected a table"):
        Lexicon.from_mapping(["Worcester"])


def test_user_file_then_project_entries_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "lexicon.toml"
    user.write_text('[lexicon]\nWorcester = "wooster"\nHale = "hail"\n', encoding="utf-8")
    monkeypatch.setenv(lexicon.USER_LEXICON_ENV, str(user))
    assert lexicon.prepare("Hale in Worcester") == "hail in wooster"
    lexicon.use_project_lexicon(Lexicon.from_mapping({"worcester": f"/{WORCESTER}/"}))
    assert lexicon.prepare("Hale in Worcester") == f"hail in [Worcester](/{WORCESTER}/)"
    user.write_text("Worcester = ", encoding="utf-8")
    with pytest.raises(CastError, match=r"lexicon\.toml: invalid TOML"):
        Lexicon.from_file(user)


def test_phoneme_backends_say_what_the_lexicon_says() -> None:
    plain = clause_phonemes("Meet me in Worcester.", "en-us")
    assert WORCESTER not in plain
    lexicon.use_project_lexicon(Lexicon.from_mapping({"Worcester": f"/{WORCESTER}/"}))
    piper = clause_phonemes("Meet me in Worcester.", "en-us")  # Piper takes espeak-ng IPA as is
    assert piper.startswith("mˈiːt") and piper.endswith(f"{WORCESTER}.")
    kokoro = clause_phonemes("Meet me in Worcester.", "en-us", lambda ipa: to_kokoro(ipa, AMERICAN))
    assert kokoro.endswith(to_kokoro(WORCESTER, AMERICAN) + ".")
    inline = clause_phonemes(f"Meet me in [Worcester](/{WORCESTER}/).", "en-us")
    lexicon.use_project_lexicon(Lexicon())
    assert clause_phonemes(f"Meet me in [Worcester](/{WORCESTER}/).", "en-us") == inline == piper


def test_espeak_gets_phoneme_mnemonics() -> None:
    assert ipa_to_espeak(WORCESTER) == "'wUst3"
    assert ipa_to_espeak("ˈtʃɑːlz dʒˈeɪn") == "'tSA:lz dZ'eIn"
    lexicon.use_project_lexicon(Lexicon.from_mapping({"Worcester": f"/{WORCESTER}/"}))
    assert for_espeak(lexicon.prepare("Meet me in Worcester.")) == "Meet me in [['wUst3]]."
    said = synthesize_text("Worcester", Voice())
    literal = synthesize_text("[ [ w U s t 3 ] ]", Voice())  # what it would be without phoneme input
    assert 0 < len(said) < 0.7 * len(literal)


@given(st.text(max_size=60))
def test_any_text_applies_without_error(text: str) -> None:
    lex = Lexicon.from_mapping({"Worcester": f"/{WORCESTER}/", "Nguyen": "win"})
    once = lex.apply(text)
    assert lex.apply(once) == once
    for_espeak(once)
    segments(once)


@pytest.mark.parametrize(("text", "joined"), [
    ("The coffee 'll be cold.", "The coffee'll be cold."),
    ("I do n't know", "I don't know"),
    ("We 've been; they 'd go. I 'm sure you 're", "We've been; they'd go. I'm sure you're"),
    ("Mary 's dog", "Mary's dog"),
    ("It ’ll rain", "It’ll rain"),
    ("She said 'hello' to him", "She said 'hello' to him"),  # a quotation, not a contraction
    ("rock 'n' roll", "rock 'n' roll"),
])  # fmt: skip
def test_a_detached_contraction_is_joined_to_its_word(text: str, joined: str) -> None:
    from engine.synthesis.lexicon import join_contractions, prepare_mapped

    out, origin = join_contractions(text)
    assert out == joined and [text[i] for i in origin] == list(out)
    prepared, where = prepare_mapped(text)
    assert prepared == joined and len(where) == len(prepared)


def test_every_backend_reads_a_detached_contraction_as_the_word_itself() -> None:
    """Both natural voices take espeak-ng's phonemes of the prepared text; espeak-ng takes it too."""
    from engine.synthesis.kokoro.phonemes import clause_phonemes
    from engine.synthesis.lexicon import prepare

    assert clause_phonemes("The coffee 'll be cold.", "en-us") == clause_phonemes(
        "The coffee'll be cold.", "en-us"
    )
    assert prepare("The coffee 'll be cold.") == "The coffee'll be cold."
