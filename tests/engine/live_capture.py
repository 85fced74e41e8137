"""Recording what the show sends to the JACK dummy server: a JACK client whose input ports
are connected to the ports the engine's output stream opened, and the analysis that says
which role sounds when (roles panned hard left and hard right, so a channel is a role)."""

from __future__ import annotations

import time
from collections.abc import Callable

import jack
import numpy as np

RATE = 48_000
WINDOW_S = 0.02


class Recorder:
    """Records both channels of the engine's output from the moment `connect` is called."""

    def __init__(self, max_seconds: float = 120.0) -> None:
        self.client = jack.Client("troupe-test-recorder", no_start_server=True)
        self.inputs = [self.client.inports.register(f"in_{k}") for k in range(2)]
        self.audio = np.zeros((int(max_seconds * RATE), 2), np.float32)
        self.frames = 0
        self.stamps: list[tuple[int, float]] = []
        """(recorded frame, monotonic time) at the start of each JACK cycle."""
        self.client.set_process_callback(self._process)
        self.client.activate()
        self._before = self._output_ports()

    def _output_ports(self) -> set[str]:
        return {p.name for p in self.client.get_ports(is_output=True, is_audio=True)}

    def _process(self, frames: int) -> None:
        n = self.frames
        if n + frames > len(self.audio):
            return
        self.stamps.append((n, time.monotonic()))
        for k, port in enumerate(self.inputs):
            self.audio[n : n + frames, k] = port.get_array()
        self.frames = n + frames

    def connect(self) -> None:
        """Connect the output ports opened since this recorder started (the engine's)."""
        new = sorted(self._output_ports() - self._before)
        assert len(new) == 2, f"expected the engine's two output ports, found {new}"
        for src, dst in zip(new, self.inputs, strict=True):
            self.client.connect(src, dst)

    def since(self, frame: int) -> np.ndarray:
        return self.audio[frame : self.frames].copy()

    def frame_at(self, t: float) -> int:
        """The recorded frame that was captured at monotonic time `t` (to a JACK cycle)."""
        earlier = [f for f, s in self.stamps if s <= t]
        return earlier[-1] if earlier else 0

    def close(self) -> None:
        self.client.deactivate()
        self.client.close()


def active(audio: np.ndarray, channel: int, threshold: float = 0.01) -> np.ndarray:
    """Per 20 ms window: does the channel carry sound?"""
    win = round(WINDOW_S * RATE)
    n = len(audio) // win
    frames = audio[: n * win, channel].reshape(n, win)
    return np.sqrt((frames**2).mean(axis=1)) > threshold


def segments(audio: np.ndarray, channel: int, merge_gap_s: float = 0.3) -> list[tuple[float, float]]:
    """(start s, end s) of each stretch of sound on `channel`, pauses shorter than
    `merge_gap_s` (a breath inside a line) merged."""
    on = active(audio, channel)
    out: list[list[float]] = []
    for k in np.flatnonzero(on):
        t = k * WINDOW_S
        if out and t - out[-1][1] <= merge_gap_s:
            out[-1][1] = t + WINDOW_S
        else:
            out.append([t, t + WINDOW_S])
    return [(a, b) for a, b in out]


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0, what: str = "") -> None:
    """Poll `condition` (the engine's snapshots) until it holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.02)
