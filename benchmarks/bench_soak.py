"""Soak: a long show with an ad-lib every 2 s, in both output modes, on the JACK dummy
device. Reports the slope of the engine's resident memory (RSS of Troupe and its children,
MB per minute, least squares after the first minute), underruns, late and failed lines, the
output guard's losses (and how many passed by themselves: false losses), the show time held
while lost, and the playhead's drift from the wall clock (less the time held).
Target: slope <= 1 MB/min, 0 failed lines, 0 false losses and under 0.5 s of drift, with
`--busy 2` (two busy loops beside the show) as well as on a quiet machine.

    jackd --no-realtime -d dummy -r 48000 -p 256 &   # if none is running
    python benchmarks/bench_soak.py [--minutes 10] [--modes audio_process,in_process] [--busy 2]

The show is the plain-text radio play of the shared test data repeated until it lasts
longer than the soak (each repetition is a new scene of the same lines).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, descendants, rss_kib, save, table

from engine.audio_io.output import OutputSettings, terminate_portaudio
from engine.control import EngineSettings, Troupe

SOURCE = ROOT / "tests" / "data" / "samples" / "radio_play.txt"
TARGET_MB_PER_MIN = 1.0
MAX_DRIFT_S = 0.5
ADLIB_EVERY_S = 2.0
SAMPLE_EVERY_S = 5.0


def _rss_mb(pid: int) -> float:
    """Resident memory of `pid` and its descendants, MB (from /proc)."""
    return sum(rss_kib(p) for p in [pid, *descendants(pid)]) / 1024


def _long_script(minutes: float, folder: Path) -> Path:
    beats = [line for line in SOURCE.read_text().splitlines() if line and not line.startswith("#")]
    repeats = int(minutes * 60 / 25) + 2  # the play lasts ~25 s
    path = folder / "soak.txt"
    path.write_text("\n\n".join("\n".join(beats) for _ in range(repeats)) + "\n")
    return path


def soak(mode: str, minutes: float, device: str, script: Path) -> dict[str, float | str]:
    settings = EngineSettings(output=OutputSettings(device=device), audio_process=mode == "audio_process",
                              neural=False)  # fmt: skip
    troupe = Troupe(settings)
    samples: list[tuple[float, float]] = []
    adlibs = failed_adlibs = 0
    try:
        troupe.projects.load(script).result(60)
        troupe.output.open().result(60)
        troupe.transport.play()
        t0 = time.monotonic()
        while troupe.monitor.snapshot().status != "playing" and time.monotonic() - t0 < 120:
            time.sleep(0.01)  # the clock starts once the opening lines are voiced
        t_clock = time.monotonic()
        head0 = troupe.monitor.snapshot().playhead_s
        next_adlib = next_sample = t0
        while (now := time.monotonic()) - t0 < minutes * 60:
            if now >= next_adlib:
                next_adlib += ADLIB_EVERY_S
                try:
                    troupe.lines.adlib("ELSA", f"Aside number {adlibs}, spoken over the show.")
                    adlibs += 1
                except Exception:
                    failed_adlibs += 1
            if now >= next_sample:
                next_sample += SAMPLE_EVERY_S
                samples.append(((now - t0) / 60, _rss_mb(os.getpid())))
            time.sleep(0.05)
        snap = troupe.monitor.snapshot()
        guard = troupe.engine.guard
        drift = (time.monotonic() - t_clock) - guard.held_s - (snap.playhead_s - head0)
    finally:
        troupe.close()
    late = snap.figures.deadline_misses
    failed = sum(c.state == "failed" for c in snap.cues)
    steady = [(m, r) for m, r in samples if m >= min(1.0, minutes / 3)]
    xs, ys = np.array([m for m, _ in steady]), np.array([r for _, r in steady])
    slope = float(np.polyfit(xs, ys, 1)[0]) if len(steady) >= 2 else float("nan")
    return {
        "mode": mode, "minutes": minutes, "rss_start_mb": samples[0][1], "rss_end_mb": samples[-1][1],
        "slope_mb_per_min": slope, "target_mb_per_min": TARGET_MB_PER_MIN,
        "underruns": snap.figures.underruns, "xruns": snap.figures.xruns, "late": late, "failed": failed,
        "adlibs": adlibs, "adlibs_refused": failed_adlibs, "playhead_s": snap.playhead_s,
        "output_losses": guard.losses, "false_losses": guard.false_losses, "held_s": round(guard.held_s, 2),
        "drift_s": round(drift, 3),
        "ok": "yes" if (slope <= TARGET_MB_PER_MIN and failed == 0 and guard.false_losses == 0
                        and abs(drift) < MAX_DRIFT_S) else "NO",
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="length of each soak (default 10)")
    ap.add_argument("--modes", default="audio_process,in_process")
    ap.add_argument("--device", default="JACK")
    ap.add_argument("--busy", type=int, default=0, help="busy loops beside the show")
    args = ap.parse_args()
    loops = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.busy)]
    for p in loops:
        p.start()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        script = _long_script(args.minutes, Path(folder))
        for mode in args.modes.split(","):
            rows.append({**soak(mode, args.minutes, args.device, script), "busy_loops": args.busy})
            print(table(rows[-1:], list(rows[-1])), flush=True)
    for p in loops:
        p.terminate()
    terminate_portaudio()
    columns = ["mode", "minutes", "rss_start_mb", "rss_end_mb", "slope_mb_per_min", "target_mb_per_min",
               "underruns", "xruns", "late", "failed", "adlibs", "output_losses", "false_losses", "held_s",
               "drift_s", "busy_loops", "ok"]  # fmt: skip
    print()
    target = f"RSS slope <= {TARGET_MB_PER_MIN} MB/min, 0 failed, 0 false losses, |drift| < {MAX_DRIFT_S} s"
    print(f"target: {target}")
    print(table(rows, columns))
    name = "bench_soak" if args.busy == 0 else f"bench_soak_busy{args.busy}"
    print(f"results: {save(name, {'rows': rows, 'minutes': args.minutes, 'busy_loops': args.busy})}")


def _busy() -> None:
    while True:
        pass


if __name__ == "__main__":
    main()
