"""Load-aware rebalancing of the ring: measure the imbalance, move a bounded share of work.

The head knows each role's queued lines. A worker's load is the queued lines of the roles
it owns; the imbalance is the relative entropy of the load shares against the capacity
shares, scaled to 0..1 (0: every worker loaded in proportion to its capacity; 1: all the
work on the smallest worker). For equal capacities it is 1 - H(loads) / log(N). When it
exceeds the threshold, steps begin and go on until it is down to `settle` (hysteresis: a
ring hovering at the threshold does not flap). A step changes one worker's ring weight by
whole points, choosing the change that lowers the imbalance most while the roles it moves
hold at most `move_share` of the queued lines; where no weight change fits (few points,
roles clumped on one arc) it pins a single role to the least loaded worker. A moved role
is double-routed: its old worker keeps voicing it until the new one says its voice is
loaded (`confirm`), so there is no gap.
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
    pin: bool = False
    """Move one role by hand (its arc is too coarse for a weight change within the budget)."""


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
    pins: dict[str, str] = field(default_factory=dict)
    """Roles placed on a worker by hand, over the ring: where a weight change would move
    more lines than a step may (few points, roles clumped on one arc)."""
    _hashes: dict[str, int] = field(default_factory=dict, repr=False)
    _slots: dict[str, int] = field(default_factory=dict, repr=False)
    """Each queued role's ring position and owning point, for the step being evaluated."""

    def capacity(self, worker: str) -> float:
        return self.capacities.get(worker, self.ring.workers.get(worker, 1.0))

    def route(self, role: str) -> str:
        """The worker that voices `role` now (its old worker while it is being moved)."""
        move = self.transitions.get(role)
        return move.old if move is not None else self.owner(role)

    def owner(self, role: str) -> str:
        """Where `role` belongs: its pin, else its ring owner."""
        return self.pins.get(role) or self.ring.owner(role)

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
        for role, pinned in list(self.pins.items()):
            if pinned == worker:
                del self.pins[role]
        self.capacities.pop(worker, None)

    def loads(self, queued: Mapping[str, int]) -> dict[str, float]:
        """Queued lines per worker, by ring ownership (where the work is headed)."""
        out = dict.fromkeys(self.ring.workers, 0.0)
        for role, n in queued.items():
            if n > 0:
                out[self.owner(role)] += n
        return out

    def imbalance(self, queued: Mapping[str, int]) -> float:
        caps = {w: self.capacity(w) for w in self.ring.workers}
        return imbalance(self.loads(queued), caps)

    def step(self, queued: Mapping[str, int]) -> Step:
        """One bounded step while rebalancing (see `active`); else nothing moves."""
        caps = {w: self.capacity(w) for w in self.ring.workers}
        owners = {r: self.owner(r) for r, n in queued.items() if n > 0}
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
        for c in self._candidates(owners, loads, queued, caps, budget):
            if c.score < before and (best is None or c.score < best.score):
                best = c
        if best is None:  # nothing within the budget helps: stop until the threshold is passed again
            self.active = False
            return Step(before, before, budget)
        old_vnodes = self.ring.vnodes(best.worker)
        serving = {r: self.route(r) for r in best.moved}
        if best.pin:
            self.pins.update(best.moved)
        else:
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
        budget: float,
    ) -> list[_Candidate]:
        """Fewer points for the most loaded workers, more for the least loaded: every point
        count at which another role would move, while the roles moved fit in the budget."""
        by_load = sorted(caps, key=lambda w: (loads[w] / caps[w], w))
        widest = max(self.ring.vnodes(w) for w in caps)
        held: dict[str, list[str]] = {}
        free = {r: w for r, w in owners.items() if r not in self.pins}  # roles a weight change moves
        for r, w in free.items():
            held.setdefault(w, []).append(r)
        out: list[_Candidate] = []
        for src in by_load[-_TRIED:][::-1]:
            n = self.ring.vnodes(src)
            schedule = self._drop_schedule(src, held.get(src, []))
            out += _prefixes(
                src, [n - k for k, _, _ in schedule], schedule, owners, loads, queued, caps, budget
            )
        for dst in by_load[:_TRIED]:
            n = self.ring.vnodes(dst)
            schedule = self._add_schedule(dst, widest, free)
            out += _prefixes(
                dst, [n + k for k, _, _ in schedule], schedule, owners, loads, queued, caps, budget
            )
        if not any(c.score < imbalance(loads, caps) for c in out):
            out += _pins(by_load[-1], by_load[0], owners, loads, queued, caps, budget)
        return out

    def _drop_schedule(self, worker: str, roles: list[str]) -> list[tuple[int, str, str]]:
        """(points to drop, role, its new worker) for each of `worker`'s roles that would
        move if `worker` dropped its highest-numbered points, fewest drops first. A role
        moves once every point of the worker's run that starts at its owning point is
        dropped; it goes to the owner of the point after the run."""
        pts, who, idx = self.ring.points, self.ring.point_owners, self.ring.point_indices
        n = self.ring.vnodes(worker)
        out = []
        for role in roles:
            k, lowest = self._slots[role], n
            while who[k] == worker:
                lowest = min(lowest, idx[k])
                k = (k + 1) % len(pts)
                if k == self._slots[role]:
                    break  # the worker holds the whole ring
            if who[k] != worker and n - lowest < n:  # a worker keeps at least one point
                out.append((n - lowest, role, who[k]))
        return sorted(out)

    def _add_schedule(self, worker: str, most: int, owners: dict[str, str]) -> list[tuple[int, str, str]]:
        """(points to add, role, `worker`) for each role `worker` would take with up to `most`
        more points (a new point takes the roles just before it), fewest points first."""
        n = self.ring.vnodes(worker)
        new = sorted((p, k + 1) for k, p in enumerate(self.ring.vnode_points(worker, n + most)[n:]))
        positions = [p for p, _ in new]
        pts = self.ring.points
        out = []
        for role, w in owners.items():
            if w == worker:
                continue
            h, p = self._hashes[role], pts[self._slots[role]]
            lo = bisect.bisect_left(positions, h)
            if p >= h:
                inside = new[lo : bisect.bisect_left(positions, p)]
            else:  # the role's arc wraps past the top of the ring
                inside = new[lo:] + new[: bisect.bisect_left(positions, p)]
            if inside:
                out.append((min(k for _, k in inside), role, worker))
        return sorted(out)


