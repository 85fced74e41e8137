"""Ad-lib latency during a playing show: from the director's Enter to the line's first
sample in the mix ring, and to its first audible sample (the callback's DAC time).

The demo drama plays on the JACK dummy device (paced at real time) through the engine,
exactly as `main.py play` runs it; every `--interval-ms` one short ad-lib is typed for a
random role, `--count` in all, while the scheduler is also voicing the show's lines.

    jackd --no-realtime -d dummy -r 48000 -p 256 &   # if none is running
    python benchmarks/bench_adlib.py [--count 200] [--interval-ms 150] [--audio-process]
"""

from __future__ import annotations

import argparse
import random
import time
from concurrent.futures import Future

import numpy as np
from _common import ROOT, save, table

from engine.audio_io.output import OutputSettings
from engine.scheduler import Request, State
from engine.service import Engine, EngineSettings

DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"
LINES = [
    "Wait.", "Who's there?", "Get down!", "Listen to me.", "Not now, not like this.",
    "Did you hear that?", "Keep moving.", "Stay on the line.", "It's coming from the tower.",
    "Over here!",
]  # fmt: skip


def run(count: int, interval_s: float, audio_process: bool, device: str) -> dict[str, float | str | int]:
    settings = EngineSettings(output=OutputSettings(device=device), audio_process=audio_process)
    engine = Engine(settings)
    rng = random.Random(7)
    try:
        roles = list(engine.load(DEMO).roles)
        engine.open_output()
        engine.play()
        time.sleep(1.0)  # the show is under way: its lines are queued and playing
        futures: list[Future[Request]] = []
        t_next = time.monotonic()
        for _ in range(count):
            futures.append(engine.adlib(rng.choice(roles), rng.choice(LINES)))
            t_next += interval_s
            time.sleep(max(0.0, t_next - time.monotonic()))
        reqs = [f.result(10) for f in futures]
        underruns = engine.ring.underruns
    finally:
        engine.close()
    done = [r for r in reqs if r.state is State.DONE and r.t_placed]
    ring_ms = np.array([(r.t_placed - r.t_enqueued) * 1000 for r in done])
    heard_ms = np.array([(r.t_played - r.t_enqueued) * 1000 for r in done])
    return {
        "mode": "audio_process" if audio_process else "in_process",
        "adlibs": count,
        "placed": len(done),
        "ring_p50_ms": float(np.percentile(ring_ms, 50)),
        "ring_p95_ms": float(np.percentile(ring_ms, 95)),
        "ring_max_ms": float(ring_ms.max()),
        "audible_p50_ms": float(np.percentile(heard_ms, 50)),
        "audible_p95_ms": float(np.percentile(heard_ms, 95)),
        "ring_underruns": underruns,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--interval-ms", type=float, default=150.0)
    ap.add_argument("--device", default="JACK")
    ap.add_argument("--audio-process", action="store_true", help="only the audio-process mode")
    args = ap.parse_args()
    modes = [True] if args.audio_process else [False, True]
    rows = [run(args.count, args.interval_ms / 1000, m, args.device) for m in modes]
    cols = ["mode", "adlibs", "placed", "ring_p50_ms", "ring_p95_ms", "ring_max_ms",
            "audible_p50_ms", "audible_p95_ms", "ring_underruns"]  # fmt: skip
    print(table(rows, cols))
    print("target: p95 to the ring under 50 ms (espeak-ng)")
    print(f"wrote {save('bench_adlib', {'rows': rows, 'interval_ms': args.interval_ms})}")


if __name__ == "__main__":
    main()
