"""Play waits for the natural voices: with a cast on a slow backend (half real time, like
Kokoro on two cores), Play holds the clock ("preparing") until the lines ahead can be voiced
in time, so no opening line is late or in the stand-in voice; after Stop, a show stopped
long enough starts at once, its first line again in its cast voice. What is heard is
checked on the audio the callback took from the ring."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from show_harness import SR

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.scheduler import Backend, Scheduler, SchedulerConfig
from engine.script import load_script
from engine.show import Show
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak import EspeakSynthesizer
from engine.synthesis.take_cache import with_cache

pytestmark = pytest.mark.slow  # seconds of work each (a model, a search, a fuzz run)

VOICES = [VoiceInfo("kokoro", f"v{k}", f"V{k}", "en-us", g) for k, g in enumerate(["female", "male"] * 4)]
RTF = 0.5


def tone_hz(voice_id: str) -> float:
    return 300.0 + 50 * int(voice_id[1:])


class SlowVoices:
    """A natural-voice stand-in: a steady tone per voice, 60 ms a character, voiced at half
    real time (it sleeps for it), so the scheduler learns a Kokoro-like speed."""

    name = "kokoro"
    max_batch = 1
    sample_rate_hz = SAMPLE_RATE_HZ
    expected_rtf = RTF

    failures = 0
    """The next calls that fail (a backend failure: the line goes to the stand-in voice)."""

    def __init__(self) -> None:
        self.voiced: list[str] = []
        """The texts voiced, in order."""

    def voices(self) -> list[VoiceInfo]:
        return VOICES

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        if self.failures > 0:
            self.failures -= 1
            raise SynthesisError("the model is not loaded yet")
        out = []
        for r in batch:
            n = int(0.06 * len(r.text) * SR)
            time.sleep(RTF * n / SR)
            t = np.arange(n) / SR
            out.append((0.3 * np.sin(2 * np.pi * tone_hz(r.voice.voice_id) * t)).astype(np.float32))
            self.voiced.append(r.text)
        return out

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        pass


class Slow:
    def __init__(self, script: Path, takes: Path | None = None) -> None:
        """`takes`: a take cache folder in front of the slow voices (as Kokoro has one)."""
        self.script = load_script(script)
        self.ring = MixRing(1 << 14)
        self.voices = SlowVoices()
        natural = with_cache(self.voices, takes) if takes is not None else self.voices
        backends = {"espeak": Backend(EspeakSynthesizer()), "kokoro": Backend(natural)}
        self.sched = Scheduler(backends, SchedulerConfig())
        self.cast = Cast.auto(self.script, natural=VOICES)
        self.show = Show(self.script, self.cast, self.sched, self.ring, render_ahead_ms=100)
        self.out = np.zeros((2048, 2), np.float32)
        self.heard: list[np.ndarray] = []
        self.statuses: list[str] = []

    def run(self, seconds: float) -> None:
        """Real time: tick the engine and take one block from the ring every 2048 frames."""
        end = time.monotonic() + seconds
        next_block = time.monotonic()
        while time.monotonic() < end:
            self.show.tick()
            if time.monotonic() >= next_block:
                render(self.out, self.ring, RenderState(self.ring.controls.playing))
                if self.ring.controls.playing:
                    self.heard.append(self.out.copy())
                self.statuses.append(self.show.status)
                next_block += len(self.out) / SR
            time.sleep(0.002)

    def close(self) -> None:
        self.show.close()
        self.sched.close()
        self.ring.close()


def _dominant_hz(audio: np.ndarray) -> float:
    mono = audio[:, 0] if audio.ndim == 2 else audio
    spectrum = np.abs(np.fft.rfft(mono * np.hanning(len(mono))))
    return float(np.fft.rfftfreq(len(mono), 1 / SR)[int(np.argmax(spectrum))])


@pytest.fixture
def slow(testdata: Path) -> Iterator[Slow]:
    s = Slow(testdata / "radio_play.txt")
    yield s
    s.close()


def test_play_waits_for_the_voices_and_the_opening_is_heard_in_them(slow: Slow) -> None:
    slow.show.pause(False)
    slow.show.tick()
    assert slow.show.status == "preparing" and not slow.ring.controls.playing
    slow.run(12.0)
    assert "preparing" in slow.statuses and slow.statuses[-1] in ("playing", "ended")
    first = slow.show.tracks[0]
    assert first.start_s is not None and not first.fallback
    assert slow.show.stats.late == 0
    assert not [t.cue.index for t in slow.show.tracks if t.start_s is not None and t.fallback]
    heard = np.concatenate(slow.heard)
    k = round(first.start_s * SR)
    want = tone_hz(slow.cast[first.cue.role].voice_id)
    assert _dominant_hz(heard[k + SR // 20 : k + SR // 5]) == pytest.approx(want, abs=15)  # its cast voice


def test_after_stop_a_voiced_opening_starts_at_once_in_its_voice(slow: Slow) -> None:
    slow.show.pause(False)
    slow.run(8.0)
    slow.show.stop()
    slow.run(6.0)  # stopped: the opening is voiced again ahead, with no deadline pressure
    slow.heard.clear()
    slow.show.pause(False)
    slow.show.tick()
    assert slow.show.status == "playing"  # ready: no wait beyond the first turn
    slow.run(3.0)
    first = slow.show.tracks[0]
    assert not first.fallback and first.start_s is not None
    heard = np.concatenate(slow.heard)
    k = round(first.start_s * SR)
    want = tone_hz(slow.cast[first.cue.role].voice_id)
    assert _dominant_hz(heard[k + SR // 20 : k + SR // 5]) == pytest.approx(want, abs=15)


def test_a_stand_in_take_is_voiced_again_in_the_cast_voice_after_stop(slow: Slow) -> None:
    slow.voices.failures = 4  # the first line's tries fail: the stand-in voices it
    slow.show.pause(False)
    slow.run(5.0)
    stood_in = [t.cue.index for t in slow.show.tracks if t.fallback]
    assert stood_in
    slow.show.stop()
    slow.run(8.0)  # stopped: voiced again ahead, in the cast voices
    slow.heard.clear()
    slow.show.pause(False)
    slow.run(3.0)
    first = slow.show.tracks[stood_in[0]]
    assert not first.fallback and first.start_s is not None
    heard = np.concatenate(slow.heard)
    k = round(first.start_s * SR)
    want = tone_hz(slow.cast[first.cue.role].voice_id)
    assert _dominant_hz(heard[k + SR // 20 : k + SR // 5]) == pytest.approx(want, abs=15)


def test_a_stand_in_line_is_voiced_in_its_cast_voice_during_the_run(testdata: Path, tmp_path: Path) -> None:
    """While the show runs, a line the stand-in spoke is voiced again in its cast voice (into
    the take cache, behind the show's own lines); after Stop it comes back from the cache in
    its cast voice without being voiced a third time."""
    slow = Slow(testdata / "radio_play.txt", takes=tmp_path / "takes")
    try:
        slow.voices.failures = 4  # the first line's tries fail: the stand-in voices it
        slow.show.pause(False)
        slow.run(5.0)
        stood_in = [t for t in slow.show.tracks if t.fallback]
        assert stood_in
        texts = [chunk for t in stood_in for chunk in t.chunks]
        end = time.monotonic() + 20
        while slow.show.revoicer.voiced < len(texts) and time.monotonic() < end:
            slow.run(0.5)  # still playing: the re-voice is background work
        assert slow.show.revoicer.voiced == len(texts) and slow.show.status == "playing"
        assert all(text in slow.voices.voiced for text in texts)
        asked = len(slow.voices.voiced)
        slow.show.stop()
        slow.run(2.0)
        slow.heard.clear()
        slow.show.pause(False)
        slow.run(3.0)
        first = slow.show.tracks[stood_in[0].cue.index]
        assert not first.fallback and first.start_s is not None
        assert all(text not in slow.voices.voiced[asked:] for text in texts)  # from the take cache
        heard = np.concatenate(slow.heard)
        k = round(first.start_s * SR)
        want = tone_hz(slow.cast[first.cue.role].voice_id)
        assert _dominant_hz(heard[k + SR // 20 : k + SR // 5]) == pytest.approx(want, abs=15)
    finally:
        slow.close()
