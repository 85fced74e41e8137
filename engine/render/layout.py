"""The show's layout computed line by line, so mixing can start before the last line is voiced."""

from __future__ import annotations

from collections.abc import Sequence

from engine.core.types import Cue
from engine.mixer import Pacing


class StreamLayout:
    """`engine.mixer.layout` one cue at a time, in script order, plus how far the
    timeline is final: no later cue can start before `frontier_s()`."""

    def __init__(self, cues: Sequence[Cue], pacing: Pacing = Pacing()) -> None:
        self.cues, self.pacing = cues, pacing
        # the earliest fixed slot (SRT/CSV start) among cues k.., for the frontier
        self._fixed_after = [float("inf")] * (len(cues) + 1)
        for k in range(len(cues) - 1, -1, -1):
            s = cues[k].start_s
            self._fixed_after[k] = min(self._fixed_after[k + 1], s if s is not None else float("inf"))
        self._cursor = pacing.lead_in_s
        self._prev: Cue | None = None
        self._prev_start = 0.0
        self.placed = 0

    def place(self, cue: Cue, duration_s: float) -> float:
        """Start (s) of `cue`, the next in script order, which lasts `duration_s` (0 if failed)."""
        assert cue is self.cues[self.placed], "cues are placed in script order"
        prev = self._prev
        if cue.start_s is not None:
            start = cue.start_s
        elif cue.overlaps_previous and prev is not None:
            start = self._prev_start
        elif prev is None:
            start = self._cursor
        else:
            start = self._cursor + (self.pacing.scene_gap_s if cue.scene != prev.scene else self.pacing.gap_s)
        self._cursor = max(self._cursor, start + duration_s)
        self._prev, self._prev_start = cue, start
        self.placed += 1
        return start

    def frontier_s(self) -> float:
        """No cue still to be placed can start earlier than this."""
        k = self.placed
        if k == len(self.cues):
            return float("inf")
        nxt = self.cues[k]
        bound = min(self._cursor, self._fixed_after[k])
        if nxt.overlaps_previous and self._prev is not None and nxt.start_s is None:
            bound = min(bound, self._prev_start)
        return bound
