"""Waveform envelopes: peaks per 50 ms, computed once per take, kept after release."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.core.types import SAMPLE_RATE_HZ as SR
from engine.mixer.envelope import BUCKETS_PER_S, EnvelopeCache, envelope


def test_envelope_is_the_peak_per_bucket() -> None:
    audio = np.zeros(SR, np.float32)  # one second: 20 buckets
    audio[SR // 4] = -0.8  # bucket 5
    audio[SR - 1] = 1.7  # the last bucket, clamped to full scale
    env = envelope(audio)
    assert env.shape == (BUCKETS_PER_S,) and env[5] == np.float32(0.8) and env[-1] == 1.0
    assert np.count_nonzero(env) == 2
    assert envelope(np.zeros(0, np.float32)).size == 0
    assert envelope(np.ones(SR // 40, np.float32)).shape == (1,)  # a short take: one bucket


@dataclass
class Take:
    generation: int = 0
    audio: list[np.ndarray | None] = field(default_factory=list)
    released: bool = False

    @property
    def known(self) -> bool:
        return bool(self.audio) and all(a is not None for a in self.audio)


def test_cache_computes_once_per_take_and_keeps_heard_ones() -> None:
    cache = EnvelopeCache()
    take = Take(audio=[np.full(SR // 2, 0.5, np.float32), np.full(SR // 2, 0.25, np.float32)])
    first = cache.update([(3, take), (4, Take())])
    assert set(first) == {3} and first[3].shape == (BUCKETS_PER_S,) and first[3][-1] == 0.25
    assert cache.update([(3, take), (4, Take())]) is first  # nothing changed: the same object
    take.audio, take.released = [], True  # heard and let go: its envelope stays
    assert cache.update([(3, take)])[3] is first[3]
    take.generation, take.released = 1, False  # re-voiced: the old envelope goes
    assert cache.update([(3, take)]) == {}
