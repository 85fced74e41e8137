"""Fit-to-slot in the live show: a timed line (SRT, WebVTT, ASS) is voiced at the rate that
should make it end inside its slot, from what each voice was heard to take on the lines
before it; a take that still runs past its slot and its allowed overrun is voiced once more
at the corrected rate while its slot is still ahead of the writer. The render's third means,
time-stretching, is not used live: Rubber Band costs the engine thread tens of milliseconds
a line. Words are never cut: a line that cannot fit is heard whole and reported 'over'."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from engine.core.limits import clamp
from engine.core.timing import RATE_WPM, SPEEDS
from engine.core.types import SAMPLE_RATE_HZ, Cue, Voice
from engine.render.fitting import Fit, FitOptions, Slot, plan_slots, trim_tail
from engine.render.rhythm import RateModel

PRIOR_RATE_WPM = RATE_WPM
"""The rate at which the speeds hold."""
LEARN = 0.5
"""How far each heard take moves a voice's speed estimate towards what it measured."""


@dataclass(frozen=True)
class Plan:
    """The take of one timed line being voiced now."""

    rate: float
    """Times the role's own rate."""
    revoice: bool = False
    """A second take, after the first ran past its slot."""


def _key(voice: Voice) -> str:
    return f"{voice.backend}:{voice.voice_id}"


def at_rate(voice: Voice, rate: float) -> tuple[Voice, float]:
    """`voice` `rate` times faster, within the voice's rate range, and the rate that gives
    (rounded down to a whole wpm: never faster than the fitting's bound)."""
    wpm = int(clamp("rate_wpm", math.floor(voice.rate_wpm * rate + 1e-9)))
    return replace(voice, rate_wpm=wpm), wpm / max(1, voice.rate_wpm)


class LiveFit:
    """The show's slots, what each voice was heard to take, and how each timed line fitted."""

    def __init__(self, cues: Sequence[Cue], opts: FitOptions = FitOptions()) -> None:
        self.opts = opts
        self.slots: dict[int, Slot] = plan_slots(cues, opts)
        self._models: dict[str, RateModel] = {}
        self._plans: dict[int, Plan] = {}
        self.fits: dict[int, Fit] = {}
        """Cue index -> how its latest heard take fitted."""

    def _model(self, voice: Voice) -> RateModel:
        """Seconds per character at the voice's own rate, learnt from its takes."""
        model = self._models.get(_key(voice))
        if model is None:
            prior = SPEEDS.s_per_char(voice.backend) * PRIOR_RATE_WPM / max(1, voice.rate_wpm)
            model = self._models[_key(voice)] = RateModel(prior, LEARN)
        return model

    def voice_for(self, cue: Cue, voice: Voice) -> Voice:
        """The voice to voice `cue` with now: `voice` itself for an untimed line, else at the
        rate planned for its take (the first take's from the voice's learnt speed)."""
        slot = self.slots.get(cue.index)
        if slot is None:
            return voice
        plan = self._plans.get(cue.index)
        if plan is None:
            target = slot.length_s / self.opts.margin
            rate = self._model(voice).rate_for(len(cue.text), target, 1.0, self.opts.max_rate)
            plan = self._plans[cue.index] = Plan(rate)
        faster, rate = at_rate(voice, plan.rate)
        self._plans[cue.index] = replace(plan, rate=rate)
        return faster

    def heard(self, cue: Cue, voice: Voice, chunks: Sequence[np.ndarray]) -> bool:
        """Take a voiced take of `cue` (its chunks, at `voice`, the role's own voice): learn
        the voice's speed, record the fit; True when it should be voiced again at a
        corrected rate (once: a second take is kept whatever it gives)."""
        slot, plan = self.slots.get(cue.index), self._plans.get(cue.index)
        if slot is None or plan is None or not chunks:
            return False
        tail = trim_tail(np.asarray(chunks[-1]), SAMPLE_RATE_HZ)
        spoken_s = (sum(len(c) for c in chunks[:-1]) + len(tail)) / SAMPLE_RATE_HZ
        model = self._model(voice)
        model.update(len(cue.text), plan.rate, spoken_s)
        first = self.fits.get(cue.index)
        before = first.before_s if plan.revoice and first else spoken_s * plan.rate - slot.length_s
        after = spoken_s - slot.length_s
        if after <= 1e-3:
            strategy = "fits" if plan.rate <= 1.0 + 1e-3 else "rate"
        elif after <= slot.overrun_s:
            strategy = "overrun"
        else:
            strategy = "over"
        self.fits[cue.index] = Fit(strategy, before, after, plan.rate)
        if plan.revoice or after <= 1e-3 or plan.rate >= self.opts.max_rate - 1e-3:
            return False
        # from this take itself, not the smoothed estimate: it is what this line takes
        rate = min(self.opts.max_rate, plan.rate * spoken_s / slot.length_s * self.opts.margin)
        if rate <= plan.rate + 1e-3:
            return False
        self._plans[cue.index] = Plan(rate, revoice=True)
        return True

    def forget(self, cue_index: int) -> None:
        """The line's text or voice changed: its next take is planned afresh."""
        self._plans.pop(cue_index, None)
        self.fits.pop(cue_index, None)

    def misfits_ms(self) -> tuple[list[float], list[float]]:
        """Every fitted line's end past its slot (ms): at the role's own rate, as heard."""
        fits = list(self.fits.values())
        return [f.before_s * 1000 for f in fits], [f.after_s * 1000 for f in fits]
