"""What the show knows about each cue (a script line or an ad-lib). A track tells its show's
`Changes` whenever something the plan reads changes (its text, takes, start, length, rate,
whether it is in the show), so the plan (engine/show/planner.py) is recomputed then and only
then."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from engine.core.timing import spoken_length_s
from engine.core.types import SAMPLE_RATE_HZ, Cue
from engine.scheduler import Request, State

SR = SAMPLE_RATE_HZ


class CueState(enum.Enum):
    PENDING = "pending"
    QUEUED = "queued"
    SYNTHESIZING = "synthesizing"
    READY = "ready"
    STANDBY = "standby"
    """Cue-stack mode: the next cue, voiced and waiting for GO."""
    PLAYING = "playing"
    PLAYED = "played"
    FAILED = "failed"
    FALLBACK = "fallback"


HEARD = (CueState.PLAYING, CueState.PLAYED, CueState.FALLBACK)
PLAN_FIELDS = frozenset({"cue", "audio", "start_s", "duration_s", "rate_wpm", "backend", "kept", "deleted"})
"""What the plan reads of a track: setting one of these tells the track's `Changes` (the
length fields only when the length they give changes)."""
_LENGTH_FIELDS = frozenset({"audio", "duration_s", "rate_wpm", "backend"})


class Changes:
    """How many times the tracks of one show changed what the plan reads."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


@dataclass
class CueTrack:
    """Everything the show knows about one cue."""

    cue: Cue
    chunks: list[str]
    rate_wpm: float = 175
    """The role's speaking rate: what the length estimate uses until the audio is known."""
    backend: str = ""
    """The role's voice backend, whose learnt speed the length estimate uses."""
    audio: list[np.ndarray | None] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    start_s: float | None = None
    """Fixed once the first chunk is placed."""
    placed_chunks: int = 0
    next_chunk_frame: int = 0
    state: CueState = CueState.PENDING
    fallback: bool = False
    error: str = ""
    late_ms: float = 0.0
    generation: int = 0
    """Bumped on every re-take, so results of an older take are ignored."""
    skipped: bool = False
    """Jumped over by a seek before it was voiced."""
    adlib: bool = False
    """Typed live by the director: heard once unless `kept`."""
    kept: bool = False
    """An ad-lib the director kept in the show: replayed like a scripted cue at its time."""
    deleted: bool = False
    released: bool = False
    """Heard, and its audio let go (memory stays flat however long the show); it keeps its
    place and length on the timeline and is voiced again if a jump comes back to it."""
    duration_s: float | None = None
    """The length of its last take, kept when its audio is released."""
    wer: float | None = None
    """The line check's word error rate of this take (a live show with TROUPE_LIVE_CHECK)."""
    check: bool = False
    """Marked "check": the take's words were not all heard."""
    changes: Changes = field(default_factory=Changes, repr=False, compare=False)
    """Told of every change the plan reads (shared by the tracks of one show)."""

    def __setattr__(self, name: str, value: object) -> None:
        changes = self.__dict__.get("changes")
        if changes is None or name not in PLAN_FIELDS:
            object.__setattr__(self, name, value)
        elif name in _LENGTH_FIELDS:  # the plan reads the length these make
            before = self.est_duration_s
            object.__setattr__(self, name, value)
            changes.count += self.est_duration_s != before
        else:
            was = self.__dict__.get(name)
            object.__setattr__(self, name, value)
            changes.count += was is not value and was != value

    def set_chunk(self, k: int, audio: np.ndarray) -> None:
        """The take of chunk `k` came back."""
        before = self.est_duration_s
        self.audio[k] = audio
        self.changes.count += self.est_duration_s != before

    @property
    def est_duration_s(self) -> float:
        if self.known:
            return sum(len(a) for a in self.audio if a is not None) / SR
        if self.duration_s is not None:
            return self.duration_s
        return spoken_length_s(self.cue.text, self.rate_wpm, self.backend)

    def release(self) -> None:
        """Let go of the audio of a take that has been heard (its length is kept)."""
        self.duration_s = self.est_duration_s
        for r in self.requests:
            r.audio = None
        self.audio, self.requests = [], []
        self.released = True

    def revoice(self) -> None:
        """Take a released cue off the timeline so that it is voiced and placed again."""
        self.released = False
        self.generation += 1
        self.unplace()

    @property
    def known(self) -> bool:
        return bool(self.audio) and all(a is not None for a in self.audio)

    @property
    def in_flight(self) -> bool:
        """Some chunk of this take is still queued or being voiced."""
        return any(r.state in (State.QUEUED, State.DISPATCHED) for r in self.requests)

    @property
    def scripted(self) -> bool:
        """Part of the show's timeline: a script line, or an ad-lib kept in the show."""
        return not self.deleted and (not self.adlib or self.kept)

    def unplace(self) -> None:
        """Forget where this cue was placed (its audio, if any, is kept)."""
        self.start_s = None
        self.placed_chunks = 0
        self.next_chunk_frame = 0


@dataclass
class ShowStats:
    placed: int = 0
    late: int = 0
    """Lines placed after their planned start (a deadline miss at the show level)."""
    failed: dict[int, str] = field(default_factory=dict)
    late_ms: list[float] = field(default_factory=list)
    queue_full: int = 0
    """Turns on which a line found the synthesis queue full (asked for again next turn)."""
    adlibs: list[Request] = field(default_factory=list)
