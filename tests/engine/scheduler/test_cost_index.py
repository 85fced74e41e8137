"""The admission index answers "queued work at this weight or above, due by then" exactly
as a scan of the queue would, bin by bin, whatever was added and taken away."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.scheduler.cost_index import BINS, RESOLUTION_S, CostIndex

WEIGHTS = st.sampled_from([0.5, 1.0, 3.0, 10.0, math.inf])
DEADLINES = st.floats(0.0, 3000.0)  # NB: within the index's range (the first deadline is its base + 60 s)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(WEIGHTS, DEADLINES, st.floats(0.001, 5.0), st.booleans()), min_size=1, max_size=60),
    WEIGHTS,
    DEADLINES,
)
def test_ahead_equals_a_scan_of_the_queue(ops: list[tuple[float, float, float, bool]], weight: float,
                                          by_s: float) -> None:  # fmt: skip
    index = CostIndex()
    queued: list[tuple[float, float, float]] = []
    base = ops[0][1] - 60.0  # the index's base: the first deadline it saw, less 60 s
    for w, d, cost, take_one_back in ops:
        index.add(w, d, cost)
        queued.append((w, d, cost))
        if take_one_back and len(queued) > 1:
            w0, d0, c0 = queued.pop(0)  # a request leaves: its cost comes off again
            index.add(w0, d0, -c0)
    bin_of = lambda t: max(0, min(BINS - 1, int((t - base) / RESOLUTION_S)))  # noqa: E731
    want = sum(c for w, d, c in queued if w >= weight and (math.isinf(w) or bin_of(d) <= bin_of(by_s)))
    assert index.ahead(weight, by_s) == pytest.approx(max(0.0, want), abs=1e-6)
    assert not index.out_of_range


def test_a_deadline_past_the_last_bin_asks_for_a_rebuild() -> None:
    index = CostIndex()
    index.add(1.0, 0.0, 1.0)
    assert not index.out_of_range
    index.add(1.0, BINS * RESOLUTION_S + 100.0, 2.0)  # counted in the last bin meanwhile
    assert index.out_of_range
    assert index.ahead(1.0, 1e9) == pytest.approx(3.0)
