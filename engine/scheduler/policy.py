"""Scheduling policies: which queued request is served next.

- role-aware (`engine.scheduler.role_aware`): ad-libs first, then by the director's weights
  and age while every deadline stays feasible, earliest deadline first when it would not;
  with admission control and shedding for requests a client is waiting on.
- FIFO: arrival order; the baseline the benchmarks compare against.

The scheduler keeps one queue per backend (`PerBackend`), so a decision for one backend never
looks at another backend's work. Requests sit in the structures through a `_Slot` that is
cleared when they leave: a stale heap entry holds no reference to a finished request or
its audio.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from engine.scheduler.request import Request
from engine.scheduler.urgency import urgency

Accept = Callable[[Request], bool]
LOOKAHEAD = 8
"""How far past the best candidates a batch-filling pop looks for one that fits the batch."""


@dataclass(frozen=True)
class PolicyConfig:
    """Tuning of the role-aware policy."""

    continuity_s: float = 0.3
    """The last speaker's lines due within this much of the last one stay together."""
    age_rate_per_s: float = 2.0
    """Priority gained per second of waiting."""
    continuity_max_run: int = 4
    """At most this many picks in a row by continuity, so a chatty role cannot starve others."""
    overload_reserve: float = 0.1
    """Under overload, lower weights are deferred until every kept deadline has this share of
    its remaining time spare: room for the weights to pick (a lead's line goes first instead
    of waiting until its own deadline is the most urgent)."""
    fifo_tolerance: float = 0.35
    """The weights may reorder only while no queued line is answered later than
    `(1 + fifo_tolerance)` times the wait arrival order would have given it (estimated when it
    was queued), plus `fifo_grace_s`, and never before an earlier request of its kind still
    queued; its deadline bounds it too. 0 is arrival order among
    all but the lead whenever anything waits (with `lead_fifo_share` 1, for all); inf lets
    the weights defer a line up to its deadline."""
    fifo_grace_s: float = 0.05
    lead_fifo_share: float = 0.3
    """The lead's client requests (the role of the highest weight) are due at this share of
    the wait arrival order would give them (without the others' grace, which allows
    lateness where this share promises earliness): the deadline order itself
    puts the lead ahead, where the others' tolerance alone would let it wait its turn
    whenever the others have no slack to spare. Among requests of one weight (everyone the
    lead) it changes nothing: their due times are kept in their arrival order."""


class Policy(Protocol):
    """A queue of pending requests with a serving order."""

    name: str

    def push(self, r: Request) -> None: ...

    def pop(self, now: float, accept: Accept | None = None) -> Request | None: ...

    def discard(self, r: Request) -> bool: ...

    def __len__(self) -> int: ...

    def pending(self) -> Iterator[Request]: ...

    def reweight(self, weights: Mapping[str, float]) -> None: ...

    def forget(self, roles: Iterable[str]) -> None:
        """Drop these roles' weights (roles that are gone)."""

    def reindex(self) -> None: ...

    def role_priorities(self, now: float, roles: Mapping[str, float]) -> dict[str, float]: ...

    def role_work(self) -> dict[str, float]: ...

    def refresh(self, now: float) -> None: ...

    def admit(self, r: Request, now: float) -> float: ...

    def expire(self, now: float) -> list[Request]: ...


class _Slot:
    """A request's place in a policy's structures; `r` is None once it has left."""

    __slots__ = ("audio_s", "cost", "crit", "crit_show", "crit_spare", "held", "r", "seq", "weight")

    def __init__(self, r: Request, seq: int) -> None:
        self.r: Request | None = r
        self.seq = seq
        self.weight = 0.0
        self.cost = 0.0
        """Estimated backend seconds (what `_Entries.charge` counted for its role)."""
        self.audio_s = 0.0
        """Estimated spoken seconds (what the role-aware admission index counted)."""
        self.crit = -1
        """The role-aware policy's scan that counted it in deadline order (its deadline guard)."""
        self.crit_spare = math.inf
        """At that scan, the least time to spare of the lines counted before it (what taking
        it ahead of them may use up)."""
        self.crit_show = math.inf
        """The same over the shows' lines only (what the lead's client request must leave)."""
        self.held = -1
        """The role-aware policy's scan that last deferred it: held while that is the latest
        scan."""


class _Entries:
    """The live slots by request id; a re-queued request (a retry) gets a fresh slot."""

    def __init__(self) -> None:
        self._seq = itertools.count()
        self.slots: dict[int, _Slot] = {}
        self.work: dict[str, float] = {}
        """Queued synthesis time by role (s): what `charge` added, less what left."""
        self.total = 0.0
        """The sum of `work`."""

    def issue(self, r: Request) -> _Slot:
        self.retire(r)
        slot = self.slots[r.id] = _Slot(r, next(self._seq))
        return slot

    def charge(self, slot: _Slot, cost_s: float) -> None:
        """Record a queued request's estimated synthesis time."""
        assert slot.r is not None
        slot.cost = cost_s
        self.work[slot.r.role] = self.work.get(slot.r.role, 0.0) + cost_s
        self.total += cost_s

    def retire(self, r: Request) -> _Slot | None:
        slot = self.slots.pop(r.id, None)
        if slot is not None:
            slot.r = None  # NB: every stale entry pointing at this slot now holds nothing
            left = self.work.get(r.role, 0.0) - slot.cost
            self.work[r.role] = max(0.0, left) if left > 1e-9 else 0.0
            self.total = self.total - slot.cost if self.total - slot.cost > 1e-9 else 0.0
        return slot

    @property
    def live(self) -> int:
        return len(self.slots)

    def in_order(self) -> list[Request]:
        """Live requests in the order they were queued."""
        return [s.r for s in sorted(self.slots.values(), key=lambda s: s.seq) if s.r is not None]


