"""A normal client and /healthz while the server is attacked: the slow-body attack (260
connections, each promising a 60,000-byte body and sending one byte every 2 s, reconnecting
when cut off) and an idle-socket flood (300 connections that send nothing, reconnecting),
from two other loopback addresses (127.0.0.2 and .3).

Each pass starts a real `main.py serve` on 127.0.0.1, casts a role, and runs 15 s quiet,
then 25 s attacked. The normal client opens a new connection for every request (a new
listener arriving: `GET /tts`, 16-bit PCM of one sentence), one after another; /healthz is
asked every 0.5 s on a new connection. Two servers side by side, order alternating over 3
repeats: the defaults (`guarded`: body deadline, a client address holds at most half the
connections, at the cap the connection that waited longest without work gives way, the
health reserve) and the previous protections only (`before`: header timeout and a
256-connection cap). Targets: the normal client's p95 attacked within 2x of
its quiet p95, and /healthz answered every time.

    python benchmarks/bench_server_attack.py
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import statistics
import subprocess
import time
from typing import Any

import httpx
from _common import save, start_serve, table

QUIET_S, ATTACK_S = 15.0, 25.0
SLOW_BODIES, IDLE_SOCKETS = 260, 300
REPEATS = 3
TARGET_P95_RATIO = 2.0
TARGET_HEALTH = 1.0
CONFIGS = {
    "guarded": [],
    "before": ["--body-timeout", "600", "--per-client-connections", "100000", "--health-reserve", "0",
               "--max-connections", "256", "--no-evict-idle"],
}  # fmt: skip
TEXT = "Hold the line, the ferry leaves at dawn."


def _start(extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    proc, url = start_serve(extra)
    r = httpx.put(f"{url}/v1/roles/hero", json={"voice_id": "en-gb"}, timeout=10)
    r.raise_for_status()
    return proc, url


async def _slow_body(port: int, stop: asyncio.Event) -> None:
    head = (b"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 60000\r\n\r\n")  # fmt: skip
    while not stop.is_set():
        try:
            _r, w = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
            w.write(head)
            while not stop.is_set():
                w.write(b" ")
                await w.drain()
                await asyncio.sleep(2.0)
        except OSError:
            await asyncio.sleep(0.2)
        with contextlib.suppress(Exception):
            w.close()


async def _idle(port: int, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.3", 0))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(r.read(1), timeout=60)  # returns when the server closes it
        except OSError:
            await asyncio.sleep(0.2)
        with contextlib.suppress(Exception):
            w.close()
        await asyncio.sleep(0.05)


async def _normal(url: str, until: float, out: list[float], failed: list[str]) -> None:
    params = {"role": "hero", "text": TEXT, "format": "pcm"}
    while time.monotonic() < until:
        t0 = time.monotonic()
        try:
            async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0)) as c:
                r = await c.get(f"{url}/tts", params=params, timeout=10)
            if r.status_code == 200:
                out.append(time.monotonic() - t0)
            else:
                failed.append(str(r.status_code))
        except httpx.HTTPError as exc:
            failed.append(type(exc).__name__)
        await asyncio.sleep(0.1)


async def _health(url: str, until: float, answered: list[bool]) -> None:
    while time.monotonic() < until:
        try:
            async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0)) as c:
                r = await c.get(f"{url}/healthz", timeout=5)
            answered.append(r.status_code == 200)
        except httpx.HTTPError:
            answered.append(False)
        await asyncio.sleep(0.5)


async def _phase(url: str, seconds: float, attack: bool) -> dict[str, Any]:
    port = int(url.rsplit(":", 1)[1])
    stop = asyncio.Event()
    attackers = []
    if attack:
        attackers = [asyncio.create_task(_slow_body(port, stop)) for _ in range(SLOW_BODIES)]
        attackers += [asyncio.create_task(_idle(port, stop)) for _ in range(IDLE_SOCKETS)]
        await asyncio.sleep(3.0)  # the attack in place before the clients are measured
    until = time.monotonic() + seconds
    latencies: list[float] = []
    failed: list[str] = []
    answered: list[bool] = []
    await asyncio.gather(_normal(url, until, latencies, failed), _health(url, until, answered))
    stop.set()
    for t in attackers:
        t.cancel()
    await asyncio.gather(*attackers, return_exceptions=True)
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) >= 2 else float("inf")
    return {"p95_s": p95, "served": len(latencies), "failed": len(failed),
            "health": sum(answered) / max(1, len(answered)), "health_asked": len(answered)}  # fmt: skip


def one_pass(name: str) -> dict[str, Any]:
    proc, url = _start(CONFIGS[name])
    try:
        quiet = asyncio.run(_phase(url, QUIET_S, attack=False))
        attacked = asyncio.run(_phase(url, ATTACK_S, attack=True))
    finally:
        proc.terminate()
        proc.wait(20)
    ratio = attacked["p95_s"] / quiet["p95_s"] if quiet["p95_s"] > 0 else float("inf")
    return {
        "config": name, "quiet_p95_s": round(quiet["p95_s"], 4),
        "attacked_p95_s": round(attacked["p95_s"], 4),
        "p95_ratio": round(ratio, 2), "target_p95_ratio": TARGET_P95_RATIO,
        "served_quiet": quiet["served"], "served_attacked": attacked["served"],
        "failed_attacked": attacked["failed"], "health_answered": round(attacked["health"], 3),
        "health_asked": attacked["health_asked"], "target_health": TARGET_HEALTH,
        "ok": ratio <= TARGET_P95_RATIO and attacked["health"] >= TARGET_HEALTH and attacked["failed"] == 0,
    }  # fmt: skip


def main() -> None:
    rows = []
    for k in range(REPEATS):
        for name in list(CONFIGS) if k % 2 == 0 else list(CONFIGS)[::-1]:
            rows.append(one_pass(name))
            print(rows[-1], flush=True)
    summary = []
    for name in CONFIGS:
        mine = [r for r in rows if r["config"] == name]
        ratios = [r["p95_ratio"] for r in mine]
        health = [r["health_answered"] for r in mine]
        summary.append({"config": name, "p95_ratio_median": statistics.median(ratios),
                        "p95_ratio_spread": max(ratios) - min(ratios), "target_p95_ratio": TARGET_P95_RATIO,
                        "health_median": statistics.median(health), "health_min": min(health),
                        "target_health": TARGET_HEALTH,
                        "failed_attacked": sum(r["failed_attacked"] for r in mine)})  # fmt: skip
    cols = ["config", "quiet_p95_s", "attacked_p95_s", "p95_ratio", "target_p95_ratio", "served_attacked",
            "failed_attacked", "health_answered", "target_health", "ok"]  # fmt: skip
    print(table(rows, cols))
    print(table(summary, list(summary[0])))
    print(f"wrote {save('bench_server_attack', _finite({'rows': rows, 'summary': summary}))}")


def _finite(value: Any) -> Any:
    """inf and nan (nothing served, no spread) as null: the JSON stays JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


if __name__ == "__main__":
    main()
