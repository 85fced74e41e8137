"""The default render: a many-role screenplay with the cast a user gets (every role a natural
voice), its wall time against `espeak-ng -f` on the same text, and its peak memory, cold
(nothing voiced before) and again with the take cache warm.

    python benchmarks/bench_render_natural.py [--hours 0.25 1] [--roles 47] [--repeats 3]

The warm render is timed twice: as a user gets it (48 kHz stereo 24-bit WAV) and like for
like with `espeak-ng -f` (22,050 Hz mono 16-bit: the same samples to write; the takes are
resampled from the voices' own rates). `--cache DIR` keeps the take cache there (a second
run with the same folder renders only warm: its cold figures are left empty).

The script is the demo screenplay repeated, its four roles renamed so that `--roles` roles
take turns (a feature screenplay's many parts); `main.py cast` picks the voices, as for a
user. Each render is a whole process: wall time, peak RSS of the largest process (GNU time)
and the peak of the whole process tree's RSS summed (sampled every 0.2 s: the espeak-ng
stand-in workers included). The cold render runs once per length (it is the slow one), the
warm render and `espeak-ng -f` `--repeats` times, alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import ROOT, descendants, rss_kib, save, table
from bench_render import SAME_OUTPUT, long_script, many_roles, timed

TARGET_RSS_MB = 400
TARGET_WARM_RATIO = 1.0


def tree_peak(cmd: list[str], env: dict[str, str]) -> tuple[dict[str, float], float]:
    """`timed(cmd)` with the peak of the summed RSS of its process tree (MB)."""
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            for p in subprocess.run(["pgrep", "-f", "main.py render"], capture_output=True,
                                    text=True, check=False).stdout.split():  # fmt: skip
                total = sum(rss_kib(q) for q in [int(p), *descendants(int(p))])
                peak[0] = max(peak[0], total)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    old = dict(os.environ)
    os.environ.update(env)
    try:
        row = timed(cmd, Path(env["BENCH_OUT"]))
    finally:
        os.environ.clear()
        os.environ.update(old)
        stop.set()
        thread.join()
    return row, peak[0] / 1024


def cast_summary(script: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(ROOT / "main.py"), "cast", str(script), "--json"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    roles = json.loads(out)
    backends: dict[str, int] = {}
    for r in roles:
        backend = r["voice"].split(":")[0]
        backends[backend] = backends.get(backend, 0) + 1
    return {"roles": len(roles), "by_backend": backends,
            "distinct_voices": len({r["voice"] for r in roles})}  # fmt: skip


def one_length(folder: Path, hours: float, roles: int, repeats: int,
               cache_root: Path | None) -> dict[str, Any]:  # fmt: skip
    script = many_roles(folder, hours, roles)
    _, text = long_script(folder, hours)  # NB: the same lines (the roles' names differ)
    cache = (cache_root or folder) / f"cache_{hours:g}h_{roles}roles"
    was_cold = not (cache.is_dir() and any(cache.iterdir()))
    out = folder / "out"
    env = {"TROUPE_TAKE_CACHE": str(cache), "BENCH_OUT": str(out)}
    render = [sys.executable, str(ROOT / "main.py"), "render", str(script), "-o", str(out / "mix.wav")]
    espeak = ["espeak-ng", "-f", str(text), "-w", str(folder / "ref" / "out.wav")]
    cold, cold_tree = tree_peak(render, env) if was_cold else ({}, 0.0)
    warm: list[tuple[dict[str, float], float]] = []
    same: list[dict[str, float]] = []
    ref: list[dict[str, float]] = []
    for _ in range(repeats):  # NB: alternated, so a busy spell weighs on all three alike
        warm.append(tree_peak(render, env))
        same.append(tree_peak([*render, *SAME_OUTPUT], env)[0])
        ref.append(timed(espeak, folder / "ref"))
    espeak_s = statistics.median(r["wall_s"] for r in ref)
    ratios = [w["wall_s"] / r["wall_s"] for (w, _), r in zip(warm, ref, strict=True)]
    same_ratios = [w["wall_s"] / r["wall_s"] for w, r in zip(same, ref, strict=True)]
    row: dict[str, Any] = {
        "hours": hours, "audio_s": warm[0][0]["audio_s"], **cast_summary(script),
        "cold_wall_s": None, "cold_x_real_time": None, "cold_ratio_to_espeak": None,
        "cold_rss_mb": None, "cold_tree_mb": None, "cold_stand_ins": None,
        "warm_stand_ins": max(w["stand_ins"] for w, _ in warm),
        "warm_wall_s": statistics.median(w["wall_s"] for w, _ in warm),
        "warm_walls_s": [w["wall_s"] for w, _ in warm], "warm_rss_mbs": [w["rss_mb"] for w, _ in warm],
        "espeak_walls_s": [r["wall_s"] for r in ref],
        "warm_ratio_to_espeak": statistics.median(ratios), "warm_ratio_min": min(ratios),
        "warm_ratio_max": max(ratios), "target_warm_ratio": TARGET_WARM_RATIO,
        "warm_rss_mb": max(w["rss_mb"] for w, _ in warm), "warm_tree_mb": max(t for _, t in warm),
        "like_for_like_wall_s": statistics.median(w["wall_s"] for w in same),
        "like_for_like_ratio": statistics.median(same_ratios),
        "like_for_like_ratio_min": min(same_ratios), "like_for_like_ratio_max": max(same_ratios),
        "espeak_wall_s": espeak_s, "target_rss_mb": TARGET_RSS_MB,
    }  # fmt: skip
    if was_cold:
        row.update(cold_wall_s=cold["wall_s"], cold_x_real_time=cold["audio_s"] / cold["wall_s"],
                   cold_ratio_to_espeak=cold["wall_s"] / espeak_s, cold_rss_mb=cold["rss_mb"],
                   cold_tree_mb=cold_tree, cold_stand_ins=cold["stand_ins"])  # fmt: skip
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, nargs="+", default=[0.25, 1])
    ap.add_argument("--roles", type=int, default=47)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cache", type=Path, help="keep the take caches here (default: a temporary folder)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="troupe-bench-") as tmp:
        rows = [one_length(Path(tmp), h, args.roles, args.repeats, args.cache) for h in args.hours]
    print(
        f"default (natural) cast, {args.roles} roles; cold once, warm and espeak-ng -f median of "
        f"{args.repeats}; targets: peak <= {TARGET_RSS_MB} MB, warm <= {TARGET_WARM_RATIO}x espeak-ng "
        "(like for like: 22,050 Hz mono 16-bit, as it writes)"
    )
    print(table(rows, ["hours", "audio_s", "roles", "distinct_voices", "cold_wall_s", "cold_x_real_time",
                       "cold_ratio_to_espeak", "cold_rss_mb", "cold_tree_mb", "cold_stand_ins", "warm_wall_s",
                       "warm_ratio_to_espeak", "warm_ratio_min", "warm_ratio_max", "warm_rss_mb",
                       "warm_tree_mb", "like_for_like_wall_s", "like_for_like_ratio",
                       "like_for_like_ratio_min", "like_for_like_ratio_max", "espeak_wall_s"]))  # fmt: skip
    for r in rows:
        print(f"  {r['hours']:g} h cast: {r['by_backend']}")
    path = save("bench_render_natural", {"roles": args.roles, "repeats": args.repeats, "rows": rows,
                                         "load_average": os.getloadavg()[0],
                                         "bench_wall_s": time.perf_counter() - t0})  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
