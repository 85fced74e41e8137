"""Cost of one scheduling decision (push + pop at a steady queue depth) and of one scheduler
tick, at queue depths 10, 100, 1,000 and 10,000, for both policies.

As in the engine, the deadline scan runs once per 50 ms tick (counted in the tick's cost),
never inside a decision. Python's garbage collector stays on, so its pauses are in the
figures.

    python benchmarks/bench_scheduler_overhead.py
"""

from __future__ import annotations

import random
import time

import numpy as np
from _common import save, table

from engine.core.types import Voice
from engine.scheduler import Request, RequestClass, make_policy

ROLES = [f"R{k}" for k in range(8)]


def _request(rng: random.Random, now: float) -> Request:
    text = "a line of about ten words for the benchmark to schedule"
    voice = Voice(weight=rng.uniform(0.5, 10))
    r = Request(rng.choice(ROLES), text, voice, now + rng.uniform(0.2, 60), RequestClass.SCRIPTED)
    r.t_enqueued = now
    return r


def measure(policy_name: str, depth: int, ops: int = 2000) -> dict[str, float | str | int]:
    rng = random.Random(depth)
    policy = make_policy(policy_name)
    if hasattr(policy, "service_s"):
        policy.service_s = lambda r: 0.002  # type: ignore[attr-defined]
        policy.latency_s = lambda r: 0.01  # type: ignore[attr-defined]
    now = 1000.0
    for _ in range(depth):
        policy.push(_request(rng, now))
    decision = np.empty(ops)
    for k in range(ops):
        now += 0.001
        if k % 50 == 0:  # the engine's 50 ms tick refreshes the deadline scan (timed below)
            policy.refresh(now)
        r = _request(rng, now)
        t0 = time.perf_counter_ns()
        policy.push(r)
        policy.pop(now)
        decision[k] = time.perf_counter_ns() - t0
    ticks = np.empty(50)
    weights = {role: 1.0 for role in ROLES}
    for k in range(50):  # a tick: refresh the deadline scan, one dispatch, the heatmap column
        now += 0.05
        t0 = time.perf_counter_ns()
        policy.refresh(now)
        policy.push(_request(rng, now))
        policy.pop(now)
        policy.role_priorities(now, weights)
        ticks[k] = time.perf_counter_ns() - t0
    return {"policy": policy_name, "depth": depth,
            "decision_p50_us": float(np.percentile(decision, 50)) / 1e3,
            "decision_p99_us": float(np.percentile(decision, 99)) / 1e3,
            "tick_p50_ms": float(np.percentile(ticks, 50)) / 1e6,
            "tick_max_ms": float(ticks.max()) / 1e6}  # fmt: skip


def main() -> None:
    rows = [measure(p, d) for p in ("role_aware", "fifo") for d in (10, 100, 1_000, 10_000)]
    print(
        table(rows, ["policy", "depth", "decision_p50_us", "decision_p99_us", "tick_p50_ms", "tick_max_ms"])
    )
    print("targets: decision p99 <= 20 us at depth 1,000; tick < 2 ms at 10,000")
    print(f"wrote {save('bench_scheduler_overhead', {'rows': rows})}")


if __name__ == "__main__":
    main()
