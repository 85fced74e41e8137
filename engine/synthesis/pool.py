"""A process pool of espeak-ng workers: one library instance per process, so calls run in parallel."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak import espeak_voices, synthesize_text
from engine.synthesis.lexicon import prepare
from engine.synthesis.text import split_chunks

WORKER_NICENESS = 5
"""Synthesis is soft real time, the audio stream is hard: workers yield the CPU to it."""


def _warm(niceness: int = WORKER_NICENESS) -> None:
    with contextlib.suppress(OSError):  # not permitted on some systems; the pool still works
        os.nice(niceness)
    synthesize_text("a", Voice())


class EspeakPool:
    """espeak-ng across `processes` worker processes (default: one per core)."""

    name = "espeak"
    sample_rate_hz = SAMPLE_RATE_HZ

    def __init__(self, processes: int | None = None, niceness: int = WORKER_NICENESS) -> None:
        """`niceness` 0 for an offline render, which has no audio stream to yield to."""
        self.processes = max(1, processes or os.cpu_count() or 1)
        self.max_batch = self.processes
        self.niceness = niceness
        # spawn, not fork: the parent may hold Qt, PortAudio or espeak state that must not be cloned.
        self._context = multiprocessing.get_context("spawn")
        self._executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            self.processes, mp_context=self._context, initializer=_warm, initargs=(self.niceness,)
        )
        return executor

    def submit(self, text: str, voice: Voice) -> Future[Mono]:
        """Start one synthesis; the future raises `SynthesisError` on failure. The lexicon is
        applied here, where the open project's entries are known (workers know only the user's)."""
        text = prepare(text)
        try:
            return self._executor.submit(synthesize_text, text, voice, self.sample_rate_hz)
        except (BrokenProcessPool, RuntimeError):
            self._executor = self._start()  # a crashed worker must not end the show
            return self._executor.submit(synthesize_text, text, voice, self.sample_rate_hz)

    @staticmethod
    def result(future: Future[Mono], timeout_s: float | None = None) -> Mono:
        try:
            return future.result(timeout=timeout_s)
        except SynthesisError:
            raise
        except BrokenProcessPool as exc:
            raise SynthesisError("an espeak-ng worker process died") from exc
        except TimeoutError as exc:
            raise SynthesisError(f"espeak-ng took longer than {timeout_s} s") from exc

    def voices(self) -> list[VoiceInfo]:
        return espeak_voices()

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        futures = [self.submit(r.text, r.voice) for r in batch]
        return [self.result(f) for f in futures]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        chunks = split_chunks(request.text)
        if not chunks:
            raise SynthesisError(f"nothing to say in {request.text!r}")
        # All chunks start at once on the pool; they are yielded in order as each is done.
        futures = [self.submit(c, request.voice) for c in chunks]
        for f in futures:
            yield self.result(f)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
