"""Scheduling policies: which queued request is served next.

Both keep their order in structures whose keys do not change with time, so a decision
costs O(log n) at any depth:
- role-aware: ad-libs first (FIFO among them); then the current speaker's next lines
  inside the continuity window, then the rest by `weight * class_factor + age_rate * age`,
  but only while that keeps the nearest deadlines feasible; otherwise the earliest deadline
  that can still be met (EDF). The age term is additive, so a weight-1 role under a flood
  of weight-10 work is served once it has waited (10 - 1) / age_rate seconds longer than
  them: nothing starves.
  `weight + age_rate * (now - t_enqueued)` ranks like `weight - age_rate * t_enqueued`,
  a key fixed at arrival (the `now` term is common to all).
- FIFO: arrival order; the baseline the benchmarks compare against.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from engine.scheduler.request import CLASS_FACTOR, Request, RequestClass, State

Accept = Callable[[Request], bool]


@dataclass(frozen=True)
class PolicyConfig:
    """Tuning of the role-aware policy."""

    risk_window_s: float = 1.0
    """A request whose deadline is this close is served earliest-deadline-first."""
    continuity_s: float = 0.3
    """The last speaker's lines due within this much of the last one stay together."""
    age_rate_per_s: float = 2.0
    """Priority gained per second of waiting."""
    continuity_max_run: int = 4
    """At most this many picks in a row by continuity, so a chatty role cannot starve others."""


class Policy(Protocol):
    """A queue of pending requests with a serving order."""

    name: str

    def push(self, r: Request) -> None: ...

    def pop(self, now: float, accept: Accept | None = None) -> Request | None: ...

    def discard(self, r: Request) -> None: ...

    def __len__(self) -> int: ...

    def pending(self) -> Iterator[Request]: ...

    def reweight(self, weights: Mapping[str, float]) -> None: ...

    def reindex(self) -> None: ...

    def role_priorities(self, now: float, roles: Mapping[str, float]) -> dict[str, float]: ...

    def refresh(self, now: float) -> None: ...


class _Entries:
    """Tokens make heap entries of a re-queued request (a retry) unique; stale ones are skipped."""

    def __init__(self) -> None:
        self.seq = itertools.count()
        self.token: dict[int, int] = {}
        self.live = 0

    def issue(self, r: Request) -> int:
        t = next(self.seq)
        self.token[r.id] = t
        self.live += 1
        return t

    def valid(self, r: Request, token: int) -> bool:
        return r.state is State.QUEUED and self.token.get(r.id) == token

    def retire(self, r: Request) -> None:
        if self.token.pop(r.id, None) is not None:
            self.live -= 1


class FifoPolicy:
    """Serve in arrival order."""

    name = "fifo"

    def __init__(self, config: PolicyConfig | None = None) -> None:
        self._q: deque[tuple[int, Request]] = deque()
        self._e = _Entries()
        self._oldest: dict[str, deque[tuple[int, Request]]] = {}
        self.config = config or PolicyConfig()

    def push(self, r: Request) -> None:
        t = self._e.issue(r)
        self._q.append((t, r))
        self._oldest.setdefault(r.role, deque()).append((t, r))

    def pop(self, now: float, accept: Accept | None = None) -> Request | None:
        skipped: list[tuple[int, Request]] = []
        found = None
        while self._q:
            token, r = self._q.popleft()
            if not self._e.valid(r, token):
                continue
            if accept is None or accept(r):
                found = r
                break
            skipped.append((token, r))
            if len(skipped) > 256:
                break
        self._q.extendleft(reversed(skipped))
        if found is not None:
            self._e.retire(found)
        return found

    def discard(self, r: Request) -> None:
        self._e.retire(r)

    def __len__(self) -> int:
        return self._e.live

    def pending(self) -> Iterator[Request]:
        return (r for t, r in self._q if self._e.valid(r, t))

    def reweight(self, weights: Mapping[str, float]) -> None:
        pass

    def reindex(self) -> None:
        pass

    def refresh(self, now: float) -> None:
        pass

    def role_priorities(self, now: float, roles: Mapping[str, float]) -> dict[str, float]:
        """What the role-aware policy would rank each role at (for the heatmap); O(roles)."""
        out = dict.fromkeys(roles, 0.0)
        for role, oldest in _oldest_per_role(self._oldest, self._e):
            out[role] = roles.get(role, oldest.voice.weight) + self.config.age_rate_per_s * (
                now - oldest.t_enqueued
            )
        return out


