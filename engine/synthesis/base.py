"""The `Synthesizer` protocol every voice backend implements, and its request type."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from engine.core.types import Voice

Mono = NDArray[np.float32]
"""A synthesized clip: mono float32 at the engine rate, shape (frames,)."""
T = TypeVar("T")


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
    resampled_st: float = 0.0
    """How far the voice is already resampled (a library voice's own size, semitones):
    casting sizes the roles that share it back toward its voicing first."""


WordTime = tuple[str, float, float]
"""A word of the request's text as written and its (start, end) in seconds from the clip's start."""


@dataclass(frozen=True)
class Take:
    """A voiced request: its audio, and where the backend predicted each word to be."""

    audio: Mono
    words: tuple[WordTime, ...] | None = None
    """One entry per whitespace-separated word of the request's text, from the backend's own
    durations (Kokoro's per-token frames); None where the backend does not predict them."""


def retimed(words: tuple[WordTime, ...] | None, scale: float = 1.0, shift_s: float = 0.0,
            end_s: float = float("inf")) -> tuple[WordTime, ...] | None:  # fmt: skip
    """Word times for the clip played `1 / scale` times as fast, then delayed by `shift_s`
    and cut at `end_s` (the times a trim, a time-stretch or a pause before give its words)."""
    if words is None:
        return None
    return tuple((w, min(end_s, max(0.0, a * scale + shift_s)), min(end_s, max(0.0, b * scale + shift_s)))
                 for w, a, b in words)  # fmt: skip


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


def synthesize_takes(synth: Synthesizer, batch: Sequence[SynthRequest]) -> list[Take]:
    """`synth.synthesize(batch)` with each line's predicted word times, where the backend has
    them (an optional `synthesize_takes` method); other backends' takes carry none."""
    timed = getattr(synth, "synthesize_takes", None)
    if timed is not None:
        takes: list[Take] = timed(batch)
        return takes
    return [Take(a) for a in synth.synthesize(batch)]


def by_backend(batch: Sequence[SynthRequest], voice: Callable[[str, list[SynthRequest]], list[T]]) -> list[T]:
    """Each backend's share of `batch` voiced in one call, `voice(backend, share)` (so a
    batching backend batches), the results back in the batch's order."""
    groups: dict[str, list[int]] = {}
    for k, r in enumerate(batch):
        groups.setdefault(r.voice.backend, []).append(k)
    out: list[T | None] = [None] * len(batch)
    for backend, idx in groups.items():
        for k, result in zip(idx, voice(backend, [batch[k] for k in idx]), strict=True):
            out[k] = result
    return [r for r in out if r is not None]
