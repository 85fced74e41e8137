"""The mixer: clips on a frame timeline, per-role gain/pan/mute/solo, soft limiter."""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from engine.core.types import Voice

Stereo = NDArray[np.float32]
"""Mixed audio, shape (frames, 2)."""

LIMIT_THRESHOLD = 0.85
"""Below this the limiter is transparent; above it peaks bend smoothly towards 1.0."""


def equal_power(pan: float) -> tuple[float, float]:
    """(left, right) gains for `pan` in [-1, 1]: constant power, -3 dB each at centre."""
    angle = (min(1.0, max(-1.0, pan)) + 1.0) * math.pi / 4
    return math.cos(angle), math.sin(angle)


def soft_limit(buf: Stereo) -> None:
    """In place, memoryless (so block-size independent): identity up to the threshold, then
    a tanh knee that keeps the curve and its slope continuous and never exceeds 1.0."""
    t = LIMIT_THRESHOLD
    mag = np.abs(buf)
    over = mag > t
    if not over.any():
        return
    knee = t + (1.0 - t) * np.tanh((mag[over] - t) / (1.0 - t))
    buf[over] = np.copysign(knee, buf[over]).astype(np.float32)


@dataclass(frozen=True)
class MixControls:
    """One immutable snapshot of the live mix settings; replaced whole, never mutated."""

    gains: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Role -> (left, right) linear gain, with mute/solo/pan/gain already applied."""
    master_gain: float = 1.0
    limiter: bool = True

    @classmethod
    def from_voices(cls, voices: Mapping[str, Voice], master_gain: float = 1.0) -> MixControls:
        soloing = any(v.solo for v in voices.values())
        gains: dict[str, tuple[float, float]] = {}
        for role, v in voices.items():
            audible = not v.mute and (v.solo or not soloing)
            g = 10 ** (v.gain_db / 20) if audible else 0.0
            left, right = equal_power(v.pan)
            gains[role] = (g * left, g * right)
        return cls(gains=gains, master_gain=master_gain)

    def gain(self, role: str) -> tuple[float, float]:
        return self.gains.get(role, (math.sqrt(0.5), math.sqrt(0.5)))


@dataclass(frozen=True)
class Clip:
    """A synthesized line (or chunk of one) placed at `start_frame`."""

    start_frame: int
    role: str
    audio: NDArray[np.float32]
    """Mono, shape (frames,)."""
    cue_index: int = -1

    @property
    def end_frame(self) -> int:
        return self.start_frame + len(self.audio)


class Mixer:
    """Sums the clips under a window of frames into a stereo block.

    Clips may be added or removed from any thread (a lock guards the clip list);
    `render` is called by one consumer, the engine thread or the offline renderer.
    """

    def __init__(self, controls: MixControls | None = None) -> None:
        self.controls = controls or MixControls()
        self._lock = threading.Lock()
        self._starts: list[int] = []
        self._clips: list[Clip] = []
        self._max_len = 0

    def add(self, clip: Clip) -> None:
        with self._lock:
            k = bisect.bisect_right(self._starts, clip.start_frame)
            self._starts.insert(k, clip.start_frame)
            self._clips.insert(k, clip)
            self._max_len = max(self._max_len, len(clip.audio))

    def remove_cue(self, cue_index: int, from_frame: int = 0) -> int:
        """Drop the clips of a cue that start at or after `from_frame`; return how many."""
        with self._lock:
            keep = [c for c in self._clips if c.cue_index != cue_index or c.start_frame < from_frame]
            removed = len(self._clips) - len(keep)
            self._clips = keep
            self._starts = [c.start_frame for c in keep]
            return removed

    def clear(self) -> None:
        with self._lock:
            self._clips, self._starts, self._max_len = [], [], 0

    def clips_in(self, start_frame: int, end_frame: int) -> list[Clip]:
        """The clips that sound somewhere in frames [start, end)."""
        with self._lock:
            hi = bisect.bisect_left(self._starts, end_frame)
            lo = bisect.bisect_left(self._starts, start_frame - self._max_len)
            return [c for c in self._clips[lo:hi] if c.end_frame > start_frame]

    @property
    def clips(self) -> list[Clip]:
        with self._lock:
            return list(self._clips)

    @property
    def end_frame(self) -> int:
        with self._lock:
            return max((c.end_frame for c in self._clips), default=0)

    def render(self, start_frame: int, out: Stereo, roles: Collection[str] | None = None) -> None:
        """Fill `out` (frames, 2) with the mix from `start_frame`; `roles` limits it to a stem."""
        n = out.shape[0]
        out.fill(0.0)
        end = start_frame + n
        controls = self.controls  # NB: one reference read; the GUI replaces it whole
        with self._lock:
            hi = bisect.bisect_left(self._starts, end)
            lo = bisect.bisect_left(self._starts, start_frame - self._max_len)
            active = [c for c in self._clips[lo:hi] if c.end_frame > start_frame]
        for clip in active:
            if roles is not None and clip.role not in roles:
                continue
            left, right = controls.gain(clip.role)
            if left == 0.0 and right == 0.0:
                continue
            a = max(start_frame, clip.start_frame)
            b = min(end, clip.end_frame)
            src = clip.audio[a - clip.start_frame : b - clip.start_frame]
            dst = out[a - start_frame : b - start_frame]
            dst[:, 0] += src * left
            dst[:, 1] += src * right
        if controls.master_gain != 1.0:
            out *= controls.master_gain
        if controls.limiter:
            soft_limit(out)
