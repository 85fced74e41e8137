"""Every role's speech at one level before the mix: the measure (gated, pauses left out),
the per-role median gain, and a render whose natural lead and espeak-ng roles come out
within 1.5 dB of each other, measured apart by K-weighted loudness of each line's clip."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.core.types import Voice
from engine.mixer.levelling import MAX_GAIN_DB, RoleLeveller, speech_level_db
from engine.render import StemOptions, render_script
from engine.script import load_script

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"
RATE = 24_000


def _speech(level_db: float, seconds: float, pause_s: float = 0.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    tone = np.sqrt(2) * 10 ** (level_db / 20) * np.sin(2 * np.pi * 180 * t)
    return np.concatenate([np.zeros(int(pause_s * RATE)), tone, np.zeros(int(pause_s * RATE))]).astype(
        np.float32
    )


def test_the_speech_level_leaves_pauses_out() -> None:
    level = speech_level_db(_speech(-30, 2.0), RATE)
    assert level == pytest.approx(-30, abs=0.5)  # K-weighted: a low tone reads a little lower
    assert speech_level_db(_speech(-30, 2.0, pause_s=3.0), RATE) == pytest.approx(level, abs=0.05)
    assert speech_level_db(_speech(-20, 2.0), RATE) == pytest.approx(level + 10, abs=0.05)
    assert speech_level_db(_speech(-30, 0.1), RATE) is None  # too little speech to tell
    assert speech_level_db(np.zeros(RATE, np.float32), RATE) is None


def test_a_role_is_brought_to_the_target_by_the_median_of_its_lines() -> None:
    lev = RoleLeveller(target_db=-23)
    assert 20 * np.log10(lev.gain("A", -33.0)) == pytest.approx(10)
    assert 20 * np.log10(lev.gain("A", -13.0)) == pytest.approx(0)  # median of -33, -13
    assert 20 * np.log10(lev.gain("A", -31.0)) == pytest.approx(8)  # median of three: -31
    assert 20 * np.log10(lev.gain("A", None)) == pytest.approx(8)  # unmeasured: the role's gain
    assert lev.gain("B", None) == 1.0
    assert 20 * np.log10(lev.gain("C", -90.0)) == pytest.approx(MAX_GAIN_DB)


def _role_levels(folder: Path, roles: dict[str, str]) -> dict[str, float]:
    """Each role's median K-weighted loudness over its line clips."""
    import pyloudnorm

    per_role: dict[str, list[float]] = {}
    for clip in folder.glob("[0-9][0-9][0-9][0-9][0-9]_*.wav"):
        audio, rate = sf.read(clip)
        if len(audio) < 0.5 * rate:
            continue
        role = clip.stem.split("_", 1)[1]
        per_role.setdefault(role, []).append(pyloudnorm.Meter(rate).integrated_loudness(audio))
    assert set(per_role) == set(roles)
    return {r: statistics.median(v) for r, v in per_role.items()}


@pytest.mark.slow
def test_a_natural_lead_and_espeak_roles_sit_at_one_level(tmp_path: Path) -> None:
    pytest.importorskip("pyloudnorm")
    from engine.synthesis.build import SynthSpec, build_synthesizers
    from engine.synthesis.router import Router

    script = load_script(DEMO)
    cast = Cast.auto(script)  # espeak-ng voices
    cast = dataclasses.replace(cast, voices={**cast.voices, "IRIS": Voice(backend="kokoro", voice_id="ada")})
    synth = Router(build_synthesizers(SynthSpec(natural={"kokoro"})))
    roles = {r: v.backend for r, v in cast.voices.items()}
    spreads = {}
    try:
        for on in (True, False):
            folder = tmp_path / ("on" if on else "off")
            render_script(script, cast, folder / "mix.wav", synth, folder, stems=StemOptions("clips", "wav"),
                          levelling=on)  # fmt: skip
            levels = _role_levels(folder, roles)
            spreads[on] = max(levels.values()) - min(levels.values())
    finally:
        synth.close()
    assert spreads[True] <= 1.5, spreads
    assert spreads[False] > spreads[True] + 0.8, spreads  # the backends' own levels differ
