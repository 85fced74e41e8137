"""The streaming fit loop: a long line streams chunk by chunk into its slot; after each chunk
the spoken position (where its last word ends, as heard) is compared with the plan and the
next chunk's rate is corrected: a damped, clamped share of the drift (the design document's
gain 0.3, clamp ±50 ms), on top of a running estimate of how fast the voice really speaks."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono

PRIOR_S_PER_CHAR = 1 / 15
"""A first guess of speaking time per character at rate 1 (espeak-ng at 175 wpm: ~15 chars/s)."""


@dataclass(frozen=True)
class LoopSettings:
    """The correction loop's constants (benchmarks/bench_asr.py compares them)."""

    gain: float = 0.3
    """Share of the drift so far taken out of the next chunk."""
    clamp_s: float = 0.05
    """Largest correction applied to one chunk, either way."""
    learn: float = 0.5
    """How much one measured chunk moves the estimate of the voice's speed (0: never)."""
    min_rate: float = 0.7
    max_rate: float = 1.5
    feedback: bool = True
    """False: one rate from the first guess for the whole line, no correction (the baseline)."""
    retry_s: float | None = None
    """A chunk whose spoken length misses its target by more than this is voiced again at the
    rate its take shows it needs (up to `retries` times; more voicing for those chunks);
    None: never."""
    retries: int = 1
    max_hold_s: float = 0.0
    """A chunk that ends early waits up to this long before the next starts (a pause absorbs
    the lead; lateness is left to the rate). 0: chunks play back to back."""


@dataclass(frozen=True)
class ChunkTiming:
    """One streamed chunk against the plan."""

    text: str
    rate: float
    correction_s: float
    planned_end_s: float
    spoken_end_s: float
    """Where its last word ended, from the start of the line."""
    hold_s: float = 0.0
    """Silence put before it because the line was ahead of its plan."""

    @property
    def drift_s(self) -> float:
        return self.spoken_end_s - self.planned_end_s


def plan_ends(chunks: Sequence[str], slot_s: float) -> list[float]:
    """Each chunk's planned end: the slot shared by length in characters."""
    total = sum(len(c) for c in chunks) or 1
    ends, t = [], 0.0
    for c in chunks:
        t += slot_s * len(c) / total
        ends.append(t)
    return ends


class RateModel:
    """How long the voice takes per character at rate 1, learnt from each measured chunk."""

    def __init__(self, s_per_char: float = PRIOR_S_PER_CHAR, learn: float = 0.5) -> None:
        self.s_per_char, self.learn = s_per_char, learn

    def rate_for(self, chars: int, target_s: float, lo: float, hi: float) -> float:
        natural_s = chars * self.s_per_char
        return min(hi, max(lo, natural_s / max(1e-3, target_s)))

    def update(self, chars: int, rate: float, spoken_s: float) -> None:
        seen = spoken_s * rate / max(1, chars)
        self.s_per_char += self.learn * (seen - self.s_per_char)


def correction_s(drift_s: float, settings: LoopSettings) -> float:
    """The damped, clamped share of the drift the next chunk makes up."""
    return max(-settings.clamp_s, min(settings.clamp_s, settings.gain * drift_s))


Voice = Callable[[str, float], Mono]
"""Voice a chunk of text at a rate (1.0 = the role's own)."""
Measure = Callable[[Mono], float]
"""Seconds from a chunk's start to the end of its last spoken word."""


def stream_to_slot(chunks: Sequence[str], slot_s: float, voice: Voice, measure: Measure,
                   settings: LoopSettings = LoopSettings(), model: RateModel | None = None,
                   sample_rate_hz: int = SAMPLE_RATE_HZ) -> Iterator[tuple[Mono, ChunkTiming]]:  # fmt: skip
    """Each chunk's audio (to be played back to back, cut at its spoken end) and its timing."""
    model = model or RateModel(learn=settings.learn if settings.feedback else 0.0)
    ends = plan_ends(chunks, slot_s)
    fixed = model.rate_for(sum(len(c) for c in chunks), slot_s, settings.min_rate, settings.max_rate)
    spoken, prev_end = 0.0, 0.0
    for text, end in zip(chunks, ends, strict=True):
        hold = min(settings.max_hold_s, max(0.0, prev_end - spoken)) if settings.feedback else 0.0
        fix = correction_s(spoken + hold - prev_end, settings) if settings.feedback else 0.0
        target = end - prev_end - fix
        rate = (
            model.rate_for(len(text), target, settings.min_rate, settings.max_rate)
            if settings.feedback
            else fixed
        )
        audio = voice(text, rate)
        took = measure(audio)
        for _ in range(settings.retries if settings.feedback and settings.retry_s is not None else 0):
            if abs(took - target) <= (settings.retry_s or 0.0):
                break
            rate = min(settings.max_rate, max(settings.min_rate, rate * took / max(1e-3, target)))
            audio = voice(text, rate)
            took = measure(audio)
        if settings.feedback:
            model.update(len(text), rate, took)
        spoken += hold + took
        prev_end = end
        if hold > 0:
            audio = np.concatenate([np.zeros(round(hold * sample_rate_hz), np.float32), audio])
        yield audio, ChunkTiming(text, rate, fix, end, spoken, hold)
