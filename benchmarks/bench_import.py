"""Script import time and peak memory for every format at 1, 5 and 20 MB, and time on
the pathological inputs that used to make the importers backtrack, at 1 MB and 4 MB.

Each realistic import runs in a fresh process (`load_script`, the path every way in takes:
a file past the playable limits is read and then refused, and that is what is timed), which
reports its own time and its peak resident memory above what it held before the import
(the kernel's high-water mark, reset just before: /proc/self/clear_refs).
Linear import shows as a 20 MB / 1 MB ratio near 20 for time and memory (a quadratic one
gives ~400). Three repeats each; medians, with the spread (max - min) at 1 MB. Inputs read
in under 50 ms are too quick for a ratio to mean anything on a shared machine.

    python benchmarks/bench_import.py
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import ROOT, save, table

from engine.core.errors import ScriptError
from engine.script import load_script

MB = 1_000_000
TARGET_S_PER_MB = 2.0
"""A 1 MB script (ten feature screenplays) imports in under 2 s: the window stays usable."""
TARGET_RATIO = 8.0
"""4 MB / 1 MB time: 4 is linear, 16 quadratic; 8 is the (geometric) line between them."""
TARGET_RATIO_20 = 40.0
"""20 MB / 1 MB, time and memory: 20 is linear, 400 quadratic; 40 allows a file past the
limits being refused after the read (its check costs a little more per line)."""
SIZES = (MB, 5 * MB, 20 * MB)
REPEATS = 3
_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[2])
from engine.core.errors import ScriptError
from engine.script import load_script
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0
open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) starts again from here
before = status("VmRSS")
t0 = time.perf_counter()
outcome = "read"
try:
    load_script(sys.argv[1])
except ScriptError as exc:
    outcome = "refused: " + exc.reason[:60]
took = time.perf_counter() - t0
peak = status("VmHWM")
print(json.dumps({"s": took, "peak_mib": (peak - before) / 1024, "outcome": outcome}))
"""
sys.path.insert(0, str(ROOT / "tests" / "engine" / "script"))


def _ts(t: float, sep: str = ",") -> str:
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


def _fill(unit: Callable[[int], str], size: int, head: str = "", tail: str = "") -> str:
    parts, n, k = [head], len(head) + len(tail), 0
    while n < size:
        parts.append(unit(k))
        n += len(parts[-1])
        k += 1
    return "".join(parts) + tail


LINE = "[KAI] Easy for you to say, you're not carrying the map, the compass and your lunch."
ASS_HEAD = (
    "[Script Info]\nScriptType: v4.00+\n\n[Events]\n"
    "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
)
FDX_PARA = (
    '<Paragraph Type="Character"><Text>KAI</Text></Paragraph>'
    '<Paragraph Type="Dialogue"><Text>Easy for you to say, you are not carrying the map.</Text></Paragraph>\n'
)
REALISTIC: dict[str, Callable[[int], str]] = {
    "script.fountain": lambda size: _fill(
        lambda k: (ROOT / "tests" / "data" / "samples" / "brick_and_steel.fountain").read_text() + "\n\n",
        size,
    ),
    "script.srt": lambda size: _fill(  # 1.5 s a cue: 20 MB stays under SRT's 99 hours
        lambda k: f"{k + 1}\n{_ts(k * 1.5)} --> {_ts(k * 1.5 + 1)}\n{LINE}\n\n", size
    ),
    "script.vtt": lambda size: _fill(
        lambda k: f"{_ts(k * 3, '.')} --> {_ts(k * 3 + 2, '.')}\n<v Kai>{LINE[6:]}\n\n", size, "WEBVTT\n\n"
    ),
    "script.ass": lambda size: _fill(
        lambda k: (
            f"Dialogue: 0,{_ts(k * 3, '.')[1:-1]},{_ts(k * 3 + 2, '.')[1:-1]},Default,Kai,0,0,0,,"
            f"{{\\i1}}{LINE[6:]}{{\\i0}}\n"
        ),
        size,
        ASS_HEAD,
    ),
    "script.sbv": lambda size: _fill(
        lambda k: f"{_ts(k * 3, '.')[1:]},{_ts(k * 3 + 2, '.')[1:]}\n{LINE}\n\n", size
    ),
    "script.sub": lambda size: _fill(lambda k: f"{{{k * 75}}}{{{k * 75 + 50}}}{LINE}\n", size, "{1}{1}25\n"),
    "script.fdx": lambda size: _fill(
        lambda k: FDX_PARA, size, '<?xml version="1.0"?>\n<FinalDraft><Content>\n', "</Content></FinalDraft>"
    ),
    "script.txt": lambda size: _fill(lambda k: "KAI: " + LINE[6:] + "\n", size),
    "script.csv": lambda size: _fill(
        lambda k: f'KAI,"{LINE[6:]}",calm,{k * 3}\n', size, "role,text,emotion,start_s\n"
    ),
}


