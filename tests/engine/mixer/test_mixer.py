"""Mixer: placement, pan law, mute/solo, overlap, limiter, stems, cue layout."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.types import Cue, Voice
from engine.mixer import Clip, MixControls, Mixer, Pacing, equal_power, layout, soft_limit


def _tone(n: int, amp: float = 0.5) -> np.ndarray:
    return (amp * np.sin(np.arange(n) * 0.05)).astype(np.float32)


def test_equal_power_pan() -> None:
    for pan in np.linspace(-1, 1, 21):
        left, right = equal_power(float(pan))
        assert left**2 + right**2 == pytest.approx(1.0)
    assert equal_power(0.0) == pytest.approx((math.sqrt(0.5), math.sqrt(0.5)))
    assert equal_power(-1.0) == pytest.approx((1.0, 0.0), abs=1e-12)
    assert equal_power(1.0) == pytest.approx((0.0, 1.0), abs=1e-12)


def test_clip_placed_at_its_frame_and_summed() -> None:
    voices = {"A": Voice(pan=-1.0), "B": Voice(pan=1.0)}
    mixer = Mixer(MixControls.from_voices(voices))
    a, b = _tone(1000, 0.3), _tone(500, 0.2)
    mixer.add(Clip(100, "A", a))
    mixer.add(Clip(300, "B", b))
    out = np.zeros((2000, 2), np.float32)
    mixer.render(0, out)
    assert not out[:100].any()
    np.testing.assert_allclose(out[100:1100, 0], a, atol=1e-7)  # A hard left
    np.testing.assert_allclose(out[300:800, 1], b, atol=1e-7)  # B hard right
    assert not out[1100:].any()


def test_overlapping_lines_sum() -> None:
    mixer = Mixer(MixControls.from_voices({"A": Voice(), "B": Voice()}))
    a = _tone(400, 0.2)
    mixer.add(Clip(0, "A", a))
    mixer.add(Clip(0, "B", a))
    out = np.zeros((400, 2), np.float32)
    mixer.render(0, out)
    np.testing.assert_allclose(out[:, 0], 2 * a * math.sqrt(0.5), atol=1e-6)


def test_mute_solo_gain() -> None:
    clip_a, clip_b = Clip(0, "A", _tone(100, 0.1)), Clip(0, "B", _tone(100, 0.1))
    out = np.zeros((100, 2), np.float32)

    def level(voices: dict[str, Voice]) -> tuple[float, float]:
        mixer = Mixer(MixControls.from_voices(voices))
        mixer.add(clip_a)
        mixer.add(clip_b)
        mixer.render(0, out, {"A"})
        a = float(np.abs(out).max())
        mixer.render(0, out, {"B"})
        return a, float(np.abs(out).max())

    assert level({"A": Voice(mute=True), "B": Voice()})[0] == 0.0
    solo = level({"A": Voice(), "B": Voice(solo=True)})
    assert solo[0] == 0.0 and solo[1] > 0
    loud, quiet = level({"A": Voice(gain_db=0.0), "B": Voice(gain_db=-6.0)})
    assert quiet / loud == pytest.approx(10 ** (-6 / 20), rel=1e-4)


def test_live_controls_swap() -> None:
    mixer = Mixer(MixControls.from_voices({"A": Voice()}))
    mixer.add(Clip(0, "A", _tone(100)))
    out = np.zeros((100, 2), np.float32)
    mixer.controls = MixControls.from_voices({"A": Voice(mute=True)})
    mixer.render(0, out)
    assert not out.any()


def test_soft_limiter() -> None:
    x = np.linspace(-3, 3, 6001, dtype=np.float32).reshape(-1, 1).repeat(2, 1)
    y = x.copy()
    soft_limit(y)
    assert np.abs(y).max() <= 1.0  # never past full scale
    small = np.abs(x) <= 0.85
    np.testing.assert_array_equal(y[small], x[small])  # transparent below the threshold
    assert np.all(np.diff(y[:, 0]) >= 0)  # monotonic: no fold-over distortion


def test_block_size_independent_render() -> None:
    mixer = Mixer(MixControls.from_voices({"A": Voice(pan=0.3), "B": Voice(gain_db=6)}))
    rng = np.random.default_rng(1)
    for k in range(20):
        mixer.add(Clip(int(rng.integers(0, 9000)), "AB"[k % 2], _tone(int(rng.integers(10, 3000)), 0.6)))
    whole = np.zeros((12000, 2), np.float32)
    mixer.render(0, whole)
    for block in (1, 64, 65, 4097):
        parts = np.zeros_like(whole)
        for start in range(0, len(whole), block):
            mixer.render(start, parts[start : start + block])
        np.testing.assert_array_equal(parts, whole)


def test_remove_cue() -> None:
    mixer = Mixer()
    mixer.add(Clip(0, "A", _tone(100), cue_index=1))
    mixer.add(Clip(50, "A", _tone(100), cue_index=2))
    assert mixer.remove_cue(1) == 1
    assert [c.cue_index for c in mixer.clips] == [2]


def _cue(i: int, scene: int = 0, **kw: object) -> Cue:
    return Cue(index=i, role="A", text="x", scene=scene, line=i + 1, **kw)  # type: ignore[arg-type]


def test_layout_gaps_slots_and_overlap() -> None:
    cues = [
        _cue(0),
        _cue(1),
        _cue(2, overlaps_previous=True),
        _cue(3, scene=1),
        _cue(4, start_s=30.0),
    ]
    durations = {0: 2.0, 1: 1.0, 2: 3.0, 3: 1.0, 4: 1.0}
    p = Pacing(gap_s=0.5, scene_gap_s=2.0, lead_in_s=0.25)
    starts = layout(cues, durations, p)
    assert starts[0] == 0.25
    assert starts[1] == pytest.approx(2.75)
    assert starts[2] == starts[1]  # dual dialogue starts together
    assert starts[3] == pytest.approx(2.75 + 3.0 + 2.0)  # after the longer overlapping line
    assert starts[4] == 30.0  # slot
