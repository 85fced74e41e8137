"""Scale-out on Ray: the ring, scaling over workers, a worker killed mid-run, role-aware vs
FIFO over the cluster. Real Ray on this machine; workers are actors.

- Ring (no Ray): one rebalancing step's time at 64 workers (target < 150 ms); the share of
  roles a join or a leave moves, against the ideal 1/N.
- Scaling: throughput (audio seconds per second) with 1, 2, 4, 8 workers that each take a
  batched model's service time (`SimulatedSynthesizer`: base_s + per_line_s * n, sleeping,
  so eight fit on two shared cores), after the rebalancer has spread the roles; efficiency
  = throughput(N) / (N * throughput(1)), target >= 0.8 at 8. Also espeak-ng workers, 1 and
  2 (what this 2-core machine holds).
- Loss: 4 simulated workers, one killed (SIGKILL) or stalled (SIGSTOP, past its heartbeat
  TTL) mid-run: lines lost (target 0), lines re-sent, late duplicates dropped, and the time
  from the loss until its lines were voiced elsewhere.
- Hot key: one voice at 8x one worker's capacity over 4 simulated workers, spread over its
  ring owners vs one owner: lines per worker max/mean (target <= 1.25) and throughput
  (`--hot-key` runs this section alone and keeps the others).
- Lead-role p95, role-aware vs FIFO, 200 concurrent requests over 8 roles (the load of
  bench_scheduler_ab), the scheduler dispatching to 4 simulated cluster workers.

    python benchmarks/bench_cluster.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ray
from _common import save, saved, table

from engine.cluster.balance import Rebalancer
from engine.cluster.connect import ClusterSynthesizer, RayCluster, connect
from engine.cluster.head import ClusterHead
from engine.cluster.ring import HashRing
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import SynthRequest

COST = {"base_s": 0.2, "per_line_s": 0.02, "max_batch": 16}
"""A batched neural model's cost curve (as in bench_scheduler_ab's service model, scaled up
so that the head's own work per batch stays small beside it on this shared machine)."""
WORDS = "the night was long and the harbour lights burned low while we waited for word".split()  # noqa: SIM905


def ring_figures(repeats: int) -> dict[str, Any]:
    rng = random.Random(7)
    roles = [f"role-{k}" for k in range(5000)]
    moved: dict[str, list[float]] = {}
    for n in (8, 16, 64):
        for rep in range(repeats):
            ring = HashRing()
            for k in range(n):
                ring.add(f"node-{rep}-{k}")
            before = ring.assignment(roles)
            ring.add(f"node-{rep}-new")
            joined = sum(before[r] != ring.owner(r) for r in roles) / len(roles)
            ring.remove(f"node-{rep}-new")
            ring.remove(f"node-{rep}-0")
            left = sum(before[r] != ring.owner(r) for r in roles) / len(roles)
            moved.setdefault(f"join@{n}", []).append(joined * (n + 1))
            moved.setdefault(f"leave@{n}", []).append(left * n)
    step_ms: list[float] = []
    moving_steps = 0
    for rep in range(repeats):
        ring = HashRing()
        for k in range(64):  # the skew: a quarter of the workers hold 16 times their share
            ring.add(f"w{rep}-{k}", 4.0 if k % 4 == 0 else 0.25)
        rb = Rebalancer(ring, {w: 1.0 for w in ring.workers})
        queued = {f"role-{k}": rng.randint(1, 20) for k in range(2000)}
        for _ in range(5):
            t = time.perf_counter()
            step = rb.step(queued)
            step_ms.append((time.perf_counter() - t) * 1000)
            moving_steps += bool(step.moves)
            for m in step.moves:
                rb.confirm(m.role, m.new)
    return {
        "moved_over_ideal": {k: statistics.median(v) for k, v in moved.items()},
        "rebalance_step_ms_64": {
            "median": statistics.median(step_ms),
            "max": max(step_ms),
            "steps": len(step_ms),
            "steps_that_moved": moving_steps,
        },
    }


def role_batches(n_roles: int, n_batches: int, size: int = 16) -> list[list[SynthRequest]]:
    """`n_batches` batches of one role's lines each (as the scheduler batches a role), the
    roles taken in turn, shuffled."""
    rng = random.Random(3)
    out = []
    for b in range(n_batches):
        text = " ".join(rng.choices(WORDS, k=8))
        out.append([SynthRequest(text, Voice(), b * size + j, f"R{b % n_roles}") for j in range(size)])
    rng.shuffle(out)
    return out


