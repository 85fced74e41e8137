"""When a show may start: Play waits ("preparing") until the lines ahead can be voiced in
their cast voices before each is due, so no opening line is heard late or in the stand-in
voice because the clock started before the natural voices could keep up.

The test is the scheduler's own estimate: walking the lines in show order from the
playhead, the synthesis time of those not yet voiced adds up (from each backend's measured
speed; a cached take costs nothing) and must never exceed the time until the line is due.
While a show is stopped or paused its lines are voiced ahead with no deadline pressure (the
show counts them as due a long time from now), so a show stopped long enough starts at
once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engine.scheduler import Request
from engine.show.tracks import CueState, CueTrack

IDLE_SLACK_S = 3600.0
"""How far off a stopped or paused show's lines are counted as due: voiced ahead, in order,
but never given up or handed to the stand-in voice for lack of time."""
MAX_PREPARE_S = 30.0
"""Play starts after this long however far the voicing is (a backend far slower than
estimated must not hold the show for ever): the late lines are then marked as usual."""
SHORTFALL_S = 0.25
"""A shortfall this small is left to the usual late start (what an espeak-ng draft shows)."""


@dataclass(frozen=True)
class Readiness:
    shortfall_s: float
    """How much sooner the voicing would have to finish for every line ahead to be on time."""
    voiced: int
    needed: int
    """Lines within the look-ahead, and how many of them are voiced."""

    @property
    def ready(self) -> bool:
        return self.shortfall_s <= SHORTFALL_S

    @property
    def judged(self) -> bool:
        """False for the placeholder set when Play is pressed, before the first turn."""
        return self.needed >= 0


def readiness(tracks: Iterable[CueTrack], planned: Callable[[int], float], playhead_s: float,
              horizon_s: float, cost_s: Callable[[Request], float]) -> Readiness:  # fmt: skip
    """How ready the lines from `playhead_s` to `horizon_s` are (`planned`: a cue's planned
    start; `cost_s`: a queued request's synthesis time on its backend)."""
    owed = shortfall = 0.0
    voiced = needed = 0
    for t in sorted(tracks, key=lambda t: planned(t.cue.index)):
        start = planned(t.cue.index)
        if start + t.est_duration_s < playhead_s or t.skipped:
            continue
        if start > horizon_s:
            break
        needed += 1
        if t.known or t.state in (CueState.READY, CueState.FAILED):
            voiced += 1
            continue
        owed += sum(cost_s(r) for r in t.requests) if t.requests else 0.0
        shortfall = max(shortfall, owed - (start - playhead_s))
    return Readiness(shortfall, voiced, needed)


LOOKAHEAD_S = 120.0
"""How far past the writer the heatmap looks for lines that will be late."""


Cost = Callable[[CueTrack], tuple[str, float]]
"""A line's backend and the seconds of its time the line would take."""


def predicted_slack(tracks: Iterable[CueTrack], planned: Callable[[int], float], writer_s: float,
                    horizon_s: float, cost_s: Cost) -> dict[str, float]:  # fmt: skip
    """Per role, the least slack its coming lines are predicted to have: walking the lines in
    show order from the writer to `writer_s + horizon_s`, each backend's synthesis time for the
    lines not yet voiced adds up (`cost_s(track)`: its backend and seconds, from the backend's
    measured speed), and a line's slack is the time until it is due less what its backend owes
    by then. Negative: it will be late unless something changes. What the heatmap shows
    before a line is late (a jump to a part not voiced yet reads late at once)."""
    owed: dict[str, float] = {}
    out: dict[str, float] = {}
    for t in tracks:
        start = planned(t.cue.index)
        if start + t.est_duration_s < writer_s or t.skipped or not t.scripted:
            continue
        if start > writer_s + horizon_s:
            break
        if t.known or t.state in (CueState.READY, CueState.FAILED, CueState.PLAYING, CueState.PLAYED):
            continue
        backend, cost = cost_s(t)
        owed[backend] = owed.get(backend, 0.0) + cost
        slack = max(0.0, start - writer_s) - owed[backend]
        out[t.cue.role] = min(out.get(t.cue.role, slack), slack)
    return out
