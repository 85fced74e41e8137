"""What the show knows about each cue (a script line or an ad-lib), and where each sits on
the show timeline: the one layout both the live show and the offline render use."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from engine.core.timing import spoken_length_s
from engine.core.types import SAMPLE_RATE_HZ, Cue
from engine.mixer import Pacing, layout
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


@dataclass
class CueTrack:
    """Everything the show knows about one cue."""

    cue: Cue
    chunks: list[str]
    rate_wpm: float = 175
    """The role's speaking rate: what the length estimate uses until the audio is known."""
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

    @property
    def est_duration_s(self) -> float:
        if self.known:
            return sum(len(a) for a in self.audio if a is not None) / SR
        if self.duration_s is not None:
            return self.duration_s
        return spoken_length_s(self.cue.text, self.rate_wpm)

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


def plan(tracks: Sequence[CueTrack], pacing: Pacing) -> dict[int, float]:
    """Planned start of every cue: where it was placed, else the script's layout over real
    durations where known and estimates elsewhere."""
    fixed = [t.cue if t.start_s is None else _pinned(t.cue, t.start_s) for t in tracks]
    return layout(fixed, {t.cue.index: t.est_duration_s for t in tracks}, pacing)


def _pinned(cue: Cue, start_s: float) -> Cue:
    return replace(cue, start_s=start_s, overlaps_previous=False)
