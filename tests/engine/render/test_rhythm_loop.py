"""The streaming fit loop converges on a voice that speaks slower than planned, and never
corrects one chunk by more than its clamp."""

from __future__ import annotations

import numpy as np
import pytest

from engine.render.rhythm import PRIOR_S_PER_CHAR, LoopSettings, correction_s, plan_ends, stream_to_slot

RATE_HZ = 1000
CHUNKS = [f"Chunk number {k} says a few more words{',' * (k % 3)}" for k in range(32)]


def _slow_voice(bias: float):  # type: ignore[no-untyped-def]
    """A synthetic voice `bias` times slower than the first guess, with a repeatable wobble."""
    wobble = iter(np.random.default_rng(7).uniform(-0.03, 0.03, 10_000))

    def voice(text: str, rate: float) -> np.ndarray:
        seconds = len(text) * PRIOR_S_PER_CHAR * bias / rate + next(wobble)
        return np.zeros(round(seconds * RATE_HZ), np.float32)

    return voice


def _measure(audio: np.ndarray) -> float:
    return len(audio) / RATE_HZ


def _run(settings: LoopSettings, bias: float = 1.25) -> list[float]:
    slot_s = sum(len(c) for c in CHUNKS) * PRIOR_S_PER_CHAR
    timings = [t for _, t in stream_to_slot(CHUNKS, slot_s, _slow_voice(bias), _measure, settings)]
    assert all(abs(t.correction_s) <= settings.clamp_s + 1e-12 for t in timings)
    return [t.drift_s for t in timings]


def test_drift_grows_without_feedback_and_converges_with_it() -> None:
    open_loop = _run(LoopSettings(feedback=False))
    assert abs(open_loop[-1]) > 2.0 and abs(open_loop[-1]) > abs(open_loop[len(open_loop) // 2])
    closed = _run(LoopSettings())
    # the first chunk, voiced from the first guess, runs late; then the speed is learnt and
    # the clamp takes the drift back at most 50 ms a chunk, until only the wobble is left
    peak = int(np.argmax(np.abs(closed)))
    assert abs(closed[peak]) > 0.3 and peak < 6
    assert all(abs(b) < abs(a) + 0.07 for a, b in zip(closed[peak:], closed[peak + 1 :], strict=False))
    assert np.abs(closed[-4:]).max() < 0.06, closed


@pytest.mark.parametrize("bias", [0.85, 1.0, 1.15])
def test_converges_whichever_way_the_voice_is_off(bias: float) -> None:
    drifts = _run(LoopSettings(), bias)
    assert abs(np.mean(drifts[-6:])) < 0.05


def test_a_pure_damped_correction_without_learning_stays_bounded() -> None:
    """Gain alone (no speed estimate) cannot remove a steady bias: the drift settles near
    bias per chunk / gain, as long as that bias is inside the clamp (here ~36 ms a chunk)."""
    drifts = _run(LoopSettings(learn=0.0), 1.015)
    per_chunk = 0.015 * np.mean([len(c) for c in CHUNKS]) * PRIOR_S_PER_CHAR
    assert np.mean(drifts[-6:]) == pytest.approx(per_chunk / 0.3, abs=0.05)
    open_loop = _run(LoopSettings(feedback=False), 1.015)
    assert open_loop[-1] > 3 * np.mean(drifts[-6:])


def test_correction_is_damped_and_clamped() -> None:
    s = LoopSettings(gain=0.3, clamp_s=0.05)
    assert correction_s(0.1, s) == pytest.approx(0.03)
    assert correction_s(1.0, s) == 0.05 and correction_s(-1.0, s) == -0.05


def test_plan_shares_the_slot_by_length() -> None:
    assert plan_ends(["ab", "abcd", "ab"], 4.0) == [1.0, 3.0, 4.0]


def _uneven_voice():  # type: ignore[no-untyped-def]
    """Each chunk speaks at its own speed (±20%, the same for every take of that chunk)."""
    speeds = dict(zip(CHUNKS, np.random.default_rng(3).uniform(0.8, 1.2, len(CHUNKS)), strict=True))

    def voice(text: str, rate: float) -> np.ndarray:
        return np.zeros(round(len(text) * PRIOR_S_PER_CHAR * speeds[text] / rate * RATE_HZ), np.float32)

    return voice


def test_a_retake_at_the_measured_rate_takes_out_what_the_speed_estimate_cannot() -> None:
    slot_s = sum(len(c) for c in CHUNKS) * PRIOR_S_PER_CHAR
    taken = []

    def voice(text: str, rate: float) -> np.ndarray:
        taken.append(text)
        return uneven(text, rate)

    uneven = _uneven_voice()
    plain = [abs(t.drift_s) for _, t in stream_to_slot(CHUNKS, slot_s, voice, _measure, LoopSettings())]
    n_plain = len(taken)
    settings = LoopSettings(retry_s=0.02, retries=2)
    retried = [abs(t.drift_s) for _, t in stream_to_slot(CHUNKS, slot_s, voice, _measure, settings)]
    assert np.median(retried) < 0.5 * np.median(plain) and max(retried) < 0.1
    assert n_plain == len(CHUNKS) < len(taken) - n_plain <= 3 * len(CHUNKS)  # retakes, bounded
