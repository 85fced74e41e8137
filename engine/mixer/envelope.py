"""Waveform envelopes for the timeline: each voiced line's audio downsampled to a peak per
bucket, computed once per take and kept after the audio itself is let go."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from engine.core.types import SAMPLE_RATE_HZ

BUCKETS_PER_S = 20
"""Envelope resolution: one peak per 50 ms of audio."""


def envelope(audio: NDArray[np.float32], buckets_per_s: int = BUCKETS_PER_S) -> NDArray[np.float32]:
    """Peak |sample| per bucket of `audio` (mono), in 0..1; the last bucket may be short."""
    size = max(1, SAMPLE_RATE_HZ // buckets_per_s)
    n = len(audio)
    if n == 0:
        return np.zeros(0, np.float32)
    padded = np.zeros(-(-n // size) * size, np.float32)
    np.abs(audio, out=padded[:n])
    peaks: NDArray[np.float32] = np.minimum(padded.reshape(-1, size).max(axis=1), 1.0).astype(np.float32)
    return peaks


class Voiced(Protocol):
    """What the cache reads of a cue's take (a `CueTrack`)."""

    generation: int
    audio: list[NDArray[np.float32] | None]
    released: bool

    @property
    def known(self) -> bool: ...


class EnvelopeCache:
    """Cue index -> envelope of its current take; `update` returns the same dict object
    while nothing changed, so a viewer can tell by identity."""

    def __init__(self) -> None:
        self._keys: dict[int, tuple[int, int]] = {}
        self.envelopes: dict[int, NDArray[np.float32]] = {}

    def update(self, tracks: Iterable[tuple[int, Voiced]]) -> dict[int, NDArray[np.float32]]:
        keys: dict[int, tuple[int, int]] = {}
        fresh: dict[int, NDArray[np.float32]] = {}
        changed = False
        for index, t in tracks:
            if t.known:
                parts = [a for a in t.audio if a is not None]
                key = (t.generation, sum(len(a) for a in parts))
                if self._keys.get(index) != key:
                    fresh[index] = envelope(np.concatenate(parts) if len(parts) > 1 else parts[0])
                    changed = True
                else:
                    fresh[index] = self.envelopes[index]
                keys[index] = key
            elif t.released and index in self._keys and self._keys[index][0] == t.generation:
                keys[index], fresh[index] = self._keys[index], self.envelopes[index]  # heard: keep it
        if changed or keys.keys() != self._keys.keys():
            self._keys, self.envelopes = keys, fresh
        return self.envelopes
