"""One voice hotter than a worker: its lines spread over its first k owners on the ring.

The ring gives each role (or voice) one worker, and the rebalancer keeps the roles' load in
proportion to capacity by moving whole roles. A single role can be more than any worker can
carry (a speech server where every client asks for one voice): no move helps, so such a
key is replicated. Its share of the recent lines, over one worker's share of the capacity,
says how many owners it needs (k); they are the first k distinct workers clockwise from the
key, so the same few workers keep its voice loaded. Each of its lines goes to the first of
them in ring order whose lines in flight per unit of capacity stay within (1 + `HOT_MARGIN`)
of the least loaded of them (consistent hashing with loads bounded over the key's owners).
A key that is not hot keeps its one worker: replication is for what moving cannot fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

HOT_MARGIN = 0.25
"""A key is hot past (1 + this) times one worker's share of the load; an owner takes a line
while its load stays within (1 + this) of the lightest owner's."""
MIN_HOT_LINES = 8
"""Fewer recent lines than this never make a key hot (a burst of one is not a trend)."""


def replicas_needed(key_lines: float, total_lines: float, worker_share: float, workers: int) -> int:
    """How many owners a key needs: 1 unless its share of the recent lines passes
    (1 + `HOT_MARGIN`) times `worker_share` (one worker's share of the capacity); then enough
    that each carries at most a worker's share, at most `workers`."""
    if key_lines < MIN_HOT_LINES or total_lines <= 0 or worker_share <= 0 or workers <= 1:
        return 1
    share = key_lines / total_lines
    if share <= (1 + HOT_MARGIN) * worker_share:
        return 1
    return max(1, min(workers, math.ceil(share / worker_share - 1e-9)))


def pick(owners: Sequence[str], in_flight: Mapping[str, float], capacity: Mapping[str, float]) -> str:
    """The worker for one line of a hot key: the first of `owners` (ring order) whose lines in
    flight per unit of capacity, with this one, stay within (1 + `HOT_MARGIN`) of the least
    loaded owner's: the key's first owner keeps its lines while the others are as busy, and
    no owner runs more than the margin ahead of the lightest."""

    def per_unit(w: str) -> float:
        return (in_flight.get(w, 0.0) + 1) / capacity[w]

    bound = (1 + HOT_MARGIN) * min(per_unit(w) for w in owners)
    return next(w for w in owners if per_unit(w) <= bound)
