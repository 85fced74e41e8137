"""What every scheduling policy shares: the `Policy` protocol, its tuning (`PolicyConfig`)
and the bookkeeping of queued requests (`Slot`, `Entries`).

The policies themselves are `engine.scheduler.fifo` (arrival order, the baseline) and
`engine.scheduler.role_aware`; `engine.scheduler.policies` makes one by name and keeps one
queue per backend. Requests sit in a policy's structures through a `Slot` that is cleared
when they leave: a stale heap entry holds no reference to a finished request or its audio.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from engine.scheduler.request import Request

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


class Slot:
    """A request's place in a policy's structures; `r` is None once it has left."""

    __slots__ = ("audio_s", "cost", "crit", "crit_show", "crit_spare", "held", "r", "seq", "weight")

    def __init__(self, r: Request, seq: int) -> None:
        self.r: Request | None = r
        self.seq = seq
        self.weight = 0.0
        self.cost = 0.0
        """Estimated backend seconds (what `Entries.charge` counted for its role)."""
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


class Entries:
    """The live slots by request id; a re-queued request (a retry) gets a fresh slot."""

    def __init__(self) -> None:
        self._seq = itertools.count()
        self.slots: dict[int, Slot] = {}
        self.work: dict[str, float] = {}
        """Queued synthesis time by role (s): what `charge` added, less what left."""
        self.total = 0.0
        """The sum of `work`."""

    def issue(self, r: Request) -> Slot:
        self.retire(r)
        slot = self.slots[r.id] = Slot(r, next(self._seq))
        return slot

    def charge(self, slot: Slot, cost_s: float) -> None:
        """Record a queued request's estimated synthesis time."""
        assert slot.r is not None
        slot.cost = cost_s
        self.work[slot.r.role] = self.work.get(slot.r.role, 0.0) + cost_s
        self.total += cost_s

    def retire(self, r: Request) -> Slot | None:
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


def oldest_per_role(queues: dict[str, deque[Slot]]) -> Iterator[tuple[str, Request]]:
    """Each role's longest-waiting live request; stale heads are dropped on the way."""
    for role, q in queues.items():
        while q and q[0].r is None:
            q.popleft()
        if q and q[0].r is not None:
            yield role, q[0].r
