"""A line that must fit a time slot, streamed chunk by chunk (`slot_s` on a speech request,
a Troupe extension): each chunk is queued only once the one before it is voiced and heard,
at the rate the streaming fit loop (`engine.render.rhythm`, gain 0.3, clamp ±50 ms) asks
for. A chunk is measured where its last word ends: by the recogniser when the asr extra is
installed and free (in a worker thread, never on the engine thread), else by its own length;
what measured each chunk is reported (headers, or the SSE done event)."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import Request
from starlette.concurrency import run_in_threadpool

from engine.core.timing import SPEEDS
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.render.fitting import trim_tail
from engine.render.rhythm import ChunkTiming, LoopSettings, RateModel, SlotLoop, Step
from engine.scheduler import RequestClass
from engine.server.audio_out import StreamEncoder
from engine.server.errors import BadField
from engine.server.flow import unless_disconnected
from engine.server.speech import SpeechService
from engine.show.fit import PRIOR_RATE_WPM, at_rate
from engine.synthesis import ssml
from engine.synthesis.base import Mono
from engine.synthesis.text import split_chunks

SLOT_RANGE_S = (0.2, 600.0)
"""A slot shorter than a syllable or longer than the longest input could take is refused."""
ALLOWED_OVERRUN_S = 0.5
"""How far past its slot a line may end and still count as fitting (the render's own bound)."""
SLOT_HEADER = "X-Troupe-Slot"
SLOT_CHUNK_CHARS = 60
"""A slotted line streams in clauses of at most this many characters (a plain stream's
chunks are sentences): more chunks, more chances to correct the rate."""
Voiced = tuple[Mono, Step, float]
"""A chunk as voiced (trimmed at its end), the loop's step it answers and the rate it got."""


def check_slot(slot_s: float | None, text: str) -> None:
    """`BadField` (a 400 naming `slot_s`) for a slot this server cannot stream into."""
    if slot_s is None:
        return
    lo, hi = SLOT_RANGE_S
    if isinstance(slot_s, bool) or not lo <= slot_s <= hi:  # NB: NaN fails both comparisons
        raise BadField("slot_s", f"slot_s {slot_s} is out of range; expected {lo:g} to {hi:g} seconds")
    if ssml.looks_like_ssml(text):
        raise BadField("slot_s", "slot_s cannot be used with SSML input (its breaks and prosody set timing)")


class ChunkMeter:
    """Where a voiced chunk's last word ends (seconds from its start), and what said so."""

    def __init__(self, use_asr: bool = True) -> None:
        self._transcriber: Any = None
        self.unavailable = "" if use_asr else "asr off"
        """Why the recogniser is never used here (empty: it is, whenever it is free)."""
        if use_asr:
            from engine.asr import asr_available, shared_transcriber

            self.unavailable = asr_available() or ""
            if not self.unavailable:
                self._transcriber = shared_transcriber()
        self._warming: threading.Thread | None = None

    @property
    def mode(self) -> str:
        return f"length ({self.unavailable})" if self.unavailable else "asr"

    def measure(self, audio: Mono) -> tuple[float, str]:
        """Worker thread. The recogniser's last word end if it is loaded and free right now,
        else the chunk's length (a busy recogniser is never waited for: the next chunk is)."""
        length_s = len(audio) / SAMPLE_RATE_HZ
        if self._transcriber is None:
            return length_s, "length"
        if not self._transcriber.loaded:
            self._warm()
            return length_s, "length (asr loading)"
        heard = self._transcriber.try_transcribe(audio, SAMPLE_RATE_HZ)
        if heard is None:
            return length_s, "length (asr busy)"
        if not heard.words:
            return length_s, "length (nothing heard)"
        return min(length_s, heard.words[-1].end_s), "asr"

    def _warm(self) -> None:
        """Load the model on a side thread once, so that no chunk waits for the load."""
        if self._warming is None:
            self._warming = threading.Thread(target=self._transcriber.load, name="troupe-asr-warmup",
                                             daemon=True)  # fmt: skip
            self._warming.start()


class SpeedMemory:
    """How long each voice takes per character (at `PRIOR_RATE_WPM`), as the slotted lines
    corrected so far measured it: a line starts from its voice's last estimate, not from
    the fixed first guess. Bounded: the voices used longest ago are forgotten first."""

    def __init__(self, max_voices: int = 256) -> None:
        self.max_voices = max_voices
        self._s_per_char: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(voice: Voice) -> str:
        return f"{voice.backend}:{voice.voice_id}"

    def prior_s_per_char(self, voice: Voice) -> float:
        """The first guess for `voice` at its own rate."""
        with self._lock:
            base = self._s_per_char.get(self._key(voice), SPEEDS.s_per_char(voice.backend))
        return base * PRIOR_RATE_WPM / max(1, voice.rate_wpm)

    def learn(self, voice: Voice, s_per_char: float) -> None:
        """Keep the estimate a line ended with (`s_per_char` at the voice's own rate)."""
        key = self._key(voice)
        with self._lock:
            self._s_per_char[key] = s_per_char * voice.rate_wpm / PRIOR_RATE_WPM
            self._s_per_char.move_to_end(key)
            while len(self._s_per_char) > self.max_voices:
                self._s_per_char.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._s_per_char.clear()


@dataclass
class SlotState:
    """A service's slotted-line helpers (made on its first slotted request)."""

    meter: ChunkMeter
    speeds: SpeedMemory


def slot_state(service: SpeechService) -> SlotState:
    state: SlotState | None = getattr(service, "_slot_state", None)
    if state is None:
        state = SlotState(ChunkMeter(service.settings.slot_asr), SpeedMemory())
        service._slot_state = state  # type: ignore[attr-defined]
    return state


@dataclass
class SlotReport:
    """How a slotted line came out, chunk by chunk."""

    slot_s: float
    correction: bool
    timings: list[ChunkTiming] = field(default_factory=list)
    measured_by: list[str] = field(default_factory=list)

    @property
    def misfit_s(self) -> float:
        """Where the last word ended against the slot's end (positive: late)."""
        return (self.timings[-1].spoken_end_s if self.timings else 0.0) - self.slot_s

    def summary(self) -> dict[str, Any]:
        """For the SSE done event."""
        chunks = [
            {"rate": round(t.rate, 4), "correction_ms": round(t.correction_s * 1000, 1),
             "planned_end_s": round(t.planned_end_s, 3), "spoken_end_s": round(t.spoken_end_s, 3),
             "measured_by": how}
            for t, how in zip(self.timings, self.measured_by, strict=True)
        ]  # fmt: skip
        return {"slot_s": self.slot_s, "correction": self.correction,
                "misfit_ms": round(self.misfit_s * 1000, 1), "fits": self.misfit_s <= ALLOWED_OVERRUN_S,
                "chunks": chunks}  # fmt: skip

    def headers(self) -> dict[str, str]:
        """For a whole (not streamed) answer."""
        counts: dict[str, int] = {}
        for how in self.measured_by:
            counts[how] = counts.get(how, 0) + 1
        return {"X-Troupe-Slot-Misfit-Ms": f"{self.misfit_s * 1000:.1f}",
                "X-Troupe-Slot-Measured": ", ".join(f"{how}: {n}" for how, n in counts.items())}  # fmt: skip


class SlottedLine:
    """One slotted request: its chunks voiced one after another through the scheduler."""

    def __init__(self, service: SpeechService, role: str, voice: Voice, text: str, klass: RequestClass,
                 slot_s: float, correction: bool = True) -> None:  # fmt: skip
        self.service, self.role, self.voice, self.klass = service, role, voice, klass
        self.state = slot_state(service)
        self.meter = self.state.meter
        self.chunks = split_chunks(text.strip(), SLOT_CHUNK_CHARS) or [text.strip()]
        settings = LoopSettings(feedback=correction)
        prior = self.state.speeds.prior_s_per_char(voice)
        self.model = RateModel(prior, settings.learn if correction else 0.0)
        self.loop = SlotLoop(self.chunks, slot_s, settings, self.model)
        self.report = SlotReport(slot_s, correction)
        self._current: Future[Mono] | None = None

    def headers(self) -> dict[str, str]:
        return {SLOT_HEADER: f"slot_s={self.report.slot_s:g}; correction={int(self.report.correction)}; "
                f"measure={self.meter.mode}"}  # fmt: skip

    def cancel(self) -> None:
        """Withdraw the chunk in flight (the later ones were never queued)."""
        if self._current is not None:
            self._current.cancel()

    async def _voice_next(self, wait: Callable[[asyncio.Future[Any]], Any]) -> Voiced:
        step = self.loop.next_step()
        voice, rate = at_rate(self.voice, step.rate)
        self._current = self.service.submit_chunk(self.role, self.chunks[step.index], voice, self.klass,
                                                  step.index, len(self.chunks))  # fmt: skip
        audio: Mono = await wait(asyncio.wrap_future(self._current))
        self._current = None
        return trim_tail(audio, SAMPLE_RATE_HZ), step, rate

    async def _measure(self, audio: Mono, step: Step, rate: float) -> None:
        took_s, how = await run_in_threadpool(self.meter.measure, audio)
        self.report.timings.append(self.loop.record(step, rate, took_s, len(audio) / SAMPLE_RATE_HZ))
        self.report.measured_by.append(how)
        if self.report.correction:
            self.state.speeds.learn(self.voice, self.model.s_per_char)

    async def first(self, request: Request) -> Voiced:
        """The first chunk, before the answer starts (so a refusal is still a status code)."""
        try:
            return await self._voice_next(lambda w: unless_disconnected(request, w))
        except BaseException:
            self.cancel()
            raise

    async def whole(self, request: Request) -> Mono:
        """Every chunk, joined; a hang-up withdraws the one in flight (`ClientGone`)."""
        parts = []
        try:
            while not self.loop.done:
                audio, step, rate = await self._voice_next(lambda w: unless_disconnected(request, w))
                parts.append(audio)
                await self._measure(audio, step, rate)
        finally:
            self.cancel()
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    async def encoded(self, first: Voiced, encoder: StreamEncoder,
                      wrap: Callable[[bytes], bytes] = bytes) -> AsyncIterator[bytes]:  # fmt: skip
        """The encoded stream: each chunk sent as soon as it is voiced, then measured while
        the client plays it, then the next one queued at its corrected rate. A client that
        leaves closes this generator: the chunk in flight is withdrawn, no other is queued."""
        try:
            pending: Voiced | None = first
            while pending is not None:
                audio, step, rate = pending
                piece = await run_in_threadpool(encoder.feed, audio)
                if piece:
                    yield wrap(piece)
                await self._measure(audio, step, rate)
                pending = None if self.loop.done else await self._voice_next(lambda w: w)
            tail = await run_in_threadpool(encoder.finish)
            if tail:
                yield wrap(tail)
        finally:
            self.cancel()
