"""Stand-in takes voiced again in the cast voice, in the background, while the show runs.

A line the stand-in voice (espeak-ng) spoke because its cast voice failed or could not make
its deadline is asked for again in the cast voice as far-ahead work: class PREFETCH, due an
hour from now, so it is never urgent, never moved to the stand-in for lack of time, and the
first work shed under pressure. The cast voice's take lands in the take cache, so the next
Play after Stop, a loop or seek back, a replay or a render of the same line finds it there
at once, in its own voice. The show's own take is not touched (it has been heard).

One ask per line and voice; a failed or shed ask is asked again at the line's next
stand-in take."""

from __future__ import annotations

from engine.core.errors import QueueFull
from engine.core.types import Voice
from engine.scheduler import Request, RequestClass, Scheduler, State

REVOICE_DUE_S = 3600.0
"""How far ahead a re-voice is due: never urgent, always behind the show's own lines."""

_Key = tuple[int, int, str, str, str, int]


class StandInRevoicer:
    """Asks the scheduler, once per line and voice, to voice a stand-in's line in its cast voice."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._asked: dict[_Key, Request] = {}
        self.voiced = 0
        """Stand-in lines voiced again in their cast voice."""

    def offer(self, stood_in: Request) -> None:
        """`stood_in` finished in the stand-in voice: ask for it in its cast voice."""
        v: Voice = stood_in.voice
        if not stood_in.fallback or v.backend == self.scheduler.config.fallback_backend:
            return
        key = (stood_in.cue_index, stood_in.chunk, stood_in.text, v.backend, v.voice_id, v.pitch)
        if key in self._asked:
            return
        due = self.scheduler.clock() + REVOICE_DUE_S
        r = Request(stood_in.role, stood_in.text, v, due, RequestClass.PREFETCH, stood_in.cue_index,
                    stood_in.chunk, stood_in.n_chunks)  # fmt: skip
        r.on_done = lambda done, k=key: self._done(k, done)
        self._asked[key] = r
        try:
            self.scheduler.submit(r, timeout_s=0.0)
        except QueueFull:
            del self._asked[key]  # asked again at its next stand-in take

    def _done(self, key: _Key, r: Request) -> None:
        if r.state is State.DONE and not r.fallback:
            self.voiced += 1
        else:  # failed, shed, or voiced by the stand-in again: another stand-in take asks again
            self._asked.pop(key, None)

    def pending(self) -> int:
        """Re-voices asked for and not yet finished."""
        return sum(r.state in (State.QUEUED, State.DISPATCHED) for r in self._asked.values())
