"""A backend learns how fast its queue really drains (its pace), not only how long its
batches take, so waits, slack and admission count the time dispatch and hand-over add."""

from __future__ import annotations

import numpy as np
import pytest
from sched_fakes import ManualClock, RecordingSynth, req

from engine.core.types import SAMPLE_RATE_HZ
from engine.scheduler.backend import Backend, Batch


def _finish(backend: Backend, clock: ManualClock, synth_s: float, gap_s: float, backlogged: bool) -> None:
    """One line of 1 s of audio voiced in `synth_s`, its completion handled `gap_s` later."""
    r = req("A", "one two three")
    t0 = clock()
    clock.advance(synth_s)
    audio = [np.zeros(SAMPLE_RATE_HZ, np.float32)]
    batch = Batch(backend.name, [r], t0, t0 + 10, results=audio, t_end=clock())
    clock.advance(gap_s)
    backend.observe(batch, backlogged=backlogged)  # handled `gap_s` after the batch ended


def _backend(clock: ManualClock) -> Backend:
    return Backend(RecordingSynth("espeak"), slots=1, clock=clock)


def test_pace_counts_the_time_between_batches_while_backlogged() -> None:
    clock = ManualClock()
    b = _backend(clock)
    for _ in range(60):  # each line takes 0.05 s to voice, but the next starts 0.05 s later
        _finish(b, clock, 0.05, 0.05, backlogged=True)
    r = req("A", "one two three")
    # a line's cost is now the wall time it takes off the queue: 0.1 s, whatever its length
    # estimate (the pace takes up the estimate's bias too)
    assert b.cost_s(r) == pytest.approx(0.1, rel=0.05)
    assert b.pace > 1.5


def test_no_overhead_keeps_pace_at_one_and_idle_time_is_not_counted() -> None:
    clock = ManualClock()
    b = _backend(clock)
    for _ in range(60):
        _finish(b, clock, 0.05, 0.0, backlogged=True)
    assert b.pace == pytest.approx(1.0, abs=0.05)
    for _ in range(30):  # the queue ran dry after each: the waits between lines are idle time
        _finish(b, clock, 0.05, 1.0, backlogged=False)
    assert b.pace == pytest.approx(1.0, abs=0.05)


def test_pace_is_bounded() -> None:
    clock = ManualClock()
    b = _backend(clock)
    for _ in range(100):
        _finish(b, clock, 0.01, 5.0, backlogged=True)
    assert 1.0 <= b.pace <= Backend.PACE_MAX
