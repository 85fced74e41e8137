"""Load on the speech server, against a real `main.py serve` process (fresh for each pass),
FIFO versus role-aware back to back, repeated:
- `ab`: what `ab -n 5000 -c 200 '/tts?role=hero&text=...'` does: one role, 200 in flight;
- `weighted`: 8 roles with different weights, 200 in flight.
Latency is over every answer, as ab reports it (a refusal is an answer: 503 with
Retry-After, fast), and over the served ones; refused counts 503s; errors anything else.
Reports the median role-aware/FIFO ratio and its spread over the repeats, and the server's
RSS after the load against before (target <= +10% for both policies). Each pass also
shows the CPU a request cost the espeak-ng workers (the same work under either policy: its
drift between passes is the machine's) and the server process (HTTP, encoding, the engine).

With `--busy 2` both servers run beside two busy loops (two processes spinning on the 2
cores, started before the first pass and stopped after the last): a slow machine. Each pass
then also counts the requests served within their deadline (`SpeechSettings.budget_s`, 2 s
after sending) and samples `/readyz` every 0.5 s; target: role-aware serves in time at least
0.95x what FIFO serves in time (median of the repeats). Written to the `busy` section of
bench_server_load.json (a quiet run keeps it, a busy run keeps the quiet figures).

    python benchmarks/bench_server_load.py [--requests 5000] [--concurrency 200] [--repeats 3]
    python benchmarks/bench_server_load.py --busy 2 --scenarios ab weighted --requests 2000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
from _common import RESULTS, ROOT, descendants, free_port, machine, rss_kib, save, table
from _http_load import load

ROLES = {"LEAD": 10.0, "RIVAL": 4.0, "MENTOR": 3.0, "FRIEND": 3.0, "GUARD": 1.5, "CLERK": 1.0,
         "VOICE": 1.0, "NARRATOR": 0.5}  # fmt: skip
SHARES = [0.25, 0.13, 0.11, 0.11, 0.1, 0.08, 0.07, 0.15]
AB_TEXT = "Hold the line, all of you, until the harbour lights come on again."
LINES = ["Hold the line.", "Where were you last night?", "The harbour lights are out.",
         "We leave at dawn, all of us.", "Nobody came home.", "Listen to the radio."]  # fmt: skip


DEADLINE_MS = 2000.0
"""A request's deadline after it is sent (the server's default `budget_s`)."""
TARGET_IN_TIME = 0.95


def busy_loops(n: int) -> list[subprocess.Popen[bytes]]:
    """`n` processes that spin on the CPU until stopped."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


async def _ready_samples(url: str, stop: asyncio.Event, out: list[bool]) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        while not stop.is_set():
            try:
                out.append((await client.get(f"{url}/readyz")).status_code == 200)
            except httpx.HTTPError:
                out.append(False)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)


async def _load_sampled(url: str, jobs: list[tuple[str, str, dict[str, str]]], concurrency: int,
                        ready: list[bool]) -> tuple[list, float]:  # fmt: skip
    stop = asyncio.Event()
    sampler = asyncio.ensure_future(_ready_samples(url, stop, ready))
    try:
        return await load(url, jobs, concurrency)
    finally:
        stop.set()
        await sampler


