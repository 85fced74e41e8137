"""Queued backend time by weight and deadline, so admission asks "how much work would go
before this request" in O(log n) (a Fenwick tree per weight over 250 ms deadline bins)."""

from __future__ import annotations

import math
from array import array

RESOLUTION_S = 0.25
BINS = 1 << 14
"""About 1.1 hours of deadlines at 250 ms; later ones count in the last bin (conservative),
and the policy rebuilds the index on a new base when that happens."""
PAST_S = 60.0
"""The first deadline seen sits this far above the base, so earlier ones still have bins."""


class CostIndex:
    """Sum of queued cost with weight >= w and deadline <= t, by prefix sums per weight."""

    def __init__(self) -> None:
        self._base: float | None = None
        self._trees: dict[float, array[float]] = {}
        self._totals: dict[float, float] = {}
        self.out_of_range = False
        """A deadline fell past the last bin: the owner should rebuild the index."""

    def _bin(self, t: float) -> int:
        if self._base is None:
            self._base = t - PAST_S
        b = int((t - self._base) / RESOLUTION_S) if math.isfinite(t) else BINS - 1
        if b >= BINS:
            self.out_of_range = True
            return BINS - 1
        return max(0, b)

    def add(self, weight: float, deadline_s: float, cost: float) -> None:
        """Add (or, with a negative cost, remove) queued work."""
        tree = self._trees.get(weight)
        if tree is None:
            tree = self._trees[weight] = array("d", bytes(8 * BINS))
        self._totals[weight] = self._totals.get(weight, 0.0) + cost
        i = self._bin(deadline_s) + 1
        while i <= BINS:
            tree[i - 1] += cost
            i += i & -i

    def ahead(self, weight: float, by_s: float) -> float:
        """Queued cost at `weight` or above due by `by_s` (all of it for infinite weights)."""
        b = self._bin(by_s) + 1
        total = 0.0
        for w, tree in self._trees.items():
            if w < weight:
                continue
            if math.isinf(w):
                total += self._totals[w]
                continue
            i = b
            while i > 0:
                total += tree[i - 1]
                i -= i & -i
        return max(0.0, total)
