"""A cluster worker: the ordinary synthesizers of one machine (or CPU group), as a Ray actor.

The class is plain Python (Ray wraps it in `engine.cluster.connect`), so it also runs and
tests without Ray. Lines arrive with the head's line ids and go back with them; the head
decides what a duplicate is. Calls run on a few actor threads so a health check is answered
while a batch is voicing; the synthesizers themselves take one batch at a time.

A worker voices each line with the backend the head cast it to (espeak-ng, Kokoro and the
voice library, Piper), at that backend's own rate, and never stands in: a line its backend
cannot voice fails here, and the head's router stands in for it and says so, exactly as a
render on one machine does.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

from engine.core.errors import SynthesisError
from engine.core.types import Voice
from engine.synthesis.base import Mono, Synthesizer, SynthRequest, VoiceInfo, by_backend
from engine.synthesis.build import NATURAL

WARM_TEXT = "Ready."
"""What a worker says to load a role's voice before the role is switched to it."""


def local_synthesizers(processes: int = 1, neural: bool = False) -> dict[str, Synthesizer]:
    """This machine's synthesizers: espeak-ng (a pool of `processes`), and Kokoro (with the
    voice library) and Piper when `neural` and they are installed here, their takes kept in
    this machine's take cache (shared by the workers of a node, safe under several processes)."""
    from engine.synthesis.build import SynthSpec, build_synthesizers

    return build_synthesizers(SynthSpec(processes, offline=True, natural=NATURAL if neural else None))


class SynthWorker:
    """Voices batches for the head; reports what it holds and how busy it is."""

    def __init__(
        self,
        worker_id: str,
        processes: int = 1,
        neural: bool = False,
        simulated: dict[str, float] | None = None,
    ) -> None:
        """`simulated`: voice with `SimulatedSynthesizer(**simulated)` instead (benchmarks, tests)."""
        self.worker_id = worker_id
        self.processes = max(1, processes)
        if simulated is not None:
            from engine.cluster.simulated import SimulatedSynthesizer

            sim = SimulatedSynthesizer(
                float(simulated.get("base_s", 0.0)),
                float(simulated.get("per_line_s", 0.0)),
                int(simulated.get("max_batch", 8)),
            )
            # the simulated model stands for every backend (what the cost curve measures)
            self.synths: dict[str, Synthesizer] = {name: sim for name in ("espeak", *NATURAL)}
        else:
            self.synths = local_synthesizers(self.processes, neural)
        self._lock = threading.Lock()
        """One batch at a time on the synthesizers (a pool parallelises inside a batch)."""
        self._voices_loaded: set[Voice] = set()
        self._waiting = 0
        self._busy_s = 0.0
        self._t0 = time.monotonic()
        self.batches = 0

    def info(self) -> dict[str, Any]:
        """Who this worker is: id, process, machine, capacity, backends."""
        return {
            "worker_id": self.worker_id,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "node": _node_id(),
            "capacity": float(self.processes),
            "backends": {name: int(s.sample_rate_hz) for name, s in sorted(self.synths.items())},
        }

    def ping(self) -> float:
        """The heartbeat: answered between batches and while one is voicing."""
        return time.time()

    def voices(self) -> list[VoiceInfo]:
        return [v for s in self.synths.values() for v in s.voices()]

    def load(self) -> dict[str, float]:
        """Batches waiting here, the busy fraction since start, voices loaded."""
        elapsed = max(1e-9, time.monotonic() - self._t0)
        return {
            "waiting": float(self._waiting),
            "busy": min(1.0, self._busy_s / elapsed),
            "voices_loaded": float(len(self._voices_loaded)),
            "batches": float(self.batches),
        }

    def synthesize(self, items: Sequence[tuple[int, SynthRequest]]) -> list[tuple[int, Mono]]:
        """Voice `items` (line id, request), each at its backend's rate; the audio comes back
        with each line id. `SynthesisError` if a backend is not here (or fails): the head's
        router stands in for those lines and reports them."""
        self._waiting += 1
        try:
            with self._lock:
                t = time.monotonic()
                audio = by_backend([r for _, r in items], self._voice)
                self._busy_s += time.monotonic() - t
                self.batches += 1
                self._voices_loaded.update(r.voice for _, r in items)
        finally:
            self._waiting -= 1
        return [(line_id, a) for (line_id, _), a in zip(items, audio, strict=True)]

    def warm(self, voice: Voice) -> str:
        """Load `voice` (voice a short line in it); returns this worker's id as the ack."""
        if voice not in self._voices_loaded:
            self.synthesize([(0, SynthRequest(WARM_TEXT, voice))])
        return self.worker_id

    def _voice(self, backend: str, share: list[SynthRequest]) -> list[Mono]:
        synth = self.synths.get(backend)
        if synth is None:
            raise SynthesisError(f"no {backend} voices on cluster worker {self.worker_id}")
        return synth.synthesize(share)

    def close(self) -> None:
        for synth in {id(s): s for s in self.synths.values()}.values():
            synth.close()


def _node_id() -> str:
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # not in a Ray worker (tests, a plain process)
        return ""
