"""Where a live show stands and when things in it happen: the writer and the playhead, the
end, the cue GO fires next, each cue's planned start and each deadline.

`ShowTimes` is a view: it stores nothing, and works every answer out from the show's state
when asked (the ring, the origin, the plan, the tracks and the director's transport), so a
position is never kept in two places to drift apart. The show is the one that moves the
clock (seek, loop, pause); this class is the one place that says what the clock reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from engine.audio_io.ring import MixRing
from engine.mixer import Mixer
from engine.show.planner import Now, Planner
from engine.show.planner import deadline as deadline_at
from engine.show.prepare import IDLE_SLACK_S, Readiness
from engine.show.tracks import HEARD, SR, CueState, CueTrack

STANDBY_SLACK_S = 0.05
"""A line whose start is this close behind the clock is still the one GO fires (a jump lands
on a line's start; the clock may be a block past it)."""


class AdlibTracks(Protocol):
    """What the times read of the show's ad-libs (engine/show/adlibs.py)."""

    def get(self, cue_index: int) -> CueTrack: ...


class Clocked(Protocol):
    """What the times are worked out from: the show's state, which the show owns and moves."""

    ring: MixRing
    origin: int
    """The ring position of show time 0."""
    clock: Callable[[], float]
    render_ahead_s: float
    planner: Planner
    tracks: list[CueTrack]
    mixer: Mixer
    next_place: int
    """The first script line not yet placed in script order."""
    running: bool
    preparing: Readiness | None
    ended: bool
    cue_stack: bool
    go_index: int

    @property
    def adlibs(self) -> AdlibTracks: ...

    @property
    def timeline(self) -> Sequence[CueTrack]: ...


class ShowTimes:
    """The show's position and times, read-only (`show.times`)."""

    __slots__ = ("_show",)

    def __init__(self, show: Clocked) -> None:
        self._show = show

    @property
    def write_frame(self) -> int:
        """The show frame being written now (show frame = ring position - origin)."""
        show = self._show
        return show.ring.write_pos - show.origin

    @property
    def write_s(self) -> float:
        return self.write_frame / SR

    @property
    def playhead_s(self) -> float:
        """Where the listener is (held at the end once the show has ended)."""
        show = self._show
        head = max(0, show.ring.read_pos - show.origin) / SR
        return min(head, self.end_s) if show.ended else head

    @property
    def end_s(self) -> float:
        """Where the show ends: exact once every line is voiced, estimated until then."""
        planned = self._show.planner.starts
        if not planned:
            return 0.0
        return max(planned[t.cue.index] + t.est_duration_s for t in self._show.timeline)

    @property
    def finished(self) -> bool:
        """Every line placed (or skipped, or failed) and the writer past the last sample."""
        show = self._show
        done = all(t.placed_chunks >= len(t.chunks) or t.skipped or t.state is CueState.FAILED
                   for t in show.tracks)  # fmt: skip
        return show.next_place >= len(show.tracks) and done and self.write_frame >= show.mixer.end_frame

    @property
    def standby(self) -> int:
        """The cue GO fires, and the one the window's Standby names (one fact, one owner):
        the first script line not yet heard that starts at or after where the clock stands
        (the top after Stop, the jump's line after a jump); -1 when none is left (at the
        end: as in a cue list, GO then does nothing; Stop or a jump stands a cue by again)."""
        show = self._show
        if show.ended:
            return -1
        head, planned = self.playhead_s, show.planner.starts
        released = show.go_index if show.cue_stack else -1  # cue-stack: GO has fired these
        for t in show.tracks:
            if t.state in HEARD or t.state is CueState.FAILED or t.skipped or t.cue.index <= released:
                continue
            start = t.start_s if t.start_s is not None else planned[t.cue.index]
            if start >= head - STANDBY_SLACK_S:
                return t.cue.index
        return -1

    def now(self) -> Now:
        """Where the clock stands, for deadlines (engine/show/planner.py)."""
        show = self._show
        writer_s = max(self.write_s, self.playhead_s + show.render_ahead_s)  # steady state
        idle = 0.0 if show.running and show.preparing is None else IDLE_SLACK_S  # not consumed yet
        return Now(show.clock(), writer_s, idle)

    def deadline(self, show_s: float) -> float:
        """Wall-clock time by which audio for show time `show_s` must be in the mixer."""
        return deadline_at(show_s, self.now())

    def planned_start_s(self, cue_index: int) -> float:
        """Where cue `cue_index` starts (an ad-lib: where it was heard, else the writer)."""
        planned = self._show.planner.starts
        if cue_index in planned:
            return planned[cue_index]
        t = self._show.adlibs.get(cue_index)
        return t.start_s if t.start_s is not None else self.write_s
