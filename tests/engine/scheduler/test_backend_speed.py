"""What a backend learns of its own speed: per second of the spoken length the queue
estimates (what every estimate is applied to), from the time its lines really took."""

from __future__ import annotations

import numpy as np
import pytest
from sched_fakes import ManualClock, RecordingSynth, req

from engine.core.types import SAMPLE_RATE_HZ
from engine.scheduler.backend import Backend, Batch
from engine.scheduler.request import Request

SHORT = "Go now."
LONG = "The harbour lights burned low while we waited for word from the ship that never came home to us."


def _voice(backend: Backend, clock: ManualClock, r: Request, took_s: float, audio_s: float) -> None:
    """One line voiced in `took_s`, `audio_s` long (the queue idle after it: no pace sample)."""
    t0 = clock()
    clock.advance(took_s)
    audio = [np.zeros(int(audio_s * SAMPLE_RATE_HZ), np.float32)]
    backend.observe(Batch(backend.name, [r], t0, t0 + 10, results=audio, t_end=clock()), backlogged=False)


def test_speed_is_counted_per_estimated_second_whatever_the_voice_really_speaks() -> None:
    # the voice speaks 1.3x faster than the words-per-minute estimate assumes (espeak-ng's
    # English does): a line takes 0.01 s per estimated second, whatever its real length
    clock = ManualClock()
    b = Backend(RecordingSynth("espeak"), slots=1, clock=clock)
    r = req("A", LONG)
    for _ in range(40):
        _voice(b, clock, r, 0.01 * r.est_audio_s, r.est_audio_s / 1.3)
    assert b.estimate_s(r) == pytest.approx(0.01 * r.est_audio_s, rel=0.02)
    assert b.cost_s(r) == pytest.approx(0.01 * r.est_audio_s, rel=0.02)  # was 1.3x: work counted too long
    assert b.measured_rtf == pytest.approx(0.013, rel=0.02)  # what is shown: per second heard


def test_a_mix_of_short_and_long_lines_is_costed_at_the_time_it_takes() -> None:
    # each line costs a fixed 4 ms (hand-over, resampling) plus 1 ms per spoken second: the
    # short lines' time per second is far higher than the long ones'. The mix's total, not
    # an average of their ratios (which counted this mix ~1.5x its time), is what the
    # queue's waits and admission need, whichever line came last
    clock = ManualClock()
    b = Backend(RecordingSynth("espeak"), slots=1, clock=clock)
    lines = [req("A", SHORT), req("A", LONG)] * 30
    took = {id(r): 0.004 + 0.001 * r.est_audio_s for r in lines}
    for last in (0, 1):
        for r in lines[: len(lines) - last]:
            _voice(b, clock, r, took[id(r)], r.est_audio_s)
        mix = lines[:10]
        assert sum(b.cost_s(r) for r in mix) == pytest.approx(sum(took[id(r)] for r in mix), rel=0.1)


def test_the_first_guess_gives_way_to_timed_lines() -> None:
    clock = ManualClock()
    b = Backend(RecordingSynth("espeak"), slots=1, clock=clock)
    r = req("A", LONG)
    for _ in range(10):
        _voice(b, clock, r, 0.5 * r.est_audio_s, r.est_audio_s)  # 50x slower than guessed
    assert b.estimate_s(r) > 0.4 * r.est_audio_s
    for _ in range(30):  # then the machine is fast again
        _voice(b, clock, r, 0.002 * r.est_audio_s, r.est_audio_s)
    assert b.estimate_s(r) < 0.01 * r.est_audio_s
