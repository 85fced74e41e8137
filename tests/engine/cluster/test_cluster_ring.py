"""The weighted consistent-hash ring: joins and leaves move about 1/N of roles and only
those, weights shift load in proportion, and lookups are the same in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster.ring import HashRing

ROOT = Path(__file__).resolve().parents[3]
ROLES = [f"role-{k}" for k in range(4000)]
TOLERANCE = 0.5
"""A join or leave moves between 0.5/N and 1.5/N of the roles. With 128 points per unit of
weight a worker's share is within about 9% of its ideal (one standard deviation), and 4000
roles add about 6% of sampling spread at N = 16: the bound is over four deviations away,
and the examples are derandomized, so the test does not flake."""

names = st.lists(st.text("abcdefghij0123456789-", min_size=1, max_size=12), min_size=2, max_size=16,
                 unique=True)  # fmt: skip
deterministic = settings(derandomize=True, max_examples=25, deadline=None)


def ring_of(workers: list[str], weights: list[float] | None = None) -> HashRing:
    ring = HashRing()
    for k, w in enumerate(workers):
        ring.add(w, weights[k] if weights else 1.0)
    return ring


@deterministic
@given(names, st.text("xyz", min_size=1, max_size=6))
def test_a_join_moves_about_one_nth_of_roles_and_only_to_the_new_worker(workers: list[str], new: str) -> None:
    ring = ring_of(workers)
    before = ring.assignment(ROLES)
    ring.add(new)
    after = ring.assignment(ROLES)
    moved = [r for r in ROLES if before[r] != after[r]]
    assert all(after[r] == new for r in moved)
    ideal = 1 / len(ring)
    assert (1 - TOLERANCE) * ideal <= len(moved) / len(ROLES) <= (1 + TOLERANCE) * ideal


@deterministic
@given(names, st.data())
def test_a_leave_moves_only_the_leaving_workers_roles(workers: list[str], data: st.DataObject) -> None:
    ring = ring_of(workers)
    gone = data.draw(st.sampled_from(workers))
    before = ring.assignment(ROLES)
    ring.remove(gone)
    after = ring.assignment(ROLES)
    moved = [r for r in ROLES if before[r] != after[r]]
    assert moved == [r for r in ROLES if before[r] == gone]
    ideal = 1 / len(workers)
    assert (1 - TOLERANCE) * ideal <= len(moved) / len(ROLES) <= (1 + TOLERANCE) * ideal


@deterministic
@given(st.lists(st.integers(1, 4), min_size=2, max_size=6))
def test_weights_shift_load_in_proportion(weights: list[int]) -> None:
    ring = ring_of([f"w{k}" for k in range(len(weights))], [float(w) for w in weights])
    counts = {w: 0 for w in ring.workers}
    for r in ROLES:
        counts[ring.owner(r)] += 1
    for k, weight in enumerate(weights):
        ideal = weight / sum(weights)
        assert abs(counts[f"w{k}"] / len(ROLES) - ideal) <= 0.35 * ideal


@deterministic
@given(names, st.data())
def test_a_heavier_worker_only_gains_roles(workers: list[str], data: st.DataObject) -> None:
    ring = ring_of(workers)
    who = data.draw(st.sampled_from(workers))
    before = ring.assignment(ROLES[:500])
    ring.set_weight(who, data.draw(st.floats(1.05, 4.0)))
    after = ring.assignment(ROLES[:500])
    assert all(after[r] == who for r in ROLES[:500] if before[r] != after[r])


def test_owners_are_distinct_and_start_with_the_owner() -> None:
    ring = ring_of(["a", "b", "c", "d"])
    for role in ROLES[:200]:
        chain = ring.owners(role, 3)
        assert chain[0] == ring.owner(role) and len(set(chain)) == 3
        assert ring.owners(role, 10) == ring.owners(role, 4)  # no more than there are workers
        ring.remove(chain[0])
        assert ring.owner(role) == chain[1]  # a dead owner's work goes to the next in line
        ring.add(chain[0])


def test_bad_membership_changes_are_clear_errors() -> None:
    ring = ring_of(["a"])
    with pytest.raises(ValueError, match="already on the ring"):
        ring.add("a")
    with pytest.raises(KeyError, match="not on the ring"):
        ring.remove("b")
    with pytest.raises(ValueError, match="must be positive"):
        ring.set_weight("a", 0.0)
    ring.remove("a")
    with pytest.raises(LookupError, match="no workers"):
        ring.owner("x")


def test_lookups_are_the_same_in_another_process() -> None:
    ring = ring_of(["alpha", "beta", "gamma"], [1.0, 2.0, 0.5])
    here = ring.assignment(ROLES[:300])
    code = (
        "import json; from engine.cluster.ring import HashRing\n"
        "r = HashRing()\n"
        "for w, x in (('alpha', 1.0), ('beta', 2.0), ('gamma', 0.5)): r.add(w, x)\n"
        "print(json.dumps(r.assignment([f'role-{k}' for k in range(300)])))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here
