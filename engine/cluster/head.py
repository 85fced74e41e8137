"""The head's side of the cluster: each line goes to its role's worker, and comes back once.

Every line sent gets a line id (a ticket) for this head. A batch is split by worker (the
role's worker on the ring, or its old worker while the role is being moved) and sent to
those Ray actors at once. When a worker dies (Ray says so) or stops answering its heartbeat
within the TTL, it leaves the ring and its unfinished lines are sent to each role's next
worker on the ring: at least once. Whichever copy of a line comes back first is kept; a
late copy is dropped and counted: exactly once for the caller.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError, RayTaskError

from engine.cluster.balance import Rebalancer, Step
from engine.cluster.hotkeys import pick, replicas_needed
from engine.cluster.ring import HashRing
from engine.cluster.snapshots import ClusterSnapshot, SnapshotBoard, WorkerView
from engine.core.errors import SynthesisError
from engine.core.types import Voice
from engine.synthesis.base import Mono, SynthRequest

log = logging.getLogger("troupe.cluster")
HEARTBEAT_TTL_S = 10.0
"""A worker that answers neither a batch nor a ping for this long is taken off the ring."""
_LOST = (RayActorError, ActorUnavailableError)


@dataclass
class WorkerState:
    """One worker actor as the head tracks it."""

    worker_id: str
    handle: Any
    capacity: float = 1.0
    node: str = ""
    pid: int = 0
    alive: bool = True
    """On the ring (a worker that missed its heartbeat is off it until it answers again)."""
    dead: bool = False
    """Ray reported the actor gone: it never comes back."""
    load_lines: int = 0
    batches: int = 0
    backends: dict[str, int] = field(default_factory=dict)
    """The backends it voices, and each one's sample rate (what `SynthWorker.info` said)."""
    lines: int = 0
    failures: int = 0


@dataclass
class _Send:
    worker: str
    tickets: list[int]
    done: set[int] = field(default_factory=set)
    """For a send left behind: the tickets its call finished (a late copy is a duplicate)."""
    resent: bool = False
    """Its lines were already sent elsewhere (the worker missed its heartbeat)."""


def line_key(r: SynthRequest) -> str:
    """What the ring places: the role, or the voice for a line without one."""
    return r.role or f"{r.voice.backend}:{r.voice.voice_id}"


