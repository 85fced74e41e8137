"""Time from `main.py play` to the first sound of the demo, heard on the JACK dummy server
by a JACK client of our own connected to the player's output ports: cold (an empty take
cache: every opening line voiced now, the model loaded now) and warm (the same take cache
again), with the default natural cast; and how many lines the espeak-ng stand-in voiced.

Starts `jackd --no-realtime -d dummy -r 48000 -p 256` when none runs. The process start,
imports, model load and synthesis all count: what a user waits for.

    python benchmarks/bench_first_sound.py [--repeats 3] [--seconds 12]
    python benchmarks/bench_first_sound.py --hours 1 --roles 47 --seconds 600 --repeats 1

With `--hours`, the show is a long many-role screenplay instead (the demo repeated to that
length, its roles renamed so that `--roles` take turns: bench_render.py's `many_roles`), the
default natural cast: the time from opening it to its first sound (Play waits, "preparing",
until the lines ahead can be voiced in their cast voices before each is due), then the
stand-in and late lines over `--seconds` of the show; the warm run plays `--warm-seconds`.
Written to bench_first_sound_<hours>h.json.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _common import ROOT, machine, save, start_jack, table

TARGET = "first sound <= 15 s cold, <= 5 s with the take cache warm (2 cores); stand-in lines 0"
LONG_TARGET = (
    "a 1-hour screenplay: ready (its first sound) with the opening voiced in its cast voices; "
    "stand-in lines 0 over the run, on an idle 2-core machine"
)
THRESHOLD = 1e-3


def one_run(cache: Path, seconds: float, script: Path | None = None) -> dict[str, object]:
    """One `main.py play` (of `script`, default the demo) to the first sound heard."""
    import jack

    client = jack.Client("troupe-first-sound", no_start_server=True)
    ports = [client.inports.register(f"in_{k}") for k in range(2)]
    heard: dict[str, float] = {}

    @client.set_process_callback
    def process(_frames: int) -> None:
        if "first" not in heard and any(np.abs(p.get_array()).max() > THRESHOLD for p in ports):
            heard["first"] = time.monotonic()

    client.activate()
    env = {**os.environ, "TROUPE_TAKE_CACHE": str(cache)}
    t0 = time.monotonic()
    what = [str(script)] if script is not None else []
    proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "play", *what, "--device", "JACK",
                             "--seconds", str(seconds)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    connected: set[str] = set()
    stop = threading.Event()

    def connect() -> None:
        while not stop.is_set():
            for port in client.get_ports(is_audio=True, is_output=True):
                if port.name.startswith(("system:", "troupe-first-sound:")) or port.name in connected:
                    continue
                try:
                    client.connect(port, ports[len(connected) % 2])
                    connected.add(port.name)
                except jack.JackError:
                    pass
            time.sleep(0.01)

    watcher = threading.Thread(target=connect, daemon=True)
    watcher.start()
    out, _ = proc.communicate(timeout=seconds + 120)
    stop.set()
    watcher.join()
    client.deactivate()
    client.close()
    summary = re.search(r"late (\d+), failed (\d+), stand-in (\d+)", out)
    played = re.search(r"played (\d+) of (\d+) lines", out)
    first = heard.get("first")
    return {
        "first_sound_s": round(first - t0, 2) if first else None,
        "played": int(played.group(1)) if played else None,
        "late": int(summary.group(1)) if summary else None,
        "stand_in": int(summary.group(3)) if summary else None,
        "ports": len(connected),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=12.0, help="how long each run plays")
    ap.add_argument("--warm-seconds", type=float, help="how long a warm run plays (default --seconds)")
    ap.add_argument("--hours", type=float, help="a many-role screenplay this long instead of the demo")
    ap.add_argument("--roles", type=int, default=47)
    args = ap.parse_args()
    warm_s = args.warm_seconds or args.seconds
    jackd = start_jack()
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="troupe-show-"))
    script = None
    if args.hours:
        from bench_render import many_roles

        script = many_roles(folder, args.hours, args.roles)
    try:
        for k in range(args.repeats):
            cache = Path(tempfile.mkdtemp(prefix="troupe-takes-"))
            try:
                rows.append({"run": k, "cache": "cold", "seconds": args.seconds,
                             **one_run(cache, args.seconds, script)})  # fmt: skip
                rows.append({"run": k, "cache": "warm", "seconds": warm_s, **one_run(cache, warm_s, script)})
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            print(rows[-2], rows[-1], flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if jackd is not None:
            jackd.terminate()
            jackd.wait(10)

    def median(kind: str) -> float | None:
        values = [
            float(r["first_sound_s"]) for r in rows if r["cache"] == kind and r["first_sound_s"] is not None
        ]
        return statistics.median(values) if values else None

    summary = {"cold_median_s": median("cold"), "warm_median_s": median("warm"),
               "stand_in_total": sum(int(r["stand_in"] or 0) for r in rows)}  # fmt: skip
    target = TARGET if not args.hours else LONG_TARGET
    print(f"target: {target}")
    print(table(rows, ["run", "cache", "seconds", "first_sound_s", "played", "late", "stand_in", "ports"]))
    print(summary)
    name = "bench_first_sound" if not args.hours else f"bench_first_sound_{args.hours:g}h"
    show = {"hours": args.hours, "roles": args.roles} if args.hours else {"script": "demo"}
    save(name, {"target": target, "machine": machine(), "show": show, "summary": summary, "runs": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
