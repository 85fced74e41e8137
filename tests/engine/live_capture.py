"""What the recorded output says: which role sounds when (roles panned hard left and hard
right, so a channel is a role); the recorder itself is `engine.audio_io.capture`."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from engine.audio_io.capture import RATE, Recorder

__all__ = ["Recorder", "active", "segments", "wait_for"]
WINDOW_S = 0.02


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