def _pathological() -> dict[str, Callable[[int], str]]:
    from test_linear_time import CASES  # the same inputs the test feeds at 1 MB

    def scaled(text: str) -> Callable[[int], str]:
        def make(size: int) -> str:
            if size <= MB:
                return text
            body = text[:-64]  # repeat the body, keep the ending (the part that closes a cue)
            return body * (size // MB) + text[-64:]

        return make

    return {f"pathological/{name}": scaled(text) for name, text in CASES.items()}


def _time(path: Path) -> float:
    t0 = time.perf_counter()
    with contextlib.suppress(ScriptError):  # a refusal is timed like a success
        load_script(path)
    return time.perf_counter() - t0


def _child(path: Path) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(ROOT)], capture_output=True,
                         text=True, check=True, timeout=600)  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def measure_sizes(name: str, make: Callable[[int], str], tmp: Path) -> dict[str, object]:
    """Time and peak memory at 1, 5 and 20 MB, each import in a fresh process."""
    row: dict[str, object] = {"input": name}
    times: dict[int, list[float]] = {}
    peaks: dict[int, list[float]] = {}
    for size in SIZES:
        f = tmp / Path(name).name
        f.write_text(make(size), encoding="utf-8")
        runs = [_child(f) for _ in range(REPEATS)]
        times[size] = [float(str(r["s"])) for r in runs]
        peaks[size] = [float(str(r["peak_mib"])) for r in runs]
        mb = size // MB
        row[f"s_{mb}mb"] = statistics.median(times[size])
        row[f"peak_mib_{mb}mb"] = statistics.median(peaks[size])
        row[f"outcome_{mb}mb"] = runs[0]["outcome"]
        f.unlink()
    one_s, big_s = statistics.median(times[MB]), statistics.median(times[20 * MB])
    one_m, big_m = statistics.median(peaks[MB]), statistics.median(peaks[20 * MB])
    row.update({
        "spread_s_1mb": max(times[MB]) - min(times[MB]),
        "time_ratio_20_to_1": big_s / max(one_s, 1e-6),
        "memory_ratio_20_to_1": big_m / max(one_m, 1.0),
        "target_ratio": TARGET_RATIO_20, "target_s_per_mb": TARGET_S_PER_MB,
    })  # fmt: skip
    row["ok"] = (
        one_s < TARGET_S_PER_MB
        and (float(str(row["time_ratio_20_to_1"])) < TARGET_RATIO_20 or one_s < 0.05)
        and float(str(row["memory_ratio_20_to_1"])) < TARGET_RATIO_20
    )
    return row


def measure(name: str, make: Callable[[int], str], tmp: Path) -> dict[str, object]:
    runs: dict[int, list[float]] = {}
    for size in (MB, 4 * MB):
        f = tmp / Path(name).name
        f.write_text(make(size), encoding="utf-8")
        runs[size] = [_time(f) for _ in range(REPEATS)]
    one, four = statistics.median(runs[MB]), statistics.median(runs[4 * MB])
    ratio = four / max(one, 1e-6)
    return {
        "input": name, "s_per_mb": one, "spread_s": max(runs[MB]) - min(runs[MB]),
        "ratio_4mb_to_1mb": ratio, "target_s_per_mb": TARGET_S_PER_MB, "target_ratio": TARGET_RATIO,
        "ok": one < TARGET_S_PER_MB and (ratio < TARGET_RATIO or one < 0.05),
    }  # fmt: skip


def main() -> None:
    sized, rows = [], []
    with tempfile.TemporaryDirectory() as d:
        for name, make in REALISTIC.items():
            sized.append(measure_sizes(name, make, Path(d)))
            one, big = sized[-1]["s_1mb"], sized[-1]["s_20mb"]
            print(name, f"{one:.3f} s at 1 MB, {big:.2f} s at 20 MB", flush=True)
        for name, make in _pathological().items():
            rows.append(measure(name, make, Path(d)))
            print(rows[-1]["input"], f"{rows[-1]['s_per_mb']:.3f} s/MB", flush=True)
    sized_cols = ["input", "s_1mb", "s_5mb", "s_20mb", "target_s_per_mb", "time_ratio_20_to_1",
                  "peak_mib_1mb", "peak_mib_20mb", "memory_ratio_20_to_1", "target_ratio", "ok"]  # fmt: skip
    print(table(sized, sized_cols))
    print(table(sized, ["input", "outcome_1mb", "outcome_20mb"]))
    cols = ["input", "s_per_mb", "target_s_per_mb", "spread_s", "ratio_4mb_to_1mb", "target_ratio", "ok"]
    print(table(rows, cols))
    path = save("bench_import", {"repeats": REPEATS, "sizes_mb": [s // MB for s in SIZES], "sized": sized,
                                 "rows": rows})  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
