"""Voicing ahead: batches of lines synthesize in the background while earlier lines are mixed."""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from engine.cast import Cast
from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Cue
from engine.mixer.levelling import speech_level_db
from engine.render.result import LineNotes, RenderCancelled
from engine.synthesis.base import Mono, Synthesizer, Take, at_rate, synthesize_takes
from engine.synthesis.delivery import delivered_request, delivered_take

if TYPE_CHECKING:
    from engine.render.prevoice import BackendPasses

BATCHES_AHEAD = 3
"""Batches in flight: enough to keep every worker busy, few enough that memory stays flat."""

Voiced = tuple[Cue, Mono | None, str | None, LineNotes]
"""A cue, its audio (None if it failed), the error, and what listening to it found."""

Finisher = Callable[[Cue, Take], tuple[Mono, LineNotes]]
"""Applied to each voiced line in the voicing threads (fit to slot, line check)."""


def _voice_batch(synth: Synthesizer, cues: Sequence[Cue], cast: Cast, finish: Finisher | None = None,
                 rate_hz: int = SAMPLE_RATE_HZ, measure: bool = True) -> list[Voiced]:  # fmt: skip
    """One batch, each line through `finish` (at the synthesizer's rate), then at `rate_hz`;
    a line that fails fails alone. Without `finish`, a line keeps its backend's word times."""
    out: list[Voiced] = []
    for c, take, e, level in _voice_lines(synth, cues, cast, measure):
        a = take.audio if take is not None else None
        notes = LineNotes(words=take.words, words_from="model") if take and take.words else LineNotes()
        if take is not None and finish is not None:
            try:
                a, notes = finish(c, take)
            except SynthesisError as exc:  # a retake or rate change failed: the first take stands
                notes = LineNotes(heard=f"not checked: {exc}")
        notes = dataclasses.replace(notes, speech_db=level)
        out.append((c, a if a is None else at_rate(a, synth.sample_rate_hz, rate_hz), e, notes))
    return out


def _voice_lines(
    synth: Synthesizer, cues: Sequence[Cue], cast: Cast, measure: bool = True
) -> list[tuple[Cue, Take | None, str | None, float | None]]:
    """One batch, each take delivered, with its speech level as voiced (before its delivery's
    gain and filter); if the batch fails, each line is retried alone so a bad line fails alone."""
    requests = [delivered_request(c, cast[c.role]) for c in cues]
    rate = synth.sample_rate_hz

    def level(t: Take) -> float | None:
        return speech_level_db(t.audio, rate) if measure else None

    try:
        voiced = synthesize_takes(synth, requests)
        return [
            (c, delivered_take(t, c.hints, rate), None, level(t)) for c, t in zip(cues, voiced, strict=True)
        ]
    except SynthesisError:
        pass
    out: list[tuple[Cue, Take | None, str | None, float | None]] = []
    for c, r in zip(cues, requests, strict=True):
        try:
            t = synthesize_takes(synth, [r])[0]
            out.append((c, delivered_take(t, c.hints, rate), None, level(t)))
        except SynthesisError as exc:
            out.append((c, None, str(exc), None))
    return out


def batch_size(synth: Synthesizer) -> int:
    return max(1, synth.max_batch) * 8


def voice_in_order(
    cues: Sequence[Cue],
    cast: Cast,
    synth: Synthesizer,
    cancel: threading.Event | None = None,
    ahead: int = BATCHES_AHEAD,
    finish: Finisher | None = None,
    rate_hz: int = SAMPLE_RATE_HZ,
    measure: bool = True,
    passes: BackendPasses | None = None,
) -> Iterator[Voiced]:
    """Every cue with its audio at `rate_hz`, in script order, at most `ahead` batches voiced
    early; with `measure`, each line's speech level in its notes (for levelling). With
    `passes`, each of its stretches is voiced backend by backend first (one model in memory
    at a time) and then taken from the cache in order."""
    for stretch in [cues] if passes is None else passes.stretches(cues):
        yield from _in_order(stretch, cast, synth, cancel, ahead, finish, rate_hz, measure)


def _in_order(cues: Sequence[Cue], cast: Cast, synth: Synthesizer, cancel: threading.Event | None, ahead: int,
              finish: Finisher | None, rate_hz: int, measure: bool) -> Iterator[Voiced]:  # fmt: skip
    step = batch_size(synth)
    starts = iter(range(0, len(cues), step))
    pending: deque[Future[list[Voiced]]] = deque()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="troupe-voice") as pool:
        try:
            for _ in range(ahead):
                k = next(starts, None)
                if k is not None:
                    pending.append(
                        pool.submit(_voice_batch, synth, cues[k : k + step], cast, finish, rate_hz, measure)
                    )
            while pending:
                if cancel is not None and cancel.is_set():
                    raise RenderCancelled("render cancelled")
                done = pending.popleft().result()
                k = next(starts, None)
                if k is not None:
                    pending.append(
                        pool.submit(_voice_batch, synth, cues[k : k + step], cast, finish, rate_hz, measure)
                    )
                yield from done
        finally:
            for f in pending:
                f.cancel()