def pump(
    synth: ClusterSynthesizer, batches: Sequence[list[SynthRequest]], in_flight: int
) -> dict[str, float]:
    """Voice every batch with `in_flight` at a time; audio s per s and per-batch latencies."""
    lat: list[float] = []

    def one(batch: list[SynthRequest]) -> float:
        t = time.monotonic()
        audio = synth.synthesize(batch)
        lat.append(time.monotonic() - t)
        return sum(a.size for a in audio) / SAMPLE_RATE_HZ

    t0 = time.monotonic()
    with ThreadPoolExecutor(in_flight) as pool:
        audio_s = sum(pool.map(one, batches))
    wall = time.monotonic() - t0
    return {"audio_s_per_s": audio_s / wall, "wall_s": wall, "batch_p50_s": statistics.median(lat)}


def balanced(synth: ClusterSynthesizer, batches: Sequence[list[SynthRequest]]) -> tuple[float, float]:
    """Route one pass's load and rebalance until settled: the imbalance as hashed and after.
    NB: the rebalancer is asked to act at any imbalance here (threshold 0, down to 0.005),
    so the figure measures the cluster, not the design's 0.18 trigger, which lets a ring of
    4 workers and 64 roles stay as hashed (imbalance about 0.03, a worker with 1.5x the mean)."""
    head = synth.head
    head.note_load(dict(Counter(r.role for batch in batches for r in batch)))
    hashed = head.rebalancer.imbalance(head.recent_load())
    head.rebalancer.threshold, head.rebalancer.settle = 0.0, 0.005
    for _ in range(400):
        step = head.rebalance(decay=False)
        if not step.moves:
            break
    head.settle(60)
    return hashed, head.rebalancer.imbalance(head.recent_load())


def scaling(repeats: int, sizes: Sequence[int], roles: int) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        synth = ClusterSynthesizer(RayCluster(heartbeat_s=None, workers_per_node=n, simulated=COST))
        try:
            batches = role_batches(roles, 16 * n)
            hashed, imb = balanced(synth, batches)
            runs = [pump(synth, batches, 4 * n) for _ in range(repeats)]
            speeds = [r["audio_s_per_s"] for r in runs]
            medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            rows.append({"workers": n, "hashed_imbalance": hashed, "imbalance": imb, **medians,
                         "spread": max(speeds) / min(speeds)})  # fmt: skip
        finally:
            synth.close()
    base = rows[0]["audio_s_per_s"]
    for row in rows:
        row["efficiency"] = row["audio_s_per_s"] / (row["workers"] * base)
    return rows


def espeak_scaling(repeats: int) -> list[dict[str, Any]]:
    rows = []
    for n in (1, 2):
        synth = ClusterSynthesizer(
            RayCluster(heartbeat_s=None, processes=1, workers_per_node=n)
        )  # one process each
        try:
            batches = role_batches(8, 8 * n, size=4)
            balanced(synth, batches)
            runs = [pump(synth, batches, 2 * n) for _ in range(repeats)]
            rows.append({"workers": n, "audio_s_per_s": statistics.median(r["audio_s_per_s"] for r in runs)})
        finally:
            synth.close()
    for row in rows:
        row["efficiency"] = row["audio_s_per_s"] / (row["workers"] * rows[0]["audio_s_per_s"])
    return rows


def kill_run(repeats: int) -> list[dict[str, Any]]:
    return [_lose_one(rep, mode) for mode in ("kill", "stall") for rep in range(repeats)]


