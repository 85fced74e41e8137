"""The scheduler: a bounded queue of synthesis requests, dispatched by policy to backends.

Threads: `submit`, `cancel` and `set_weight` may be called from any thread (GUI, HTTP);
`tick` runs on the engine thread (every 50 ms and at once when `wake` is set), and so do
the `on_done` callbacks of requests. Backends complete on their own threads and only
append to a deque that the next tick drains.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from engine.core.errors import Overloaded, QueueFull
from engine.core.timing import SPEEDS
from engine.scheduler.backend import Backend, Batch
from engine.scheduler.policies import PerBackend, make_policy
from engine.scheduler.policy import Policy, PolicyConfig
from engine.scheduler.request import Clock, Request, RequestClass, State, monotonic
from engine.scheduler.role_aware import RoleAwarePolicy

log = logging.getLogger(__name__)
SUBMIT_WAIT_S = 0.05
"""How long a submit waits for room in a full queue before `QueueFull` (the backpressure bound)."""


@dataclass(frozen=True)
class SchedulerConfig:
    """Settings of the scheduler (policy name and its tuning, limits, fallbacks)."""

    policy: str = "role_aware"
    max_pending: int = 10_000
    tick_s: float = 0.05
    refresh_s: float = 0.02
    """The policy's deadline scan runs at most this often. Ticks also come with every
    arrival and completion (hundreds a second on a busy server); between scans the policy
    keeps its slack up to date in O(1), conservatively."""
    horizon_s: float = 30.0
    """Prefetch due further ahead than this may be shed when the queue is full."""
    retries: int = 1
    fallback_backend: str | None = "espeak"
    adlib_wait_s: float = 1.0
    """An ad-lib still waiting for a slot on its (slow) backend this long past its deadline
    moves to the fallback backend: under overload its wait stays bounded."""
    policy_config: PolicyConfig = field(default_factory=PolicyConfig)


@dataclass
class SchedulerStats:
    """Counters for metrics and benchmarks."""

    submitted: int = 0
    dispatched: int = 0
    done: int = 0
    failed: int = 0
    shed: int = 0
    retries: int = 0
    fallback_on_failure: int = 0
    fallback_on_deadline: int = 0
    deadline_misses: int = 0
    timeouts: int = 0
    refused: int = 0
    """Refused at submit by admission control (could not be voiced in time)."""
    cancelled: int = 0
    callback_errors: int = 0
    """Exceptions raised by a request's `on_done` (logged; the loop goes on)."""
    batch_sizes: Counter[int] = field(default_factory=Counter)
    """How many batches of each size were dispatched (bounded, unlike a list of them)."""

    @property
    def mean_batch(self) -> float:
        n = sum(self.batch_sizes.values())
        return sum(k * v for k, v in self.batch_sizes.items()) / n if n else 0.0


