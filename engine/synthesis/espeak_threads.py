"""espeak-ng on threads of this process, for the offline render: each thread has a private
library instance (see `EspeakLib.private`), so lines voice in parallel without worker
processes, their start-up, or moving the audio back through pipes. The live show keeps the
process pool, where a crash costs one worker rather than the show."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak import espeak_voices, synthesize_text
from engine.synthesis.espeak_lib import EspeakLib
from engine.synthesis.text import split_chunks

log = logging.getLogger("troupe.synthesis")


def _instances(n: int) -> list[EspeakLib]:
    """`n` instances that run side by side (fewer where private copies cannot be loaded)."""
    libs: list[EspeakLib] = []
    for _ in range(n):
        try:
            libs.append(EspeakLib.private())
        except SynthesisError as exc:
            log.warning("espeak-ng: %s; voicing on %d thread(s)", exc, max(1, len(libs)))
            break
    return libs or [EspeakLib.instance()]


class EspeakThreads:
    """espeak-ng over `threads` private library instances in this process."""

    name = "espeak"
    sample_rate_hz = SAMPLE_RATE_HZ

    def __init__(self, threads: int) -> None:
        self.libs = _instances(max(1, threads))
        self.max_batch = len(self.libs)
        self._free: queue.SimpleQueue[EspeakLib] = queue.SimpleQueue()
        for lib in self.libs:
            self._free.put(lib)
        self._pool = ThreadPoolExecutor(len(self.libs), thread_name_prefix="troupe-espeak")

    def _voice(self, text: str, request: SynthRequest) -> Mono:
        lib = self._free.get()  # NB: a free instance, never one in use on another thread
        try:
            return synthesize_text(text, request.voice, self.sample_rate_hz, lib)
        finally:
            self._free.put(lib)

    def voices(self) -> list[VoiceInfo]:
        return espeak_voices()

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        futures = [self._pool.submit(self._voice, r.text, r) for r in batch]
        return [f.result() for f in futures]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        chunks = split_chunks(request.text)
        if not chunks:
            raise SynthesisError(f"nothing to say in {request.text!r}")
        futures = [self._pool.submit(self._voice, c, request) for c in chunks]
        for f in futures:
            yield f.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
