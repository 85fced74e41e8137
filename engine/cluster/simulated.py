"""A simulated voice: deterministic audio at a chosen cost, for benchmarks and exact tests.

espeak-ng's audio depends on what the same process voiced before (its pitch flutter and
noise carry over from line to line), so two renders of one script never match sample for
sample. This voice's audio depends only on the line (a tone whose pitch comes from the
voice and whose length comes from the text), and it can take the time a batched neural
model would (`base_s + per_line_s * n` per batch), so the cluster's plumbing can be checked
bit for bit and its scaling measured without a GPU.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator, Sequence

import numpy as np

from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo

SECONDS_PER_CHAR = 0.06
"""About 175 words a minute, like espeak-ng's default rate."""


class SimulatedSynthesizer:
    """A `Synthesizer` whose lines are tones; `base_s`/`per_line_s` set a batch's cost."""

    name = "espeak"
    """It stands in for the embedded voice, so casts and fallbacks work unchanged."""
    sample_rate_hz = SAMPLE_RATE_HZ

    def __init__(self, base_s: float = 0.0, per_line_s: float = 0.0, max_batch: int = 8) -> None:
        self.base_s = base_s
        self.per_line_s = per_line_s
        self.max_batch = max_batch

    def voices(self) -> list[VoiceInfo]:
        return [VoiceInfo("espeak", "en-us", "simulated", "en-us")]

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        if self.base_s or self.per_line_s:
            time.sleep(self.base_s + self.per_line_s * len(batch))  # the modelled service time
        return [tone(r) for r in batch]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        pass


def tone(r: SynthRequest) -> Mono:
    """The line's audio: a function of its text and voice alone."""
    n = max(1, int(len(r.text) * SECONDS_PER_CHAR * SAMPLE_RATE_HZ))
    seed = zlib.crc32(f"{r.voice.voice_id}|{r.voice.pitch}|{r.text}".encode())
    hz = 110.0 + (seed % 400) + 2.0 * r.voice.pitch
    t = np.arange(n, dtype=np.float64) / SAMPLE_RATE_HZ
    return (0.2 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
