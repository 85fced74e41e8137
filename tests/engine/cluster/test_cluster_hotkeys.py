"""A voice hotter than one worker: replicated over its first k ring owners, each line to the
first of them within the load bound (no Ray here; the spread on real workers is in
test_cluster_ray.py and benchmarks/bench_cluster.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster.hotkeys import HOT_MARGIN, MIN_HOT_LINES, pick, replicas_needed


def test_a_key_within_one_workers_share_keeps_one_owner() -> None:
    assert replicas_needed(100, 400, 0.25, 4) == 1  # exactly its worker's share
    assert replicas_needed(125, 400, 0.25, 4) == 1  # within the margin
    assert replicas_needed(MIN_HOT_LINES - 1, MIN_HOT_LINES - 1, 0.25, 4) == 1  # too few to tell


def test_a_hot_key_gets_as_many_owners_as_its_load_needs() -> None:
    assert replicas_needed(400, 400, 0.25, 4) == 4  # all the load: every worker
    assert replicas_needed(200, 400, 0.25, 4) == 2
    assert replicas_needed(800, 800, 0.125, 8) == 8
    assert replicas_needed(800, 800, 0.125, 3) == 3  # no more owners than workers


def test_lines_spread_over_the_owners_within_the_bound() -> None:
    caps = {"a": 1.0, "b": 1.0, "c": 2.0, "d": 1.0}
    load = dict.fromkeys(caps, 0.0)
    order = ["c", "a", "d"]
    sent = []
    for _ in range(40):
        w = pick(order, load, caps)
        load[w] += 1
        sent.append(w)
    assert sent[0] == "c" and set(sent) == {"a", "c", "d"} and load["b"] == 0  # b is not an owner
    per_unit = [load[w] / caps[w] for w in order]
    assert max(per_unit) <= (1 + HOT_MARGIN) * min(per_unit) + 1  # c (twice the capacity) takes twice


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=2, max_size=8),
    st.lists(st.floats(0.5, 4.0), min_size=8, max_size=8),
    st.integers(1, 8),
)
def test_a_pick_is_within_the_bound_of_the_lightest_owner(
    loads: list[int], caps_in: list[float], k: int
) -> None:
    workers = [f"w{i}" for i in range(len(loads))]
    caps = dict(zip(workers, caps_in, strict=False))
    load = {w: float(n) for w, n in zip(workers, loads, strict=True)}
    owners = workers[: min(k, len(workers))]
    w = pick(owners, load, caps)
    assert w in owners
    lightest = min((load[o] + 1) / caps[o] for o in owners)
    assert (load[w] + 1) / caps[w] <= (1 + HOT_MARGIN) * lightest
    assert all((load[o] + 1) / caps[o] > (1 + HOT_MARGIN) * lightest for o in owners[: owners.index(w)])