def _pins(
    src: str,
    dst: str,
    owners: Mapping[str, str],
    loads: Mapping[str, float],
    queued: Mapping[str, int],
    caps: Mapping[str, float],
    budget: float,
) -> list[_Candidate]:
    """Moving one of `src`'s roles to `dst` by hand, for each role that fits the budget."""
    out = []
    for role, w in owners.items():
        if w == src and queued[role] <= budget:
            after = dict(loads)
            after[src] -= queued[role]
            after[dst] += queued[role]
            out.append(_Candidate(dst, 0, {role: dst}, queued[role], imbalance(after, caps), pin=True))
    return out


def _prefixes(
    worker: str,
    vnodes: list[int],
    schedule: list[tuple[int, str, str]],
    owners: Mapping[str, str],
    loads: Mapping[str, float],
    queued: Mapping[str, int],
    caps: Mapping[str, float],
    budget: float,
) -> list[_Candidate]:
    """A candidate at each point count of `schedule` (roles in the order they would move),
    as long as the lines moved fit in `budget`; loads are updated role by role."""
    after = dict(loads)
    moved: dict[str, str] = {}
    lines = 0
    out: list[_Candidate] = []
    for j, (k, role, new) in enumerate(schedule):
        lines += queued[role]
        if lines > budget:
            break
        after[owners[role]] -= queued[role]
        after[new] += queued[role]
        moved[role] = new
        if j + 1 == len(schedule) or schedule[j + 1][0] != k:  # all roles at this count are in
            out.append(_Candidate(worker, vnodes[j], dict(moved), lines, imbalance(after, caps)))
    return out
