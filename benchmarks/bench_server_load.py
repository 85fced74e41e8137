"""Load on the speech server: 5,000 `/tts` requests, 200 in flight at once, over 8 roles
with different weights, against a real `main.py serve` process, FIFO versus role-aware in
the same run. Reports requests/s, mean/p95/p99 latency overall and for the lead role,
errors, and the server's RSS before and after.

    python benchmarks/bench_server_load.py [--requests 5000] [--concurrency 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
from _common import ROOT, save, table

ROLES = {"LEAD": 10.0, "RIVAL": 4.0, "MENTOR": 3.0, "FRIEND": 3.0, "GUARD": 1.5, "CLERK": 1.0,
         "VOICE": 1.0, "NARRATOR": 0.5}  # fmt: skip
SHARES = [0.25, 0.13, 0.11, 0.11, 0.1, 0.08, 0.07, 0.15]
LINES = ["Hold the line.", "Where were you last night?", "The harbour lights are out.",
         "We leave at dawn, all of us.", "Nobody came home.", "Listen to the radio."]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


async def _load(url: str, n: int, concurrency: int, seed: int) -> tuple[list[tuple[str, float]], int, float]:
    rng = random.Random(seed)
    jobs = [(rng.choices(list(ROLES), SHARES)[0], rng.choice(LINES)) for _ in range(n)]
    sem = asyncio.Semaphore(concurrency)
    results: list[tuple[str, float]] = []
    errors = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def one(role: str, text: str) -> None:
            nonlocal errors
            async with sem:
                t0 = time.perf_counter()
                try:
                    r = await client.get("/tts", params={"role": role, "text": text, "format": "pcm"})
                    ok = r.status_code == 200 and len(r.content) > 0
                except httpx.HTTPError:
                    ok = False
                if ok:
                    results.append((role, (time.perf_counter() - t0) * 1000))
                else:
                    errors += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(one(role, text) for role, text in jobs))
        wall = time.perf_counter() - t0
    return results, errors, wall


def run(policy: str, n: int, concurrency: int, processes: int) -> dict[str, object]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "serve", "--port", str(port),
                             "--metrics-port", "0", "--policy", policy, "--processes", str(processes)],
                            cwd=ROOT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        for role, weight in ROLES.items():
            httpx.put(f"{url}/v1/roles/{role}", json={"weight": weight}).raise_for_status()
        asyncio.run(_load(url, 200, concurrency, seed=0))  # warm-up, not counted
        rss_before = _rss_kib(proc.pid)
        results, errors, wall = asyncio.run(_load(url, n, concurrency, seed=1))
        rss_after = _rss_kib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(20)
    lat = np.array([ms for _, ms in results])
    lead = np.array([ms for role, ms in results if role == "LEAD"])
    return {
        "policy": policy, "requests": n, "concurrency": concurrency, "errors": errors,
        "rps": len(results) / wall, "mean_ms": float(lat.mean()), "p95_ms": float(np.percentile(lat, 95)),
        "p99_ms": float(np.percentile(lat, 99)), "lead_mean_ms": float(lead.mean()),
        "lead_p95_ms": float(np.percentile(lead, 95)), "lead_p99_ms": float(np.percentile(lead, 99)),
        "rss_before_mib": rss_before / 1024, "rss_after_mib": rss_after / 1024,
        "rss_growth": rss_after / rss_before - 1,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--processes", type=int, default=2, help="espeak-ng worker processes in the server")
    args = ap.parse_args()
    rows = [run(p, args.requests, args.concurrency, args.processes) for p in ("fifo", "role_aware")]
    cols = ["policy", "requests", "errors", "rps", "mean_ms", "p95_ms", "p99_ms", "lead_mean_ms",
            "lead_p95_ms", "lead_p99_ms", "rss_before_mib", "rss_after_mib", "rss_growth"]  # fmt: skip
    print(table(rows, cols))
    f, ra = rows
    lead_ratio = float(ra["lead_p95_ms"]) / float(f["lead_p95_ms"])
    print(
        f"lead p95 role-aware/FIFO = {lead_ratio:.2f}; throughput ratio = "
        f"{float(ra['rps']) / float(f['rps']):.2f}; targets: 0 errors, RSS growth <= 10%"
    )
    print(f"wrote {save('bench_server_load', {'rows': rows})}")


if __name__ == "__main__":
    main()