def _lose_one(rep: int, mode: str) -> dict[str, Any]:
    """4 workers, 64 batches of 16 lines; a third of the way in, one worker is killed
    (SIGKILL: Ray reports it dead) or stalled (SIGSTOP: it misses its 2 s heartbeat TTL, and
    is let go on at the end, so its late copies land and are dropped)."""
    synth = ClusterSynthesizer(RayCluster(ClusterHead(ttl_s=2.0), heartbeat_s=None, workers_per_node=4,
                                          simulated=COST))  # fmt: skip
    head = synth.head
    batches = role_batches(32, 64)
    n_lines = len(batches) * 16
    lost: list[tuple[int, float]] = []
    done_at: dict[int, float] = {}

    def lose(worker: str, tickets: list[int]) -> None:
        if not lost and head.lines_done >= n_lines // 3:
            lost.append((head.workers[worker].pid, time.monotonic()))
            os.kill(head.workers[worker].pid, signal.SIGKILL if mode == "kill" else signal.SIGSTOP)

    def one(batch: list[SynthRequest]) -> int:
        out = synth.synthesize(batch)
        done_at[batch[0].request_id] = time.monotonic()
        return len(out)

    head.on_send = lose
    try:
        with ThreadPoolExecutor(8) as pool:
            got = sum(pool.map(one, batches))
        if mode == "stall":
            os.kill(lost[0][0], signal.SIGCONT)
        head.settle(30)
        resent = set(head.resent_ids)
        hit = [done_at[b[0].request_id] for b in batches if any(r.request_id in resent for r in b)]
        return {
            "mode": mode, "run": rep, "lines": n_lines, "lines_lost": n_lines - got,
            "exactly_once": head.lines_done == n_lines, "resent": head.resent_lines,
            "duplicates_dropped": head.duplicates_dropped, "batches_hit": len(hit),
            "recovery_s": max(hit) - lost[0][1] if hit else 0.0,
        }  # fmt: skip
    finally:
        if mode == "stall" and lost:
            with contextlib.suppress(OSError):
                os.kill(lost[0][0], signal.SIGCONT)
        synth.close()


def hot_key(repeats: int) -> list[dict[str, Any]]:
    """One voice at 8x one worker's capacity: 4 simulated workers, 48 batches of 16 lines of
    one role, 8 batches in flight (a worker voices one at a time), with the hot key spread over
    its ring owners and without (one owner, as before), alternating; lines each worker voiced
    (max/mean, target <= 1.25) and the throughput."""
    rows = []
    for rep in range(repeats):
        for replicate in (True, False):
            synth = ClusterSynthesizer(RayCluster(ClusterHead(replicate=replicate), heartbeat_s=None,
                                                  workers_per_node=4, simulated=COST))  # fmt: skip
            try:
                rng = random.Random(rep)
                batches = [
                    [SynthRequest(" ".join(rng.choices(WORDS, k=8)), Voice(), b * 16 + j, "NARRATOR")
                     for j in range(16)]
                    for b in range(48)
                ]  # fmt: skip
                run = pump(synth, batches, 8)
                lines = [w.lines for w in synth.head.workers.values()]
                rows.append({"spread": "replicated" if replicate else "one owner", "run": rep,
                             "max_over_mean": max(lines) / statistics.mean(lines),
                             "lines_per_worker": "/".join(map(str, sorted(lines, reverse=True))),
                             "audio_s_per_s": run["audio_s_per_s"], "wall_s": run["wall_s"]})  # fmt: skip
            finally:
                synth.close()
    return rows


def lead_p95(repeats: int) -> dict[str, Any]:
    import bench_scheduler_ab as ab

    from engine.scheduler import Backend

    cost = {"base_s": 0.02, "per_line_s": 0.004, "max_batch": 8}
    synth = ClusterSynthesizer(RayCluster(heartbeat_s=None, workers_per_node=4, simulated=cost))
    backend = Backend(synth, slots=8)
    try:
        span = ab.capacity_s(backend, ab.make_load(0, 1.0)) / 1.3
        per: dict[str, list[dict[str, Any]]] = {"fifo": [], "role_aware": []}
        for rep in range(repeats):
            load = ab.make_load(rep + 1, span)
            for policy in per:
                per[policy].append(ab.run(policy, backend, load, 0.1 * span))
    finally:
        backend.close()
        synth.close()
    pairs = zip(per["fifo"], per["role_aware"], strict=True)
    ratios = [ra["lead_p95_ms"] / max(1e-9, f["lead_p95_ms"]) for f, ra in pairs]
    return {
        "deadline_span_s": span,
        "fifo_lead_p95_ms": statistics.median(r["lead_p95_ms"] for r in per["fifo"]),
        "role_aware_lead_p95_ms": statistics.median(r["lead_p95_ms"] for r in per["role_aware"]),
        "ratio": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
    }


