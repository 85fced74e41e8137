"""Where a big script starts to break playback: the engine thread's periodic costs (a
snapshot for the GUI, ~20 per second; a re-plan of the timeline, at every line placed; the
role heatmap's update, which includes a snapshot) against the number of lines and roles.
An engine turn that takes longer than the 200 ms of audio rendered ahead is an underrun, so
each cost's budget is half of that, 100 ms; the limits in engine/script/limits.py sit below
the sizes where a cost passes it on the development machine (2 shared cores).

    python benchmarks/bench_limits.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import save, table

from engine.cast import Cast
from engine.control import EngineSettings, Troupe
from engine.script import import_unchecked
from engine.script.limits import MAX_LINES, MAX_ROLES
from engine.show.planner import plan

BUDGET_MS = 100.0


def _script(folder: Path, lines: int, roles: int) -> Path:
    path = folder / f"s_{lines}_{roles}.txt"
    path.write_text(
        "\n".join(f"ROLE{k % roles}: This is line number {k} of the big show." for k in range(lines))
    )
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
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
    print(f"results: {save('bench_limits', {'rows': rows, 'repeats': args.repeats})}")


if __name__ == "__main__":
    main()
