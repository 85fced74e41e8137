"""A show on the real espeak-ng voice whose audio callback is played by the test: show time
advances only when the test consumes audio from the ring."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ
from engine.scheduler import Backend, Scheduler, SchedulerConfig
from engine.script import load_script
from engine.show import Show
from engine.synthesis.espeak import EspeakSynthesizer

SR = SAMPLE_RATE_HZ


def settle(show: Show, scheduler: Scheduler) -> None:
    """Tick `show` until no line is being voiced (waiting on the voice, not sleeping)."""
    for _ in range(1000):
        show.tick()
        if not scheduler.busy:
            show.tick()
            return
        scheduler.wake.wait(5)
    raise AssertionError("the voice did not finish its lines")


class Harness:
    """A show on the real espeak voice, with the callback played by the test."""

    def __init__(self, script_path: Path, render_ahead_ms: float = 100, **show_kw: object) -> None:
        self.script = load_script(script_path)
        self.ring = MixRing(1 << 14)
        self.sched = Scheduler({"espeak": Backend(EspeakSynthesizer())}, SchedulerConfig())
        self.show = Show(
            self.script,
            Cast.auto(self.script),
            self.sched,
            self.ring,
            render_ahead_ms=render_ahead_ms,
            **show_kw,
        )  # type: ignore[arg-type]
        self.show.pause(False)  # the director pressed Play
        self.out = np.zeros((2048, 2), np.float32)
        self.played: list[np.ndarray] = []

    def settle(self) -> None:
        settle(self.show, self.sched)

    def play(self, seconds: float) -> np.ndarray:
        start = len(self.played)
        for _ in range(round(seconds * SR / len(self.out))):
            self.settle()
            render(self.out, self.ring, RenderState(self.ring.controls.playing))  # pause holds the clock
            self.played.append(self.out.copy())
        return np.concatenate(self.played[start:]) if self.played[start:] else np.zeros((0, 2))

    def play_to_end(self, limit_s: float = 300) -> np.ndarray:
        chunks = []
        while not self.show.times.finished and len(self.played) * len(self.out) < limit_s * SR:
            chunks.append(self.play(1.0))
        chunks.append(self.play(0.5))  # the ring still holds the render-ahead: let it play out
        return np.concatenate(chunks)

    def close(self) -> None:
        self.show.close()
        self.sched.close()
        self.ring.close()
