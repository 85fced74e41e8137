"""A render at the rate and channels the user picks: espeak-ng's own 22,050 Hz without
resampling, mono mixes, other backends resampled to the render's rate, bad settings refused."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cast import Cast
from engine.core.types import Voice
from engine.export import ExportError
from engine.mixer import Clip, MixControls
from engine.render import render_script
from engine.render.mixdown import StreamMixer
from engine.script import load_script
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak import EspeakSynthesizer, synthesize_text
from engine.synthesis.pool import EspeakPool
from engine.synthesis.router import Router

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


def test_pool_hands_back_what_one_process_voices_at_any_rate() -> None:
    """Workers send espeak-ng's own 16-bit samples; the parent makes the clip at the pool's
    rate: as long and as loud as voicing in this process (espeak-ng itself varies a few
    samples from call to call), at 22,050 Hz (no resampling) and 48,000 Hz."""
    pool = EspeakPool(1, niceness=0)
    text = "The signal is fading."
    try:
        for rate in (22_050, 48_000):
            pool.sample_rate_hz = rate
            (got,) = pool.synthesize([SynthRequest(text, Voice())])
            here = synthesize_text(text, Voice(), rate)
            assert got.dtype == np.float32
            assert len(got) == pytest.approx(len(here), rel=0.01)
            assert _rms(got) == pytest.approx(_rms(here), rel=0.1)
            assert 1.0 < len(got) / rate < 3.0
    finally:
        pool.close()


def _rms(a: np.ndarray) -> float:
    return float(np.sqrt(np.mean(a.astype(np.float64) ** 2)))


class _Tone:
    """A backend at 24 kHz: one second of a 440 Hz tone per line."""

    name = "tone"
    sample_rate_hz = 24_000
    max_batch = 4

    def voices(self) -> list[VoiceInfo]:
        return []

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        t = np.arange(self.sample_rate_hz) / self.sample_rate_hz
        return [np.sin(2 * np.pi * 440 * t).astype(np.float32) for _ in batch]

    def close(self) -> None:
        pass


def test_router_brings_every_backend_to_its_rate() -> None:
    espeak = EspeakSynthesizer()
    espeak.sample_rate_hz = 22_050
    router = Router({"espeak": espeak, "tone": _Tone()}, sample_rate_hz=22_050)
    tone, said = router.synthesize(
        [SynthRequest("x", Voice(backend="tone")), SynthRequest("Hello there.", Voice())]
    )
    assert len(tone) == pytest.approx(22_050, abs=2)  # one second at the router's rate
    spectrum = np.abs(np.fft.rfft(tone))
    assert np.argmax(spectrum) * 22_050 / len(tone) == pytest.approx(440, abs=2)
    here = synthesize_text("Hello there.", Voice(), 22_050)
    assert len(said) == pytest.approx(len(here), rel=0.01)


@settings(max_examples=60, deadline=None)
@given(
    pans=st.lists(st.floats(-1, 1), min_size=1, max_size=4),
    gains_db=st.lists(st.floats(-30, 0), min_size=4, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_mono_mix_keeps_each_roles_power(pans: list[float], gains_db: list[float], seed: int) -> None:
    """A mono mix carries each role at its own level whatever its pan (the power of the
    equal-power pair: a panned role is not quieter in mono); stereo keeps both sides."""
    voices = {f"R{k}": Voice(pan=p, gain_db=gains_db[k]) for k, p in enumerate(pans)}
    controls = MixControls.from_voices(voices)
    rng = np.random.default_rng(seed)
    clips = [Clip(k * 100, role, (rng.standard_normal(500) * 0.05).astype(np.float32), k)
             for k, role in enumerate(voices)]  # fmt: skip
    stereo, mono = StreamMixer(controls, channels=2), StreamMixer(controls, channels=1)
    for clip in clips:
        stereo.add(clip)
        mono.add(clip)
    s, m = stereo.next_block(1000).mix, mono.next_block(1000).mix
    assert s.shape == (1000, 2) and m.shape == (1000, 1)
    expected = np.zeros(1000, np.float32)
    for clip in clips:
        expected[clip.start_frame : clip.start_frame + 500] += clip.audio * 10 ** (
            voices[clip.role].gain_db / 20
        )
    assume_below_knee = np.abs(expected).max() < 0.5 and np.abs(s).max() < 0.5
    if assume_below_knee:  # the limiter is idle
        np.testing.assert_allclose(m[:, 0], expected, atol=1e-5)


def test_render_at_espeak_ngs_own_rate_in_mono(tmp_path: Path) -> None:
    """22,050 Hz mono 16-bit, the stems mono too: the same show, the same timing as at 48 kHz."""
    script = load_script(DEMO)
    cast = Cast.auto(script)
    synth = EspeakSynthesizer()
    synth.sample_rate_hz = 22_050
    low = render_script(script, cast, tmp_path / "low.wav", synth, tmp_path / "stems", sample_format="s16",
                        sample_rate_hz=22_050, channels=1)  # fmt: skip
    info = sf.info(str(tmp_path / "low.wav"))
    assert (info.samplerate, info.channels, info.subtype) == (22_050, 1, "PCM_16")
    for stem in low.stems.values():
        s = sf.info(str(stem))
        assert (s.samplerate, s.channels) == (22_050, 1)
    high = render_script(script, cast, tmp_path / "high.wav", EspeakSynthesizer())
    assert low.duration_s == pytest.approx(high.duration_s, abs=0.05)
    for a, b in zip(low.lines, high.lines, strict=True):
        assert a.start_s == pytest.approx(b.start_s, abs=0.05)
    mix, _ = sf.read(tmp_path / "low.wav", dtype="float32")
    assert np.sqrt(np.mean(mix**2)) > 0.01


@pytest.mark.parametrize(
    ("name", "rate", "channels", "says"),
    [
        ("mix.wav", 12_345, 2, "sample rate must be one of"),
        ("mix.wav", 48_000, 3, "1 or 2 channels"),
        ("mix.opus", 22_050, 2, "Opus takes 24000 or 48000 Hz"),
    ],
)
def test_bad_rate_or_channels_refused_before_anything_is_written(
    tmp_path: Path, name: str, rate: int, channels: int, says: str
) -> None:
    script = load_script(DEMO)
    with pytest.raises(ExportError, match=says):
        render_script(script, Cast.auto(script), tmp_path / name, EspeakSynthesizer(),
                      sample_rate_hz=rate, channels=channels)  # fmt: skip
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_cli_rate_channels_and_espeak_draft(tmp_path: Path) -> None:
    out = tmp_path / "draft.flac"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "render", str(DEMO), "-o", str(out), "--voices", "espeak",
         "--sample-rate", "44100", "--channels", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    info = sf.info(str(out))
    assert (info.samplerate, info.channels) == (44_100, 1)
    assert "espeak-ng stood in" not in proc.stderr
    bad = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "render", str(DEMO), "-o", str(out), "--sample-rate", "8000"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "--sample-rate" in bad.stderr and "Traceback" not in bad.stderr