class ClusterHead:
    """Routes batches over worker actors; the one authority on the ring and its state."""

    def __init__(self, ttl_s: float = HEARTBEAT_TTL_S, replicate: bool = True) -> None:
        """`replicate`: spread a hot key over its first k ring owners (False: one owner, as
        before; for A/B figures)."""
        self.ttl_s = ttl_s
        self.replicate = replicate
        self.ring = HashRing()
        self.rebalancer = Rebalancer(self.ring)
        self.board = SnapshotBoard()
        self.workers: dict[str, WorkerState] = {}
        self._lock = threading.RLock()
        self._tickets = itertools.count(1)
        self._left_behind: dict[Any, _Send] = {}
        self._warming: dict[Any, tuple[str, str]] = {}
        self._recent: Counter[str] = Counter()
        """Lines per role since the last rebalancing step (the load the ring spreads)."""
        self._voices: dict[str, Voice] = {}
        self.lines_done = 0
        self.resent_lines = 0
        self.duplicates_dropped = 0
        self.workers_lost = 0
        self.resent_ids: deque[int] = deque(maxlen=10_000)
        """Request ids of the latest lines re-sent (which lines a lost worker delayed)."""
        self.to_owner_lines = 0
        """Lines voiced by their role's ring owner (the rest: moves in progress, re-sends)."""
        self.on_send: Callable[[str, list[int]], None] | None = None
        """Test hook: called with a worker and the line ids just sent to it."""

    # --- membership ------------------------------------------------------------------
    def add_worker(
        self, worker_id: str, handle: Any, capacity: float = 1.0, node: str = "", pid: int = 0,
        backends: dict[str, int] | None = None,
    ) -> None:  # fmt: skip
        """`backends`: what the worker voices (None: every backend, at the engine's rate)."""
        with self._lock:
            self.workers[worker_id] = WorkerState(worker_id, handle, capacity, node, pid,
                                                  backends=dict(backends or {}))  # fmt: skip
            self.rebalancer.capacities[worker_id] = capacity
            self.ring.add(worker_id, capacity)
            self.publish()

    def lose(self, worker_id: str, dead: bool) -> None:
        """Take a worker off the ring: `dead` (Ray says so) or silent past its TTL."""
        with self._lock:
            w = self.workers[worker_id]
            if w.alive:
                self.workers_lost += 1
                self.ring.remove(worker_id)
                self.rebalancer.forget(worker_id)
                why = "its process ended" if dead else f"no answer for {self.ttl_s:.0f} s"
                left = ", ".join(sorted(v.worker_id for v in self.workers.values()
                                        if v.alive and v is not w)) or "none"  # fmt: skip
                log.warning("troupe cluster: worker %s (pid %d) lost: %s; its lines go to the next "
                            "workers on the ring (left: %s)", worker_id, w.pid, why, left)  # fmt: skip
            w.alive = False
            w.dead = w.dead or dead
            self.publish()

    def _rejoin(self, w: WorkerState) -> None:
        with self._lock:
            if not w.alive and not w.dead:
                w.alive = True
                self.rebalancer.capacities[w.worker_id] = w.capacity
                self.ring.add(w.worker_id, w.capacity)

    def heartbeat(self) -> list[str]:
        """Ping every worker not known dead: silent ones leave the ring, answering ones
        rejoin it; the workers that left."""
        with self._lock:
            known = [w for w in self.workers.values() if not w.dead]
        refs = {w.handle.ping.remote(): w for w in known}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=self.ttl_s)
        left: list[str] = []
        for ref, w in refs.items():
            try:
                if ref not in ready:
                    raise GetTimeoutError(f"no heartbeat from {w.worker_id} in {self.ttl_s} s")
                ray.get(ref)
                self._rejoin(w)
            except (*_LOST, GetTimeoutError) as exc:
                if w.alive:
                    left.append(w.worker_id)
                self.lose(w.worker_id, dead=not isinstance(exc, GetTimeoutError))
        self._drain()
        self.publish()
        return left

    # --- voicing ---------------------------------------------------------------------
    def voice(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        """Every line of `batch` voiced, in order, each exactly once."""
        self._drain()
        tickets = [next(self._tickets) for _ in batch]
        lines = dict(zip(tickets, batch, strict=True))
        tried: dict[int, set[str]] = {t: set() for t in tickets}
        results: dict[int, Mono] = {}
        pending: dict[Any, _Send] = {}
        try:
            self._send(tickets, lines, tried, pending)
            while len(results) < len(tickets):
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=self.ttl_s)
                if not ready:
                    self._resend_silent(pending, lines, tried)
                    continue
                send = pending.pop(ready[0])
                self._collect(ready[0], send, lines, tried, pending, results)
        finally:
            with self._lock:
                for ref, send in pending.items():  # copies no longer needed: drop them when they land
                    send.done = set(results)
                    self._left_behind[ref] = send
        self.publish()
        return [results[t] for t in tickets]

    def _collect(
        self,
        ref: Any,
        send: _Send,
        lines: dict[int, SynthRequest],
        tried: dict[int, set[str]],
        pending: dict[Any, _Send],
        results: dict[int, Mono],
    ) -> None:
        w = self.workers[send.worker]
        try:
            out: list[tuple[int, Mono]] = ray.get(ref)
        except _LOST:
            with self._lock:
                w.load_lines -= len(send.tickets)
                w.failures += 1
            self.lose(send.worker, dead=True)
            if not send.resent:  # (a worker that missed its heartbeat had its lines re-sent then)
                self._send([t for t in send.tickets if t not in results], lines, tried, pending, resend=True)
            return
        except RayTaskError as exc:
            with self._lock:
                w.load_lines -= len(send.tickets)
                w.failures += 1
            raise SynthesisError(f"cluster worker {send.worker}: {exc.cause}") from exc
        with self._lock:  # NB: several threads voice batches at once; the counters are shared
            w.load_lines -= len(send.tickets)
            w.batches += 1
            w.lines += len(out)
            for ticket, audio in out:
                if ticket in results:
                    self.duplicates_dropped += 1
                else:
                    results[ticket] = audio
                    self.lines_done += 1
                    self.to_owner_lines += send.worker == self._owner(lines[ticket])

    def _owner(self, r: SynthRequest) -> str:
        try:
            return self.rebalancer.owner(line_key(r))
        except LookupError:
            return ""

    def _send(
        self,
        tickets: list[int],
        lines: dict[int, SynthRequest],
        tried: dict[int, set[str]],
        pending: dict[Any, _Send],
        resend: bool = False,
    ) -> None:
        groups: dict[str, list[int]] = {}
        with self._lock:
            in_flight = {w: float(self.workers[w].load_lines) for w in self.ring.workers}
            for t in tickets:
                worker = self._route(lines[t], tried[t], in_flight)
                tried[t].add(worker)
                groups.setdefault(worker, []).append(t)
                in_flight[worker] = in_flight.get(worker, 0.0) + 1
            for worker, group in groups.items():
                w = self.workers[worker]
                ref = w.handle.synthesize.remote([(t, lines[t]) for t in group])
                pending[ref] = _Send(worker, group)
                w.load_lines += len(group)
            if resend:
                self.resent_lines += len(tickets)
                self.resent_ids.extend(lines[t].request_id for t in tickets)
        for worker, group in groups.items():
            if self.on_send is not None:
                self.on_send(worker, group)

    def _route(self, r: SynthRequest, tried: set[str], in_flight: dict[str, float]) -> str:
        """The role's worker (one of its replicas for a hot key, see `hotkeys`); a worker
        without the line's backend is passed over; on a re-send, the next worker on the ring
        it has not tried. `in_flight`: lines out per worker, this call's included."""
        key = line_key(r)
        backend = r.voice.backend
        if not tried:
            self._recent[key] += 1
            self._voices[key] = r.voice
            hot = self._replicas(key, backend)
            if hot:
                caps = {w: self.workers[w].capacity for w in self.ring.workers}
                return pick(hot, in_flight, caps)
            worker = self.rebalancer.route(key)
            if self._voices_backend(worker, backend):
                move = self.rebalancer.transitions.get(key)
                if move is not None:
                    self._warm(key, move.new)
                return worker
        for worker in self.ring.owners(key, len(self.ring)):
            if worker not in tried and self._voices_backend(worker, backend):
                return worker
        if not any(self._voices_backend(w, backend) for w in self.ring.workers):
            raise SynthesisError(f"no cluster worker voices {backend} (is it installed on the workers?)")
        raise SynthesisError(f"no cluster worker left to voice {r.text[:40]!r} ({len(tried)} tried)")

    def _voices_backend(self, worker: str, backend: str) -> bool:
        have = self.workers[worker].backends
        return not backend or not have or backend in have

    def _replicas(self, key: str, backend: str, total: int | None = None) -> list[str]:
        """The workers a key's lines go to: its first k owners on the ring that voice its
        backend, k from its share of the recent lines (1 unless it is hot: then none here).
        `total`: the recent lines of all keys, where the caller has it."""
        n = len(self.ring)
        if not self.replicate or n < 2:
            return []
        total = self._recent.total() if total is None else total
        k = replicas_needed(self._recent.get(key, 0), total, 1 / n, n)
        if k <= 1:
            return []
        owners = [w for w in self.ring.owners(key, n) if self._voices_backend(w, backend)][:k]
        return owners if len(owners) > 1 else []

    def _backend_of(self, key: str) -> str:
        voice = self._voices.get(key)
        return voice.backend if voice is not None else ""

    def hot_keys(self) -> dict[str, list[str]]:
        """Keys replicated now (hot), each with the workers its lines go to."""
        with self._lock:
            return self._hot()

    def _hot(self) -> dict[str, list[str]]:
        total = self._recent.total()
        return {k: ws for k in self._recent if (ws := self._replicas(k, self._backend_of(k), total))}

    def handles(self) -> list[Any]:
        """Every worker's actor handle (a copy: for ending them)."""
        with self._lock:
            return [w.handle for w in self.workers.values()]

    def _resend_silent(self, pending: dict[Any, _Send], lines: dict[int, SynthRequest],
                       tried: dict[int, set[str]]) -> None:  # fmt: skip
        """Nothing came back for a TTL: lines waiting on a worker that is off the ring (it
        failed this heartbeat, or another thread's) go to the next workers; its late
        answers, if any, are dropped as duplicates."""
        self.heartbeat()
        with self._lock:
            silent = [s for s in pending.values() if not s.resent and not self.workers[s.worker].alive]
        for send in silent:
            send.resent = True
            self._send(send.tickets, lines, tried, pending, resend=True)

    def _warm(self, role: str, worker: str) -> None:
        if any(v == (role, worker) for v in self._warming.values()):
            return
        voice = self._voices.get(role)
        if voice is None:  # a role known only from its load: no voice to load first
            self.rebalancer.confirm(role, worker)
            return
        if not self._voices_backend(worker, voice.backend):  # it could never load it: the move ends
            self.rebalancer.transitions.pop(role, None)  # (its lines go to the next worker that has it)
            return
        ref = self.workers[worker].handle.warm.remote(voice)
        self._warming[ref] = (role, worker)

    def settle(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for copies left behind and voice warm-ups to land, then
        account for them (a shutdown, a test, a benchmark's final figures)."""
        with self._lock:
            refs = [*self._warming, *self._left_behind]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        self._drain()

    def _drain(self) -> None:
        """Confirm voices loaded on new owners; drop late copies of lines already voiced."""
        with self._lock:
            refs = [*self._warming, *self._left_behind]
            if not refs:
                return
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            for ref in ready:
                if ref in self._warming:
                    role, worker = self._warming.pop(ref)
                    try:
                        ray.get(ref)
                        self.rebalancer.confirm(role, worker)
                    except (*_LOST, RayTaskError):
                        pass  # the move ends when the worker is lost, or the next warm-up tries again
                    continue
                send = self._left_behind.pop(ref)
                self.workers[send.worker].load_lines -= len(send.tickets)
                try:
                    out = ray.get(ref)
                except (*_LOST, RayTaskError):
                    continue
                self.duplicates_dropped += sum(1 for t, _ in out if t in send.done)

    # --- load and state --------------------------------------------------------------
    def recent_load(self) -> dict[str, int]:
        """Lines per role lately (what rebalancing spreads)."""
        with self._lock:
            return dict(self._recent)

    def _movable(self) -> dict[str, int]:
        """The recent load the rebalancer spreads by moving roles: hot keys' lines are spread
        by their replicas, and no move would help them."""
        hot = self._hot()
        return {k: n for k, n in self._recent.items() if k not in hot}

    def note_load(self, lines_per_role: dict[str, int]) -> None:
        """Count load the head did not route itself (a plan's lines, a previous run's)."""
        with self._lock:
            self._recent.update(lines_per_role)

    def rebalance(self, decay: bool = True) -> Step:
        """One rebalancing step over the lines each role had lately; `decay` halves those
        counts afterwards (the heartbeat's steps, so older load counts less)."""
        with self._lock:
            step = self.rebalancer.step(self._movable())
            for m in step.moves:
                self._warm(m.role, m.new)
            for role in list(self._recent) if decay else ():
                self._recent[role] //= 2
                if not self._recent[role]:
                    del self._recent[role]
            self.publish()
            return step

    def publish(self) -> ClusterSnapshot:
        """A new versioned snapshot of the whole state, for watchers."""
        with self._lock:
            on_ring = len(self.ring) > 0
            roles = {r: self.rebalancer.route(r) for r in self._voices} if on_ring else {}
            held = Counter(roles.values())
            weights = self.ring.workers
            views = tuple(
                _view(w, weights.get(w.worker_id, 0.0), held[w.worker_id]) for w in self.workers.values()
            )
            snap = ClusterSnapshot(
                version=0,
                t_s=time.time(),
                workers=views,
                imbalance=self.rebalancer.imbalance(self._movable()) if on_ring else 0.0,
                roles=roles,
                moving=tuple(self.rebalancer.transitions),
                lines_done=self.lines_done,
                resent_lines=self.resent_lines,
                duplicates_dropped=self.duplicates_dropped,
                workers_lost=self.workers_lost,
            )
            return self.board.publish(snap)


def _view(w: WorkerState, weight: float, roles_held: int) -> WorkerView:
    return WorkerView(
        worker_id=w.worker_id,
        alive=w.alive,
        capacity=w.capacity,
        weight=weight,
        load_lines=w.load_lines,
        roles_held=roles_held,
        batches=w.batches,
        lines=w.lines,
        failures=w.failures,
        node=w.node,
        pid=w.pid,
    )
