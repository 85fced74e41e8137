"""Work done for clients that left: 20 clients each ask for a long speech (60 sentences,
streaming and whole-file), then hang up after 0.3 s. Counts, per client, the chunks a
worker started after that client hung up (target: under one chunk per client), and the
engine time those chunks took. A real uvicorn on 127.0.0.1, espeak-ng in 2 processes, run
in this process so the scheduler's own record of each batch can be read.

    python benchmarks/bench_disconnect.py [--clients 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import httpx
from _common import save, serve_in_thread, table

from engine.scheduler.backend import Batch, Withdrawn
from engine.server import SpeechService, SpeechSettings

TEXT = " ".join(f"This is sentence number {k} of a speech that goes on and on." for k in range(60))
TARGET_CHUNKS_PER_CLIENT = 1.0


def _client(url: str, role: str, stream: bool, hang_up_after_s: float, left: dict[str, float]) -> None:
    params = {"role": role, "text": TEXT, **({"stream": "1"} if stream else {})}
    try:
        with (
            httpx.Client(timeout=hang_up_after_s) as client,
            client.stream("GET", f"{url}/tts", params=params) as r,
        ):
            end = time.monotonic() + hang_up_after_s
            for _ in r.iter_raw():
                if time.monotonic() >= end:
                    break
    except httpx.HTTPError:
        pass  # the read timed out: the client gives up
    left[role] = time.monotonic()


def run(policy: str, stream: bool, clients: int, hang_up_after_s: float) -> dict[str, object]:
    service = SpeechService(SpeechSettings(processes=2, policy=policy, neural=False, give_up_s=60.0))
    batches: list[Batch] = []
    service.scheduler.on_batch = batches.append  # on the engine thread, after each batch
    server, thread, url = serve_in_thread(service)
    try:
        roles = [f"C{k}" for k in range(clients)]
        for role in roles:
            httpx.put(f"{url}/v1/roles/{role}", json={}).raise_for_status()
        for _ in range(4):  # the worker processes are up and the speed estimate settled
            httpx.get(f"{url}/tts", params={"role": roles[0], "text": TEXT[:400]}, timeout=60)
        batches.clear()
        before = (service.scheduler.stats.dispatched, service.scheduler.stats.cancelled)
        left: dict[str, float] = {}
        workers = [threading.Thread(target=_client, args=(url, role, stream, hang_up_after_s, left))
                   for role in roles]  # fmt: skip
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        time.sleep(2.0)  # whatever is still going on for them shows up by now
        stats = service.scheduler.stats
        # voiced after its client left: a worker started it then (lines still waiting in the
        # pool's queue when the client left are taken back, never voiced)
        after = [(b, r) for b in batches for r in b.requests
                 if b.t_start > left[r.role] and not isinstance(b.error, Withdrawn)]  # fmt: skip
        per_client = [sum(r.role == role for _, r in after) for role in roles]
        engine_s = sum(b.t_end - b.t_start for b in {id(b): b for b, _ in after}.values())
        return {"policy": policy, "mode": "stream" if stream else "whole", "clients": clients,
                "chunks_asked": clients * 60, "dispatched": stats.dispatched - before[0],
                "cancelled": stats.cancelled - before[1],
                "after_hang_up": len(after), "per_client_mean": statistics.mean(per_client),
                "per_client_max": max(per_client), "engine_s_after": engine_s}  # fmt: skip
    finally:
        server.should_exit = True
        thread.join(10)
        service.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--hang-up-after", type=float, default=0.3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = [run(policy, stream, args.clients, args.hang_up_after) for _ in range(args.repeats)
            for policy in ("fifo", "role_aware") for stream in (True, False)]  # fmt: skip
    print(table(rows, ["policy", "mode", "clients", "chunks_asked", "dispatched", "cancelled",
                       "after_hang_up", "per_client_mean", "per_client_max", "engine_s_after"]))  # fmt: skip
    worst = max(float(r["per_client_mean"]) for r in rows)  # type: ignore[arg-type]
    print(f"chunks voiced after a client hung up, worst mean per client: {worst:.2f} "
          f"(target < {TARGET_CHUNKS_PER_CLIENT:g})")  # fmt: skip
    print(f"wrote {save('bench_disconnect', {'args': vars(args), 'rows': rows})}")


if __name__ == "__main__":
    main()
