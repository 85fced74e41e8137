"""Offline render at audiobook scale: Troupe's `main.py render` against `espeak-ng -f` on
the same dialogue text, and peak memory at 1 and 10 hours of script.

    python benchmarks/bench_render.py [--repeats 3] [--hours 1 10] [--processes 2]
                                      [--stem-roles 49] [--stem-hours 1] [--baseline OTHER_CHECKOUT]

The speed A/B runs two Troupe renders: like for like (every role cast to espeak-ng's default
voice `en`, written as espeak-ng writes: 16-bit mono WAV at 22,050 Hz) and the draft render
a user runs (`--voices espeak`: every role its own espeak-ng voice, 48 kHz 24-bit stereo).

The long scripts are the demo screenplay repeated (a real script, as a user would write it).
Each run is a whole process under /usr/bin/time -v (wall time, peak RSS of the largest
process); Troupe and espeak-ng alternate within each repeat. Needs the `espeak-ng` program
(Debian package espeak-ng) for the speed comparison.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, save, table

from engine.script import load_script

DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"
DEMO_S = 51.2
TARGET_RATIO = 1.0
TARGET_RSS_MB = 300


def long_script(folder: Path, hours: float) -> tuple[Path, Path]:
    """The demo repeated to `hours` of audio, and its dialogue alone as plain text."""
    head, body = DEMO.read_text(encoding="utf-8").split("\n\n", 1)
    times = math.ceil(hours * 3600 / DEMO_S)
    path = folder / f"show_{hours:g}h.fountain"
    path.write_text(head + "\n\n" + "\n\n".join([body] * times), encoding="utf-8")
    text = folder / f"dialogue_{hours:g}h.txt"
    text.write_text("\n".join(c.text for c in load_script(path).cues) + "\n", encoding="utf-8")
    return path, text


def many_roles(folder: Path, hours: float, roles: int) -> Path:
    """The demo repeated to `hours`, each repeat's four roles renamed so that `roles` roles
    take turns over the whole show (a feature screenplay's many small parts)."""
    head, body = DEMO.read_text(encoding="utf-8").split("\n\n", 1)
    names = ["IRIS", "OWEN", "CALLER", "NARRATOR"]
    parts = []
    for k in range(math.ceil(hours * 3600 / DEMO_S)):
        part = body
        for j, name in enumerate(names):
            part = re.sub(rf"^{name}\b", f"VOICE {(4 * k + j) % roles + 1:02d}", part, flags=re.M)
        parts.append(part)
    path = folder / f"show_{hours:g}h_{roles}roles.fountain"
    path.write_text(head + "\n\n" + "\n\n".join(parts), encoding="utf-8")
    return path


def timed(cmd: list[str], out_dir: Path) -> dict[str, float]:
    """Run `cmd` under /usr/bin/time -v: wall seconds, peak RSS (MB), bytes left in out_dir,
    and the lines espeak-ng stood in for (a render reports each on stderr)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{proc.stderr[-2000:]}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    cpu_s = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", proc.stderr))
    disk = sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())
    audio = re.search(r"([\d.]+) s of audio", proc.stdout)
    return {"wall_s": wall, "cpu_s": cpu_s, "rss_mb": rss_kb / 1024, "disk_mb": disk / 1e6,
            "audio_s": float(audio.group(1)) if audio else 0.0,
            "stand_ins": float(proc.stderr.count("espeak-ng stood in"))}  # fmt: skip


def troupe(script: Path, out: Path, processes: int, fmt: str = "wav", root: Path = ROOT) -> list[str]:
    """A draft render: every role espeak-ng (a Piper lead would time Piper, not the render)."""
    return [sys.executable, str(root / "main.py"), "render", str(script), "-o", str(out / f"mix.{fmt}"),
            "--processes", str(processes), "--voices", "espeak"]  # fmt: skip


def like_for_like(folder: Path, script: Path) -> Path:
    """A project casting every role to espeak-ng's default voice (`en`, centred): the one
    voice `espeak-ng -f` speaks the whole text in."""
    roles = sorted({c.role for c in load_script(script).cues})
    cast = {role: {"backend": "espeak", "voice_id": "en", "pan": 0} for role in roles}
    path = folder / "same_voice.json"
    path.write_text(json.dumps({"troupe_project": 1, "script": script.name, "cast": cast}), encoding="utf-8")
    return path


SAME_OUTPUT = ["--sample-rate", "22050", "--channels", "1", "--sample-format", "s16"]
"""espeak-ng's own output: 16-bit mono WAV at 22,050 Hz."""


def speed(folder: Path, hours: float, repeats: int, processes: int) -> list[dict[str, Any]]:
    """Rows: Troupe like for like (espeak-ng's voice and output format), Troupe's draft
    render as a user runs it (`--voices espeak`: each role its own espeak-ng voice, 48 kHz
    24-bit stereo), each against `espeak-ng -f` on the same dialogue text in the same repeat."""
    script, text = long_script(folder, hours)
    espeak = shutil.which("espeak-ng")
    if espeak is None:
        sys.exit("espeak-ng is not installed (apt-get install espeak-ng)")
    project = like_for_like(folder, script)
    sides = {
        "same voice, 22 kHz mono s16": [*troupe(script, folder / "out", processes), "--project", str(project),
                                        *SAME_OUTPUT],
        "own voices, 48 kHz stereo s24": troupe(script, folder / "out", processes),
    }  # fmt: skip
    ours: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    theirs: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for _ in range(repeats):  # alternate, so a busy moment on the machine hits both
        for side, cmd in sides.items():
            ours[side].append(timed(cmd, folder / "out"))
            ref = [espeak, "-f", str(text), "-w", str(folder / "ref" / "out.wav")]
            theirs[side].append(timed(ref, folder / "ref"))
    lines = len(load_script(script).cues)
    rows = []
    for side in sides:
        a, b = ours[side], theirs[side]
        ratios = [x["wall_s"] / y["wall_s"] for x, y in zip(a, b, strict=True)]
        rows.append({
            "render": side, "hours": hours, "lines": lines, "audio_s": a[0]["audio_s"],
            "troupe_wall_s": statistics.median(r["wall_s"] for r in a),
            "espeak_wall_s": statistics.median(r["wall_s"] for r in b),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "target": TARGET_RATIO,
            "troupe_cpu_s": statistics.median(r["cpu_s"] for r in a),
            "espeak_cpu_s": statistics.median(r["cpu_s"] for r in b),
            "x_real_time": a[0]["audio_s"] / statistics.median(r["wall_s"] for r in a),
            "troupe_rss_mb": max(r["rss_mb"] for r in a), "espeak_rss_mb": max(r["rss_mb"] for r in b),
            "troupe_disk_mb": a[0]["disk_mb"], "espeak_disk_mb": b[0]["disk_mb"],
        })  # fmt: skip
    return rows


def memory(folder: Path, hours: float, processes: int) -> dict[str, Any]:
    script, _ = long_script(folder, hours)
    rows = {}
    for fmt in ("wav", "flac"):
        rows[fmt] = timed(troupe(script, folder / "out", processes, fmt), folder / "out")
    flac = rows["flac"]
    return {
        "hours": hours, "audio_s": flac["audio_s"], "wall_s_flac": flac["wall_s"],
        "x_real_time_flac": flac["audio_s"] / flac["wall_s"], "rss_mb_wav": rows["wav"]["rss_mb"],
        "rss_mb_flac": flac["rss_mb"], "disk_mb_wav": rows["wav"]["disk_mb"], "disk_mb_flac": flac["disk_mb"],
    }  # fmt: skip


def stems(folder: Path, hours: float, roles: int, processes: int, repeats: int,
          baseline: Path | None) -> dict[str, Any]:  # fmt: skip
    """A FLAC mix with FLAC stems (roles mode) of a many-role script; with `baseline` (another
    checkout), its render of the same script alternates with this one's."""
    script = many_roles(folder, hours, roles)
    sides = {"troupe": ROOT} | ({"baseline": baseline} if baseline is not None else {})
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for _ in range(repeats):
        for side, root in sides.items():
            cmd = [
                *troupe(script, folder / "out", processes, "flac", root),
                "--stems",
                str(folder / "out" / "stems"),
            ]
            runs[side].append(timed(cmd, folder / "out"))
    row: dict[str, Any] = {"hours": hours, "roles": roles, "audio_s": runs["troupe"][0]["audio_s"]}
    for side, rs in runs.items():
        row |= {f"{side}_wall_s": statistics.median(r["wall_s"] for r in rs),
                f"{side}_cpu_s": statistics.median(r["cpu_s"] for r in rs),
                f"{side}_rss_mb": max(r["rss_mb"] for r in rs),
                f"{side}_disk_mb": rs[0]["disk_mb"]}  # fmt: skip
    if baseline is not None:
        ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(runs["troupe"], runs["baseline"], strict=True)]
        row |= {
            "ratio_to_baseline": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
        }
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--hours", type=float, nargs="+", default=[1, 10], help="script lengths for memory")
    ap.add_argument("--speed-hours", type=float, default=1, help="script length for the speed A/B")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--stem-roles", type=int, default=49, help="roles of the script rendered with stems")
    ap.add_argument("--stem-hours", type=float, default=1, help="its length (0: no stems run)")
    ap.add_argument(
        "--baseline", type=Path, help="another checkout whose stems render alternates with this one"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="troupe-bench-") as tmp:
        folder = Path(tmp)
        fast = speed(folder, args.speed_hours, args.repeats, args.processes)
        mem = [memory(folder, h, args.processes) for h in args.hours]
        stem = stems(folder, args.stem_hours, args.stem_roles, args.processes, args.repeats, args.baseline) \
            if args.stem_hours else None  # fmt: skip
    cols = ["render", "hours", "lines", "audio_s", "troupe_wall_s", "espeak_wall_s", "ratio", "ratio_min",
            "ratio_max", "target", "troupe_cpu_s", "espeak_cpu_s", "x_real_time", "troupe_rss_mb",
            "espeak_rss_mb", "troupe_disk_mb", "espeak_disk_mb"]  # fmt: skip
    load = os.getloadavg()[0]
    print(f"speed: Troupe render ({args.processes} espeak-ng processes) against espeak-ng -f (WAV 16-bit "
          f"mono 22 kHz, one voice) on the same text, median of {args.repeats}; "
          f"target ratio <= {TARGET_RATIO} (like for like: the first row)")  # fmt: skip
    print(table(fast, cols))
    print(f"load average at the end: {load:.1f} on {os.cpu_count()} cores (other work slows both)")
    print(f"\nmemory: peak RSS of the largest process; target flat, <= {TARGET_RSS_MB} MB")
    print(table(mem, ["hours", "audio_s", "wall_s_flac", "x_real_time_flac", "rss_mb_wav", "rss_mb_flac",
                      "disk_mb_wav", "disk_mb_flac"]))  # fmt: skip
    if stem is not None:
        print(f"\nstems: FLAC mix and FLAC stems of {args.stem_roles} roles, median of {args.repeats}"
              + (f"; baseline {args.baseline}" if args.baseline else ""))  # fmt: skip
        print(table([stem], list(stem)))
    path = save("bench_render", {"repeats": args.repeats, "load_average": load, "processes": args.processes,
                                 "speed": fast, "memory": mem, "stems": stem,
                                 "baseline": str(args.baseline or ""),
                                 "target_ratio": TARGET_RATIO,
                                 "target_rss_mb": TARGET_RSS_MB})  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
