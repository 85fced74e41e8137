"""Load-aware rebalancing: under an imposed skew the imbalance falls below the threshold in
a bounded number of steps, no step moves more than its share, moved roles are double-routed."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster.balance import IMBALANCE_THRESHOLD, MOVE_SHARE, Rebalancer, imbalance
from engine.cluster.ring import HashRing

MAX_STEPS = 60


def skewed(weights: list[float], capacities: list[float]) -> Rebalancer:
    """A ring whose weights disagree with the workers' capacities (the imposed skew)."""
    ring = HashRing()
    for k, w in enumerate(weights):
        ring.add(f"w{k}", w)
    return Rebalancer(ring, {f"w{k}": c for k, c in enumerate(capacities)})


def run_to_balance(rb: Rebalancer, queued: dict[str, int]) -> list[float]:
    """Step until balanced, each new owner confirming its moved roles; the imbalances seen."""
    seen = [rb.imbalance(queued)]
    for _ in range(MAX_STEPS):
        step = rb.step(queued)
        assert step.moved_lines <= MOVE_SHARE * sum(queued.values())
        for m in step.moves:
            assert rb.route(m.role) == m.old != m.new  # double-routed: the old worker still voices it
            assert rb.confirm(m.role, m.new) and rb.route(m.role) == m.new
        seen.append(rb.imbalance(queued))
        if not step.moves:
            break
    return seen


def test_the_imbalance_measure() -> None:
    caps = {"a": 1.0, "b": 1.0, "c": 2.0}
    assert imbalance({"a": 10, "b": 10, "c": 20}, caps) == 0.0  # in proportion to capacity
    assert math.isclose(imbalance({"a": 10}, caps), 1.0)  # all on a smallest worker
    assert imbalance({}, caps) == 0.0 and imbalance({"a": 3}, {"a": 1.0}) == 0.0
    assert 0 < imbalance({"a": 10, "b": 10, "c": 10}, caps) < IMBALANCE_THRESHOLD


def test_a_balanced_ring_is_left_alone() -> None:
    rb = skewed([1.0] * 4, [1.0] * 4)
    queued = {f"role-{k}": 5 for k in range(400)}
    step = rb.step(queued)
    assert step.imbalance_before <= IMBALANCE_THRESHOLD and not step.moves and not rb.transitions


def test_an_imposed_skew_is_rebalanced_within_bounded_steps() -> None:
    rb = skewed([6.0, 0.25, 0.25, 0.25], [1.0] * 4)
    queued = {f"role-{k}": 4 for k in range(300)}
    seen = run_to_balance(rb, queued)
    assert seen[0] > IMBALANCE_THRESHOLD
    assert seen[-1] <= IMBALANCE_THRESHOLD and len(seen) - 1 < MAX_STEPS
    assert all(b <= a for a, b in itertools.pairwise(seen))  # every step helps


@pytest.mark.slow
@settings(derandomize=True, max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from([0.125, 0.25, 1.0, 4.0, 8.0]), min_size=2, max_size=6),
    st.lists(st.integers(1, 9), min_size=150, max_size=150),
)
def test_any_skew_ends_balanced_and_no_step_moves_too_much(weights: list[float], depths: list[int]) -> None:
    rb = skewed(weights, [1.0] * len(weights))
    queued = {f"line-role-{k}": n for k, n in enumerate(depths)}
    seen = run_to_balance(rb, queued)
    assert seen[-1] <= IMBALANCE_THRESHOLD


def test_a_move_back_before_the_switch_cancels_it_and_a_death_ends_moves() -> None:
    rb = skewed([6.0, 0.25, 0.25], [1.0] * 3)
    queued = {f"role-{k}": 4 for k in range(300)}
    step = rb.step(queued)
    assert step.moves and set(rb.transitions) == {m.role for m in step.moves}
    assert not rb.confirm(step.moves[0].role, step.moves[0].old)  # only the new owner switches it
    rb.forget(step.moves[0].new)
    assert all(step.moves[0].new not in (m.old, m.new) for m in rb.transitions.values())
