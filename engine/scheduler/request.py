"""What the scheduler schedules: a request to voice one line (or one chunk of a line)."""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.core.clock import Clock, monotonic
from engine.core.timing import SPEEDS, spoken_length_s
from engine.core.types import Voice
from engine.synthesis.base import Mono

__all__ = ["CLASS_FACTOR", "Clock", "Request", "RequestClass", "State", "monotonic"]


class RequestClass(enum.IntEnum):
    """Why a line is being voiced; lower values are more urgent by nature."""

    ADLIB = 0
    """Typed live by the director: spoken as soon as possible."""
    RETAKE = 1
    """A re-cast or edited line that replaces audio already made."""
    SCRIPTED = 2
    """The next lines of the show."""
    PREFETCH = 3
    """Lines far ahead of the playhead: first to be shed under pressure."""


CLASS_FACTOR = {
    RequestClass.ADLIB: 1.0,
    RequestClass.RETAKE: 1.0,
    RequestClass.SCRIPTED: 1.0,
    RequestClass.PREFETCH: 0.25,
}


class State(enum.Enum):
    QUEUED = "queued"
    DISPATCHED = "synthesizing"
    DONE = "ready"
    FAILED = "failed"
    SHED = "shed"
    CANCELLED = "cancelled"


_ids = itertools.count(1)


@dataclass(eq=False)
class Request:
    """One unit of synthesis work and the timestamps of every stage it went through.

    Identity, not value, is what matters (eq=False): the scheduler's heaps hold
    `(key, seq, request)` tuples, and a request is never compared.
    """

    role: str
    """What it is scheduled and weighted by: a role's key (`RoleKey`), or a label of its
    own that is no role (the cast preview's)."""
    text: str
    voice: Voice
    deadline_s: float
    """Clock time by which its first sample must be in the ring."""
    klass: RequestClass = RequestClass.SCRIPTED
    cue_index: int = -1
    chunk: int = 0
    n_chunks: int = 1
    id: int = field(default_factory=lambda: next(_ids))
    state: State = State.QUEUED
    backend: str = ""
    attempts: int = 0
    fallback: bool = False
    """Voiced by the fallback backend (after failures, to make its deadline, or because the
    backend its role is cast to is not installed here)."""
    error: str = ""
    audio: Mono | None = None
    t_enqueued: float = 0.0
    t_dispatched: float = 0.0
    t_synth_start: float = 0.0
    t_first_chunk: float = 0.0
    t_done: float = 0.0
    t_placed: float = 0.0
    """When the show placed it in the mix (its first sample goes into the ring in that tick)."""
    t_played: float = 0.0
    """When its first sample was heard (from the callback's DAC time), if known."""
    est_cost_s: float = 0.0
    """Backend time the policy expects it to use up (set when it is queued)."""
    est_latency_s: float = 0.0
    """Time from dispatch to its audio the policy expects (set when it is queued)."""
    give_up_s: float = math.inf
    """How long past its deadline it is still worth voicing. Finite for a client that is
    waiting (the speech server): the role-aware policy refuses such a request up front when
    it could not start in time, and sheds it once that moment has passed. A show's lines
    are never given up (infinite)."""
    on_done: Callable[[Request], None] | None = None
    """Called on the engine thread when the request ends (done, failed or shed)."""
    _est: tuple[str, float, str, int, float] | None = field(default=None, repr=False)

    @property
    def est_audio_s(self) -> float:
        """Spoken length estimated from the text, the voice's rate and its backend's learnt
        speed (kept until one of them changes: the role-aware policy asks for every queued
        line at each tick)."""
        rate, backend, version, e = self.voice.rate_wpm, self.backend, SPEEDS.version, self._est
        if e is None or e[0] is not self.text or e[1] != rate or e[2] != backend or e[3] != version:
            e = self._est = (self.text, rate, backend, version, spoken_length_s(self.text, rate, backend))
        return e[4]

    @property
    def give_up_at_s(self) -> float:
        """Clock time after which its audio is of no use to anyone."""
        return self.deadline_s + self.give_up_s

    @property
    def latency_s(self) -> float:
        return self.t_done - self.t_enqueued if self.t_done else float("nan")

    @property
    def missed(self) -> bool:
        return self.state == State.DONE and self.t_done > self.deadline_s
