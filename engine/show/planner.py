"""Where each line of a live show starts, and by when its audio must be voiced: the one place
a line's start and deadline are set.

- `plan(tracks, pacing)`: every cue's planned start (show seconds), a pure function: where a
  line was placed, else the script's layout (`engine.mixer.layout`, the layout the offline
  render uses too) over real take lengths where known and estimates elsewhere.
- `deadline(show_s, now)`: the wall-clock time by which the audio for show time `show_s` must
  be in the mixer, given where the show's clock stands (`Now`).
- `chunk_deadlines(track, start_s, now)`: each chunk's deadline, the line's length shared
  out by words.
- `Planner`: the plan of one show, recomputed when its tracks' `Changes` count moved (a track
  tells it of every change the plan reads) or a backend's learnt speed did, never by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from engine.core.timing import SPEEDS
from engine.core.types import Cue
from engine.mixer import Pacing, layout
from engine.show.tracks import Changes, CueTrack


def plan(tracks: Sequence[CueTrack], pacing: Pacing) -> dict[int, float]:
    """Planned start of every cue: where it was placed, else the script's layout over real
    durations where known and estimates elsewhere."""
    fixed = [t.cue if t.start_s is None else _pinned(t.cue, t.start_s) for t in tracks]
    return layout(fixed, {t.cue.index: t.est_duration_s for t in tracks}, pacing)


def _pinned(cue: Cue, start_s: float) -> Cue:
    return replace(cue, start_s=start_s, overlaps_previous=False)


@dataclass(frozen=True)
class Now:
    """Where the show's clock stands, for counting deadlines."""

    wall_s: float
    """The wall clock now."""
    writer_s: float
    """The show time the writer reaches next in steady state (the playhead plus the
    render-ahead, or the writer itself if it is further on)."""
    idle_s: float = 0.0
    """Slack while the clock does not run yet (stopped, paused, preparing): nothing is consumed."""


def deadline(show_s: float, now: Now) -> float:
    """Wall-clock time by which audio for show time `show_s` must be in the mixer."""
    return now.wall_s + now.idle_s + (show_s - now.writer_s)


def chunk_deadlines(track: CueTrack, start_s: float, now: Now) -> list[float]:
    """Each chunk's deadline: the line starts at `start_s` and its length is shared out by words."""
    out, offset = [], 0.0
    words_total = max(1, len(track.cue.text.split()))
    for chunk in track.chunks:
        out.append(deadline(start_s + offset, now))
        offset += track.est_duration_s * len(chunk.split()) / words_total
    return out


class Planner:
    """One show's plan, recomputed when its tracks changed what the plan reads."""

    def __init__(self, timeline: Callable[[], Sequence[CueTrack]], pacing: Pacing, changes: Changes) -> None:
        """`timeline()` is the show's cues in order (script lines, then ad-libs kept in the
        show); `changes` is the counter its tracks tell."""
        self._timeline, self.pacing, self.changes = timeline, pacing, changes
        self._at: tuple[int, int] = (-1, -1)
        self._starts: dict[int, float] = {}

    @property
    def starts(self) -> Mapping[int, float]:
        """Cue index -> planned start (show seconds)."""
        count = (self.changes.count, SPEEDS.version)
        if self._at != count:
            self._starts = plan(self._timeline(), self.pacing)
            self._at = count
        return self._starts
