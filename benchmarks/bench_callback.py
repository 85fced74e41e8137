"""Audio callback cost per block (256 frames at 48 kHz), ring underruns and PortAudio xruns
on the JACK dummy device, while an espeak-ng pool saturates both cores and a pure-Python
thread competes for the GIL (as GUI redraws and the engine do). Rows: `default` (the stream
in the audio process, as the window and `play` run it), `reference` (a stream in its own
process that only writes zeros, running at the same time as `default`: the xruns the
machine causes by itself), and `in_process` (the debugging mode, `--in-process-audio`).

    jackd --no-realtime -d dummy -r 48000 -p 256 &   # if none is running
    python benchmarks/bench_callback.py [--seconds 60]
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
from _common import save, table
from _reference import ZeroStream

from engine.audio_io.output import AudioOutput, AudioProcess, OutputSettings, terminate_portaudio
from engine.audio_io.ring import MixRing
from engine.core.types import Voice
from engine.synthesis.pool import EspeakPool

RATE, BLOCK = 48_000, 256
PERIOD_NS = BLOCK / RATE * 1e9
TEXT = "This sentence keeps the synthesis pool busy for the whole measurement. " * 4


def _feed(ring: MixRing, stop: threading.Event) -> None:
    """The engine's part: keep ~200 ms of audio in the ring."""
    t = np.arange(1024) / RATE
    block = np.stack([0.2 * np.sin(2 * np.pi * 220 * t)] * 2, axis=1).astype(np.float32)
    target = int(0.2 * RATE)
    while not stop.is_set():
        while ring.fill_frames < target:
            ring.write(block)
        time.sleep(0.005)


def _synth_load(pool: EspeakPool, stop: threading.Event) -> None:
    inflight = []
    while not stop.is_set():
        while len(inflight) < 4:
            inflight.append(pool.submit(TEXT, Voice()))
        inflight.pop(0).result()


def _gil_load(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(i * i for i in range(20_000))  # holds the GIL like a redraw or a scheduler tick


def run(mode: str, seconds: float, device: str) -> list[dict[str, float | str]]:
    ring = MixRing(1 << 15)
    settings = OutputSettings(device=device, block_frames=BLOCK)
    out = AudioOutput(ring, settings) if mode == "in_process" else AudioProcess(ring, settings)  # default
    pool = EspeakPool(2)
    stop = threading.Event()
    threads = [
        threading.Thread(target=_feed, args=(ring, stop), daemon=True),
        threading.Thread(target=_synth_load, args=(pool, stop), daemon=True),
        threading.Thread(target=_gil_load, args=(stop,), daemon=True),
    ]
    for th in threads:
        th.start()
    time.sleep(1.0)  # pool warm, ring full
    reference = ZeroStream(device, BLOCK) if mode == "default" else None
    if reference is not None:
        reference.start()
    out.start()
    time.sleep(0.5)
    stats = ring.stats
    u0, x0, c0 = stats.underruns, stats.xruns, stats.callbacks
    rx0, rc0 = (reference.xruns, reference.callbacks) if reference else (0, 0)
    time.sleep(seconds)
    underruns, xruns, callbacks = stats.underruns - u0, stats.xruns - x0, stats.callbacks - c0
    ref_row: dict[str, float | str] | None = None
    if reference is not None:
        ref_row = {"mode": "reference", "seconds": seconds, "callbacks": reference.callbacks - rc0,
                   "underruns": 0, "xruns": reference.xruns - rx0}  # fmt: skip
        reference.stop()
    out.stop()
    stop.set()
    for th in threads:
        th.join(10)
    pool.close()
    times = stats.callback_times_ns()[-callbacks:] if callbacks else np.zeros(1)
    ring.close()
    q = np.percentile(times, [50, 99, 99.9])
    row: dict[str, float | str] = {
        "mode": mode,
        "seconds": seconds,
        "callbacks": callbacks,
        "median_us": q[0] / 1e3,
        "p99_us": q[1] / 1e3,
        "p99_9_us": q[2] / 1e3,
        "max_us": float(times.max()) / 1e3,
        "p99_9_of_period": q[2] / PERIOD_NS,
        "max_of_period": float(times.max()) / PERIOD_NS,
        "underruns": underruns,
        "xruns": xruns,
    }
    return [row] + ([ref_row] if ref_row else [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--device", default="JACK")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    rows = [row for _ in range(args.repeats) for mode in ("default", "in_process")
            for row in run(mode, args.seconds, args.device)]  # fmt: skip
    terminate_portaudio()
    cols = ["mode", "seconds", "callbacks", "median_us", "p99_us", "p99_9_us", "max_us",
            "p99_9_of_period", "underruns", "xruns"]  # fmt: skip
    print(table(rows, cols))
    print(
        f"block period: {PERIOD_NS / 1e3:.0f} us; targets (default): p99.9 <= 10% of it, "
        "0 underruns, xruns <= the reference row's"
    )
    for mode in ("default", "reference", "in_process"):
        xr = [int(r["xruns"]) for r in rows if r["mode"] == mode]
        p999 = [float(r["p99_9_of_period"]) for r in rows if r["mode"] == mode and "p99_9_of_period" in r]
        spread = f"({min(p999):.3f}..{max(p999):.3f})" if p999 else ""
        extra = f", p99.9/period median {np.median(p999):.3f} {spread}" if p999 else ""
        print(f"{mode}: xruns median {np.median(xr):g} ({min(xr)}..{max(xr)}) over {len(xr)} runs{extra}")
    print(f"wrote {save('bench_callback', {'block_frames': BLOCK, 'rate_hz': RATE, 'rows': rows})}")


if __name__ == "__main__":
    main()
