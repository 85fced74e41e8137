"""Level meters: peak and RMS per role and for the master, with peak hold and a clip
light, measured on the engine thread from what the listener has just heard (never in the
audio callback), and published in the engine's snapshots."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from engine.core.types import SAMPLE_RATE_HZ
from engine.mixer.mixer import Clip, MixControls

WINDOW_FRAMES = SAMPLE_RATE_HZ // 20
"""What one reading measures: the last 50 ms heard (the engine reads ~20 times a second)."""
FLOOR_DB = -90.0
"""Silence reads as this."""
HOLD_S = 1.5
"""A peak's hold marker stays this long, then falls back to the current peak."""
CLIP_DB = -0.1
"""A master peak at or above this lights the clip light (the limiter is at its ceiling)."""
CLIP_HOLD_S = 3.0


def to_db(x: float) -> float:
    return FLOOR_DB if x <= 10 ** (FLOOR_DB / 20) else max(FLOOR_DB, 20 * math.log10(x))


@dataclass(frozen=True)
class Level:
    """One meter reading, in dBFS."""

    peak_db: float = FLOOR_DB
    rms_db: float = FLOOR_DB
    hold_db: float = FLOOR_DB
    """The highest peak of the last HOLD_S seconds."""
    clip: bool = False
    """A peak reached CLIP_DB within the last CLIP_HOLD_S seconds (master only)."""


def measure(samples: NDArray[np.float32]) -> tuple[float, float]:
    """(peak, RMS) of mono or (frames, channels) audio, linear; the louder channel's."""
    if samples.size == 0:
        return 0.0, 0.0
    a = samples.reshape(len(samples), -1).astype(np.float64)
    peak = float(np.abs(a).max())
    rms = float(np.sqrt((a * a).mean(axis=0)).max())
    return peak, rms


def role_signals(clips: Iterable[Clip], start_frame: int, n_frames: int,
                 controls: MixControls) -> dict[str, NDArray[np.float32]]:  # fmt: skip
    """Each role's contribution to frames [start, start + n) of the mix, mono, at the gain
    of its louder channel (pan and master included), before the limiter."""
    out: dict[str, NDArray[np.float32]] = {}
    end = start_frame + n_frames
    for clip in clips:
        a, b = max(start_frame, clip.start_frame), min(end, clip.end_frame)
        if a >= b:
            continue
        gain = max(controls.gain(clip.role)) * controls.master_gain
        buf = out.setdefault(clip.role, np.zeros(n_frames, np.float32))
        buf[a - start_frame : b - start_frame] += (
            clip.audio[a - clip.start_frame : b - clip.start_frame] * gain
        )
    return out


class _Ballistics:
    def __init__(self) -> None:
        self.hold, self.hold_at, self.clip_at = 0.0, -math.inf, -math.inf

    def reading(self, peak: float, rms: float, now_s: float, clip_check: bool) -> Level:
        if peak >= self.hold or now_s - self.hold_at > HOLD_S:
            self.hold, self.hold_at = peak, now_s
        if clip_check and to_db(peak) >= CLIP_DB:
            self.clip_at = now_s
        return Level(to_db(peak), to_db(rms), to_db(self.hold), now_s - self.clip_at <= CLIP_HOLD_S)


class Meters:
    """Per-role and master readings with hold; `update` once per snapshot."""

    def __init__(self) -> None:
        self._roles: dict[str, _Ballistics] = {}
        self._master = _Ballistics()
        self.roles: dict[str, Level] = {}
        self.master = Level()

    def update(self, heard: NDArray[np.float32], roles: dict[str, NDArray[np.float32]],
               all_roles: Iterable[str], now_s: float) -> None:  # fmt: skip
        """Take the master audio just heard and each role's part of it (roles absent from
        `roles` were silent)."""
        self.master = self._master.reading(*measure(heard), now_s, clip_check=True)
        readings = {}
        for role in all_roles:
            sig = roles.get(role)
            peak, rms = measure(sig) if sig is not None else (0.0, 0.0)
            readings[role] = self._roles.setdefault(role, _Ballistics()).reading(peak, rms, now_s, False)
        self.roles = readings
