"""Loudness normalisation (ITU-R BS.1770 via pyloudnorm's K-weighting) with a true-peak
ceiling, streamed: the meter and the limiter run block by block, so memory stays flat."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyloudnorm
import scipy.ndimage
import scipy.signal
from numpy.typing import NDArray

from engine.export.formats import ExportError

Block = NDArray[np.float32]


@dataclass(frozen=True)
class LoudnessTarget:
    """An integrated loudness to reach and a true-peak level not to pass."""

    lufs: float
    true_peak_db: float
    name: str = ""


PRESETS = {
    # ACX (audiobooks) asks for RMS -23..-18 dB and peaks at most -3 dB; -20 LUFS sits inside it.
    "acx": LoudnessTarget(-20.0, -3.0, "ACX audiobook"),
    "ebu": LoudnessTarget(-23.0, -1.0, "EBU R128 broadcast"),
    "podcast": LoudnessTarget(-16.0, -1.0, "podcast"),
}


def parse_target(text: str) -> LoudnessTarget:
    """'acx', 'ebu', 'podcast', or a level such as '-18' or '-18LUFS' (true peak -1 dB)."""
    key = text.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*(?:lufs)?", key)
    if m is None or not -40 <= float(m.group(1)) <= -5:
        raise ExportError(f"loudness must be acx, ebu, podcast or a level from -40 to -5 LUFS, not {text!r}")
    return LoudnessTarget(float(m.group(1)), -1.0, f"{float(m.group(1)):g} LUFS")


class LoudnessMeter:
    """Integrated loudness of a stream, fed in blocks of any size; the same gating as
    `pyloudnorm.Meter.integrated_loudness` (400 ms blocks, 75% overlap, -70/-10 gates)."""

    def __init__(self, sample_rate_hz: int, channels: int = 2) -> None:
        meter = pyloudnorm.Meter(sample_rate_hz)
        self._stages = [(f.b, f.a, f.passband_gain) for f in meter._filters.values()]
        self._zi = [np.zeros((channels, max(len(b), len(a)) - 1)) for b, a, _ in self._stages]
        self.rate, self.channels = sample_rate_hz, channels
        self._hop = round(0.1 * sample_rate_hz)
        self._sums: list[NDArray[np.float64]] = []  # per 100 ms hop: each channel's sum of squares
        self._part = np.zeros(channels)
        self._in_part = 0
        self.n_frames = 0

    def add(self, block: Block) -> None:
        x = np.ascontiguousarray(block.T, dtype=np.float64)  # (channels, frames): lfilter runs fast
        for k, (b, a, gain) in enumerate(self._stages):
            x, self._zi[k] = scipy.signal.lfilter(b, a, x, axis=1, zi=self._zi[k])
            x = x * gain
        sq = x * x
        pos = 0
        n = sq.shape[1]
        while pos < n:
            take = min(self._hop - self._in_part, n - pos)
            self._part += sq[:, pos : pos + take].sum(axis=1)
            self._in_part += take
            pos += take
            if self._in_part == self._hop:
                self._sums.append(self._part)
                self._part, self._in_part = np.zeros(self.channels), 0
        self.n_frames += n

    def integrated_lufs(self) -> float:
        hops = np.array([*self._sums, self._part]) if self._sums or self._in_part else np.zeros((0, 2))
        n_blocks = int(np.round((self.n_frames / self.rate - 0.4) / 0.1)) + 1
        if n_blocks < 1 or len(hops) == 0:
            return -math.inf
        padded = np.vstack([hops, np.zeros((4, self.channels))])
        z: NDArray[np.float64] = (
            padded[0:n_blocks]
            + padded[1 : n_blocks + 1]
            + padded[2 : n_blocks + 2]
            + padded[3 : n_blocks + 3]
        ) / (0.4 * self.rate)  # (blocks, channels)
        with np.errstate(divide="ignore"):
            block_lufs = -0.691 + 10 * np.log10(z.sum(axis=1))
            above = z[block_lufs >= -70.0]
            if len(above) == 0:
                return -math.inf
            relative = -0.691 + 10 * np.log10(above.mean(axis=0).sum()) - 10.0
            gated = z[(block_lufs > relative) & (block_lufs > -70.0)]
            return float(-0.691 + 10 * np.log10(np.nan_to_num(gated.mean(axis=0)).sum()))


OVERSAMPLE = 4
WINDOW = 481
"""The limiter's window (10 ms at 48 kHz, odd): gain changes spread over it, so no click."""
CONTEXT = 2 * WINDOW + 64


