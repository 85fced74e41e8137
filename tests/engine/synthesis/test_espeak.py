"""espeak-ng through its C library: real audio, voices, the process pool, streaming."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Synthesizer, SynthRequest
from engine.synthesis.espeak import EspeakSynthesizer, espeak_variants, espeak_voices
from engine.synthesis.pool import EspeakPool
from engine.synthesis.text import split_chunks


def _rms(a: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(a, dtype=np.float64))))


def test_duration_grows_with_text() -> None:
    synth = EspeakSynthesizer()
    short, long = synth.synthesize([
        SynthRequest("Hello.", Voice()),
        SynthRequest("Hello. This line is a great deal longer than the first one.", Voice()),
    ])  # fmt: skip
    assert short.dtype == np.float32 and short.ndim == 1
    assert 0.2 * SAMPLE_RATE_HZ < len(short) < 2 * SAMPLE_RATE_HZ
    assert len(long) > 3 * len(short)
    assert _rms(long) > 0.01 and np.abs(long).max() <= 1.0


def test_voices_differ() -> None:
    synth = EspeakSynthesizer()
    text = "The lighthouse keeper climbs the stairs."
    a, b, c = synth.synthesize([
        SynthRequest(text, Voice(voice_id="en-us+m3")),
        SynthRequest(text, Voice(voice_id="en-gb-x-rp+f2")),
        SynthRequest(text, Voice(voice_id="en-us+m3", pitch=90)),
    ])  # fmt: skip
    n = min(len(a), len(b), len(c))
    assert not np.allclose(a[:n], b[:n], atol=1e-3)
    assert not np.allclose(a[:n], c[:n], atol=1e-3)
    # slower speech is longer
    slow, fast = synth.synthesize([
        SynthRequest(text, Voice(rate_wpm=100)), SynthRequest(text, Voice(rate_wpm=300)),
    ])  # fmt: skip
    assert len(slow) > 1.8 * len(fast)


def test_resampled_to_engine_rate() -> None:
    # a 22.05 kHz engine would make 'a' about as long; check the output is at 48 kHz:
    # espeak's spoken length in seconds must not depend on the output rate.
    from engine.synthesis.espeak import synthesize_text

    at_48k = synthesize_text("Testing the sample rate.", Voice(), 48_000)
    at_22k = synthesize_text("Testing the sample rate.", Voice(), 22_050)
    assert abs(len(at_48k) / 48_000 - len(at_22k) / 22_050) < 0.02


def test_voice_lists() -> None:
    voices = espeak_voices()
    ids = {v.voice_id for v in voices}
    assert {"en-us", "en", "fr", "de"} <= ids
    variants = {v.voice_id for v in espeak_variants()}
    assert {"m3", "f2"} <= variants


def test_unknown_voice_is_a_synthesis_error() -> None:
    with pytest.raises(SynthesisError, match="no voice 'xx-nowhere'"):
        EspeakSynthesizer().synthesize([SynthRequest("hi", Voice(voice_id="xx-nowhere"))])


def test_a_held_voice_is_not_set_again_and_a_change_still_takes() -> None:
    """The library keeps its voice between lines: setting it again is skipped; a different
    voice, a failed one and then the first again are each set. (The same line twice in one
    process differs by a few ms whether or not the voice is set again: the library's history;
    a sequence of lines is sample for sample the same either way.)"""
    from engine.synthesis.espeak_lib import EspeakLib

    lib = EspeakLib.instance()
    text = "The lighthouse keeper climbs the stairs."
    first = lib.synthesize(text, "en-us+m3", 175, 50, 50).copy()
    calls: list[bytes] = []
    real = lib._lib.espeak_SetVoiceByName

    def counted(name: bytes) -> int:
        calls.append(name)
        return int(real(name))

    lib._lib.espeak_SetVoiceByName = counted
    try:
        again = lib.synthesize(text, "en-us+m3", 175, 50, 50)
        assert calls == [] and abs(len(again) - len(first)) < 0.01 * len(first)
        other = lib.synthesize(text, "en-gb-x-rp+f2", 175, 50, 50)
        assert calls == [b"en-gb-x-rp+f2"] and not np.array_equal(first[:4000], other[:4000])
        with pytest.raises(SynthesisError, match="no voice"):
            lib.synthesize(text, "xx-nowhere", 175, 50, 50)
        back = lib.synthesize(text, "en-gb-x-rp+f2", 175, 50, 50)  # NB: set again after the failure
        assert calls[-2:] == [b"xx-nowhere", b"en-gb-x-rp+f2"]
        assert abs(len(back) - len(other)) < 0.01 * len(other)  # the library's history moves a few ms
        last = lib.synthesize(text, "en-us+m3", 175, 50, 50)
        assert calls[-1] == b"en-us+m3" and abs(len(last) - len(first)) < 0.01 * len(first)
    finally:
        lib._lib.espeak_SetVoiceByName = real


def test_threads_share_one_instance_safely() -> None:
    synth = EspeakSynthesizer()
    results: list[int] = []
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            results.append(len(synth.synthesize([SynthRequest(f"Thread number {k}.", Voice())])[0]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 8 and min(results) > 0


def test_pool_ten_parallel_requests() -> None:
    pool = EspeakPool(2)
    try:
        assert isinstance(pool, Synthesizer)
        requests = [SynthRequest(f"This is parallel line {k}.", Voice(pitch=30 + 5 * k)) for k in range(10)]
        out = pool.synthesize(requests)
        assert len(out) == 10 and all(len(a) > 0.5 * SAMPLE_RATE_HZ for a in out)
        same = EspeakSynthesizer().synthesize([requests[3]])[0]
        # the pool speaks with the same voice (espeak carries a little state between
        # utterances, so lengths may differ by a few samples)
        assert abs(len(out[3]) - len(same)) < 0.01 * len(same)
        assert abs(_rms(out[3]) - _rms(same)) < 0.05 * _rms(same)
        with pytest.raises(SynthesisError):
            pool.synthesize([SynthRequest("hi", Voice(voice_id="xx-nowhere"))])
        assert len(pool.synthesize([requests[0]])[0]) > 0  # a failure does not break the pool
    finally:
        pool.close()


def test_stream_yields_sentence_chunks() -> None:
    text = "First sentence is short. The second one, which has a clause, is longer! Third?"
    assert split_chunks(text) == [
        "First sentence is short.", "The second one, which has a clause, is longer!", "Third?",
    ]  # fmt: skip
    chunks = list(EspeakSynthesizer().stream(SynthRequest(text, Voice())))
    assert len(chunks) == 3 and all(len(c) > 0 for c in chunks)
    long = "word, " * 60 + "end."
    parts = split_chunks(long)
    assert len(parts) > 1 and all(len(p) <= 120 for p in parts)
    assert " ".join(parts).split() == long.split()


def test_pool_stream_in_order() -> None:
    pool = EspeakPool(2)
    try:
        text = "One. Two two. Three three three. Four four four four."
        chunks = list(pool.stream(SynthRequest(text, Voice())))
        lengths = [len(c) for c in chunks]
        assert len(chunks) == 4 and lengths == sorted(lengths)
    finally:
        pool.close()
