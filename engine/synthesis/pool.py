"""A process pool of espeak-ng workers: one library instance per process, so calls run in parallel.

Each worker process has its own pipe and a thread here that feeds it one line at a time, so
a worker that dies (killed, crashed, out of memory) is seen at once by process liveness,
whatever it was doing: only its own line fails (the scheduler retries it) and a fresh
worker takes its place. Nothing here ever waits on a dead process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from multiprocessing.connection import Connection, wait
from typing import Any

from engine.core.errors import SynthesisError
from engine.core.process import die_with_parent
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak import espeak_voices, from_raw, synthesize_raw, synthesize_text
from engine.synthesis.lexicon import prepare
from engine.synthesis.text import split_chunks

WORKER_NICENESS = 5
"""Synthesis is soft real time, the audio stream is hard: workers yield the CPU to it."""
_POLL_S = 0.25
"""How often a waiting feeder looks at the pool's closing flag."""

_Job = tuple[Future[Mono], str, Voice, Callable[[], None] | None]


def _warm(niceness: int = WORKER_NICENESS) -> None:
    with contextlib.suppress(OSError):  # not permitted on some systems; the pool still works
        os.nice(niceness)
    synthesize_text("a", Voice())


def _worker_main(conn: Connection, parent_pid: int, niceness: int) -> None:
    """A worker process: voice each (text, voice) received, send back espeak-ng's own samples
    and their rate (the parent converts and resamples: fewer bytes through the pipe, whose
    hand-over was a third of a worker's time at 48 kHz float32)."""
    die_with_parent(parent_pid)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal's hang-up and Ctrl+C
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # are the parent's to handle
    _warm(niceness)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        text, voice = task
        try:
            reply: tuple[str, Any] = ("ok", synthesize_raw(text, voice))
        except SynthesisError as exc:
            reply = ("error", str(exc))
        except Exception as exc:  # reported with the line; the worker goes on
            reply = ("error", f"espeak-ng failed: {exc!r}")
        conn.send(reply)


class _WorkerDied(Exception):
    pass


class _Worker:
    """One worker process and its pipe, fed by one thread of the pool."""

    def __init__(self, pool: EspeakPool) -> None:
        self.pool = pool
        self.proc: Any = None
        self.conn: Connection | None = None
        self.busy = False

    def start(self) -> None:
        ctx = self.pool._context
        here, there = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_worker_main, args=(there, os.getpid(), self.pool.niceness),
                           name="troupe-espeak", daemon=True)  # fmt: skip
        proc.start()
        there.close()  # NB: only the worker may hold its end, or a dead worker's pipe never ends
        self.proc, self.conn = proc, here

    def stop(self) -> None:
        """End the process without waiting on it (it may be dead or stuck)."""
        if self.proc is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.kill()
            with contextlib.suppress(OSError, ValueError):
                self.proc.join(1.0)
        if self.conn is not None:
            self.conn.close()
        self.proc = self.conn = None

    def run(self, text: str, voice: Voice) -> Mono:
        """Voice one line on this worker; `_WorkerDied` if the process is gone."""
        if self.proc is None or not self.proc.is_alive():
            self.pool.restarts += self.proc is not None
            self.stop()
            self.start()
        task = (text, voice)
        try:
            assert self.conn is not None
            self.conn.send(task)
        except OSError:  # died idle, between the check and the send: the line was not started
            self.pool.restarts += 1
            self.stop()
            self.start()
            assert self.conn is not None
            try:
                self.conn.send(task)
            except OSError as exc:
                raise _WorkerDied from exc
        self.busy = True
        try:
            return self._reply()
        finally:
            self.busy = False

    def _reply(self) -> Mono:
        conn, proc = self.conn, self.proc
        assert conn is not None and proc is not None
        while True:
            ready = wait([conn, proc.sentinel], _POLL_S)
            if conn in ready:
                break
            if ready or self.pool.closing:  # the process ended (or the pool is closing)
                raise _WorkerDied
        if self.pool.before_reply is not None:
            self.pool.before_reply(proc.pid)
        try:
            kind, value = conn.recv()
        except (EOFError, OSError) as exc:  # died while writing its result
            raise _WorkerDied from exc
        if kind == "error":
            raise SynthesisError(value)
        raw, raw_rate_hz = value
        return from_raw(raw, raw_rate_hz, self.pool.sample_rate_hz)


