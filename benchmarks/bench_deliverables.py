"""Deliverables a studio accepts, measured on the files themselves: each loudness preset's
encoded file (integrated loudness, true peak, RMS) by ffmpeg's own EBU R128 meter beside
Troupe's compliance report, and how far apart the roles sit (the spread of each role's
median K-weighted line loudness, pyloudnorm) with and without levelling, on a many-role
script with the default natural cast.

    python benchmarks/bench_deliverables.py [--hours 0.25] [--roles 16]

The script is the demo screenplay repeated with its roles renamed (bench_render.many_roles);
the first render voices it (cold), every other one reads the same take cache.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import soundfile as sf
from _common import ROOT, save, table
from bench_render import many_roles

TARGET_SPREAD_DB = 1.5
PRESETS = [("acx", "m4b", 44_100), ("ebu", "wav", 48_000), ("podcast", "mp3", 48_000)]
LIMITS = {"acx": -3.0, "ebu": -1.0, "podcast": -1.0}


def render(script: Path, out: Path, env: dict[str, str], *extra: str) -> float:
    t0 = time.perf_counter()
    cmd = [sys.executable, str(ROOT / "main.py"), "render", str(script), "-o", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        sys.exit(f"render failed:\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def ebur128(path: Path) -> dict[str, float]:
    err = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-i", str(path), "-af", "ebur128=peak=true",
                          "-f", "null", "-"], capture_output=True, text=True, check=True).stderr  # fmt: skip
    summary = err[err.rindex("Summary:") :]
    return {k: float(re.search(rf"{k}:\s+(-?[\d.]+)", summary).group(1)) for k in ("I", "LRA", "Peak")}  # type: ignore[union-attr]


def spread(folder: Path) -> tuple[float, dict[str, float]]:
    """Max - min over roles of each role's median line loudness (clips of 0.5 s and more)."""
    import pyloudnorm

    per_role: dict[str, list[float]] = {}
    for clip in folder.glob("[0-9][0-9][0-9][0-9][0-9]_*.wav"):
        audio, rate = sf.read(clip)
        if len(audio) >= 0.5 * rate:
            per_role.setdefault(clip.stem.split("_", 1)[1], []).append(
                pyloudnorm.Meter(rate).integrated_loudness(audio)
            )
    medians = {r: statistics.median(v) for r, v in per_role.items()}
    return max(medians.values()) - min(medians.values()), medians


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=0.25)
    ap.add_argument("--roles", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="troupe-deliv-") as tmp:
        folder = Path(tmp)
        script = many_roles(folder, args.hours, args.roles)
        env = {**os.environ, "TROUPE_TAKE_CACHE": str(folder / "cache")}
        cmd = [sys.executable, str(ROOT / "main.py"), "cast", str(script), "--json"]
        cast = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        backends: dict[str, int] = {}
        for r in cast:
            backend = r["voice"].split(":")[0]
            backends[backend] = backends.get(backend, 0) + 1
        levels: dict[str, Any] = {}
        cold_s = 0.0
        for on in (True, False):
            out = folder / ("levelled" if on else "raw")
            wall = render(script, out / "mix.wav", env, "--stems", str(out), "--stem-mode", "clips",
                          "--stem-format", "wav", *([] if on else ["--no-levelling"]))  # fmt: skip
            cold_s = cold_s or wall
            s, medians = spread(out)
            levels["levelled" if on else "raw"] = {"spread_db": s, "role_medians_lufs": medians}
        rows = []
        for preset, suffix, rate in PRESETS:
            out = folder / f"{preset}.{suffix}"
            wall = render(script, out, env, "--loudness", preset, "--sample-rate", str(rate))
            report = json.loads(out.with_suffix(".loudness.json").read_text())
            theirs = ebur128(out)
            rows.append({
                "preset": preset, "format": suffix, "rate_hz": rate, "wall_s": wall,
                "lufs": report["integrated_lufs"], "lufs_ffmpeg": theirs["I"],
                "true_peak_db": report["true_peak_db"], "true_peak_ffmpeg": theirs["Peak"],
                "tp_limit_db": LIMITS[preset], "rms_db": report["rms_db"],
                "lra_lu": report["loudness_range_lu"], "lra_ffmpeg": theirs["LRA"],
                "encodes": report["encodes"], "passed": report["passed"],
                "failed": [c["name"] for c in report["checks"] if not c["passed"]],
            })  # fmt: skip
    print(f"{args.hours:g} h, {args.roles} roles, default cast {backends}; first render {cold_s:.0f} s")
    print("\nper-role level spread (median K-weighted line loudness, max - min; "
          f"target <= {TARGET_SPREAD_DB} dB)")  # fmt: skip
    print(table([{"mix": k, "spread_db": v["spread_db"]} for k, v in levels.items()], ["mix", "spread_db"]))
    print("\nencoded files (Troupe's report beside ffmpeg ebur128; the preset's true-peak limit beside)")
    cols = ["preset", "format", "rate_hz", "lufs", "lufs_ffmpeg", "true_peak_db", "true_peak_ffmpeg",
            "tp_limit_db", "rms_db", "lra_lu", "lra_ffmpeg", "encodes", "passed", "wall_s"]  # fmt: skip
    print(table(rows, cols))
    path = save("bench_deliverables", {"hours": args.hours, "roles": args.roles, "cast": backends,
                                       "cold_render_s": cold_s, "levels": levels, "presets": rows,
                                       "target_spread_db": TARGET_SPREAD_DB})  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