_TAPS = 12
_PHASES = (scipy.signal.firwin(_TAPS * OVERSAMPLE, 1 / OVERSAMPLE) * OVERSAMPLE).reshape(_TAPS, OVERSAMPLE)
"""A 48-tap interpolator, as in BS.1770's true-peak annex: row k, column p is tap 4k+p."""


def true_peak_envelope(x: Block, floor: float = 0.0) -> NDArray[np.float64]:
    """Per frame, the largest |sample| across channels at 4x oversampling (BS.1770 true peak).
    Only frames whose sample peak passes `floor` are oversampled (the others keep their
    sample peak): intersample peaks of speech stay well within 6 dB of the sample peak."""
    env: NDArray[np.float64] = np.abs(x).max(axis=1).astype(np.float64)
    hot = np.flatnonzero(env > floor)
    offsets = np.arange(_TAPS // 2 - 1, -_TAPS // 2 - 1, -1)
    for k in range(0, len(hot), 1 << 15):
        frames = hot[k : k + (1 << 15)]
        idx = np.clip(frames[:, None] + offsets[None, :], 0, len(x) - 1)
        for ch in range(x.shape[1]):
            y = x[idx, ch].astype(np.float64) @ _PHASES  # (frames, phases)
            np.maximum(env[frames], np.abs(y).max(axis=1), out=y[:, 0])
            env[frames] = y[:, 0]
    return env


def limiter_gain(x: Block, ceiling: float) -> NDArray[np.float64]:
    """A smooth gain <= 1 under which no frame's true peak passes `ceiling`: a minimum filter
    then a moving average over the same window, so the average never exceeds the need."""
    need = np.minimum(1.0, ceiling / np.maximum(true_peak_envelope(x, ceiling / 2), 1e-12))
    g = scipy.ndimage.minimum_filter1d(need, WINDOW, mode="nearest")
    out: NDArray[np.float64] = scipy.ndimage.uniform_filter1d(g, WINDOW, mode="nearest")
    return out


def normalised(
    read: Callable[[int, int], Block], n_frames: int, measured_lufs: float, target: LoudnessTarget,
    block_frames: int = 1 << 18,
) -> Iterator[tuple[int, Block, Block]]:  # fmt: skip
    """The audio of `read(start, stop)` at the target loudness, peaks held under the ceiling,
    in blocks: (first frame, the block, the gain each frame got: the level's gain times the
    limiter's), so other audio (the stems) can take the same gain. Each block is computed
    with enough context that block edges do not show."""
    gain = 10 ** ((target.lufs - measured_lufs) / 20) if math.isfinite(measured_lufs) else 1.0
    ceiling = 10 ** ((target.true_peak_db - 0.1) / 20)  # 0.1 dB to spare for the codec's rounding
    for start in range(0, n_frames, block_frames):
        stop = min(n_frames, start + block_frames)
        lo, hi = max(0, start - CONTEXT), min(n_frames, stop + CONTEXT)
        x = read(lo, hi) * np.float32(gain)
        g = limiter_gain(x, ceiling)[start - lo : stop - lo]
        yield (
            start,
            (x[start - lo : stop - lo] * g[:, None]).astype(np.float32),
            (g * gain).astype(np.float32),
        )


def normalise(
    read: Callable[[int, int], Block], n_frames: int, measured_lufs: float, target: LoudnessTarget,
    block_frames: int = 1 << 18,
) -> Iterator[Block]:  # fmt: skip
    """`normalised`, the blocks alone."""
    for _, block, _ in normalised(read, n_frames, measured_lufs, target, block_frames):
        yield block
