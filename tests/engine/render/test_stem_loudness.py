"""Loudness-normalised renders with stems: every stem takes the mix's gain, so the stems
still add up to the mix, and no premaster is left behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ
from engine.export.loudness import PRESETS, parse_target
from engine.mixer import MixControls
from engine.render import StemOptions, render_script
from engine.script import load_script
from engine.synthesis.espeak import EspeakSynthesizer

pyloudnorm = pytest.importorskip("pyloudnorm")
ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


def _stereo(stem: np.ndarray, gains: tuple[float, float]) -> np.ndarray:
    """A stem as it sounds in the mix: a mono stem is its role's left channel."""
    if stem.shape[1] == 2:
        return stem
    left, right = gains
    return np.concatenate([stem, stem * (right / left if left else 0.0)], axis=1)


@pytest.mark.slow
def test_normalised_stems_add_up_to_the_normalised_mix(tmp_path: Path) -> None:
    script = load_script(DEMO)
    cast = Cast.auto(script)
    target = PRESETS["ebu"]
    result = render_script(script, cast, tmp_path / "mix.wav", EspeakSynthesizer(), tmp_path / "stems",
                           loudness=target)  # fmt: skip
    mix, rate = sf.read(result.path, dtype="float64", always_2d=True)
    assert pyloudnorm.Meter(rate).integrated_loudness(mix) == pytest.approx(target.lufs, abs=0.5)
    assert (
        result.loudness_gain_db is not None and abs(result.loudness_gain_db) > 1.0
    )  # the gain did something
    controls = MixControls.from_voices({r: cast[r] for r in script.roles})
    total = np.zeros_like(mix)
    for role in script.roles:
        assert result.stems[role] == tmp_path / "stems" / f"{role}.flac"
        stem, _ = sf.read(result.stems[role], dtype="float64", always_2d=True)
        assert len(stem) == len(mix)
        total += _stereo(stem, controls.gain(role))
    # where no limiter bent the peaks (the mix's and each stem's soft limiter act apart),
    # the stems sum to the mix to within a few 24-bit steps
    fine = np.abs(total).max(axis=1) < 0.5
    assert fine.mean() > 0.999
    np.testing.assert_allclose(total[fine], mix[fine], atol=2e-4)
    leftovers = [p.name for p in tmp_path.rglob("*") if "premaster" in p.name or p.suffix == ".partial"]
    assert leftovers == []


@pytest.mark.slow
def test_normalised_clips_take_the_mix_gain_over_their_span(tmp_path: Path) -> None:
    """Clips mode: each line's file, placed at its start and panned as its role, adds up to
    the normalised mix."""
    script = load_script(DEMO)
    cast = Cast.auto(script)
    result = render_script(script, cast, tmp_path / "mix.flac", EspeakSynthesizer(), tmp_path / "clips",
                           stems=StemOptions(mode="clips"), loudness=parse_target("-20"))  # fmt: skip
    mix, rate = sf.read(result.path, dtype="float64", always_2d=True)
    assert pyloudnorm.Meter(rate).integrated_loudness(mix) == pytest.approx(-20.0, abs=0.5)
    controls = MixControls.from_voices({r: cast[r] for r in script.roles})
    total = np.zeros_like(mix)
    for ln in result.lines:
        audio, _ = sf.read(tmp_path / "clips" / f"{ln.cue_index + 1:05d}_{ln.role}.flac", dtype="float64")
        start = round(ln.start_s * SAMPLE_RATE_HZ)
        total[start : start + len(audio)] += audio[:, None] * np.array(controls.gain(ln.role))
    fine = np.abs(total).max(axis=1) < 0.5
    assert fine.mean() > 0.999
    np.testing.assert_allclose(total[fine], mix[fine], atol=2e-4)
    names = sorted(p.name for p in (tmp_path / "clips").iterdir())
    assert len(names) == len(script.cues) + 2 and not [n for n in names if "premaster" in n or "partial" in n]
