"""The offline mixer: clips in timeline order in, finished blocks of mix and stems out;
each clip is released once the blocks it covers are written, so memory stays flat."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from engine.mixer import Clip, MixControls, Stereo, soft_limit
from engine.mixer.mixer import LIMIT_THRESHOLD


@dataclass
class Block:
    """One finished block: the mix and, when stems are on, each sounding role's share."""

    start_frame: int
    mix: Stereo
    stems: dict[str, Stereo]
    """Only the roles heard in this block; the others are silent."""


class StreamMixer:
    """Sums clips into blocks like `engine.mixer.Mixer.render` (gain, pan, master gain,
    limiter; a stem is the role alone through the same chain) but forgets what it wrote."""

    def __init__(self, controls: MixControls, stem_roles: Collection[str] = (), channels: int = 2) -> None:
        """`channels` 1: a mono mix, each role at its own level (pan ignored; the equal-power
        pair's total power)."""
        self.controls = controls
        self.channels = channels
        self.stem_roles = frozenset(stem_roles)
        self._clips: list[Clip] = []
        self.written_frames = 0
        self.end_frame = 0

    def add(self, clip: Clip) -> None:
        if clip.start_frame < self.written_frames:
            raise ValueError(f"clip of cue {clip.cue_index} starts before the written part")
        self._clips.append(clip)
        self.end_frame = max(self.end_frame, clip.end_frame)

    def held_frames(self) -> int:
        """Frames of clip audio held (the memory the mixer uses)."""
        return sum(len(c.audio) for c in self._clips)

    def next_block(self, n_frames: int) -> Block:
        """The next `n_frames` of the show; clips that end inside it are released."""
        start, end = self.written_frames, self.written_frames + n_frames
        controls = self.controls
        mix = np.zeros((n_frames, self.channels), np.float32)
        stems: dict[str, Stereo] = {}
        for clip in self._clips:
            if clip.start_frame >= end or clip.end_frame <= start:
                continue
            left, right = controls.gain(clip.role)
            if left == 0.0 and right == 0.0:
                continue
            a, b = max(start, clip.start_frame), min(end, clip.end_frame)
            src = clip.audio[a - clip.start_frame : b - clip.start_frame]
            for dst in self._targets(mix, stems, clip.role, n_frames):
                part = dst[a - start : b - start]
                if self.channels == 1:
                    part[:, 0] += src * math.hypot(left, right)
                else:
                    part[:, 0] += src * left
                    part[:, 1] += src * right
        self._clips = [c for c in self._clips if c.end_frame > end]
        self.written_frames = end
        for buf in (mix, *stems.values()):
            if controls.master_gain != 1.0:
                buf *= controls.master_gain
            # NB: two reductions and no temporary; most blocks never reach the limiter's knee
            if controls.limiter and (buf.max() > LIMIT_THRESHOLD or buf.min() < -LIMIT_THRESHOLD):
                soft_limit(buf)
        return Block(start, mix, stems)

    def _targets(self, mix: Stereo, stems: dict[str, Stereo], role: str, n: int) -> list[Stereo]:
        if role not in self.stem_roles:
            return [mix]
        if role not in stems:
            stems[role] = np.zeros((n, self.channels), np.float32)
        return [mix, stems[role]]
