"""A synthesizer as the scheduler sees it: concurrency slots, batch limits, measured speed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.scheduler.request import Clock, Request, monotonic
from engine.synthesis.base import Mono, Synthesizer, SynthRequest
from engine.synthesis.espeak import stand_in

Completion = Callable[["Batch"], None]


class Withdrawn(SynthesisError):
    """A batch taken back before any worker started it (its client left)."""


@dataclass(eq=False)
class Batch:
    """Requests dispatched together to one backend, and what came back."""

    backend: str
    requests: list[Request]
    t_start: float
    timeout_at: float
    results: list[Mono] | None = None
    error: BaseException | None = None
    t_end: float = 0.0
    abandoned: bool = False
    """Timed out: a late result is dropped."""


class Backend:
    """Runs batches of a `Synthesizer` asynchronously and keeps its real-time factor."""

    def __init__(
        self,
        synth: Synthesizer,
        slots: int | None = None,
        max_batch: int | None = None,
        length_buckets: bool = False,
        max_wait_s: float = 0.0,
        min_timeout_s: float = 10.0,
        clock: Clock = monotonic,
        queue_ahead: int | None = None,
    ) -> None:
        self.synth = synth
        self.name = synth.name
        pooled = hasattr(synth, "submit") and synth.max_batch > 1
        self._pooled = pooled
        self.workers = slots or (synth.max_batch if pooled else 1)
        """Batches this backend voices at the same time (a pool's processes, or threads)."""
        self.queue_ahead = (self.workers if queue_ahead is None else queue_ahead) if pooled else 0
        """Lines handed to a pool beyond one per worker, waiting in the pool's own queue: a
        worker that finishes starts its next line at once instead of idling until the engine
        thread has heard of it and decided (a round trip that left two workers idle 8-13% of
        the time in a burst of 200 lines). The decision for such a line is taken up to one
        line earlier than it would be."""
        self.slots = self.workers + self.queue_ahead
        """Batches in flight at most (started or waiting in the pool's queue)."""
        self.max_batch = max_batch or (1 if pooled else synth.max_batch)
        self.length_buckets = length_buckets
        self.max_wait_s = max_wait_s
        self.min_timeout_s = min_timeout_s
        self.clock = clock
        self.inflight = 0
        guess = float(getattr(synth, "expected_rtf", 0.05))
        self.rtf = guess
        """Seconds from a request's start to its audio per second of its estimated spoken
        length (`Request.est_audio_s`, what every estimate is applied to), as measured (see
        `observe`); it starts from the synthesizer's own guess, so a slow voice is not trusted
        to be fast before its first line has been timed."""
        self.cost_per_audio_s = guess / self.workers
        """Backend time one estimated spoken second uses up, batching and workers included."""
        self.measured_rtf = guess
        """Seconds of compute per second of audio produced, for one request: the real-time
        factor shown to people (the planning figures above are per estimated second)."""
        self._sums = [guess, 1.0, guess, 1.0, guess, 1.0]
        """Decayed sums behind the three figures (time, length): the guess counts as one line
        of one second until timed lines outweigh it."""
        self.pace = 1.0
        """Wall time the queue takes to drain per second of that cost while it is backlogged
        (>= 1, EWMA): what the batches' own timing leaves out (dispatch on a busy engine
        thread, hand-over of results), so that waits, slack and admission count real time."""
        self._pace_from: float | None = None
        self._pace_cost = 0.0
        self._executor = (
            None if pooled else ThreadPoolExecutor(self.workers, thread_name_prefix=f"troupe-{self.name}")
        )
        self._lock = threading.Lock()
        self._cached: dict[int, tuple[str, bool]] = {}
        """Request id -> (its text, whether its take was cached when first asked)."""
        self._waiting: dict[int, Future[Mono]] = {}
        """A pool's lines handed over but not yet taken by a worker, by request id (`withdraw`)."""

    @property
    def free_slots(self) -> int:
        return self.slots - self.inflight

    CACHED_S = 0.005
    """A take the synthesizer has in its take cache: read from disk, not voiced."""

    def cached(self, r: Request) -> bool:
        """Whether the synthesizer holds `r`'s take already (a take cache); asked once a
        line and remembered (a cached take is never voiced, so its time is the disk's)."""
        known = self._cached.get(r.id)
        if known is None or known[0] != r.text:
            probe = getattr(self.synth, "cached", None)
            hit = bool(probe(SynthRequest(r.text, self.voice_for(r), r.id, r.role))) if probe else False
            if len(self._cached) > 10_000:
                self._cached.clear()
            known = self._cached[r.id] = (r.text, hit)
        return known[1]

    def estimate_s(self, r: Request) -> float:
        """How long voicing `r` would take on this backend, from its measured speed."""
        return self.CACHED_S if self.cached(r) else self.rtf * r.est_audio_s

    def cost_s(self, r: Request) -> float:
        """How much of this backend's time `r` uses up (what the policy's slack counts)."""
        return self.CACHED_S if self.cached(r) else self.cost_per_audio_s * self.pace * r.est_audio_s

    def bucket(self, r: Request) -> int:
        """Length bucket: neural backends pad a batch to its longest item, so batch alikes."""
        return len(r.text) // 48 if self.length_buckets else 0

    def observe(self, batch: Batch, backlogged: bool = False) -> None:
        """Learn from a finished batch: its speed, and (when more work was queued behind it,
        `backlogged`) how fast the queue really drains."""
        if batch.results is None:
            return
        self._observe_pace(batch, backlogged, self.clock())
        voiced = [k for k, r in enumerate(batch.requests) if not self._cached.pop(r.id, ("", False))[1]]
        n = len(voiced)  # NB: cached takes cost the disk, not the model: they teach no speed
        if n == 0:
            return
        audio_s = sum(len(batch.results[k]) for k in voiced) / SAMPLE_RATE_HZ
        est_s = sum(batch.requests[k].est_audio_s for k in voiced)
        if audio_s <= 0 or est_s <= 0:
            return
        took = batch.t_end - batch.t_start
        # NB: sums, not an average of each batch's ratio: a line's fixed cost (hand-over,
        # resampling) makes short lines' ratios high, and their average counted a mix of
        # lines ~1.4x its real time. Per estimated second: the estimate of a line's length
        # (espeak-ng speaks ~1.3x faster than it assumes) is what every figure is applied to.
        sums, keep = self._sums, self.DECAY
        for i, length in enumerate((est_s / n, est_s, audio_s / n)):
            sums[2 * i] = keep * sums[2 * i] + took
            sums[2 * i + 1] = keep * sums[2 * i + 1] + length
        self.rtf = sums[0] / sums[1]
        self.cost_per_audio_s = sums[2] / sums[3] / self.workers
        self.measured_rtf = sums[4] / sums[5]

    DECAY = 0.8
    """Weight a batch's timing keeps for each later batch: the last five or so count most, so
    a machine that slows down (or a first line that loaded a model) is followed within a few."""

    PACE_WINDOW_S = 0.5
    PACE_MAX = 10.0

    def _observe_pace(self, batch: Batch, backlogged: bool, now: float) -> None:
        """Over each stretch of at least `PACE_WINDOW_S` in which the queue never ran dry,
        the wall time elapsed against the cost the batches finished in it were estimated at."""
        if not backlogged:
            self._pace_from, self._pace_cost = None, 0.0  # idle time is no measure of pace
            return
        if self._pace_from is None:
            self._pace_from, self._pace_cost = now, 0.0  # the stretch starts with this completion
            return
        self._pace_cost += sum(self.cost_per_audio_s * r.est_audio_s for r in batch.requests)
        elapsed = now - self._pace_from
        if elapsed >= self.PACE_WINDOW_S and self._pace_cost > 0:
            sample = min(self.PACE_MAX, max(1.0, elapsed / self._pace_cost))
            self.pace = 0.7 * self.pace + 0.3 * sample
            self._pace_from, self._pace_cost = now, 0.0

    def start(self, requests: Sequence[Request], on_complete: Completion) -> Batch:
        now = self.clock()
        est = sum(self.estimate_s(r) for r in requests)
        batch = Batch(self.name, list(requests), now, now + max(self.min_timeout_s, 5 * est))
        self.inflight += 1
        sreqs = [SynthRequest(r.text, self.voice_for(r), r.id, r.role) for r in requests]

        rid = requests[0].id

        def finish(fut: Future[list[Mono]]) -> None:
            batch.t_end = self.clock()
            try:
                batch.results = fut.result()
            except BaseException as exc:  # a backend failure is data here, not a crash
                batch.error = exc
            on_complete(batch)

        if self._pooled:
            mine: list[Future[Mono]] = []

            def started() -> None:  # on a worker, out of the pool's queue: its time starts now
                batch.t_start = self.clock()
                for r in batch.requests:
                    r.t_synth_start = batch.t_start
                self._forget(rid, mine)

            pool_future = self.synth.submit(sreqs[0].text, sreqs[0].voice, started)  # type: ignore[attr-defined]
            mine.append(pool_future)
            self._waiting[rid] = pool_future
            if pool_future.running() or pool_future.done():
                self._forget(rid, mine)  # taken (or ended) before it was recorded
            wrapped: Future[list[Mono]] = Future()
            pool_future.add_done_callback(lambda f: _chain(f, wrapped))
            wrapped.add_done_callback(finish)
        else:
            assert self._executor is not None
            self._executor.submit(self.synth.synthesize, sreqs).add_done_callback(finish)
        return batch

    def voice_for(self, r: Request) -> Voice:
        """The line's voice on this backend: as cast, or, where the embedded voice stands
        in for another backend (a fallback), the nearest espeak-ng voice."""
        if self.name == "espeak" and r.voice.backend != "espeak":
            return stand_in(r.voice)
        return r.voice

    def _forget(self, rid: int, mine: list[Future[Mono]]) -> None:
        """Drop the record of this line's pool future, not a later one's (a retry's)."""
        if mine and self._waiting.get(rid) is mine[0]:
            self._waiting.pop(rid, None)

    def withdraw(self, r: Request) -> bool:
        """Take back a dispatched line no worker has taken yet (its client left): it is never
        voiced, and its batch ends with an error that the scheduler ignores for a cancelled
        request. False once a worker has it (its audio is dropped when it comes back)."""
        fut = self._waiting.pop(r.id, None)
        return fut is not None and fut.cancel()

    def release(self) -> None:
        self.inflight -= 1

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


def standard_backends(processes: int = 1, neural: bool = True, warm_up: bool = True) -> dict[str, Backend]:
    """The embedded espeak-ng voice (in this process, or a pool of `processes`), and Kokoro
    when `neural` and its extra is installed: batched by length bucket, its model loading in
    the background (unless `warm_up` is false: then it loads when first used, or when the
    owner warms it up), its failed lines falling back to espeak-ng; Piper voices likewise
    (the shipped one, and any in `TROUPE_PIPER_VOICES`)."""
    from engine.synthesis.build import NATURAL, SynthSpec, build_synthesizers
    from engine.synthesis.kokoro import warm_up_in_background

    synths = build_synthesizers(SynthSpec(processes, natural=NATURAL if neural else None))
    backends = {"espeak": Backend(synths.pop("espeak"))}
    for name, synth in synths.items():  # natural voices: batched by length, takes kept on disk
        backends[name] = Backend(synth, length_buckets=True)
        if warm_up:
            warm_up_in_background(synth)
    return backends


def cluster_backends(address: str, processes: int = 1, neural: bool = True) -> dict[str, Backend]:
    """Every backend the workers of the Ray cluster at `address` voice (started on its nodes,
    each with as many espeak-ng processes as it has CPUs, or `processes` where more than 1),
    one batch per worker in flight; natural voices batched by length as here."""
    from engine.cluster import open_voices

    views = open_voices(address, processes, neural)
    slots = max(2, len(views["espeak"].head.workers))
    return {n: Backend(v, slots=slots, length_buckets=n != "espeak") for n, v in views.items()}


def neural_voice_ids(backends: Mapping[str, Backend]) -> list[str]:
    """Voices of every backend but espeak-ng, as `backend:voice` (what a cast names)."""
    return [
        f"{b.name}:{v.voice_id}" for b in backends.values() if b.name != "espeak" for v in b.synth.voices()
    ]


def _chain(src: Future[Mono], dst: Future[list[Mono]]) -> None:
    if src.cancelled():
        dst.set_exception(Withdrawn("withdrawn before a worker took it"))
        return
    exc = src.exception()
    if exc is not None:
        dst.set_exception(exc)
    else:
        dst.set_result([src.result()])
