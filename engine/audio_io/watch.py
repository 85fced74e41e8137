"""Noticing that the audio output stopped: no callback for longer than this device, on this
machine as loaded as it is now, ever pauses.

The threshold adapts to the callback cadence seen lately: on a quiet machine a device calls
back every few milliseconds and 120 ms without one means it is gone; on a machine loaded well
past its cores the callbacks come in bursts with gaps of 100 ms and more while the device
plays on, and the threshold grows with the longest recent gap (up to 0.45 s, so a real loss
is still noticed within half a second)."""

from __future__ import annotations

import time
from collections import deque

from engine.audio_io.ring import RingStats

STALL_S = 0.12
"""The least time without a callback that counts as stopped (a quiet machine)."""
MAX_STALL_S = 0.45
"""The most: a device that stopped is noticed within this plus one engine turn (< 0.5 s)."""
GAP_FACTOR = 3.0
"""A stall is this many times the longest gap between callbacks seen lately."""
GAP_WINDOW_S = 20.0
"""How long a long gap keeps the threshold up."""


class StallWatch:
    """Watches the ring's callback counter, which only a running stream advances."""

    def __init__(self, stats: RingStats, stall_s: float = STALL_S) -> None:
        self.stats = stats
        self.min_stall_s = stall_s
        self._gaps: deque[tuple[float, float]] = deque()
        """(when, gap) of the longest gaps between callbacks seen in the last `GAP_WINDOW_S`."""
        self.restart()

    def restart(self) -> None:
        self._count = self.stats.callbacks
        self._since = time.monotonic()

    @property
    def stall_s(self) -> float:
        """How long without a callback counts as stopped now."""
        longest = self._gaps[0][1] if self._gaps else 0.0
        return min(MAX_STALL_S, max(self.min_stall_s, GAP_FACTOR * longest))

    def stalled(self) -> bool:
        count, now = self.stats.callbacks, time.monotonic()
        if count != self._count:
            self._note_gap(now, now - self._since)
            self._count, self._since = count, now
            return False
        return now - self._since > self.stall_s

    def _note_gap(self, now: float, gap: float) -> None:
        """Keep the window's longest gaps, longest first (a window maximum in amortised O(1))."""
        gaps = self._gaps
        while gaps and now - gaps[0][0] > GAP_WINDOW_S:
            gaps.popleft()
        while gaps and gaps[-1][1] <= gap:
            gaps.pop()
        gaps.append((now, min(gap, MAX_STALL_S)))