def _cpu_s(pid: int, tid: int | None = None) -> float:
    """CPU time (user + system) a process, or one of its threads, has used so far; 0 once
    it is gone."""
    try:
        with open(f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _jobs(scenario: str, n: int, seed: int) -> list[tuple[str, str, dict[str, str]]]:
    rng = random.Random(seed)
    pairs = ([("LEAD", AB_TEXT)] * n if scenario == "ab" else
             [(rng.choices(list(ROLES), SHARES)[0], rng.choice(LINES)) for _ in range(n)])  # fmt: skip
    return [(role, "/tts", {"role": role, "text": text, "format": "pcm"}) for role, text in pairs]


def _wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    """Until the server answers and its voice models are warm (a model loading in the
    background takes a core from whatever is measured meanwhile)."""
    deadline = time.monotonic() + 240
    while True:
        try:
            r = httpx.get(f"{url}/readyz", timeout=1)
            if r.status_code == 200 and not r.json().get("models_loading"):
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit(f"the server on {url} did not get ready")
        time.sleep(0.2)


def serve(scenario: str, policy: str, processes: int, concurrency: int, seed: int,
          extra: list[str] | None = None, script: Path = ROOT / "main.py",
          env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:  # fmt: skip
    """A fresh server (`script serve`) on a free port, its voice models warm, the roles
    weighted and 200 requests of the scenario served (not counted); the caller stops it."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(script), "serve", "--port", str(port), "--metrics-port", "0",
                             "--policy", policy, "--processes", str(processes), *(extra or [])],
                            cwd=ROOT, env=env)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc)
        for role, weight in ROLES.items():
            httpx.put(f"{url}/v1/roles/{role}", json={"weight": weight}).raise_for_status()
        asyncio.run(load(url, _jobs(scenario, 200, seed + 1000), concurrency))  # warm-up, not counted
    except BaseException:
        proc.terminate()
        proc.wait(20)
        raise
    return proc, url


def run(scenario: str, policy: str, n: int, concurrency: int, processes: int, seed: int,
        tolerance: float | None = None, lead_share: float | None = None) -> dict[str, object]:  # fmt: skip
    extra = ["--fifo-tolerance", str(tolerance)] if tolerance is not None else []
    extra += ["--lead-share", str(lead_share)] if lead_share is not None else []
    proc, url = serve(scenario, policy, processes, concurrency, seed, extra)
    try:
        rss_before = rss_kib(proc.pid)
        workers = descendants(proc.pid)  # the espeak-ng worker processes
        cpu_before = _cpu_s(proc.pid), sum(_cpu_s(w) for w in workers)
        ready: list[bool] = []
        answers, wall = asyncio.run(_load_sampled(url, _jobs(scenario, n, seed), concurrency, ready))
        workers += [w for w in descendants(proc.pid) if w not in workers]  # one replaced meanwhile
        cpu_after = _cpu_s(proc.pid), sum(_cpu_s(w) for w in workers)
        time.sleep(1.0)  # let the engine drain what it still holds
        rss_after = rss_kib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(20)
    every = np.array([a.ms for a in answers])
    served = np.array([a.ms for a in answers if a.status == 200])
    lead = np.array([a.ms for a in answers if a.tag == "LEAD" and a.status == 200])
    pct = lambda a, q: float(np.percentile(a, q)) if len(a) else float("nan")  # noqa: E731
    return {
        "scenario": scenario, "policy": policy, "requests": n, "served": len(served),
        "refused": sum(a.status == 503 for a in answers),
        "errors": sum(a.status not in (200, 503) for a in answers),
        "served_rps": len(served) / wall, "mean_ms": float(every.mean()), "p50_ms": pct(every, 50),
        "p95_ms": pct(every, 95), "p99_ms": pct(every, 99), "max_ms": float(every.max()),
        "served_p95_ms": pct(served, 95), "lead_p95_ms": pct(lead, 95),
        "in_time": sum(a.status == 200 and a.ms <= DEADLINE_MS for a in answers),
        "ready_share": sum(ready) / len(ready) if ready else float("nan"),
        "rss_before_mib": rss_before / 1024, "rss_after_mib": rss_after / 1024,
        "rss_growth": rss_after / rss_before - 1,
        # the same requests cost the espeak-ng workers the same CPU under either policy: what
        # this moves between passes is the machine (2 shared cores), not the policy
        "worker_cpu_ms": (cpu_after[1] - cpu_before[1]) / n * 1000,
        "server_cpu_ms": (cpu_after[0] - cpu_before[0]) / n * 1000,
    }  # fmt: skip


RATIOS = {"ab": ["p50_ms", "p95_ms", "p99_ms", "max_ms"],
          "weighted": ["mean_ms", "p95_ms", "p99_ms", "lead_p95_ms"]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scenarios", nargs="+", default=["ab", "weighted"])
    ap.add_argument("--processes", type=int, default=2, help="espeak-ng worker processes in the server")
    ap.add_argument("--fifo-tolerance", type=float, help="the role-aware server's --fifo-tolerance")
    ap.add_argument("--lead-share", type=float, help="the role-aware server's --lead-share")
    ap.add_argument("--busy", type=int, default=0, help="busy loops running beside the servers")
    args = ap.parse_args()
    loops = busy_loops(args.busy)
    try:
        _main(args)
    finally:
        for p in loops:
            p.kill()


def _main(args: argparse.Namespace) -> None:
    rows: list[dict[str, object]] = []
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for scenario in args.scenarios:
        pairs = []
        for rep in range(args.repeats):  # fresh servers, back to back, the same requests, order alternating
            order = ("fifo", "role_aware") if rep % 2 == 0 else ("role_aware", "fifo")  # NB: no order bias
            tuning = {"role_aware": (args.fifo_tolerance, args.lead_share), "fifo": (None, None)}
            ran = {p: run(scenario, p, args.requests, args.concurrency, args.processes, rep, *tuning[p])
                   for p in order}  # fmt: skip
            pair = {p: ran[p] for p in ("fifo", "role_aware")}
            rows += pair.values()
            pairs.append(pair)
        summary[scenario] = {}
        for key in RATIOS[scenario] + ["in_time"]:
            ratios = [float(p["role_aware"][key]) / float(p["fifo"][key]) for p in pairs]  # type: ignore[arg-type]
            summary[scenario][key] = {"median": statistics.median(ratios), "min": min(ratios),
                                      "max": max(ratios)}  # fmt: skip
    cols = ["scenario", "policy", "served", "in_time", "refused", "errors", "ready_share", "served_rps",
            "mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms", "lead_p95_ms", "worker_cpu_ms",
            "server_cpu_ms", "rss_before_mib", "rss_after_mib", "rss_growth"]  # fmt: skip
    print(table(rows, cols))
    print("role-aware / FIFO (median [min, max] of the repeats; target <= 1.0, lead p95 <= 0.4):")
    for scenario, ratios in summary.items():
        print(f"  {scenario}: " + "; ".join(f"{k} {v['median']:.2f} [{v['min']:.2f}, {v['max']:.2f}]"
                                           for k, v in ratios.items()))  # fmt: skip
    worst = max(float(r["rss_growth"]) for r in rows)  # type: ignore[arg-type]
    print(f"RSS growth, worst pass: {100 * worst:+.1f}% (target <= +10%); errors (not 200/503): "
          f"{sum(int(r['errors']) for r in rows)} (target 0)")  # type: ignore[call-overload]  # fmt: skip
    in_time = {k: v["in_time"]["median"] for k, v in summary.items()}
    print(f"served within the {DEADLINE_MS / 1000:g} s deadline, role-aware / FIFO: "
          + "; ".join(f"{k} {v:.3f}" for k, v in in_time.items())
          + (f" (target >= {TARGET_IN_TIME} beside busy loops)" if args.busy else ""))  # fmt: skip
    result = {"args": vars(args), "rows": rows, "summary": summary}
    path = RESULTS / "bench_server_load.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    if args.busy:  # NB: each run keeps the other's section
        result = {**kept, "busy": {**result, "machine": machine(), "target_in_time": TARGET_IN_TIME}}
    elif "busy" in kept:
        result["busy"] = kept["busy"]
    print(f"wrote {save('bench_server_load', result)}")


if __name__ == "__main__":
    main()
