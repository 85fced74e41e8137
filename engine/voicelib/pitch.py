"""A speaker's pitch, for the voice gates: the median fundamental frequency of the voiced
frames of a take (YIN's cumulative-mean-normalised difference, 60-500 Hz)."""

from __future__ import annotations

import numpy as np
import soxr
from numpy.typing import NDArray

ANALYSIS_RATE_HZ = 16_000
F0_MIN_HZ = 60.0
F0_MAX_HZ = 500.0
FRAME_S = 0.04
HOP_S = 0.01
THRESHOLD = 0.15
"""A frame is voiced where the normalised difference dips under this (YIN's usual 0.1-0.2)."""


def f0_track(audio: NDArray[np.float32], sample_rate_hz: int) -> NDArray[np.float64]:
    """The F0 (Hz) of each voiced 40 ms frame, 10 ms apart (unvoiced and quiet frames left out)."""
    x = np.asarray(audio, np.float64).reshape(-1)
    if sample_rate_hz != ANALYSIS_RATE_HZ:
        x = np.asarray(soxr.resample(x, sample_rate_hz, ANALYSIS_RATE_HZ), np.float64)
    n, hop = int(FRAME_S * ANALYSIS_RATE_HZ), int(HOP_S * ANALYSIS_RATE_HZ)
    if len(x) < 2 * n:
        return np.zeros(0)
    count = (len(x) - 2 * n) // hop + 1
    idx = np.arange(count)[:, None] * hop + np.arange(2 * n)[None, :]
    frames = x[idx]
    energy = np.sqrt(np.mean(frames[:, :n] ** 2, axis=1))
    loud = energy > max(1e-4, 0.1 * float(np.percentile(energy, 95)))
    frames = frames[loud]
    if not len(frames):
        return np.zeros(0)
    lag_min, lag_max = int(ANALYSIS_RATE_HZ / F0_MAX_HZ), int(ANALYSIS_RATE_HZ / F0_MIN_HZ)
    # d(tau) = sum (x[j] - x[j+tau])^2 over the first half-frame, for every tau, through FFTs
    head = frames[:, :n]
    size = 1 << int(np.ceil(np.log2(3 * n)))
    cross = np.fft.irfft(np.fft.rfft(frames, size) * np.conj(np.fft.rfft(head, size)), size)[:, : n + 1]
    sq = np.cumsum(frames**2, axis=1)
    window = sq[:, n - 1 : 2 * n] - np.concatenate([np.zeros((len(frames), 1)), sq[:, :n]], axis=1)
    d = np.sum(head**2, axis=1, keepdims=True) + window[:, : n + 1] - 2 * cross
    d[:, 0] = 0.0
    taus = np.arange(1, n + 1)
    cmnd = d[:, 1:] * taus / np.maximum(np.cumsum(d[:, 1:], axis=1), 1e-12)
    out = []
    for row in cmnd:
        band = row[lag_min - 1 : lag_max]
        below = np.nonzero(band < THRESHOLD)[0]
        if not len(below):
            continue
        k = below[0]
        while k + 1 < len(band) and band[k + 1] < band[k]:
            k += 1  # the bottom of the first dip
        lag = float(k + lag_min)
        if 0 < k < len(band) - 1:  # parabolic interpolation
            a, b, c = band[k - 1], band[k], band[k + 1]
            denom = a - 2 * b + c
            if denom > 0:
                lag += 0.5 * (a - c) / denom
        out.append(ANALYSIS_RATE_HZ / lag)
    return np.asarray(out)


def f0_median(audio: NDArray[np.float32], sample_rate_hz: int) -> float:
    """The median F0 of a take's voiced frames (Hz); 0.0 when nothing in it is voiced."""
    track = f0_track(audio, sample_rate_hz)
    return float(np.median(track)) if len(track) else 0.0
