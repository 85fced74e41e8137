"""Scheduler test helpers: an injected clock and instrumented synthesizers (imported by
name: a `conftest` module name is shared by every test folder)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.scheduler import Request, RequestClass, Scheduler
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo


class ManualClock:
    """Time that moves only when the test says so."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


class RecordingSynth:
    """A backend that returns 0.5 s of tone per line and records the order it was asked in.

    Scheduler tests check the scheduler's decisions, so the voice itself does not matter;
    `fail` makes every call raise, `gate` holds calls until the test opens it.
    """

    sample_rate_hz = SAMPLE_RATE_HZ

    def __init__(self, name: str = "neural", max_batch: int = 1, fail: bool = False) -> None:
        self.name = name
        self.max_batch = max_batch
        self.fail = fail
        self.calls: list[list[str]] = []
        self.gate: threading.Event | None = None

    def voices(self) -> list[VoiceInfo]:
        return []

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        self.calls.append([r.text for r in batch])
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail:
            raise SynthesisError(f"{self.name} backend is down")
        t = np.arange(SAMPLE_RATE_HZ // 2) / SAMPLE_RATE_HZ
        return [(0.1 * np.sin(2 * np.pi * 300 * t)).astype(np.float32) for _ in batch]

    def stream(self, request: SynthRequest):  # type: ignore[no-untyped-def]
        yield from self.synthesize([request])

    def close(self) -> None:
        pass


def run_until_idle(s: Scheduler, limit: int = 1000) -> list[Request]:
    """Tick, waiting on the scheduler's own wake event between ticks, until nothing is left."""
    ended: list[Request] = []
    for _ in range(limit):
        ended += s.tick()
        if s.idle and not s.busy:
            return ended
        s.wake.wait(5)
    raise AssertionError("scheduler did not go idle")


def req(role: str, text: str = "", deadline: float = 1e9, klass: RequestClass = RequestClass.SCRIPTED,
        backend: str = "", weight: float = 1.0) -> Request:  # fmt: skip
    return Request(role, text or f"{role} line", Voice(backend=backend or "neural", weight=weight),
                   deadline, klass)  # fmt: skip
