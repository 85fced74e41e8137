"""Real-time playback of a script: voice lines ahead of the playhead, place them on the
timeline as they arrive, and keep the MixRing filled a little ahead of the audio callback.

The show's clock is the ring itself: show frame = ring write position - origin, so the
playhead advances exactly as fast as the callback consumes audio, and tests can drive a
show by moving the read position by hand.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Cue, Script
from engine.mixer import Clip, MixControls, Mixer, Pacing
from engine.synthesis.base import Mono, Synthesizer, SynthRequest

BLOCK_FRAMES = 1024


@runtime_checkable
class _Submitter(Protocol):
    def submit(self, text: str, voice: object) -> Future[Mono]: ...


class _ThreadSubmitter:
    """Runs a plain `Synthesizer` on one background thread (for backends without a pool)."""

    def __init__(self, synth: Synthesizer) -> None:
        self._synth = synth
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="troupe-synth")

    def submit(self, text: str, voice: object) -> Future[Mono]:
        request = SynthRequest(text, voice)  # type: ignore[arg-type]
        return self._executor.submit(lambda: self._synth.synthesize([request])[0])

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


@dataclass
class ShowStats:
    """What happened during a show (read by the CLI and the GUI)."""

    placed: int = 0
    late: int = 0
    """Lines that were not ready at their planned start and went in late."""
    failed: dict[int, str] = field(default_factory=dict)
    late_ms: list[float] = field(default_factory=list)


class Show:
    """One script playing into one ring."""

    def __init__(
        self,
        script: Script,
        cast: Cast,
        synth: Synthesizer,
        ring: MixRing,
        pacing: Pacing = Pacing(),
        render_ahead_ms: float = 200.0,
        prefetch: int = 6,
    ) -> None:
        self.script, self.cast, self.ring, self.pacing = script, cast, ring, pacing
        self.mixer = Mixer(MixControls.from_voices({r: cast[r] for r in script.roles}))
        self.target_fill = min(ring.capacity, round(render_ahead_ms * SAMPLE_RATE_HZ / 1000))
        self.prefetch = prefetch
        self.stats = ShowStats()
        self.starts_s: dict[int, float] = {}
        self._submitter: _Submitter = synth if isinstance(synth, _Submitter) else _ThreadSubmitter(synth)
        self._futures: dict[int, Future[Mono]] = {}
        self._next = 0
        self._cursor_s = pacing.lead_in_s
        self._prev: Cue | None = None
        self.origin = ring.write_pos
        self._block = np.zeros((BLOCK_FRAMES, ring.channels), np.float32)

    @property
    def write_frame(self) -> int:
        return self.ring.write_pos - self.origin

    @property
    def playhead_s(self) -> float:
        return max(0, self.ring.read_pos - self.origin) / SAMPLE_RATE_HZ

    @property
    def finished(self) -> bool:
        return self._next >= len(self.script.cues) and self.write_frame >= self.mixer.end_frame

    def _prefetch(self) -> None:
        cues = self.script.cues
        for cue in cues[self._next : self._next + self.prefetch]:
            if cue.index not in self._futures:
                self._futures[cue.index] = self._submitter.submit(cue.text, self.cast[cue.role])

    def _planned_start_s(self, cue: Cue) -> float:
        prev = self._prev
        if cue.start_s is not None:
            return cue.start_s
        if cue.overlaps_previous and prev is not None:
            return self.starts_s[prev.index]
        if prev is None:
            return self._cursor_s
        gap = self.pacing.scene_gap_s if cue.scene != prev.scene else self.pacing.gap_s
        return self._cursor_s + gap

    def _place_ready(self) -> None:
        cues = self.script.cues
        while self._next < len(cues):
            cue = cues[self._next]
            future = self._futures.get(cue.index)
            if future is None or not future.done():
                return
            del self._futures[cue.index]
            try:
                audio = future.result()
            except (SynthesisError, OSError, RuntimeError) as exc:
                self.stats.failed[cue.index] = str(exc)  # the show goes on without it
                audio = np.zeros(0, np.float32)
            planned = self._planned_start_s(cue)
            earliest = self.write_frame / SAMPLE_RATE_HZ
            start = max(planned, earliest)
            if start > planned + 1e-3:
                self.stats.late += 1
                self.stats.late_ms.append((start - planned) * 1000)
            self.starts_s[cue.index] = start
            if audio.size:
                self.mixer.add(Clip(round(start * SAMPLE_RATE_HZ), cue.role, audio, cue.index))
            self._cursor_s = max(self._cursor_s, start + len(audio) / SAMPLE_RATE_HZ)
            self._prev = cue
            self._next += 1
            self.stats.placed += 1

    def _render_ahead(self) -> None:
        while True:
            want = min(self.target_fill - self.ring.fill_frames, BLOCK_FRAMES)
            if want <= 0:
                return
            block = self._block[:want]
            self.mixer.render(self.write_frame, block)
            self.ring.write(block)

    def tick(self) -> None:
        """One engine step: start synthesis ahead, place finished lines, fill the ring."""
        self._prefetch()
        self._place_ready()
        self._render_ahead()

    def set_controls(self, controls: MixControls) -> None:
        self.mixer.controls = controls  # NB: single reference store; render reads it once

    def run(self, stop: threading.Event, poll_s: float = 0.005) -> None:
        """The engine thread's loop, until the show ends or `stop` is set."""
        while not stop.is_set() and not self.finished:
            self.tick()
            stop.wait(poll_s)

    def close(self) -> None:
        for f in self._futures.values():
            f.cancel()
        if isinstance(self._submitter, _ThreadSubmitter):
            self._submitter.close()
