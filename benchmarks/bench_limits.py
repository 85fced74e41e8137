"""Where a big script starts to break playback: the engine thread's periodic costs (a
snapshot for the GUI, ~20 per second; a re-plan of the timeline, at every line placed; the
role heatmap's update, which includes a snapshot) against the number of lines and roles.
An engine turn that takes longer than the 200 ms of audio rendered ahead is an underrun, so
each cost's budget is half of that, 100 ms; the limits in engine/script/limits.py sit below
the sizes where a cost passes it on the development machine (2 shared cores).

`--open`: a script at each limit (10,000 lines; 1,000 roles; 20 MB of 1,980-character
lines, 990 roles) opened as a user opens it, with the default natural cast: the time to
load it (import on the caller's thread, then casting and the new show on the engine thread:
`Troupe.projects.load`, in a fresh engine each time) and the time from `main.py play SCRIPT`
to its first sound on the JACK dummy server (a cold take cache: the model loaded and the
first lines voiced now). Targets: load <= 5 s, first sound <= 10 s. Written to the `open`
section of bench_limits.json (a run without `--open` keeps it, and the other way round).

    python benchmarks/bench_limits.py [--repeats 3]
    python benchmarks/bench_limits.py --open [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import RESULTS, machine, save, start_jack, table

from engine.cast import Cast
from engine.control import EngineSettings, Troupe
from engine.script import import_unchecked
from engine.script.limits import MAX_LINES, MAX_ROLES
from engine.show.planner import plan

BUDGET_MS = 100.0
LOAD_TARGET_S, FIRST_SOUND_TARGET_S = 5.0, 10.0
WORDS = ["the", "harbour", "lights", "came", "on", "again", "and", "all", "of", "us", "stood", "at",
         "the", "rail", "waiting", "for", "news", "from", "the", "boats"]  # fmt: skip


def _script(folder: Path, lines: int, roles: int) -> Path:
    path = folder / f"s_{lines}_{roles}.txt"
    path.write_text(
        "\n".join(f"ROLE{k % roles}: This is line number {k} of the big show." for k in range(lines))
    )
    return path


def _long_lines(path: Path, lines: int, roles: int, chars: int) -> Path:
    """`lines` lines of about `chars` characters each (sentences of twelve words), spoken by
    `roles` roles in turn."""
    out = []
    for k in range(lines):
        words, n, i = [], 0, k
        while n < chars - 20:
            w = WORDS[i % len(WORDS)]
            i += 7
            words.append(w + ("." if len(words) % 12 == 11 else ""))
            n += len(w) + 1
        out.append(f"ROLE{k % roles}: {' '.join(words).capitalize()}.")
    path.write_text("\n".join(out) + "\n")
    return path


def _ms(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(troupe: Troupe, path: Path, repeats: int) -> dict[str, float]:
    script = import_unchecked(path)  # past the limits, which `load` would refuse
    troupe.engine.call(lambda: troupe.engine.install(script, Cast.auto(script), {}), 600)
    show = troupe.engine.show
    assert show is not None
    snap = troupe.engine.call(lambda: _ms(troupe.engine._build_snapshot, repeats), 600)
    replan = troupe.engine.call(lambda: _ms(lambda: plan(show.timeline, show.pacing), repeats), 600)
    engine = troupe.engine
    record = engine.call(lambda: _ms(lambda: (setattr(engine, "_last_history_t", 0.0), engine._record()),
                                     repeats), 600)  # fmt: skip
    return {"snapshot_ms": snap, "replan_ms": replan, "record_ms": record}


def _load_s(path: Path) -> tuple[float, float]:
    """(seconds to load `path` in a fresh engine with the default cast, of it on the engine
    thread)."""
    troupe = Troupe(EngineSettings())
    try:
        t0 = time.perf_counter()
        future = troupe.projects.load(path)
        t1 = time.perf_counter()
        future.result(600)
        t2 = time.perf_counter()
        return t2 - t0, t2 - t1
    finally:
        troupe.close()


def open_at_limits(repeats: int) -> dict[str, object]:
    from bench_first_sound import one_run

    from engine.script.limits import MAX_SCRIPT_BYTES

    rows: list[dict[str, object]] = []
    jackd = start_jack()
    try:
        with tempfile.TemporaryDirectory() as folder:
            chars = (MAX_SCRIPT_BYTES // 10_000) - 120  # the file just under the size limit
            cases = [("lines", _script(Path(folder), MAX_LINES, 50)),
                     ("roles", _script(Path(folder), 2 * MAX_ROLES, MAX_ROLES)),
                     ("bytes", _long_lines(Path(folder) / "big.txt", MAX_LINES - 10, MAX_ROLES - 10,
                                           chars))]  # fmt: skip
            for name, path in cases:
                for k in range(repeats):
                    total, engine_s = _load_s(path)
                    cache = Path(folder) / f"takes-{name}-{k}"
                    heard = one_run(cache, 15.0, path)
                    rows.append({"limit": name, "run": k, "mb": round(path.stat().st_size / 1e6, 2),
                                 "load_s": round(total, 2), "engine_thread_s": round(engine_s, 2),
                                 "first_sound_s": heard["first_sound_s"], "late": heard["late"],
                                 "stand_in": heard["stand_in"]})  # fmt: skip
                    print(table(rows[-1:], list(rows[-1])), flush=True)
    finally:
        if jackd is not None:
            jackd.terminate()
            jackd.wait(10)
    summary = {}
    for name in ("lines", "roles", "bytes"):
        mine = [r for r in rows if r["limit"] == name]
        firsts = [float(r["first_sound_s"]) for r in mine if r["first_sound_s"] is not None]  # type: ignore[arg-type]
        loads = [float(r["load_s"]) for r in mine]  # type: ignore[arg-type]
        first = statistics.median(firsts) if len(firsts) == len(mine) else None  # None: one never sounded
        summary[name] = {"load_s": statistics.median(loads), "first_sound_s": first}
    print(table(rows, list(rows[0])))
    print(
        f"targets: load <= {LOAD_TARGET_S:g} s, first sound <= {FIRST_SOUND_TARGET_S:g} s; medians: {summary}"
    )
    return {"rows": rows, "summary": summary, "repeats": repeats, "machine": machine(),
            "targets": {"load_s": LOAD_TARGET_S, "first_sound_s": FIRST_SOUND_TARGET_S}}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--open", action="store_true", help="load and first-sound times at each limit")
    args = ap.parse_args()
    kept = (
        json.loads((RESULTS / "bench_limits.json").read_text())
        if (RESULTS / "bench_limits.json").exists()
        else {}
    )
    if args.open:
        print(f"results: {save('bench_limits', {**kept, 'open': open_at_limits(args.repeats)})}")
        return
    troupe = Troupe(EngineSettings(neural=False))
    rows = []
    sizes = [(1_000, 20), (MAX_LINES, 50), (20_000, 50), (50_000, 50),
             (2_000, MAX_ROLES), (4_000, 2_000), (10_000, 5_000)]  # fmt: skip
    try:
        with tempfile.TemporaryDirectory() as folder:
            for lines, roles in sizes:
                row: dict[str, float | str] = {"lines": lines, "roles": roles}
                row.update(measure(troupe, _script(Path(folder), lines, roles), args.repeats))
                worst = max(float(row["snapshot_ms"]), float(row["replan_ms"]), float(row["record_ms"]))
                row["budget_ms"] = BUDGET_MS
                row["within"] = "yes" if worst <= BUDGET_MS else "NO"
                rows.append(row)
                print(table(rows[-1:], list(row)), flush=True)
    finally:
        troupe.close()
    print()
    print(table(rows, list(rows[0])))
    print(f"limits: {MAX_LINES} lines, {MAX_ROLES} roles")
    kept = {k: v for k, v in kept.items() if k == "open"}  # NB: the rest is this run's
    print(f"results: {save('bench_limits', {**kept, 'rows': rows, 'repeats': args.repeats})}")


if __name__ == "__main__":
    main()
