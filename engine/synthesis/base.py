"""The `Synthesizer` protocol every voice backend implements, and its request type."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from engine.core.types import Voice

Mono = NDArray[np.float32]
"""A synthesized clip: mono float32 at the engine rate, shape (frames,)."""


def at_rate(audio: Mono, from_hz: int, to_hz: int) -> Mono:
    """`audio` resampled from `from_hz` to `to_hz` (itself where they are the same)."""
    if from_hz == to_hz or not len(audio):
        return audio
    import soxr

    return np.asarray(soxr.resample(audio, from_hz, to_hz, quality="HQ"), np.float32)


@dataclass(frozen=True)
class SynthRequest:
    """One piece of text to voice."""

    text: str
    voice: Voice
    request_id: int = 0
    role: str = ""
    """Who says it: a cluster keeps each role's voice warm on one worker."""


@dataclass(frozen=True)
class VoiceInfo:
    """An entry in a backend's voice list (what the cast panel offers)."""

    backend: str
    voice_id: str
    name: str
    language: str
    gender: str = ""


@runtime_checkable
class Synthesizer(Protocol):
    """A voice backend: espeak-ng, Kokoro, TensorRT, a remote server."""

    name: str
    max_batch: int
    sample_rate_hz: int

    def voices(self) -> list[VoiceInfo]: ...

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]: ...

    def stream(self, request: SynthRequest) -> Iterator[Mono]: ...

    def close(self) -> None: ...
