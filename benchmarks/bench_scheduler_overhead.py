"""Cost of one scheduling decision and of one scheduler tick, at queue depths 10, 100,
1,000 and 10,000, for both policies, with two backends (a neural one and espeak-ng, one
queue each, as the scheduler keeps them) and the accept path the scheduler uses:
- a decision: the push of an arrival, a head pop for one backend and a batch-filling pop
  with a length-bucket test (the accept path); the admission check of an arrival (a client
  with a give-up time) is timed on its own; each part is also timed alone;
- every figure twice: wall time (what the engine thread waits, including the moments the
  OS gives the core to another process: on 2 shared cores that dominates the p99) and the
  thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`: the decision's cost, collector included);
- a tick: shedding what is past its give-up time, the deadline scan (with the overload
  deferral), a dispatch, and the priority column of the heatmap.
Python's garbage collector stays on, so its pauses are in the figures. Each figure is the
median of `--repeats` passes (microsecond tails on shared cores move 2-3x between passes).

    python benchmarks/bench_scheduler_overhead.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np
from _common import save, table

from engine.core.types import Voice
from engine.scheduler import PerBackend, Request, RequestClass, make_policy
from engine.scheduler.role_aware import RoleAwarePolicy

ROLES = [f"R{k}" for k in range(8)]
BACKENDS = ("kokoro", "espeak")
TARGET_US = 20.0
SPREAD = ["cpu_pop_p99_us", "cpu_mate_p99_us", "cpu_push_p99_us", "cpu_admit_p99_us", "cpu_decision_p99_us"]


def _request(rng: random.Random, now: float) -> Request:
    text = "a line of about ten words for the benchmark to schedule" + " word" * rng.randint(0, 20)
    backend = rng.choice(BACKENDS)
    voice = Voice(backend=backend, weight=float(rng.choice([0.5, 1, 1.5, 3, 4, 10])))
    r = Request(rng.choice(ROLES), text, voice, now + rng.uniform(0.2, 60), RequestClass.SCRIPTED,
                backend=backend, give_up_s=2.0)  # fmt: skip
    r.t_enqueued = now
    return r


def _queues(policy_name: str) -> PerBackend:
    def make(backend: str):  # type: ignore[no-untyped-def]
        p = make_policy(policy_name)
        if isinstance(p, RoleAwarePolicy):
            p.service_s = lambda r: 0.002
            p.latency_s = lambda r: 0.01
        return p

    return PerBackend(make)


def measure(policy_name: str, depth: int, ops: int = 3000) -> dict[str, float | str | int]:
    rng = random.Random(depth)
    queues = _queues(policy_name)
    now = 1000.0
    for _ in range(depth):
        queues.push(_request(rng, now))

    decision, admission = np.empty(ops), np.empty(ops)
    cpu = {part: np.zeros(ops) for part in ("decision", "push", "pop", "mate", "admit")}
    wall, thread = time.perf_counter_ns, time.thread_time_ns
    for k in range(ops):
        now += 0.001
        if k % 50 == 0:  # the engine's 50 ms tick refreshes the deadline scan (timed below)
            queues.refresh(now)
        r = _request(rng, now)
        backend = BACKENDS[k % 2]
        t0, c0 = wall(), thread()
        queues.admit(r, now)
        c1 = thread()
        admission[k], cpu["admit"][k] = wall() - t0, c1 - c0
        t0, c0 = wall(), thread()
        queues.push(r)
        c1 = thread()
        head = queues.pop(backend, now)
        c2 = thread()
        if head is not None:  # one batch-mate of the same length bucket, as the scheduler asks
            bucket = len(head.text) // 48
            queues.pop(backend, now, lambda c, b=bucket: len(c.text) // 48 == b)  # type: ignore[misc]
        c3 = thread()
        decision[k] = wall() - t0
        cpu["push"][k], cpu["pop"][k], cpu["mate"][k], cpu["decision"][k] = c1 - c0, c2 - c1, c3 - c2, c3 - c0
        queues.push(_request(rng, now))  # keep the depth steady (two pops, two pushes)
    ticks = np.empty(50)
    weights = {role: 1.0 for role in ROLES}
    for k in range(50):
        now += 0.05
        t0 = time.perf_counter_ns()
        queues.expire(now)
        queues.refresh(now)
        queues.push(_request(rng, now))
        queues.pop(BACKENDS[k % 2], now)
        queues.role_priorities(now, weights)
        ticks[k] = time.perf_counter_ns() - t0
    return {"policy": policy_name, "depth": depth, "queued_at_end": len(queues),
            "decision_p50_us": float(np.percentile(decision, 50)) / 1e3,
            "decision_p99_us": float(np.percentile(decision, 99)) / 1e3,
            **{f"cpu_{part}_p99_us": float(np.percentile(v, 99)) / 1e3 for part, v in cpu.items()},
            "cpu_decision_p50_us": float(np.percentile(cpu["decision"], 50)) / 1e3,
            "admit_p50_us": float(np.percentile(admission, 50)) / 1e3,
            "admit_p99_us": float(np.percentile(admission, 99)) / 1e3,
            "tick_p50_ms": float(np.percentile(ticks, 50)) / 1e6,
            "tick_max_ms": float(ticks.max()) / 1e6}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5, help="passes per policy and depth (medians reported)")
    args = ap.parse_args()
    rows, spread = [], {}
    for p in ("role_aware", "fifo"):
        for d in (10, 100, 1_000, 10_000):
            passes = [measure(p, d) for _ in range(args.repeats)]
            row = dict(passes[0])
            for key, value in row.items():
                if isinstance(value, float):
                    row[key] = statistics.median(float(x[key]) for x in passes)
            rows.append(row)
            values = {key: [float(x[key]) for x in passes] for key in SPREAD}
            spread[f"{p}@{d}"] = {key: [min(v), max(v)] for key, v in values.items()}
    cols = ["policy", "depth", "queued_at_end", "decision_p50_us", "decision_p99_us", "cpu_decision_p50_us",
            "cpu_decision_p99_us", "cpu_push_p99_us", "cpu_pop_p99_us", "cpu_mate_p99_us", "admit_p99_us",
            "cpu_admit_p99_us", "tick_p50_ms", "tick_max_ms"]  # fmt: skip
    print(table(rows, cols))
    deep = next(r for r in rows if r["depth"] == 10_000 and r["policy"] == "role_aware")
    print(f"role-aware at depth 10,000, p99, thread CPU time (target <= {TARGET_US:g} us a decision): "
          f"choosing the next request {deep['cpu_pop_p99_us']:.1f} us (head pop), a batch-mate for it "
          f"{deep['cpu_mate_p99_us']:.1f} us (pop with the accept test); queueing an arrival "
          f"{deep['cpu_push_p99_us']:.1f} us, its admission {deep['cpu_admit_p99_us']:.1f} us; all three of "
          f"push, pop and batch-mate together {deep['cpu_decision_p99_us']:.1f} us CPU, "
          f"{deep['decision_p99_us']:.1f} us wall (the collector's pauses land in this tail); a tick "
          f"includes the scan of up to 2,048 deadlines")  # fmt: skip
    low = spread["role_aware@10000"]
    print(f"over {args.repeats} passes (median above), p99 CPU [min, max]: "
          + ", ".join(f"{k.removeprefix('cpu_').removesuffix('_p99_us')} [{v[0]:.1f}, {v[1]:.1f}]"
                      for k, v in low.items()))  # fmt: skip
    result = {"rows": rows, "spread": spread, "repeats": args.repeats, "target_us": TARGET_US}
    print(f"wrote {save('bench_scheduler_overhead', result)}")


if __name__ == "__main__":
    main()