class Scheduler:
    """Decides what is synthesized next, in what batches, on which backend."""

    def __init__(
        self,
        backends: Mapping[str, Backend],
        config: SchedulerConfig | None = None,
        clock: Clock = monotonic,
    ) -> None:
        self.config = config or SchedulerConfig()
        self.backends = dict(backends)
        self.clock = clock
        self.weights: dict[str, float] = {}
        self.policy = PerBackend(self._new_queue)
        """One queue per backend, each ordered by the configured policy."""
        self.stats = SchedulerStats()
        self.wake = threading.Event()
        """Set on every arrival and completion, so the engine thread ticks at once."""
        self._lock = threading.Condition()
        self._completed: deque[Batch] = deque()
        self._inflight: list[Batch] = []
        self._refreshed_at = -math.inf
        self._adlibs: list[Request] = []
        """Ad-libs queued on a backend other than the fallback (see `_rescue_adlibs`)."""
        self.on_batch: Callable[[Batch], None] | None = None
        self.on_error: Callable[[Request, BaseException], None] | None = None
        """Told of an exception in a request's `on_done` (after it is logged and counted)."""

    def _new_queue(self, backend: str) -> Policy:
        policy = make_policy(self.config.policy, self.config.policy_config)
        if isinstance(policy, RoleAwarePolicy):
            policy.reweight(self.weights)
            policy.service_s = self._cost
            policy.latency_s = self._latency
            b = self.backends.get(backend)
            if b is not None:  # its estimates are `cost_s` and `estimate_s`: per spoken second
                policy.speed = lambda: (b.cost_per_audio_s * b.pace, b.rtf)
        return policy

    # --- any thread ----------------------------------------------------------------
    def submit(self, r: Request, timeout_s: float = SUBMIT_WAIT_S) -> Request:
        """Queue `r`. A request with a finite `give_up_s` that could not be voiced in time
        is refused at once (`Overloaded`, with a Retry-After); if the queue is full, far
        prefetch is shed or the submit waits up to `timeout_s`, then `QueueFull`."""
        if not r.backend:
            present = r.voice.backend in self.backends
            r.backend = r.voice.backend if present else self._default()
            r.fallback = r.fallback or not present  # cast to a backend not installed here
        with self._lock:
            late_by = self.policy.admit(r, self.clock())
            if late_by > 0:
                self.stats.refused += 1
                raise Overloaded(
                    f"too busy to voice this line for {r.role} in time "
                    f"(the work ahead of it needs {late_by:.1f} s more than it can wait)",
                    retry_after_s=late_by,
                )
            if len(self.policy) >= self.config.max_pending and not self._shed_one():
                ok = self._lock.wait_for(
                    lambda: len(self.policy) < self.config.max_pending or self._shed_one(), timeout_s
                )
                if not ok:
                    raise QueueFull(
                        f"synthesis queue full ({self.config.max_pending} waiting) for "
                        f"{timeout_s * 1000:.0f} ms; line for {r.role} not queued"
                    )
            r.t_enqueued = self.clock()
            r.state = State.QUEUED
            self.policy.push(r)
            self.stats.submitted += 1
            if r.klass is RequestClass.ADLIB and r.backend != self.config.fallback_backend:
                self._adlibs.append(r)
        self.wake.set()
        return r

    def _cost(self, r: Request) -> float:
        backend = self.backends.get(r.backend)
        return backend.cost_s(r) if backend is not None else 0.0

    def _latency(self, r: Request) -> float:
        backend = self.backends.get(r.backend)
        return backend.estimate_s(r) if backend is not None else 0.0

    def _default(self) -> str:
        return (
            self.config.fallback_backend
            if self.config.fallback_backend in self.backends
            else next(iter(self.backends))
        )

    def _shed_one(self) -> bool:
        """Drop the prefetch due furthest ahead beyond the horizon; never a due line or ad-lib."""
        now = self.clock()
        victims = [
            r for r in self.policy.pending()
            if r.klass is RequestClass.PREFETCH and r.deadline_s - now > self.config.horizon_s
        ]  # fmt: skip
        if not victims:
            return False
        victim = max(victims, key=lambda r: r.deadline_s)
        self.policy.discard(victim)
        victim.state = State.SHED
        self.stats.shed += 1
        self._completed.append(Batch("", [victim], now, now))  # on_done runs on the engine thread
        return True

    def cancel(self, predicate: Callable[[Request], bool]) -> int:
        """Withdraw queued requests matching `predicate` (e.g. a re-cast role's lines)."""
        with self._lock:  # NB: held across both steps (re-entrant), so no hit is dispatched between
            return self.cancel_requests([r for r in self.policy.pending() if predicate(r)])

    def cancel_requests(self, requests: Iterable[Request]) -> int:
        """Withdraw these requests (a client left, a re-take, a Stop): queued ones leave the
        queue, a line handed to a pool that no worker has taken yet is taken back, and the
        audio of one being voiced is dropped when it comes back. O(k)."""
        n = 0
        with self._lock:
            for r in requests:
                state = r.state
                if state is not State.QUEUED and state is not State.DISPATCHED:
                    continue  # already ended
                r.state = State.CANCELLED  # NB: first: a withdrawn batch completes at once
                if state is State.QUEUED:
                    self.policy.discard(r)
                else:
                    backend = self.backends.get(r.backend)
                    if backend is not None:
                        backend.withdraw(r)  # not voiced at all if no worker has it yet
                n += 1
            self.stats.cancelled += n
            self._lock.notify_all()
        return n

    def set_weight(self, role: str, weight: float) -> None:
        self.set_weights({role: weight})

    def set_weights(self, weights: Mapping[str, float]) -> None:
        """Change role weights live (any thread); queued work is re-ordered at once."""
        with self._lock:
            self.weights.update(weights)
            self.policy.reweight(weights)
        self.wake.set()

    def forget_roles(self, roles: Iterable[str]) -> None:
        """Drop the weights of roles that are gone (any thread): they no longer count, e.g.
        as the lead, once their lines have left."""
        roles = list(roles)
        with self._lock:
            for role in roles:
                self.weights.pop(role, None)
            self.policy.forget(roles)

    def reindex(self) -> None:
        """Deadlines of queued requests changed (seek, re-layout): rebuild the order."""
        with self._lock:
            self.policy.reindex()

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being voiced."""
        return not self._inflight and self.pending_count == 0

    @property
    def busy(self) -> bool:
        """A batch is being voiced, or its results wait for the next tick to hand them on."""
        return bool(self._inflight or self._completed)

    @property
    def pending_count(self) -> int:
        return len(self.policy)

    def role_priorities(self) -> dict[str, float]:
        """Each role's urgency, 0..1 (see `engine.scheduler.urgency`)."""
        with self._lock:
            return self.policy.role_priorities(self.clock(), self.weights)

    def role_work(self) -> dict[str, float]:
        """Queued synthesis time by role (s)."""
        with self._lock:
            return self.policy.role_work()

    # --- engine thread -------------------------------------------------------------
    def _complete(self, batch: Batch) -> None:
        self._completed.append(batch)  # deque.append is atomic: safe from backend threads
        self.wake.set()

    def tick(self) -> list[Request]:
        """Drain completions, time out stuck batches, dispatch; return requests that ended."""
        self.wake.clear()
        ended = self._drain()
        ended += self._check_timeouts()
        ended += self._dispatch()
        if self._adlibs and self._rescue_adlibs():
            ended += self._dispatch()
        for r in ended:
            if r.on_done is not None:
                try:
                    r.on_done(r)
                except Exception as exc:  # one request's callback never stops the others
                    self.stats.callback_errors += 1
                    log.exception("request %s (%s): completion callback failed", r.id, r.role)
                    if self.on_error is not None:
                        self.on_error(r, exc)
        return ended

    def _drain(self) -> list[Request]:
        ended: list[Request] = []
        while self._completed:
            batch = self._completed.popleft()
            if not batch.backend:  # a shed request
                ended.extend(batch.requests)
                continue
            if batch.abandoned:
                continue
            self._inflight.remove(batch)
            backend = self.backends[batch.backend]
            backend.release()
            backend.observe(batch, backlogged=self.policy.depth(batch.backend) > 0)
            if self.on_batch is not None:
                self.on_batch(batch)
            if batch.error is not None or batch.results is None:
                ended += self._failed(batch.requests, str(batch.error or "no audio"))
                continue
            for r, audio in zip(batch.requests, batch.results, strict=True):
                if r.state is State.CANCELLED:
                    continue  # its client left while it was voiced: drop the audio
                r.audio, r.state = audio, State.DONE
                r.t_first_chunk = r.t_done = batch.t_end
                SPEEDS.learn(
                    batch.backend, r.text, r.voice.rate_wpm, len(audio) / backend.synth.sample_rate_hz
                )
                self.stats.done += 1
                self.stats.deadline_misses += r.t_done > r.deadline_s
                ended.append(r)
        return ended

    def _failed(self, requests: list[Request], error: str) -> list[Request]:
        ended = []
        for r in requests:
            if r.state is State.CANCELLED:
                continue
            r.attempts += 1
            r.error = error
            fb = self.config.fallback_backend
            if r.attempts <= self.config.retries:
                self.stats.retries += 1
            elif fb and fb in self.backends and r.backend != fb:
                r.backend, r.fallback = fb, True  # the embedded voice saves the line
                self.stats.fallback_on_failure += 1
            else:
                r.state = State.FAILED
                self.stats.failed += 1
                ended.append(r)
                continue
            with self._lock:
                if r.state is State.CANCELLED:  # type: ignore[comparison-overlap]  # NB: set by another thread
                    continue  # its client left meanwhile
                r.state = State.QUEUED
                self.policy.push(r)
        return ended

    def _check_timeouts(self) -> list[Request]:
        now = self.clock()
        ended: list[Request] = []
        for batch in [b for b in self._inflight if now > b.timeout_at]:
            batch.abandoned = True
            self._inflight.remove(batch)
            backend = self.backends[batch.backend]
            backend.release()
            for r in batch.requests:
                backend.withdraw(r)  # still waiting in a pool: not voiced twice
            self.stats.timeouts += 1
            ended += self._failed(batch.requests, f"{batch.backend} timed out")
        return ended

    def _dispatch(self) -> list[Request]:
        with self._lock:
            now = self.clock()
            shed = self.policy.expire(now)
            for r in shed:
                r.state, r.error = State.SHED, "shed under overload: it could not be voiced in time"
            self.stats.shed += len(shed)
            if now - self._refreshed_at >= self.config.refresh_s or shed:
                self.policy.refresh(now)  # here, so that no decision scans
                self._refreshed_at = now
            for backend in self.backends.values():
                while backend.free_slots > 0 and self.policy.depth(backend.name):
                    batch = self._gather(backend)
                    if not batch:
                        break
                    self._start(backend, batch)
            self._lock.notify_all()
        return shed

    def _gather(self, backend: Backend) -> list[Request]:
        now = self.clock()
        while True:  # lines this backend would voice too late move to the fallback's queue
            head = self.policy.pop(backend.name, now)
            if head is None:
                return []
            if not self._reroute(head, backend, now):
                break
        batch = [head]
        if backend.max_batch > 1:
            bucket = backend.bucket(head)

            def fits(r: Request) -> bool:
                return backend.bucket(r) == bucket

            while len(batch) < backend.max_batch:
                r = self.policy.pop(backend.name, now, fits)
                if r is None:
                    break
                batch.append(r)
        return batch

    def _reroute(self, r: Request, backend: Backend, now: float) -> bool:
        """Send a line the slow backend cannot finish in time to the fast fallback."""
        fb_name = self.config.fallback_backend
        if not fb_name or fb_name == backend.name or fb_name not in self.backends:
            return False
        fb = self.backends[fb_name]
        if now + backend.estimate_s(r) > r.deadline_s >= now + fb.estimate_s(r):
            r.backend, r.fallback = fb_name, True
            self.stats.fallback_on_deadline += 1
            self.policy.push(r)
            return True
        return False

    def _rescue_adlibs(self) -> bool:
        """Ad-libs stuck behind a slow backend's backlog go to the fast fallback once they are
        `adlib_wait_s` past their deadline; True if any moved."""
        fb = self.config.fallback_backend
        if not fb or fb not in self.backends:
            self._adlibs.clear()
            return False
        now, moved = self.clock(), False
        with self._lock:
            waiting = []
            for r in self._adlibs:
                if r.state is not State.QUEUED or r.backend == fb:
                    continue
                if now < r.deadline_s + self.config.adlib_wait_s:
                    waiting.append(r)
                    continue
                if self.policy.discard(r):
                    r.backend, r.fallback = fb, True
                    self.stats.fallback_on_deadline += 1
                    self.policy.push(r)
                    moved = True
            self._adlibs = waiting
        return moved

    def _start(self, backend: Backend, batch: list[Request]) -> None:
        now = self.clock()
        for r in batch:
            r.state = State.DISPATCHED
            r.t_dispatched = r.t_synth_start = now
        self.stats.dispatched += len(batch)
        self.stats.batch_sizes[len(batch)] += 1
        self._inflight.append(backend.start(batch, self._complete))

    def close(self) -> None:
        for b in self.backends.values():
            b.close()
