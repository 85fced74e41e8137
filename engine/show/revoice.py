"""Stand-in takes voiced again in the cast voice, in the background, while the show runs.

A line the stand-in voice (espeak-ng) spoke because its cast voice failed or could not make
its deadline is asked for again in its cast voice, so the next Play after Stop, a loop or a
seek back, a replay or a render finds the cast voice's take in the take cache at once. The
show's own take is not touched (it has been heard).

The re-voice is kept off the show's way: one at a time, and only while the scheduler has
nothing else queued or being voiced (a show line arriving meanwhile waits at most one line's
voicing, well inside the show's look-ahead); it goes as far-ahead work (class PREFETCH, due
an hour away), never moved to the stand-in for lack of time. A line is asked for once per
voice; one whose re-voice failed, was shed or cancelled (a retake, a recast) is asked for
again at its next stand-in take. Only where the cast voice's backend is here and keeps its
takes (the take cache on): elsewhere a re-voice would be thrown away."""

from __future__ import annotations

from collections import deque

from engine.core.errors import QueueFull
from engine.core.types import Voice
from engine.scheduler import Request, RequestClass, Scheduler, State
from engine.synthesis.take_cache import CachedSynthesizer

REVOICE_DUE_S = 3600.0
"""How far ahead a re-voice is due: never urgent, never handed to the stand-in for time."""

_Key = tuple[int, int, str, Voice]
"""(cue, chunk, text, cast voice): what a take in the cache is found by, and where it plays."""


class StandInRevoicer:
    """Voices a stand-in's lines again in their cast voices when the scheduler is idle.
    Engine thread only (`offer` from a request's `on_done`, `tick` from the show's tick)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._wanted: deque[tuple[_Key, Request]] = deque()
        self._current: tuple[_Key, Request] | None = None
        self._asked: set[_Key] = set()
        """Waiting, being voiced, or voiced in the cast voice."""
        self.voiced = 0
        """Stand-in lines voiced again in their cast voice."""

    def offer(self, stood_in: Request) -> None:
        """`stood_in` finished in the stand-in voice: voice it in its cast voice later."""
        v = stood_in.voice
        backend = self.scheduler.backends.get(v.backend)
        if backend is None or not isinstance(backend.synth, CachedSynthesizer):
            return
        key = (stood_in.cue_index, stood_in.chunk, stood_in.text, v)
        if key in self._asked:
            return
        self._asked.add(key)
        r = Request(stood_in.role, stood_in.text, v, 0.0, RequestClass.PREFETCH, stood_in.cue_index,
                    stood_in.chunk, stood_in.n_chunks)  # fmt: skip
        self._wanted.append((key, r))

    def tick(self) -> None:
        """Send the next re-voice when the last one is over and nothing else is in the way."""
        if self._current is not None and self._current[1].state is State.CANCELLED:
            self._asked.discard(self._current[0])  # a retake or recast withdrew it: no on_done
            self._current = None
        if self._current is not None or not self._wanted or not self.scheduler.idle:
            return
        key, r = self._current = self._wanted.popleft()
        r.deadline_s = self.scheduler.clock() + REVOICE_DUE_S
        r.on_done = lambda done, k=key: self._done(k, done)
        try:
            self.scheduler.submit(r, timeout_s=0.0)
        except QueueFull:
            self._wanted.appendleft((key, r))
            self._current = None

    def _done(self, key: _Key, r: Request) -> None:
        self._current = None
        r.audio = None  # NB: the take is in the cache; the show keeps its own
        if r.state is State.DONE and not r.fallback:
            self.voiced += 1
        else:  # failed, shed, or voiced by the stand-in again: its next stand-in take asks again
            self._asked.discard(key)
