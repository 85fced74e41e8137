"""Time from `main.py play` to the first sound of the demo, heard on the JACK dummy server
by a JACK client of our own connected to the player's output ports: cold (an empty take
cache: every opening line voiced now, the model loaded now) and warm (the same take cache
again), with the default natural cast; and how many lines the espeak-ng stand-in voiced.

Starts `jackd --no-realtime -d dummy -r 48000 -p 256` when none runs. The process start,
imports, model load and synthesis all count: what a user waits for.

    python benchmarks/bench_first_sound.py [--repeats 3] [--seconds 12]
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
    first = heard.get("first")
    return {
        "first_sound_s": round(first - t0, 2) if first else None,
        "late": int(summary.group(1)) if summary else None,
        "stand_in": int(summary.group(3)) if summary else None,
        "ports": len(connected),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=12.0, help="how long each run plays")
    args = ap.parse_args()
    jackd = start_jack()
    rows = []
    try:
        for k in range(args.repeats):
            cache = Path(tempfile.mkdtemp(prefix="troupe-takes-"))
            try:
                rows.append({"run": k, "cache": "cold", **one_run(cache, args.seconds)})
                rows.append({"run": k, "cache": "warm", **one_run(cache, args.seconds)})
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            print(rows[-2], rows[-1], flush=True)
    finally:
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
    print(f"target: {TARGET}")
    print(table(rows, ["run", "cache", "first_sound_s", "late", "stand_in", "ports"]))
    print(summary)
    save("bench_first_sound", {"target": TARGET, "machine": machine(), "summary": summary, "runs": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