class EspeakPool:
    """espeak-ng across `processes` worker processes (default: one per core)."""

    name = "espeak"
    expected_rtf = 0.01
    """A first guess of seconds per spoken second (measured here: 0.004-0.007 per line on one
    core), until the scheduler has timed its own lines; a guess 10x too slow made admission
    refuse most of a server's first burst."""
    sample_rate_hz = SAMPLE_RATE_HZ

    def __init__(self, processes: int | None = None, niceness: int = WORKER_NICENESS) -> None:
        """`niceness` 0 for an offline render, which has no audio stream to yield to."""
        self.processes = max(1, processes or os.cpu_count() or 1)
        self.max_batch = self.processes
        self.niceness = niceness
        # spawn, not fork: the parent may hold Qt, PortAudio or espeak state that must not be cloned.
        self._context = multiprocessing.get_context("spawn")
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.closing = False
        self.restarts = 0
        """Workers replaced after they died."""
        self.before_reply: Callable[[int], None] | None = None
        """Test hook: called with a worker's pid when its reply starts to arrive."""
        self._workers = [_Worker(self) for _ in range(self.processes)]
        self._threads = [threading.Thread(target=self._feed, args=(w,), name="troupe-espeak-feed",
                                          daemon=True) for w in self._workers]  # fmt: skip
        for t in self._threads:
            t.start()

    def _feed(self, worker: _Worker) -> None:
        # NB: started here, so the parent-death signal is tied to this thread, which lives as
        # long as the pool (Linux sends it when the starting thread exits).
        worker.start()
        while True:
            job = self._jobs.get()
            if job is None or self.closing:
                if job is not None and job[0].set_running_or_notify_cancel():
                    job[0].set_exception(SynthesisError("the espeak-ng pool was closed"))
                break
            future, text, voice, started = job
            if not future.set_running_or_notify_cancel():
                continue
            if started is not None:
                started()
            try:
                future.set_result(worker.run(text, voice))
            except SynthesisError as exc:
                future.set_exception(exc)
            except _WorkerDied:
                if self.closing:
                    future.set_exception(SynthesisError("the espeak-ng pool was closed"))
                    break
                self.restarts += 1
                worker.stop()
                future.set_exception(SynthesisError("an espeak-ng worker process died"))
        worker.stop()

    def worker_pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers if w.proc is not None and w.proc.pid is not None]

    def busy_pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers if w.busy and w.proc is not None]

    def submit(self, text: str, voice: Voice, started: Callable[[], None] | None = None) -> Future[Mono]:
        """Queue one synthesis for the next free worker (`started` is called as one takes
        it); the future raises `SynthesisError` on failure. The lexicon is applied here, where
        the open project's entries are known (workers know only the user's)."""
        future: Future[Mono] = Future()
        if self.closing:
            future.set_exception(SynthesisError("the espeak-ng pool is closed"))
        else:
            self._jobs.put((future, prepare(text), voice, started))
        return future

    @staticmethod
    def result(future: Future[Mono], timeout_s: float | None = None) -> Mono:
        try:
            return future.result(timeout=timeout_s)
        except SynthesisError:
            raise
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
        """Stop every worker (dead or alive) and fail lines not yet voiced; never blocks long."""
        if self.closing:
            return
        self.closing = True
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join(2.0)
        for w in self._workers:
            w.stop()
        while True:  # lines still queued
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None and job[0].set_running_or_notify_cancel():
                job[0].set_exception(SynthesisError("the espeak-ng pool was closed"))
