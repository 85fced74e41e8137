"""Fit-to-slot dubbing: a line imported with a time slot (SRT, WebVTT, ASS) must be heard
inside it. Per line, in order of naturalness: voice it again at a computed faster rate, then
time-stretch the audio within a bound (Rubber Band through pedalboard, pitch and formants
kept), then let it run a bounded time into the gap before the next line. Words are never
cut: a line that still does not fit is kept whole and reported."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.core.types import Cue
from engine.synthesis.base import Mono
from engine.synthesis.effects import time_stretch

SILENCE = 10 ** (-50 / 20)
"""Below -50 dBFS at the end of a clip is trailing silence, free to drop (no word is cut)."""
KEEP_TAIL_S = 0.03


@dataclass(frozen=True)
class FitOptions:
    """How far a line may be pushed to fit its slot."""

    max_rate: float = 1.3
    """Voice it again at most this much faster (1.3: 30% faster)."""
    max_stretch: float = 1.2
    """Then time-stretch at most this much shorter (1.2: to 1/1.2 of its length)."""
    max_overrun_s: float = 0.5
    """Then run at most this far past the slot's end, never into the next line's slot."""
    min_gap_s: float = 0.05
    """Silence always kept before the next line's slot."""
    margin: float = 1.03
    """Aim this much shorter than the slot when choosing a rate: a rate is not exact."""


@dataclass(frozen=True)
class Slot:
    """Where a line must be heard on the show timeline."""

    start_s: float
    end_s: float
    overrun_s: float
    """How far past `end_s` it may run (the gap before the next slot, within the options)."""

    @property
    def length_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Fit:
    """How one line was made to fit its slot."""

    strategy: str
    """'fits' (as voiced), 'rate' (voiced faster), 'stretch', 'overrun' or 'over' (too long even so)."""
    before_s: float
    """The line's end past its slot's end as first voiced (negative: it ended early)."""
    after_s: float
    rate: float = 1.0
    stretch: float = 1.0


def plan_slots(cues: Sequence[Cue], opts: FitOptions) -> dict[int, Slot]:
    """Cue index -> slot, for every cue with a start and an end."""
    timed = sorted((c for c in cues if c.start_s is not None and c.end_s is not None),
                   key=lambda c: (c.start_s, c.index))  # fmt: skip
    slots: dict[int, Slot] = {}
    for k, c in enumerate(timed):
        assert c.start_s is not None and c.end_s is not None
        later = [n.start_s for n in timed[k + 1 :] if n.start_s is not None and n.start_s > c.start_s]
        room = (later[0] - opts.min_gap_s - c.end_s) if later else opts.max_overrun_s
        slots[c.index] = Slot(c.start_s, c.end_s, max(0.0, min(opts.max_overrun_s, room)))
    return slots


def trim_tail(audio: Mono, sample_rate_hz: int) -> Mono:
    """`audio` without its trailing silence (a few ms kept so the last word decays)."""
    loud = np.flatnonzero(np.abs(audio) > SILENCE)
    if loud.size == 0:
        return audio[:0]
    end = min(len(audio), int(loud[-1]) + 1 + int(KEEP_TAIL_S * sample_rate_hz))
    return audio[:end]


Revoice = Callable[[float], Mono]
"""Voice the line again this many times faster (audio at the engine rate)."""


def _faster(audio: Mono, slot: Slot, revoice: Revoice, sample_rate_hz: int,
            opts: FitOptions) -> tuple[Mono, float]:  # fmt: skip
    """The shortest take at a rate within bounds: a first guess from the length, then one
    correction from what that guess gave (pauses do not shrink with the rate)."""
    best, best_rate = audio, 1.0
    rate = min(opts.max_rate, len(audio) / sample_rate_hz / slot.length_s * opts.margin)
    for _ in range(2):
        take = trim_tail(revoice(rate), sample_rate_hz)
        if len(take) < len(best):
            best, best_rate = take, rate
        got = len(take) / sample_rate_hz
        if got <= slot.length_s or rate >= opts.max_rate:
            break
        rate = min(opts.max_rate, rate * got / slot.length_s * opts.margin)
    return best, best_rate


def fit_line(audio: Mono, slot: Slot, revoice: Revoice, sample_rate_hz: int,
             opts: FitOptions = FitOptions()) -> tuple[Mono, Fit]:  # fmt: skip
    """The take of the line that fits `slot`, by the most natural means that works."""
    audio = trim_tail(audio, sample_rate_hz)
    d0 = len(audio) / sample_rate_hz
    before = d0 - slot.length_s
    if before <= 0 or slot.length_s <= 0:
        return audio, Fit("fits", before, before)
    audio, rate = _faster(audio, slot, revoice, sample_rate_hz, opts)
    d1 = len(audio) / sample_rate_hz
    if d1 <= slot.length_s:
        return audio, Fit("rate", before, d1 - slot.length_s, rate)
    stretch = min(opts.max_stretch, d1 / slot.length_s * 1.005)
    audio = time_stretch(audio, sample_rate_hz, stretch)
    d2 = len(audio) / sample_rate_hz
    after = d2 - slot.length_s
    if after <= 1e-3:
        strategy = "stretch"
    elif after <= slot.overrun_s:
        strategy = "overrun"
    else:
        strategy = "over"
    return audio, Fit(strategy, before, after, rate, stretch)
