"""The line check in a live show, off the real-time path: a line whose every chunk is voiced
is offered to one low-priority listening thread; when that thread is busy the offer is
declined (the show never waits and never queues more than a few lines), and the engine thread
picks up the results on its tick, keeping only those of the take still in the show."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections import deque
from dataclasses import dataclass

import numpy as np

from engine.asr import LineCheck, LineChecker, asr_available, line_checker, shared_transcriber
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono

ENV = "TROUPE_LIVE_CHECK"
NICENESS = 10
"""The listening thread runs below synthesis and the GUI: it uses a core when one is free."""


@dataclass(frozen=True)
class Heard:
    """The check of one take of one cue."""

    cue_index: int
    generation: int
    check: LineCheck


class LiveListener:
    """One daemon thread that checks lines; `offer` never blocks, `results` drains."""

    def __init__(self, check: LineChecker, depth: int = 2) -> None:
        self._check = check
        self._inbox: queue.Queue[tuple[int, int, Mono, str, str] | None] = queue.Queue(maxsize=depth)
        self._done: deque[Heard] = deque()
        self.declined = 0
        self.errors = 0
        self._pending = 0
        self._idle = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="troupe-listen", daemon=True)
        self._thread.start()

    def offer(self, cue_index: int, generation: int, chunks: list[Mono], text: str, backend: str) -> bool:
        """Check this take when the thread gets to it; False (and nothing done) when it is busy."""
        audio = np.concatenate(chunks) if len(chunks) != 1 else chunks[0]
        with self._idle:
            try:
                self._inbox.put_nowait((cue_index, generation, audio, text, backend))
            except queue.Full:
                self.declined += 1
                return False
            self._pending += 1
        return True

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every accepted line is checked (tests, benchmarks); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout_s)

    def results(self) -> list[Heard]:
        out = []
        while self._done:
            out.append(self._done.popleft())  # NB: deque pops are atomic; one consumer
        return out

    def _run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: a thread has its own nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        while (job := self._inbox.get()) is not None:
            index, generation, audio, text, backend = job
            try:
                self._done.append(Heard(index, generation, self._check(audio, text, backend)))
            except Exception:  # a failed check leaves the line unmarked; the show goes on
                self.errors += 1
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()

    def close(self) -> None:
        with contextlib.suppress(queue.Full):
            self._inbox.put_nowait(None)


_shared: LiveListener | None = None
_lock = threading.Lock()


def live_listener() -> LiveListener | None:
    """The process's listener when `TROUPE_LIVE_CHECK=1` and the asr extra is installed."""
    global _shared
    if os.environ.get(ENV, "").strip() not in ("1", "true", "yes") or asr_available() is not None:
        return None
    with _lock:
        if _shared is None:
            _shared = LiveListener(line_checker(shared_transcriber(), SAMPLE_RATE_HZ))
        return _shared
