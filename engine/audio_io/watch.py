"""Noticing that the audio output stopped: no callback for longer than a device ever pauses."""

from __future__ import annotations

import time

from engine.audio_io.ring import MixRing

STALL_S = 0.12
"""No callback for this long means the device or its server is gone (JACK calls back every
few milliseconds; the engine notices within STALL_S plus one engine turn, under 200 ms)."""


class StallWatch:
    """Watches the ring's callback counter, which only a running stream advances."""

    def __init__(self, ring: MixRing, stall_s: float = STALL_S) -> None:
        self.ring = ring
        self.stall_s = stall_s
        self.restart()

    def restart(self) -> None:
        self._count = self.ring.callbacks
        self._since = time.monotonic()

    def stalled(self) -> bool:
        count, now = self.ring.callbacks, time.monotonic()
        if count != self._count:
            self._count, self._since = count, now
            return False
        return now - self._since > self.stall_s
