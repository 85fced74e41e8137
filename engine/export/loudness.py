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
    rms_db: tuple[float, float] | None = None
    """A range the file's plain RMS must fall in (ACX: -23 to -18 dB): the gain aims at its
    middle, and `lufs` is then only where the level starts."""
    lead_in_s: float | None = None
    """Room tone before the first line (None: the render's own lead-in)."""
    tail_s: float | None = None
    """Room tone after the last line (None: the render's own tail)."""
    room_tone_db: float | None = None
    """A bed of quiet noise at this RMS (dBFS) under the whole mix (None: none, and the gaps
    are digital silence): an audiobook's room tone, which its reviewers hear as a recording
    rather than dead air, kept under the noise-floor limit."""


PRESETS = {
    # ACX (audiobooks) asks for RMS -23..-18 dB and peaks at most -3 dB; -20 LUFS sits inside it.
    # ACX also asks for 0.5-1 s of room tone at the head of a file and 1-5 s at its tail.
    # ACX's noise floor must be at most -60 dB RMS; a bed at -72 dB is room tone well under it.
    "acx": LoudnessTarget(
        -20.0, -3.0, "ACX audiobook", rms_db=(-23.0, -18.0), lead_in_s=0.75, tail_s=2.0, room_tone_db=-72.0
    ),
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
        self._plain = 0.0
        """The sum of squares of the samples as fed (unweighted), over every channel."""

    def add(self, block: Block) -> None:
        x = np.ascontiguousarray(block.T, dtype=np.float64)  # (channels, frames): lfilter runs fast
        self._plain += float(np.einsum("ij,ij->", x, x))
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

    def rms_db(self) -> float:
        """The plain RMS of everything fed (dBFS, every channel), as ACX measures a file."""
        n = self.n_frames * self.channels
        return 10 * math.log10(self._plain / n) if n and self._plain > 0 else -math.inf

    def hop_energies(self) -> NDArray[np.float64]:
        """(hops, channels): each 100 ms hop's K-weighted sum of squares (the last may be short)."""
        if not self._sums and not self._in_part:
            return np.zeros((0, self.channels))
        return np.array([*self._sums, self._part] if self._in_part else self._sums)

    def integrated_lufs(self, first_hop: int = 0, stop_hop: int | None = None) -> float:
        """The integrated loudness of everything fed so far, or of the hops from `first_hop`
        up to `stop_hop` (100 ms each: a chapter's)."""
        every = (
            np.array([*self._sums, self._part])
            if self._sums or self._in_part
            else np.zeros((0, self.channels))
        )
        frames = self.n_frames if stop_hop is None else min(self.n_frames, stop_hop * self._hop)
        frames -= min(frames, first_hop * self._hop)
        hops = every[first_hop:stop_hop]
        n_blocks = int(np.round((frames / self.rate - 0.4) / 0.1)) + 1
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
        out = x[start - lo : stop - lo] * g[:, None]
        if target.room_tone_db is not None:
            out += room_tone(start, out.shape, target.room_tone_db)
        yield start, out.astype(np.float32), (g * gain).astype(np.float32)


def room_tone(start: int, shape: tuple[int, ...], rms_db: float) -> NDArray[np.float64]:
    """Quiet noise at `rms_db` (dBFS RMS), tilted towards the low end as a quiet room's is
    (each sample half its own and half the one before); the same for the same frames, so an
    encode run again writes the same file."""
    rng = np.random.default_rng([0x7200, start])
    white = rng.standard_normal((shape[0] + 1, *shape[1:]))
    tilted = (white[1:] + white[:-1]) / math.sqrt(2.0)  # unit RMS, fewer highs
    return tilted * 10 ** (rms_db / 20)


def normalise(
    read: Callable[[int, int], Block], n_frames: int, measured_lufs: float, target: LoudnessTarget,
    block_frames: int = 1 << 18,
) -> Iterator[Block]:  # fmt: skip
    """`normalised`, the blocks alone."""
    for _, block, _ in normalised(read, n_frames, measured_lufs, target, block_frames):
        yield block