class FifoPolicy:
    """Serve in arrival order; no admission control, nothing shed (the baseline)."""

    name = "fifo"

    def __init__(self, config: PolicyConfig | None = None) -> None:
        self._q: deque[_Slot] = deque()
        self._e = _Entries()
        self._oldest: dict[str, deque[_Slot]] = {}
        self.config = config or PolicyConfig()

    def push(self, r: Request) -> None:
        slot = self._e.issue(r)
        self._q.append(slot)
        self._oldest.setdefault(r.role, deque()).append(slot)

    def pop(self, now: float, accept: Accept | None = None) -> Request | None:
        skipped: list[_Slot] = []
        found = None
        while self._q:
            slot = self._q.popleft()
            if slot.r is None:
                continue
            if accept is None or accept(slot.r):
                found = slot.r
                break
            skipped.append(slot)
            if len(skipped) >= LOOKAHEAD:  # only batch-filling pops pass `accept`
                break
        self._q.extendleft(reversed(skipped))
        if found is not None:
            self._e.retire(found)
        return found

    def discard(self, r: Request) -> bool:
        return self._e.retire(r) is not None

    def __len__(self) -> int:
        return self._e.live

    def pending(self) -> Iterator[Request]:
        return iter(self._e.in_order())

    def reweight(self, weights: Mapping[str, float]) -> None:
        pass

    def forget(self, roles: Iterable[str]) -> None:
        pass

    def reindex(self) -> None:
        live = self._e.in_order()
        self._q.clear()
        self._oldest.clear()
        self._e = _Entries()
        for r in live:
            self.push(r)

    def refresh(self, now: float) -> None:
        if len(self._q) > 2 * self._e.live + LOOKAHEAD:
            self.reindex()  # drop stale entries

    def admit(self, r: Request, now: float) -> float:
        return 0.0

    def expire(self, now: float) -> list[Request]:
        return []

    def role_priorities(self, now: float, roles: Mapping[str, float]) -> dict[str, float]:
        """Each role's urgency (see `engine.scheduler.urgency`); FIFO keeps no estimates,
        so a role's slack is its oldest line's time to its deadline."""
        out = dict.fromkeys(roles, 0.0)
        for role, oldest in oldest_per_role(self._oldest):
            out[role] = urgency(oldest.deadline_s - now)
        return out

    def role_work(self) -> dict[str, float]:
        return dict(self._e.work)


def oldest_per_role(queues: dict[str, deque[_Slot]]) -> Iterator[tuple[str, Request]]:
    """Each role's longest-waiting live request; stale heads are dropped on the way."""
    for role, q in queues.items():
        while q and q[0].r is None:
            q.popleft()
        if q and q[0].r is not None:
            yield role, q[0].r


class PerBackend:
    """One policy queue per backend: a pop for espeak-ng never scans Kokoro's backlog."""

    def __init__(self, make: Callable[[str], Policy]) -> None:
        """`make(backend)` makes the queue of one backend."""
        self._make = make
        self.queues: dict[str, Policy] = {}
        self.name = make("").name

    def queue(self, backend: str) -> Policy:
        q = self.queues.get(backend)
        if q is None:
            q = self.queues[backend] = self._make(backend)
        return q

    def push(self, r: Request) -> None:
        self.queue(r.backend).push(r)

    def pop(self, backend: str, now: float, accept: Accept | None = None) -> Request | None:
        q = self.queues.get(backend)
        return q.pop(now, accept) if q is not None and len(q) else None

    def discard(self, r: Request) -> bool:
        q = self.queues.get(r.backend)
        if q is not None and q.discard(r):
            return True
        return any(other.discard(r) for other in self.queues.values() if other is not q)

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def depth(self, backend: str) -> int:
        q = self.queues.get(backend)
        return len(q) if q is not None else 0

    def pending(self) -> Iterator[Request]:
        return itertools.chain.from_iterable(q.pending() for q in list(self.queues.values()))

    def reweight(self, weights: Mapping[str, float]) -> None:
        for q in self.queues.values():
            q.reweight(weights)

    def forget(self, roles: Iterable[str]) -> None:
        roles = list(roles)
        for q in self.queues.values():
            q.forget(roles)

    def reindex(self) -> None:
        for q in self.queues.values():
            q.reindex()

    def refresh(self, now: float) -> None:
        for q in self.queues.values():
            q.refresh(now)

    def admit(self, r: Request, now: float) -> float:
        return self.queue(r.backend).admit(r, now)

    def expire(self, now: float) -> list[Request]:
        return [r for q in self.queues.values() for r in q.expire(now)]

    def role_priorities(self, now: float, roles: Mapping[str, float]) -> dict[str, float]:
        out = dict.fromkeys(roles, 0.0)
        for q in self.queues.values():
            for role, p in q.role_priorities(now, roles).items():
                out[role] = max(out.get(role, 0.0), p)
        return out

    def role_work(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for q in self.queues.values():
            for role, w in q.role_work().items():
                out[role] = out.get(role, 0.0) + w
        return out


def make_policy(name: str, config: PolicyConfig | None = None) -> Policy:
    from engine.scheduler.role_aware import RoleAwarePolicy

    if name == "fifo":
        return FifoPolicy(config)
    if name in ("role_aware", "role-aware"):
        return RoleAwarePolicy(config)
    raise ValueError(f"unknown scheduling policy {name!r}; expected 'role_aware' or 'fifo'")
