"""The streaming fit loop: a long line streams chunk by chunk into its slot; after each chunk
the spoken position (where its last word ends, as heard) is compared with the plan and the
next chunk's rate is corrected: a damped, clamped share of the drift (the design document's
gain 0.3, clamp ±50 ms), on top of a running estimate of how fast the voice really speaks."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from engine.core.timing import S_PER_CHAR
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono

PRIOR_S_PER_CHAR = S_PER_CHAR
"""A first guess of speaking time per character at rate 1 (engine/core/timing.py's prior)."""


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


@dataclass(frozen=True)
class Step:
    """What the loop asks of the next chunk before it is voiced."""

    index: int
    hold_s: float
    correction_s: float
    target_s: float
    """How long the chunk should take, from where the previous one ended as planned."""
    rate: float


class SlotLoop:
    """The loop's state for one line, one chunk at a time: `next_step` says how to voice the
    next chunk, `record` takes where it was heard to end. A caller that voices chunks
    asynchronously (the speech server) drives it directly; `stream_to_slot` drives it with
    plain callables."""

    def __init__(self, chunks: Sequence[str], slot_s: float, settings: LoopSettings = LoopSettings(),
                 model: RateModel | None = None) -> None:  # fmt: skip
        self.chunks, self.settings = list(chunks), settings
        self.model = model or RateModel(learn=settings.learn if settings.feedback else 0.0)
        self.ends = plan_ends(self.chunks, slot_s)
        total_chars = sum(len(c) for c in self.chunks)
        self._fixed = self.model.rate_for(total_chars, slot_s, settings.min_rate, settings.max_rate)
        self.position_s = 0.0
        """Where the next chunk starts, from the start of the line (holds included)."""
        self._k = 0

    @property
    def done(self) -> bool:
        return self._k >= len(self.chunks)

    def next_step(self) -> Step:
        k, s = self._k, self.settings
        prev_end = self.ends[k - 1] if k else 0.0
        if not s.feedback:
            return Step(k, 0.0, 0.0, self.ends[k] - prev_end, self._fixed)
        hold = min(s.max_hold_s, max(0.0, prev_end - self.position_s))
        fix = correction_s(self.position_s + hold - prev_end, s)
        target = self.ends[k] - prev_end - fix
        rate = self.model.rate_for(len(self.chunks[k]), target, s.min_rate, s.max_rate)
        return Step(k, hold, fix, target, rate)

    def retake_rate(self, step: Step, rate: float, took_s: float) -> float | None:
        """The rate to voice the chunk again at, when its take missed by more than the
        settings allow; None: keep it."""
        s = self.settings
        if not s.feedback or s.retry_s is None or abs(took_s - step.target_s) <= s.retry_s:
            return None
        return min(s.max_rate, max(s.min_rate, rate * took_s / max(1e-3, step.target_s)))

    def record(self, step: Step, rate: float, took_s: float, length_s: float | None = None) -> ChunkTiming:
        """The chunk voiced at `rate` was heard to end `took_s` after its start; the next
        one starts `length_s` after it (the audio as sent; default `took_s`)."""
        if self.settings.feedback:
            self.model.update(len(self.chunks[step.index]), rate, took_s)
        start = self.position_s + step.hold_s
        self.position_s = start + (took_s if length_s is None else length_s)
        self._k = step.index + 1
        text = self.chunks[step.index]
        return ChunkTiming(text, rate, step.correction_s, self.ends[step.index], start + took_s, step.hold_s)


def stream_to_slot(chunks: Sequence[str], slot_s: float, voice: Voice, measure: Measure,
                   settings: LoopSettings = LoopSettings(), model: RateModel | None = None,
                   sample_rate_hz: int = SAMPLE_RATE_HZ) -> Iterator[tuple[Mono, ChunkTiming]]:  # fmt: skip
    """Each chunk's audio (to be played back to back, cut at its spoken end) and its timing."""
    loop = SlotLoop(chunks, slot_s, settings, model)
    while not loop.done:
        step = loop.next_step()
        rate = step.rate
        audio = voice(chunks[step.index], rate)
        took = measure(audio)
        for _ in range(settings.retries):
            again = loop.retake_rate(step, rate, took)
            if again is None:
                break
            rate = again
            audio = voice(chunks[step.index], rate)
            took = measure(audio)
        timing = loop.record(step, rate, took)
        if step.hold_s > 0:
            audio = np.concatenate([np.zeros(round(step.hold_s * sample_rate_hz), np.float32), audio])
        yield audio, timing
