"""Offline render speed (x real time) of the demo, Brick & Steel and a long show,
in one process versus the espeak-ng process pool.

    python benchmarks/bench_render.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from _common import ROOT, save, table

from engine.cast import Cast
from engine.core.types import Script, Voice
from engine.render import render_script
from engine.script import load_script
from engine.synthesis.base import SynthRequest
from engine.synthesis.espeak import EspeakSynthesizer
from engine.synthesis.pool import EspeakPool


def long_show(script: Script, times: int) -> Script:
    """The script repeated `times` times, as one long show (an audiobook-sized render)."""
    cues = []
    for k in range(times):
        for c in script.cues:
            cues.append(dataclasses.replace(c, index=len(cues), scene=c.scene + k * len(script.scenes)))
    scenes = tuple(
        dataclasses.replace(s, index=s.index + k * len(script.scenes))
        for k in range(times)
        for s in script.scenes
    )
    return dataclasses.replace(script, cues=tuple(cues), scenes=scenes, title=f"{script.title} x{times}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    demo = load_script(ROOT / "assets" / "demo" / "the_last_broadcast.fountain")
    brick = load_script(ROOT.parent / "shared" / "testdata" / "brick_and_steel.fountain")
    scripts = {"demo": demo, "brick_and_steel": brick, "demo_x10": long_show(demo, 10)}
    t0 = time.perf_counter()
    pool = EspeakPool(2)
    pool.synthesize([SynthRequest("warm up", Voice())] * 2)  # spawn both workers before timing
    pool_start_s = time.perf_counter() - t0
    backends = {"one_process": EspeakSynthesizer(), "pool_2": pool}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for sname, script in scripts.items():
            cast = Cast.auto(script)
            for bname, synth in backends.items():
                walls, synths = [], []
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    result = render_script(script, cast, Path(tmp) / "mix.wav", synth)
                    walls.append(time.perf_counter() - t)
                    synths.append(result.synth_s)
                wall = statistics.median(walls)
                rows.append({
                    "script": sname, "backend": bname, "lines": len(script.cues),
                    "audio_s": round(result.duration_s, 2), "wall_s": round(wall, 3),
                    "synth_s": round(statistics.median(synths), 3),
                    "x_real_time": round(result.duration_s / wall, 1),
                })  # fmt: skip
    pool.close()
    print(table(rows, ["script", "backend", "lines", "audio_s", "wall_s", "synth_s", "x_real_time"]))
    print(f"pool start-up (2 spawned workers): {pool_start_s:.2f} s, not included above")
    path = save("bench_render", {"repeats": args.repeats, "pool_start_s": pool_start_s, "rows": rows,
                                 "target_x_real_time": 200})  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
