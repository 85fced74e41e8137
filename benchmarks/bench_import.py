"""Script import time per MB for every format, on realistic files and on the
pathological inputs that used to make the importers backtrack, at 1 MB and 4 MB.

Linear parsing shows as a 4 MB / 1 MB time ratio near 4 (a quadratic parser gives ~16).
Three repeats each; the median is reported with the spread (max - min) at 1 MB. Inputs
read in under 50 ms are too quick for the ratio to mean anything on a shared machine.

    python benchmarks/bench_import.py
"""

from __future__ import annotations

import contextlib
import statistics
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
REPEATS = 3
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
    "script.srt": lambda size: _fill(
        lambda k: f"{k + 1}\n{_ts(k * 3)} --> {_ts(k * 3 + 2)}\n{LINE}\n\n", size
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
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name, make in {**REALISTIC, **_pathological()}.items():
            rows.append(measure(name, make, Path(d)))
            print(rows[-1]["input"], f"{rows[-1]['s_per_mb']:.3f} s/MB", flush=True)
    cols = ["input", "s_per_mb", "target_s_per_mb", "spread_s", "ratio_4mb_to_1mb", "target_ratio", "ok"]
    print(table(rows, cols))
    path = save("bench_import", {"repeats": REPEATS, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
