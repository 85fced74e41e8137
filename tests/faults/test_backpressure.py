"""Backpressure never stalls the show: a full queue refuses ad-libs at once (the engine thread
never waits for room), lines that find it full are asked for again later, and ad-libs stuck
behind a slow backend move to the fast one by their deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from show_harness import Harness

from engine.core.errors import QueueFull
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.scheduler import Backend, Request, RequestClass, Scheduler, SchedulerConfig, State
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo


class Gated:
    """A backend whose calls wait until the test opens its gate (a slow or stuck voice)."""

    sample_rate_hz = SAMPLE_RATE_HZ
    max_batch = 1

    def __init__(self, name: str) -> None:
        self.name = name
        self.gate = threading.Event()

    def voices(self) -> list[VoiceInfo]:
        return []

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        self.gate.wait(30)
        return [np.full(SAMPLE_RATE_HZ // 4, 0.1, np.float32) for _ in batch]

    def stream(self, request: SynthRequest):  # type: ignore[no-untyped-def]
        yield from self.synthesize([request])

    def close(self) -> None:
        self.gate.set()


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_adlibs_past_capacity_are_refused_at_once(testdata: Path) -> None:
    h = Harness(testdata / "radio_play.txt")
    try:
        sched = h.sched
        sched.config = SchedulerConfig(max_pending=0)  # full for everything from now on
        t0 = time.monotonic()
        for k in range(20):
            with pytest.raises(QueueFull):
                h.show.adlib("ELSA", f"Aside {k}.")
        assert time.monotonic() - t0 < 0.5  # twenty refusals: each one waited 0.5 s before
        assert h.show.adlibs.tracks == []
    finally:
        h.close()


def test_lines_that_find_the_queue_full_are_asked_for_again_without_waiting(testdata: Path) -> None:
    h = Harness(testdata / "radio_play.txt")
    try:
        config = h.sched.config
        h.sched.config = SchedulerConfig(max_pending=0)
        h.show.seek(0.0)
        h.show._last_tick = -1e9
        t0 = time.monotonic()
        h.show.tick()
        assert time.monotonic() - t0 < 0.4  # the engine's turn did not wait for room
        assert h.show.stats.queue_full == 1
        assert all(not t.requests for t in h.show.tracks)
        h.sched.config = config  # room again: the show voices its lines and plays them all
        h.show._last_tick = -1e9  # (the harness plays faster than the scheduler's 50 ms tick)
        audio = h.play_to_end()
        assert h.show.stats.placed == len(h.script.cues) and not h.show.stats.failed
        assert np.abs(audio).max() > 0.05
    finally:
        h.close()


def test_adlibs_stuck_behind_a_slow_backend_fall_back_by_their_deadline() -> None:
    clock = Clock()
    slow, fast = Gated("kokoro"), Gated("espeak")
    fast.gate.set()
    sched = Scheduler({"kokoro": Backend(slow, clock=clock), "espeak": Backend(fast, clock=clock)},
                      SchedulerConfig(adlib_wait_s=1.0), clock)  # fmt: skip
    try:
        voice = Voice(backend="kokoro", voice_id="af_heart")
        busy = sched.submit(Request("A", "a long scripted line", voice, clock.t + 60))
        sched.tick()
        assert busy.state is State.DISPATCHED  # the slow backend's one slot is taken
        adlib = sched.submit(Request("B", "Help!", voice, clock.t, RequestClass.ADLIB))
        sched.tick()
        assert adlib.state is State.QUEUED and adlib.backend == "kokoro"
        clock.t += 0.5
        sched.tick()
        assert adlib.backend == "kokoro"  # within its bound it waits for its own voice
        clock.t += 0.6
        sched.tick()
        assert adlib.backend == "espeak" and adlib.fallback
        limit = time.monotonic() + 10
        while adlib.state is not State.DONE:
            assert time.monotonic() < limit
            sched.wake.wait(0.05)
            sched.tick()
        assert adlib.audio is not None and busy.state is State.DISPATCHED
        assert sched.stats.fallback_on_deadline == 1
    finally:
        slow.gate.set()
        sched.close()
