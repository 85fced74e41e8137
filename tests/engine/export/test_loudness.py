"""The streaming loudness meter agrees with pyloudnorm; normalisation reaches its target
within 0.5 LU and holds the true peak under the ceiling."""

from __future__ import annotations

import numpy as np
import pyloudnorm
import pytest
import scipy.signal
from hypothesis import given
from hypothesis import strategies as st

from engine.export import ExportError
from engine.export.loudness import PRESETS, LoudnessMeter, normalise, parse_target

RATE = 48_000


def _speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    """Bursts of filtered noise with pauses and a few hot peaks: speech's loudness profile."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    noise = scipy.signal.lfilter([1.0], [1.0, -0.95], rng.normal(0, 0.02, n))
    envelope = (np.sin(np.arange(n) * 2 * np.pi / (RATE * 1.7)) > -0.2).astype(float)
    x = noise * envelope
    x[rng.integers(0, n, 40)] = 0.95  # clicks that a gain-up would push past the ceiling
    return np.stack([x, 0.8 * x], axis=1).astype(np.float32)


def _true_peak_db(x: np.ndarray) -> float:
    return float(20 * np.log10(np.abs(scipy.signal.resample_poly(x.astype(np.float64), 4, 1, axis=0)).max()))


@pytest.mark.parametrize("block", [1, 4799, 65_536])
def test_meter_matches_pyloudnorm_for_any_block_size(block: int) -> None:
    x = _speechlike(6.0)
    meter = LoudnessMeter(RATE)
    step = block if block > 1 else 1000  # block 1 would take long; 1000 still splits every hop
    for k in range(0, len(x), step):
        meter.add(x[k : k + step])
    assert meter.integrated_lufs() == pytest.approx(pyloudnorm.Meter(RATE).integrated_loudness(x), abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["acx", "ebu", "podcast"])
def test_normalised_within_half_a_lu_and_under_the_ceiling(preset: str) -> None:
    x = _speechlike(20.0, seed=3)
    target = PRESETS[preset]
    measured = pyloudnorm.Meter(RATE).integrated_loudness(x)
    y = np.concatenate(list(normalise(lambda a, b: x[a:b], len(x), measured, target, block_frames=30_001)))
    assert y.shape == x.shape
    assert pyloudnorm.Meter(RATE).integrated_loudness(y) == pytest.approx(target.lufs, abs=0.5)
    assert _true_peak_db(y) <= target.true_peak_db + 0.05


def test_block_size_does_not_change_the_result() -> None:
    x = _speechlike(8.0, seed=5)
    one = np.concatenate(list(normalise(lambda a, b: x[a:b], len(x), -30.0, PRESETS["podcast"], 1 << 20)))
    many = np.concatenate(list(normalise(lambda a, b: x[a:b], len(x), -30.0, PRESETS["podcast"], 8193)))
    np.testing.assert_allclose(one, many, atol=1e-7)


def test_targets_parse_or_say_what_they_take() -> None:
    assert parse_target("ACX") == PRESETS["acx"]
    assert parse_target("-18LUFS").lufs == -18.0
    with pytest.raises(ExportError, match=r"acx, ebu, podcast or a level from -40 to -5 LUFS, not 'loud'"):
        parse_target("loud")


@given(st.text(max_size=20))
def test_any_target_text_parses_or_is_refused_clearly(text: str) -> None:
    try:
        target = parse_target(text)
    except ExportError as exc:
        assert "acx, ebu, podcast or a level" in str(exc)
    else:
        assert -40 <= target.lufs <= -5 and target.true_peak_db < 0
