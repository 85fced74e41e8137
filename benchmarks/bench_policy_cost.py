"""What the scheduling policy itself costs a running server, per request, FIFO against
role-aware: the server (`main.py serve`, started through `_timed_serve.py`, which times
each call into the policy in the calling thread's CPU time) under the loads of
`bench_server_load.py` (`ab`: one role; `weighted`: 8 roles; 200 keep-alive clients).

Per pass: the policy's CPU a request (the deadline scan, pop, push, admission, expiry), the
server process's and the espeak-ng workers' CPU a request (the workers do the same work
under either policy, so their figure is the machine's speed in that pass), throughput and
p95. Per scenario, over the repeats (the policies' order alternating): the median of each,
and the role-aware/FIFO p95 ratio as measured and divided by the pair's ratio of workers'
CPU a request (the same speed for both).

    python benchmarks/bench_policy_cost.py [--requests 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import ROOT, descendants, save, table
from _http_load import load
from _timed_serve import PARTS
from bench_server_load import _cpu_s, _jobs, serve


def _times(proc: subprocess.Popen[bytes], path: Path) -> dict[str, Any]:
    """The served policy's totals and the server's threads, asked for by SIGUSR2."""
    path.unlink(missing_ok=True)
    proc.send_signal(signal.SIGUSR2)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists():
            return dict(json.loads(path.read_text()))
        time.sleep(0.05)
    raise SystemExit("the server did not write its policy times")


THREADS = {"event_loop": "MainThread", "engine": "troupe-server-engine", "feed": "troupe-espeak-feed"}
"""The server's threads by what they do (a name prefix: the pool has one feeder a worker)."""


def _thread_cpu(pid: int, threads: dict[str, int]) -> dict[str, float]:
    """CPU time (s) of a process's threads so far, by `THREADS` kind; "other" is every other
    thread, Python's or a library's own (from /proc; a thread gone since counts nothing)."""
    kinds = {tid: next((k for k, prefix in THREADS.items() if name.startswith(prefix)), "other")
             for name, tid in threads.items()}  # fmt: skip
    out = dict.fromkeys([*THREADS, "other"], 0.0)
    for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
        tid = int(task.name)
        out[kinds.get(tid, "other")] += _cpu_s(pid, tid)
    return out


def run(scenario: str, policy: str, n: int, concurrency: int, seed: int, scratch: Path) -> dict[str, Any]:
    path = scratch / f"{policy}.json"
    proc, url = serve(scenario, policy, 2, concurrency, seed, script=ROOT / "benchmarks" / "_timed_serve.py",
                      env={**os.environ, "TROUPE_POLICY_TIMES": str(path)})  # fmt: skip
    try:
        before = _times(proc, path)
        workers = descendants(proc.pid)
        threads = before["threads"]
        cpu_before = _cpu_s(proc.pid), sum(_cpu_s(w) for w in workers), _thread_cpu(proc.pid, threads)
        answers, wall = asyncio.run(load(url, _jobs(scenario, n, seed), concurrency))
        workers += [w for w in descendants(proc.pid) if w not in workers]
        cpu_after = _cpu_s(proc.pid), sum(_cpu_s(w) for w in workers), _thread_cpu(proc.pid, threads)
        after = _times(proc, path)
    finally:
        proc.terminate()
        proc.wait(20)
    ms = np.array([a.ms for a in answers])
    row: dict[str, Any] = {"scenario": scenario, "policy": policy,
                           "served": sum(a.status == 200 for a in answers), "rps": len(answers) / wall,
                           "p95_ms": float(np.percentile(ms, 95))}  # fmt: skip
    for part in PARTS:
        spent = after["calls"].get(part, [0, 0])[0] - before["calls"].get(part, [0, 0])[0]
        row[f"{part}_us"] = spent / n / 1e3
    row["policy_us"] = sum(row[f"{part}_us"] for part in PARTS)
    row["server_cpu_ms"] = (cpu_after[0] - cpu_before[0]) / n * 1000
    row["worker_cpu_ms"] = (cpu_after[1] - cpu_before[1]) / n * 1000
    row["policy_share"] = row["policy_us"] / 1000 / max(1e-9, row["server_cpu_ms"])
    for kind in [*THREADS, "other"]:
        row[f"{kind}_cpu_ms"] = (cpu_after[2][kind] - cpu_before[2][kind]) / n * 1000
    return row


def _summary(pairs: list[dict[str, dict[str, Any]]]) -> dict[str, float]:
    def med(policy: str, key: str) -> float:
        return statistics.median(float(x[policy][key]) for x in pairs)

    p95 = [x["role_aware"]["p95_ms"] / x["fifo"]["p95_ms"] for x in pairs]
    speed = [x["role_aware"]["worker_cpu_ms"] / x["fifo"]["worker_cpu_ms"] for x in pairs]
    return {"fifo_policy_us": med("fifo", "policy_us"),
            "role_aware_policy_us": med("role_aware", "policy_us"),
            "role_aware_refresh_us": med("role_aware", "refresh_us"),
            "fifo_server_cpu_ms": med("fifo", "server_cpu_ms"),
            "role_aware_server_cpu_ms": med("role_aware", "server_cpu_ms"),
            **{f"{p}_{k}_cpu_ms": med(p, f"{k}_cpu_ms") for p in ("fifo", "role_aware") for k in THREADS},
            "p95_ratio": statistics.median(p95),
            "p95_ratio_per_worker_cpu": statistics.median(a / b for a, b in zip(p95, speed, strict=True)),
            }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scenarios", nargs="+", default=["ab", "weighted"])
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    summary: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for scenario in args.scenarios:
            pairs = []
            for rep in range(args.repeats):
                order = ("fifo", "role_aware") if rep % 2 == 0 else ("role_aware", "fifo")
                ran = {p: run(scenario, p, args.requests, args.concurrency, rep, Path(scratch))
                       for p in order}  # fmt: skip
                rows += [ran["fifo"], ran["role_aware"]]
                pairs.append(ran)
            summary[scenario] = _summary(pairs)
    cols = ["scenario", "policy", "served", "rps", "p95_ms", *[f"{p}_us" for p in PARTS], "policy_us",
            "server_cpu_ms", "policy_share", *[f"{k}_cpu_ms" for k in [*THREADS, "other"]],
            "worker_cpu_ms"]  # fmt: skip
    print(table(rows, cols))
    for scenario, s in summary.items():
        by_thread = ", ".join(f"{k} {s[f'fifo_{k}_cpu_ms']:.2f} / {s[f'role_aware_{k}_cpu_ms']:.2f}"
                              for k in THREADS)  # fmt: skip
        print(f"{scenario}: the policy's CPU a request, median: FIFO {s['fifo_policy_us']:.0f} us, "
              f"role-aware {s['role_aware_policy_us']:.0f} us (its deadline scan "
              f"{s['role_aware_refresh_us']:.0f} us); the server's {s['fifo_server_cpu_ms']:.2f} against "
              f"{s['role_aware_server_cpu_ms']:.2f} ms (by thread, ms: {by_thread}); p95 role-aware/FIFO "
              f"{s['p95_ratio']:.2f}, "
              f"{s['p95_ratio_per_worker_cpu']:.2f} at the same machine speed (target <= 1.0 with one "
              f"role, where the order is the same)")  # fmt: skip
    print(f"wrote {save('bench_policy_cost', {'args': vars(args), 'rows': rows, 'summary': summary})}")


if __name__ == "__main__":
    main()
