"""A weighted consistent-hash ring: which worker holds a role's voice.

Each worker owns `round(weight * vnodes_per_unit)` points on a 64-bit ring; a role belongs
to the first point at or after its own hash, clockwise. Points come from blake2b of the
worker's name and the point's index, so every process (head, tests, another machine) puts
them in the same places, whatever `PYTHONHASHSEED` is. A worker's points are numbered, and
a lower weight drops its highest-numbered points first: a weight change moves only the
roles on the arcs of the points added or dropped, a join only roles to the new worker, a
leave only the leaving worker's roles.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable

VNODES_PER_UNIT = 128
"""Points per unit of weight: a worker of weight 1 owns 128 arcs, so its share of roles is
within about 9% (one standard deviation) of its weight's share."""
_SPACE = 1 << 64


def point(key: str) -> int:
    """Where `key` sits on the ring (the same in every process and on every machine)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def _vnode_point(worker: str, index: int) -> int:
    return point(f"{worker}\x1f{index}")


class HashRing:
    """Roles onto workers, weighted by capacity; lookups O(log n) in the number of points."""

    def __init__(self, vnodes_per_unit: int = VNODES_PER_UNIT) -> None:
        if vnodes_per_unit < 1:
            raise ValueError(f"vnodes_per_unit must be at least 1, got {vnodes_per_unit}")
        self.vnodes_per_unit = vnodes_per_unit
        self._counts: dict[str, int] = {}
        self._points: list[int] = []
        self._owners: list[str] = []
        self._indices: list[int] = []
        """Each point's number among its worker's points (higher numbers go first)."""
        self._cache: dict[str, list[int]] = {}
        """Each worker's points by index, computed once (hashing dominates a rebuild)."""

    # --- membership ------------------------------------------------------------------
    def add(self, worker: str, weight: float = 1.0) -> None:
        """Put `worker` on the ring with `weight` (its capacity); `ValueError` if already there."""
        if worker in self._counts:
            raise ValueError(f"worker {worker!r} is already on the ring")
        self._counts[worker] = self._count(weight)
        self._rebuild()

    def remove(self, worker: str) -> None:
        """Take `worker` off the ring (a leave or a death); its roles go to their next owners."""
        if self._counts.pop(worker, None) is None:
            raise KeyError(f"worker {worker!r} is not on the ring")
        self._rebuild()

    def set_weight(self, worker: str, weight: float) -> None:
        self.set_vnodes(worker, self._count(weight))

    def set_vnodes(self, worker: str, count: int) -> None:
        """Give `worker` exactly `count` points (at least one): the finest weight step."""
        if worker not in self._counts:
            raise KeyError(f"worker {worker!r} is not on the ring")
        if count < 1:
            raise ValueError(f"a worker keeps at least one point, not {count}")
        if count != self._counts[worker]:
            self._counts[worker] = count
            self._rebuild()

    def _count(self, weight: float) -> int:
        if not weight > 0:
            raise ValueError(f"a worker's weight must be positive, got {weight}")
        return max(1, round(weight * self.vnodes_per_unit))

    def vnode_points(self, worker: str, count: int) -> list[int]:
        """The first `count` points of `worker` (cached; also used to evaluate a weight change)."""
        cached = self._cache.setdefault(worker, [])
        while len(cached) < count:
            cached.append(_vnode_point(worker, len(cached)))
        return cached[:count]

    def _rebuild(self) -> None:
        triples = sorted(
            (p, w, i) for w, n in self._counts.items() for i, p in enumerate(self.vnode_points(w, n))
        )
        self._points = [p for p, _, _ in triples]
        self._owners = [w for _, w, _ in triples]
        self._indices = [i for _, _, i in triples]

    # --- queries ---------------------------------------------------------------------
    @property
    def workers(self) -> dict[str, float]:
        """Each worker's weight (its point count over `vnodes_per_unit`)."""
        return {w: n / self.vnodes_per_unit for w, n in self._counts.items()}

    def vnodes(self, worker: str) -> int:
        return self._counts[worker]

    def __len__(self) -> int:
        return len(self._counts)

    def __contains__(self, worker: object) -> bool:
        return worker in self._counts

    def slot(self, key: str) -> int:
        """Index of the point that owns `key` (first at or after its hash, wrapping)."""
        if not self._points:
            raise LookupError("the ring has no workers")
        return bisect.bisect_left(self._points, point(key)) % len(self._points)

    @property
    def points(self) -> list[int]:
        return self._points

    @property
    def point_owners(self) -> list[str]:
        return self._owners

    @property
    def point_indices(self) -> list[int]:
        return self._indices

    def owner(self, key: str) -> str:
        """The worker that holds `key` (a role)."""
        return self._owners[self.slot(key)]

    def owners(self, key: str, n: int) -> list[str]:
        """The first `n` distinct workers clockwise from `key`: its owner, then where its
        work goes if the owner dies, and so on (fewer if the ring has fewer workers)."""
        if n < 1 or not self._points:
            return []
        start = self.slot(key)
        out: list[str] = []
        for k in range(len(self._points)):
            w = self._owners[(start + k) % len(self._points)]
            if w not in out:
                out.append(w)
                if len(out) == min(n, len(self._counts)):
                    break
        return out

    def assignment(self, keys: Iterable[str]) -> dict[str, str]:
        """Each key's owner."""
        return {k: self.owner(k) for k in keys}

    def arc_shares(self) -> dict[str, float]:
        """Each worker's share of the ring's circumference (its expected share of roles)."""
        shares = dict.fromkeys(self._counts, 0.0)
        for k, p in enumerate(self._points):
            prev = self._points[k - 1] if k else self._points[-1] - _SPACE
            shares[self._owners[k]] += (p - prev) / _SPACE
        return shares