def _oldest_per_role(
    queues: dict[str, deque[tuple[int, Request]]], entries: _Entries
) -> Iterator[tuple[str, Request]]:
    """Each role's longest-waiting live request; stale heads are dropped on the way."""
    for role, q in queues.items():
        while q and not entries.valid(q[0][1], q[0][0]):
            q.popleft()
        if q:
            yield role, q[0][1]


class RoleAwarePolicy:
    """Ad-libs first; otherwise the best request by weight, age and continuity, as long as
    serving it leaves every queued deadline feasible (slack stealing); when it would not,
    the earliest deadline that can still be met goes first.

    The deadline order is a sorted list. The system's slack, min over queued deadlines of
    (deadline - now - estimated work due before it), is computed by a scan of up to
    `scan_limit` deadlines once per scheduler tick (`refresh`), and kept up to date in
    between in O(1) (conservatively: it is only ever lowered by arrivals and by out-of-order
    picks), so a decision never scans. `pop` refreshes by itself only when no tick has for
    `stale_s` (a caller without a tick loop, such as a test).
    """

    name = "role_aware"
    scan_limit = 2048
    stale_s = 0.25

    def __init__(self, config: PolicyConfig | None = None, weights: Mapping[str, float] | None = None):
        self.config = config or PolicyConfig()
        self.weights: dict[str, float] = dict(weights or {})
        self.service_s: Callable[[Request], float] = lambda r: 0.0
        """Estimated backend time a request costs (throughput-based); set by the scheduler."""
        self.latency_s: Callable[[Request], float] = lambda r: 0.0
        """Estimated time from dispatch to its audio (a whole batch, for batched backends)."""
        self._e = _Entries()
        self._adlib: deque[tuple[int, Request]] = deque()
        self._edf: list[tuple[float, int, Request]] = []
        self._prio: list[tuple[float, int, Request]] = []
        self._by_role: dict[str, list[tuple[float, int, Request]]] = {}
        self._oldest: dict[str, deque[tuple[int, Request]]] = {}
        self.last_role: str | None = None
        self.last_deadline_s = 0.0
        self._run = 0
        self._slack = float("inf")
        self._slack_at = -float("inf")
        self._work = 0.0

    def _key(self, r: Request) -> float:
        w = self.weights.get(r.role, r.voice.weight) * CLASS_FACTOR[r.klass]
        return -(w - self.config.age_rate_per_s * r.t_enqueued)

    def push(self, r: Request) -> None:
        # NB: estimates are taken once per queueing; a reindex (re-weight, seek) renews them
        cost = r.est_cost_s = self.service_s(r)
        r.est_latency_s = max(cost, self.latency_s(r))
        now = r.t_enqueued
        if r.deadline_s - now - cost >= 0:  # deadlines after it lose `cost`; its own slack >= ...
            own = r.deadline_s - now - self._work - cost + (now - self._slack_at)
            self._slack = min(self._slack - cost, own)
            self._work += cost
        t = self._e.issue(r)
        if r.klass is RequestClass.ADLIB:
            self._adlib.append((t, r))
        bisect.insort(self._edf, (r.deadline_s, t, r), key=lambda e: (e[0], e[1]))
        heapq.heappush(self._prio, (self._key(r), t, r))
        heapq.heappush(self._by_role.setdefault(r.role, []), (r.deadline_s, t, r))
        self._oldest.setdefault(r.role, deque()).append((t, r))

    def _top(self, heap: list[tuple[float, int, Request]]) -> Request | None:
        while heap:
            _, t, r = heap[0]
            if self._e.valid(r, t):
                return r
            heapq.heappop(heap)
        return None

    def refresh(self, now: float) -> None:
        """Recompute the system's slack from the nearest `scan_limit` deadlines."""
        self._drop_front(now)
        slack, work, seen, keep = float("inf"), 0.0, 0, []
        edf = self._edf
        k = 0
        valid = self._e.valid
        for k, (d, t, r) in enumerate(edf):
            if seen >= self.scan_limit:
                k -= 1
                break
            if not valid(r, t):
                continue
            cost, lat = r.est_cost_s, r.est_latency_s
            if d - now - lat < 0:
                continue  # cannot be met any more: it is served by weight, not urgency
            keep.append((d, t, r))
            work += cost
            # its audio arrives a batch latency after its share of the work is done
            s_k = d - now - work - (lat - cost)
            if s_k < slack:
                slack = s_k
            seen += 1
        edf[: k + 1] = keep  # garbage and lost deadlines leave the deadline order
        self._slack, self._slack_at, self._work = slack, now, work

    def _drop_front(self, now: float) -> None:
        edf, n = self._edf, 0
        while n < len(edf):
            d, t, r = edf[n]
            if self._e.valid(r, t) and d - now - r.est_latency_s >= 0:
                break
            n += 1
        if n:
            del edf[:n]

    def _urgent(self, now: float) -> Request | None:
        """The earliest deadline that can still be met."""
        self._drop_front(now)
        return self._edf[0][2] if self._edf else None

    def _budget(self, now: float) -> float:
        return self._slack - (now - self._slack_at)

    def _preferred(self) -> Iterator[Request]:
        """Requests in the order the director's weights (and continuity) want them."""
        if self.last_role is not None and self._run < self.config.continuity_max_run:
            nxt = self._top(self._by_role.get(self.last_role, []))
            if nxt is not None and nxt.deadline_s <= self.last_deadline_s + self.config.continuity_s:
                yield nxt
        best = self._top(self._prio)
        if best is not None:
            yield best

    def pop(self, now: float, accept: Accept | None = None) -> Request | None:
        while self._adlib:
            t, first = self._adlib[0]
            if self._e.valid(first, t) and (accept is None or accept(first)):
                return self._take(first)
            if not self._e.valid(first, t):
                self._adlib.popleft()
            else:
                break
        if now - self._slack_at > self.stale_s:
            self.refresh(now)
        urgent = self._urgent(now)
        for r in self._preferred():
            if accept is not None and not accept(r):
                continue
            # serve the preferred request only if every queued deadline stays feasible
            if urgent is None or r is urgent or r.est_cost_s <= self._budget(now):
                if r is not urgent:
                    self._slack -= r.est_cost_s
                return self._take(r)
            break
        if urgent is not None and (accept is None or accept(urgent)):
            return self._take(urgent)
        for _, t, r in sorted(self._prio)[:256]:  # best candidates are for another backend
            if self._e.valid(r, t) and (accept is None or accept(r)):
                return self._take(r)
        return None

    def _take(self, r: Request) -> Request:
        self._work = max(0.0, self._work - r.est_cost_s)
        self._e.retire(r)  # its entries in every structure are stale from now on
        self._run = self._run + 1 if r.role == self.last_role else 0
        self.last_role, self.last_deadline_s = r.role, r.deadline_s
        self._compact()
        return r

    def _compact(self) -> None:
        if len(self._prio) > 64 and len(self._prio) > 3 * self._e.live:
            self.reindex()

    def discard(self, r: Request) -> None:
        self._e.retire(r)
        self._compact()

    def __len__(self) -> int:
        return self._e.live

    def pending(self) -> Iterator[Request]:
        return (r for _, t, r in list(self._prio) if self._e.valid(r, t))

    def reweight(self, weights: Mapping[str, float]) -> None:
        self.weights.update(weights)
        self.reindex()

    def reindex(self) -> None:
        """Rebuild every structure from the live requests (after weights or deadlines change)."""
        live = list(self.pending())
        live.sort(key=lambda r: self._e.token[r.id])  # keep arrival order
        self._e = _Entries()
        self._adlib.clear()
        self._edf, self._prio, self._by_role, self._oldest = [], [], {}, {}
        self._slack, self._slack_at, self._work = float("inf"), -float("inf"), 0.0
        for r in live:
            self.push(r)

    def role_priorities(self, now: float, roles: Mapping[str, float]) -> dict[str, float]:
        """Each role's current priority (its most urgent request), 0 for an idle role; O(roles)."""
        out = dict.fromkeys(roles, 0.0)
        rate = self.config.age_rate_per_s
        adlib_roles = {r.role for t, r in itertools.islice(self._adlib, 64) if self._e.valid(r, t)}
        for role, oldest in _oldest_per_role(self._oldest, self._e):
            p = self.weights.get(role, oldest.voice.weight) + rate * (now - oldest.t_enqueued)
            first = self._top(self._by_role.get(role, []))
            if first is not None and first.deadline_s - now <= self.config.risk_window_s:
                p += 10.0 * (1.0 - max(0.0, first.deadline_s - now) / self.config.risk_window_s)
            if role in adlib_roles:
                p += 100.0
            out[role] = p
        return out


def make_policy(name: str, config: PolicyConfig | None = None) -> Policy:
    if name == "fifo":
        return FifoPolicy(config)
    if name in ("role_aware", "role-aware"):
        return RoleAwarePolicy(config)
    raise ValueError(f"unknown scheduling policy {name!r}; expected 'role_aware' or 'fifo'")
