"""FIFO: serve in arrival order; the baseline the benchmarks compare against."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping

from engine.scheduler.policy import LOOKAHEAD, Accept, Entries, PolicyConfig, Slot, oldest_per_role
from engine.scheduler.request import Request
from engine.scheduler.urgency import urgency


class FifoPolicy:
    """Serve in arrival order; no admission control, nothing shed (the baseline)."""

    name = "fifo"

    def __init__(self, config: PolicyConfig | None = None) -> None:
        self._q: deque[Slot] = deque()
        self._e = Entries()
        self._oldest: dict[str, deque[Slot]] = {}
        self.config = config or PolicyConfig()

    def push(self, r: Request) -> None:
        slot = self._e.issue(r)
        self._q.append(slot)
        self._oldest.setdefault(r.role, deque()).append(slot)

    def pop(self, now: float, accept: Accept | None = None) -> Request | None:
        skipped: list[Slot] = []
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
        self._e = Entries()
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
