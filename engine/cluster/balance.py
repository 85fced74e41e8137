"""Load-aware rebalancing of the ring: measure the imbalance, move a bounded share of work.

The head knows each role's queued lines. A worker's load is the queued lines of the roles
it owns; the imbalance is the relative entropy of the load shares against the capacity
shares, scaled to 0..1 (0: every worker loaded in proportion to its capacity; 1: all the
work on the smallest worker). For equal capacities it is 1 - H(loads) / log(N). When it
exceeds the threshold, steps begin and go on until it is down to `settle` (hysteresis: a
ring hovering at the threshold does not flap). A step changes one worker's ring weight by
whole points, choosing the change that lowers the imbalance most while the roles it moves
hold at most `move_share` of the queued lines. A moved role is double-routed: its old worker keeps
voicing it until the new one says its voice is loaded (`confirm`), so there is no gap.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.cluster.ring import HashRing, point

IMBALANCE_THRESHOLD = 0.18
"""Rebalance only above this imbalance (the design document's figure)."""
IMBALANCE_SETTLE = 0.02
"""Once begun, rebalancing goes on down to this imbalance."""
_TRIED = 3
"""A step tries weight changes on this many of the most and of the least loaded workers."""
MOVE_SHARE = 0.03
"""A step moves roles holding at most this share of the queued lines (the design's 3%)."""


def imbalance(loads: Mapping[str, float], capacities: Mapping[str, float]) -> float:
    """0..1: how far the load shares are from the capacity shares (see the module doc)."""
    total = sum(max(0.0, loads.get(w, 0.0)) for w in capacities)
    cap_total = sum(capacities.values())
    if len(capacities) < 2 or total <= 0 or cap_total <= 0:
        return 0.0
    worst = math.log(cap_total / min(capacities.values()))
    if worst <= 0:
        return 0.0
    kl = 0.0
    for w, cap in capacities.items():
        s = max(0.0, loads.get(w, 0.0)) / total
        if s > 0:
            kl += s * math.log(s / (cap / cap_total))
    return min(1.0, max(0.0, kl / worst))


@dataclass(frozen=True)
class Move:
    """One role changing worker: `old` voices it until `new` has its voice loaded."""

    role: str
    old: str
    new: str
    queued: int


@dataclass(frozen=True)
class Step:
    """What one rebalancing step did."""

    imbalance_before: float
    imbalance_after: float
    budget: float
    """The most queued lines this step could move (`move_share` of the queue)."""
    moves: tuple[Move, ...] = ()
    worker: str = ""
    vnodes: tuple[int, int] = (0, 0)
    """The worker whose weight changed: its points before and after."""

    @property
    def moved_lines(self) -> int:
        return sum(m.queued for m in self.moves)


@dataclass
class _Candidate:
    worker: str
    vnodes: int
    moved: dict[str, str]
    """Role -> its new worker, for the roles this change moves."""
    moved_lines: int
    score: float


@dataclass
class Rebalancer:
    """Keeps a ring's load in proportion to capacity; the single writer of its weights."""

    ring: HashRing
    capacities: dict[str, float] = field(default_factory=dict)
    """Declared capacity per worker (cores, GPU memory); the ring's weights start from it."""
    threshold: float = IMBALANCE_THRESHOLD
    settle: float = IMBALANCE_SETTLE
    active: bool = False
    """Rebalancing began (the imbalance passed `threshold`) and has not yet reached `settle`."""
    move_share: float = MOVE_SHARE
    transitions: dict[str, Move] = field(default_factory=dict)
    """Roles being moved, by role: served by `old` until `confirm`."""
    _hashes: dict[str, int] = field(default_factory=dict, repr=False)
    _slots: dict[str, int] = field(default_factory=dict, repr=False)
    """Each queued role's ring position and owning point, for the step being evaluated."""

    def capacity(self, worker: str) -> float:
        return self.capacities.get(worker, self.ring.workers.get(worker, 1.0))

    def route(self, role: str) -> str:
        """The worker that voices `role` now (its old worker while it is being moved)."""
        move = self.transitions.get(role)
        return move.old if move is not None else self.ring.owner(role)

    def confirm(self, role: str, worker: str) -> bool:
        """`worker` has `role`'s voice loaded: switch the role to it if it is the new owner."""
        move = self.transitions.get(role)
        if move is None or move.new != worker:
            return False
        del self.transitions[role]
        return True

    def forget(self, worker: str) -> None:
        """`worker` left or died: moves from or to it end (the ring says where roles go)."""
        for role, move in list(self.transitions.items()):
            if worker in (move.old, move.new):
                del self.transitions[role]
        self.capacities.pop(worker, None)

    def loads(self, queued: Mapping[str, int]) -> dict[str, float]:
        """Queued lines per worker, by ring ownership (where the work is headed)."""
        out = dict.fromkeys(self.ring.workers, 0.0)
        for role, n in queued.items():
            if n > 0:
                out[self.ring.owner(role)] += n
        return out

    def imbalance(self, queued: Mapping[str, int]) -> float:
        caps = {w: self.capacity(w) for w in self.ring.workers}
        return imbalance(self.loads(queued), caps)

    def step(self, queued: Mapping[str, int]) -> Step:
        """One bounded step while rebalancing (see `active`); else nothing moves."""
        caps = {w: self.capacity(w) for w in self.ring.workers}
        owners = {r: self.ring.owner(r) for r, n in queued.items() if n > 0}
        loads = dict.fromkeys(caps, 0.0)
        for r, w in owners.items():
            loads[w] += queued[r]
        before = imbalance(loads, caps)
        budget = self.move_share * sum(loads.values())
        self.active = len(caps) > 1 and before > (self.settle if self.active else self.threshold)
        if not self.active:
            return Step(before, before, budget)
        self._hashes = {r: point(r) for r in owners}
        self._slots = {r: self.ring.slot(r) for r in owners}
        best: _Candidate | None = None
        for c in self._candidates(owners, loads, queued, caps):
            if 0 < c.moved_lines <= budget and c.score < before and (best is None or c.score < best.score):
                best = c
        if best is None:  # nothing within the budget helps: stop until the threshold is passed again
            self.active = False
            return Step(before, before, budget)
        old_vnodes = self.ring.vnodes(best.worker)
        serving = {r: self.route(r) for r in best.moved}
        self.ring.set_vnodes(best.worker, best.vnodes)
        changed = [Move(r, old, best.moved[r], queued[r]) for r, old in serving.items()]
        for m in changed:
            if m.old == m.new:
                self.transitions.pop(m.role, None)  # moved back before the switch: no move
            else:
                self.transitions[m.role] = m
        moves = tuple(m for m in changed if m.old != m.new)
        return Step(before, best.score, budget, moves, best.worker, (old_vnodes, best.vnodes))

    def _candidates(
        self,
        owners: dict[str, str],
        loads: dict[str, float],
        queued: Mapping[str, int],
        caps: dict[str, float],
    ) -> list[_Candidate]:
        """Fewer points for the most loaded workers, more for the least loaded, in steps that
        grow geometrically (so a light worker can catch up with a heavy one in a few steps)."""
        by_load = sorted(caps, key=lambda w: (loads[w] / caps[w], w))
        widest = max(self.ring.vnodes(w) for w in caps)
        held: dict[str, list[str]] = {}
        for r, w in owners.items():
            held.setdefault(w, []).append(r)
        out: list[_Candidate] = []
        for src in by_load[-_TRIED:][::-1]:
            n = self.ring.vnodes(src)
            for k in _sizes(n - 1):
                moved = self._without_points(src, n - k, held.get(src, []))
                out.append(_score(src, n - k, owners, moved, loads, queued, caps))
        for dst in by_load[:_TRIED]:
            n = self.ring.vnodes(dst)
            for k in _sizes(widest):
                moved = self._with_points(dst, n + k, owners)
                out.append(_score(dst, n + k, owners, moved, loads, queued, caps))
        return out

    def _without_points(self, worker: str, keep: int, roles: list[str]) -> dict[str, str]:
        """Where `worker`'s `roles` would go if it kept only its first `keep` points (a
        dropped point's arc passes clockwise): the roles that would move."""
        n = self.ring.vnodes(worker)
        dropped = set(self.ring.vnode_points(worker, n)[keep:])
        pts, who = self.ring.points, self.ring.point_owners
        out: dict[str, str] = {}
        for role in roles:
            k = self._slots[role]
            while pts[k] in dropped:
                k = (k + 1) % len(pts)
            if who[k] != worker:
                out[role] = who[k]
        return out

    def _with_points(self, worker: str, count: int, owners: dict[str, str]) -> dict[str, str]:
        """The roles `worker` would take with `count` points (a new point takes the roles
        just before it on the ring)."""
        added = sorted(self.ring.vnode_points(worker, count)[self.ring.vnodes(worker) :])
        pts = self.ring.points
        out: dict[str, str] = {}
        for role, w in owners.items():
            if w == worker:
                continue
            h, p = self._hashes[role], pts[self._slots[role]]
            i = bisect.bisect_left(added, h)
            if p >= h:
                takes = i < len(added) and added[i] < p
            else:  # the role's arc wraps past the top of the ring
                takes = i < len(added) or (bool(added) and added[0] < p)
            if takes:
                out[role] = worker
        return out


def _score(
    worker: str,
    vnodes: int,
    owners: Mapping[str, str],
    moved: dict[str, str],
    loads: Mapping[str, float],
    queued: Mapping[str, int],
    caps: Mapping[str, float],
) -> _Candidate:
    """The imbalance after `moved` (role -> new worker), from the current loads."""
    after = dict(loads)
    for r, w in moved.items():
        after[owners[r]] -= queued[r]
        after[w] += queued[r]
    return _Candidate(worker, vnodes, moved, sum(queued[r] for r in moved), imbalance(after, caps))


def _sizes(limit: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, ... up to `limit`: point-count changes a step tries."""
    out: list[int] = []
    k = 1
    while k <= limit:
        out.append(k)
        k = k + 1 if k < 4 else k + k // 2
    return out
