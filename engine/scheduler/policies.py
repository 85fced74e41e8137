"""Making a policy by name, and one policy queue per backend.

- role-aware (`engine.scheduler.role_aware`): ad-libs first, then by the director's weights
  and age while every deadline stays feasible, earliest deadline first when it would not;
  with admission control and shedding for requests a client is waiting on.
- FIFO (`engine.scheduler.fifo`): arrival order; the baseline the benchmarks compare against.

The scheduler keeps one queue per backend (`PerBackend`), so a decision for one backend never
looks at another backend's work.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping

from engine.scheduler.fifo import FifoPolicy
from engine.scheduler.policy import Accept, Policy, PolicyConfig
from engine.scheduler.request import Request
from engine.scheduler.role_aware import RoleAwarePolicy


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
    if name == "fifo":
        return FifoPolicy(config)
    if name in ("role_aware", "role-aware"):
        return RoleAwarePolicy(config)
    raise ValueError(f"unknown scheduling policy {name!r}; expected 'role_aware' or 'fifo'")
