"""A process pool is handed a line per worker beyond the lines it is voicing, so a worker
that finishes starts its next line without waiting for the engine thread; its lines' time
(what speed and cost are learnt from) still starts when a worker takes them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future

import pytest
from sched_fakes import ManualClock

from engine.core.types import Voice
from engine.scheduler import Backend, Request, RequestClass, Scheduler, State
from engine.scheduler.backend import Batch, Withdrawn
from engine.synthesis.base import Mono, VoiceInfo
from engine.synthesis.pool import EspeakPool

LINE = "the harbour lights burned low while we waited for word from the ship that never came home"


@pytest.fixture(scope="module")
def pool() -> Iterator[EspeakPool]:
    p = EspeakPool(2)
    p.synthesize([])
    yield p
    p.close()


def _submit(sched: Scheduler, n: int) -> list[Request]:
    now = sched.clock()
    lines = [Request("A", f"{LINE} {k}.", Voice(), now + 60, RequestClass.SCRIPTED) for k in range(n)]
    return [sched.submit(r) for r in lines]


def test_workers_go_on_to_the_queued_lines_without_a_tick(pool: EspeakPool) -> None:
    backend = Backend(pool)
    assert (backend.workers, backend.queue_ahead, backend.slots) == (2, 2, 4)
    sched = Scheduler({"espeak": backend})
    reqs = _submit(sched, 6)
    sched.tick()  # one decision round: two lines start, two wait in the pool's queue
    assert [r.state for r in reqs].count(State.DISPATCHED) == 4
    limit = time.monotonic() + 30
    while len(sched._completed) < 4:  # no tick meanwhile: the engine thread is "busy"
        assert time.monotonic() < limit, "the queued lines were not voiced without the engine"
        time.sleep(0.005)
    batches = list(sched._completed)
    first_done = min(b.t_end for b in batches[:2])
    for b in batches:
        assert b.t_end > b.t_start >= b.requests[0].t_dispatched
    # the queued lines' time starts when a worker takes them, not when they were handed over
    assert sorted(b.t_start for b in batches)[2] >= first_done - 0.005
    ended: list[Request] = []
    while len(ended) < 6:
        assert time.monotonic() < limit
        ended += sched.tick()
        sched.wake.wait(0.02)
    assert all(r.state is State.DONE and r.audio is not None and len(r.audio) for r in reqs)


def test_without_queue_ahead_only_the_workers_lines_are_handed_over(pool: EspeakPool) -> None:
    sched = Scheduler({"espeak": Backend(pool, queue_ahead=0)})
    reqs = _submit(sched, 6)
    sched.tick()
    assert [r.state for r in reqs].count(State.DISPATCHED) == 2
    limit = time.monotonic() + 30
    while any(r.state is not State.DONE for r in reqs):
        assert time.monotonic() < limit
        sched.tick()
        sched.wake.wait(0.02)


def test_cost_is_shared_by_the_workers_not_the_queue_slots(pool: EspeakPool) -> None:
    backend = Backend(pool)
    sched = Scheduler({"espeak": backend})
    reqs = _submit(sched, 12)
    limit = time.monotonic() + 60
    while any(r.state is not State.DONE for r in reqs):
        assert time.monotonic() < limit
        sched.tick()
        sched.wake.wait(0.02)
    # a line's cost to the backend: its own time (per spoken second) over the two workers
    assert backend.cost_per_audio_s == pytest.approx(backend.rtf / 2, rel=1e-6)  # not over the 4 slots


def test_a_line_waiting_in_the_pool_for_a_client_that_left_is_never_voiced(pool: EspeakPool) -> None:
    sched = Scheduler({"espeak": Backend(pool)})
    now = sched.clock()
    long = " ".join([LINE] * 6) + "."  # the workers stay busy with the first two meanwhile
    reqs = [
        sched.submit(Request("A", f"{long} {k}", Voice(), now + 60, RequestClass.SCRIPTED)) for k in range(4)
    ]
    batches: list[Batch] = []
    sched.on_batch = batches.append
    sched.tick()  # two lines on the workers, two waiting in the pool's queue
    assert sched.cancel_requests(reqs[2:]) == 2
    limit = time.monotonic() + 30
    while len(batches) < 4:
        assert time.monotonic() < limit
        sched.tick()
        sched.wake.wait(0.02)
    by_request = {b.requests[0].id: b for b in batches}
    for r in reqs[:2]:
        assert r.state is State.DONE and by_request[r.id].results is not None
    for r in reqs[2:]:  # taken back: no worker voiced it, and it is not retried
        assert r.state is State.CANCELLED
        assert by_request[r.id].results is None and isinstance(by_request[r.id].error, Withdrawn)
    assert sched.stats.retries == 0 and sched.idle


class _HeldPool:
    """A process pool's contract (a queue of jobs; `started` as a worker takes one) whose
    workers move only when the test says: `take` gives the next job still wanted to one."""

    name, max_batch, expected_rtf = "espeak", 2, 0.01

    def __init__(self) -> None:
        self.jobs: list[tuple[Future[Mono], str, Callable[[], None] | None]] = []

    def voices(self) -> list[VoiceInfo]:
        return []

    def submit(self, text: str, voice: Voice, started: Callable[[], None] | None = None) -> Future[Mono]:
        f: Future[Mono] = Future()
        self.jobs.append((f, text, started))
        return f

    def take(self) -> tuple[Future[Mono], str] | None:
        while self.jobs:
            f, text, started = self.jobs.pop(0)
            if f.set_running_or_notify_cancel():
                if started is not None:
                    started()
                return f, text
        return None

    def waiting(self) -> list[str]:
        return [text for f, text, _ in self.jobs if not f.cancelled()]


def _held(
    timeout_s: float = 10.0, drain_at_once: bool = False
) -> tuple[Scheduler, _HeldPool, ManualClock, list[Request]]:
    """Four lines handed over (two for the workers, two waiting); with `drain_at_once`,
    the engine thread drains every completion the moment it is reported."""
    clock, pool = ManualClock(), _HeldPool()
    sched = Scheduler({"espeak": Backend(pool, clock=clock, min_timeout_s=timeout_s)}, clock=clock)  # type: ignore[arg-type]
    if drain_at_once:
        complete = sched._complete

        def drained(batch: Batch) -> None:
            complete(batch)
            sched._drain()

        sched._complete = drained  # type: ignore[method-assign]
    reqs = [
        sched.submit(Request("A", f"line {k}", Voice(), clock() + 60, RequestClass.SCRIPTED))
        for k in range(4)
    ]
    sched.tick()
    return sched, pool, clock, reqs


def test_a_withdrawn_line_is_not_queued_again_whenever_the_engine_sees_it() -> None:
    # the withdrawal completes its batch at once, on the canceller's thread; the engine
    # thread may drain it right then, before the request is marked cancelled: it must not
    # take it for a failure and queue it again
    sched, _, _, reqs = _held(drain_at_once=True)  # the engine thread drains between the two
    assert sched.cancel_requests([reqs[3]]) == 1
    assert reqs[3].state is State.CANCELLED
    assert sched.stats.retries == 0 and sched.pending_count == 0


def test_a_timed_out_line_still_in_the_pool_is_taken_back_not_voiced_twice() -> None:
    sched, pool, clock, reqs = _held()
    pool.take(), pool.take()  # both workers stuck on lines 0 and 1
    clock.advance(11)
    sched.tick()  # every batch timed out: retried, handed over again
    assert sorted(pool.waiting()) == ["line 0", "line 1", "line 2", "line 3"]  # no stale copies
    backend = sched.backends["espeak"]
    assert all(r.id in backend._waiting for r in reqs)  # each retry can still be taken back
