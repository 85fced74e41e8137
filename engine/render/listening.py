"""After a line is voiced, in the voicing threads (never on the mixing path): fit it to its
slot, listen to it (the line check and its word times), and, if it is marked "check", voice
it once more and keep the better take."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from engine.asr import DRIFT_BOUND_S, LineCheck, LineChecker, word_drift_s
from engine.cast import Cast
from engine.core.limits import clamp
from engine.core.types import Cue
from engine.render.fitting import Fit, FitOptions, Slot, fit_line, plan_slots
from engine.render.result import LineNotes
from engine.synthesis.base import Mono, Synthesizer, SynthRequest, Take, WordTime, retimed, synthesize_takes
from engine.synthesis.delivery import delivered_take, delivered_voice

log = logging.getLogger("troupe.render")
Heard = tuple[Mono, Fit | None, LineCheck | None, tuple[WordTime, ...] | None]
"""A take as kept: its audio, how it was fitted, what was heard, its predicted word times."""

RETAKE_RATE = 0.9
"""A retake of a line without a slot is voiced this much slower (clearer; and a deterministic
backend such as espeak-ng would otherwise say it exactly the same way)."""


@dataclass(frozen=True)
class Listening:
    """What a render does with each voiced line beyond mixing it."""

    check: LineChecker | None = None
    """Transcribe and score each line (the asr extra); None: no line check, no word times."""
    fit: FitOptions | None = None
    """Fit lines with a time slot (SRT/VTT/ASS imports) into it; None: place them as voiced."""
    retake: bool = False
    """Voice a line marked "check" once more and keep the take with the lower WER."""


class LineFinisher:
    """`Listening` for one render: the slots planned from the script, the synthesizer for
    retakes and rate changes."""

    def __init__(self, listening: Listening, cues: tuple[Cue, ...], cast: Cast, synth: Synthesizer) -> None:
        self.listening, self.cast, self.synth = listening, cast, synth
        self.slots: dict[int, Slot] = plan_slots(cues, listening.fit) if listening.fit is not None else {}

    def _voice(self, cue: Cue, rate: float) -> Take:
        voice = delivered_voice(self.cast[cue.role], cue.hints)
        voice = dataclasses.replace(voice, rate_wpm=int(clamp("rate_wpm", round(voice.rate_wpm * rate))))
        take = synthesize_takes(self.synth, [SynthRequest(cue.text, voice, cue.index)])[0]
        return delivered_take(take, cue.hints, self.synth.sample_rate_hz)

    def _backend(self, cue: Cue) -> str:
        fell_back = getattr(self.synth, "fallbacks", {}).get(cue.index)
        return "espeak" if fell_back else self.cast[cue.role].backend

    def _take(self, cue: Cue, take: Take) -> Heard:
        audio, fit, words = take.audio, None, take.words
        slot = self.slots.get(cue.index)
        if slot is not None and self.listening.fit is not None:
            takes: dict[float, Take] = {}

            def revoice(rate: float) -> Mono:
                takes[rate] = self._voice(cue, rate)
                return takes[rate].audio

            audio, fit = fit_line(audio, slot, revoice, self.synth.sample_rate_hz, self.listening.fit)
            words = takes.get(fit.rate, take).words  # the take that was kept (1.0: the first)
            if abs(fit.stretch - 1.0) >= 1e-3:
                words = retimed(words, scale=1.0 / fit.stretch)
        words = retimed(words, end_s=len(audio) / self.synth.sample_rate_hz)  # a trimmed tail
        check = self.listening.check
        heard = check(audio, cue.text, self._backend(cue)) if check is not None else None
        return audio, fit, heard, words

    def __call__(self, cue: Cue, take: Take) -> tuple[Mono, LineNotes]:
        audio, fit, heard, words = self._take(cue, take)
        retaken = False
        if heard is not None and heard.flagged and self.listening.retake:
            rate = 1.0 if cue.index in self.slots else RETAKE_RATE
            audio2, fit2, heard2, words2 = self._take(cue, self._voice(cue, rate))
            retaken = True
            if heard2 is not None and heard2.wer < heard.wer:
                audio, fit, heard, words = audio2, fit2, heard2, words2
        notes = notes_for(fit, heard, retaken, words)
        if notes.words_disagree:
            log.warning("cue %d: predicted word times are %.2f s from what was heard (bound %.2f s)",
                        cue.index, notes.word_drift_s or 0.0, DRIFT_BOUND_S)  # fmt: skip
        return audio, notes


def notes_for(fit: Fit | None, heard: LineCheck | None, retaken: bool = False,
              predicted: tuple[WordTime, ...] | None = None) -> LineNotes:  # fmt: skip
    """A line's notes; its word times are the backend's own (`predicted`) where it has them,
    the recogniser verifying them, else what the recogniser heard."""
    notes = LineNotes(retaken=retaken)
    if heard is not None:
        words = tuple((w.text, w.start_s, w.end_s) for w in heard.words)
        notes = dataclasses.replace(notes, wer=heard.wer, heard=heard.heard, check=heard.flagged, words=words,
                                    words_from="asr" if words else "")  # fmt: skip
    if predicted:
        drift = word_drift_s(predicted, heard.words) if heard is not None else None
        notes = dataclasses.replace(notes, words=predicted, words_from="model", word_drift_s=drift,
                                    words_disagree=drift is not None and drift > DRIFT_BOUND_S)  # fmt: skip
    if fit is not None:
        notes = dataclasses.replace(notes, fit=fit.strategy, misfit_before_s=fit.before_s,
                                    misfit_after_s=fit.after_s, rate=fit.rate,
                                    stretch=fit.stretch)  # fmt: skip
    return notes