def hot_key_table(repeats: int) -> dict[str, Any]:
    rows = hot_key(repeats)
    print("\none voice at 8x one worker's capacity, 4 workers (target: max/mean <= 1.25 replicated)")
    print(table(rows, ["spread", "run", "max_over_mean", "lines_per_worker", "audio_s_per_s", "wall_s"]))
    out: dict[str, Any] = {"rows": rows}
    for spread in ("replicated", "one owner"):
        mine = [r for r in rows if r["spread"] == spread]
        out[spread] = {k: statistics.median(r[k] for r in mine) for k in ("max_over_mean", "audio_s_per_s")}
    speedups = [a["audio_s_per_s"] / b["audio_s_per_s"] for a, b in zip(rows[::2], rows[1::2], strict=True)]
    out["throughput_ratio"] = {
        "median": statistics.median(speedups),
        "min": min(speedups),
        "max": max(speedups),
    }
    print(f"replicated: max/mean {out['replicated']['max_over_mean']:.2f} (target <= 1.25), one owner "
          f"{out['one owner']['max_over_mean']:.2f}; throughput {out['throughput_ratio']['median']:.2f}x "
          f"[{out['throughput_ratio']['min']:.2f}, {out['throughput_ratio']['max']:.2f}]")  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--roles", type=int, default=64, help="roles in the scaling load")
    ap.add_argument("--hot-key", action="store_true", help="only the hot-key spread (updates its section)")
    args = ap.parse_args()
    if args.hot_key:
        connect("auto", num_cpus=2)
        try:
            hot = hot_key_table(args.repeats)
        finally:
            ray.shutdown()
        path = save("bench_cluster", {**saved("bench_cluster"), "hot_key": hot})
        print(f"\nload average {os.getloadavg()[0]:.2f}; wrote {path}")
        return
    ring = ring_figures(args.repeats)
    print("ring: moved share / ideal 1/N (median of", args.repeats, "):", ring["moved_over_ideal"])
    step = ring["rebalance_step_ms_64"]
    print(f"ring: a rebalancing step at 64 workers, 2000 roles: {step['median']:.1f} ms median, "
          f"{step['max']:.1f} ms max (target < 150); {step['steps_that_moved']} of {step['steps']} steps "
          "moved roles", flush=True)  # fmt: skip
    connect("auto", num_cpus=2)
    try:
        scale = scaling(args.repeats, (1, 2, 4, 8), args.roles)
        print("\nscaling, simulated batched workers (target: efficiency >= 0.8 at 8)")
        cols = [
            "workers",
            "hashed_imbalance",
            "imbalance",
            "audio_s_per_s",
            "efficiency",
            "spread",
            "batch_p50_s",
        ]
        print(table(scale, [*cols, "wall_s"]), flush=True)
        espeak = espeak_scaling(args.repeats)
        print("\nscaling, espeak-ng workers")
        print(table(espeak, ["workers", "audio_s_per_s", "efficiency"]), flush=True)
        kills = kill_run(args.repeats)
        print(
            "\nworker lost mid-run (target: 0 lost, exactly once); recovery: from the loss to its "
            f"lines voiced elsewhere (one batch takes {COST['base_s'] + 16 * COST['per_line_s']:.2f} s)"
        )
        print(table(kills, ["mode", "run", "lines", "lines_lost", "exactly_once", "resent",
                            "duplicates_dropped", "batches_hit", "recovery_s"]), flush=True)  # fmt: skip
        hot = hot_key_table(args.repeats)
        lead = lead_p95(args.repeats)
        print(f"\nlead p95 over the cluster: FIFO {lead['fifo_lead_p95_ms']:.0f} ms, role-aware "
              f"{lead['role_aware_lead_p95_ms']:.0f} ms, ratio {lead['ratio']['median']:.2f} "
              f"[{lead['ratio']['min']:.2f}, {lead['ratio']['max']:.2f}]")  # fmt: skip
    finally:
        ray.shutdown()
    results = {"repeats": args.repeats, "cost": COST, "ring": ring, "simulated": scale, "espeak": espeak,
               "kill": kills, "hot_key": hot, "lead_p95": lead}  # fmt: skip
    path = save("bench_cluster", {**saved("bench_cluster"), **results})
    print(f"\nload average {os.getloadavg()[0]:.2f}; wrote {path}")


if __name__ == "__main__":
    main()
