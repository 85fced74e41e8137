"""espeak-ng workers killed at every stage (idle, synthesizing, writing a large result): every
line still completes through the scheduler's retry, dead workers are replaced, and `close`
returns at once even with a dead or frozen worker."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from engine.core.types import Voice
from engine.scheduler import Backend, Request, RequestClass, Scheduler, State
from engine.synthesis.pool import EspeakPool

LONG = " ".join(["the long speech goes on and on"] * 20) + "."
"""Seconds of audio: a reply of megabytes, far larger than a pipe's buffer."""


@pytest.fixture
def pool() -> Iterator[EspeakPool]:
    p = EspeakPool(2)
    yield p
    p.close()


def _voice_all(sched: Scheduler, texts: list[str], during: threading.Event | None = None) -> list[Request]:
    now = sched.clock()
    reqs = [sched.submit(Request("A", t, Voice(), now + 60, RequestClass.SCRIPTED)) for t in texts]
    limit = time.monotonic() + 60
    while any(r.state not in (State.DONE, State.FAILED) for r in reqs):
        assert time.monotonic() < limit, "lines never completed"
        sched.tick()
        sched.wake.wait(0.02)
    return reqs


def _wait_for(cond, what: str) -> None:  # type: ignore[no-untyped-def]
    limit = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < limit, f"never {what}"
        time.sleep(0.005)


@pytest.mark.slow
def test_workers_killed_at_every_stage_are_replaced_and_every_line_completes(pool: EspeakPool) -> None:
    sched = Scheduler({"espeak": Backend(pool)})
    killed: list[int] = []

    def kill_while_writing(pid: int) -> None:
        if len(killed) < want_writing_kills:
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)  # it is blocked writing its reply into the pipe

    for _round in range(3):
        # idle: every worker killed between lines
        _wait_for(lambda: len(pool.worker_pids()) == 2, "started")
        for pid in pool.worker_pids():
            os.kill(pid, signal.SIGKILL)
        reqs = _voice_all(sched, ["One line.", "Two lines.", "Three lines."])
        assert all(r.state is State.DONE and r.audio is not None and r.audio.size for r in reqs)

        # synthesizing: the worker voicing a long line is killed
        now = sched.clock()
        r = sched.submit(Request("A", LONG, Voice(), now + 60))
        sched.tick()
        _wait_for(pool.busy_pids, "busy")
        os.kill(pool.busy_pids()[0], signal.SIGKILL)
        limit = time.monotonic() + 60
        while r.state not in (State.DONE, State.FAILED):
            assert time.monotonic() < limit
            sched.tick()
            sched.wake.wait(0.02)
        assert r.state is State.DONE and r.audio is not None

        # writing its result: killed once its megabytes of reply have started to arrive
        want_writing_kills = len(killed) + 1
        pool.before_reply = kill_while_writing
        reqs = _voice_all(sched, [LONG, "A short one."])
        pool.before_reply = None
        assert all(r.state is State.DONE for r in reqs)
        assert len(killed) == want_writing_kills
    assert pool.restarts >= 9
    assert sched.stats.failed == 0

    pids = pool.worker_pids()
    t0 = time.monotonic()
    pool.close()
    assert time.monotonic() - t0 < 5
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_close_never_waits_on_a_frozen_or_dead_worker(pool: EspeakPool) -> None:
    fut = pool.submit(LONG, Voice())
    _wait_for(pool.busy_pids, "busy")
    busy = pool.busy_pids()[0]
    os.kill(busy, signal.SIGSTOP)  # frozen mid-line: never answers, never dies by itself
    others = [p for p in pool.worker_pids() if p != busy]
    for pid in others:
        os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    pool.close()
    assert time.monotonic() - t0 < 5
    assert fut.done()
    with pytest.raises(ProcessLookupError):
        os.kill(busy, 0)
