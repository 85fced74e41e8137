"""The gender scan's cost (reading the action for pronouns) on big screenplays: 1,000 to
9,990 speeches of 1,980 characters, 990 roles, an action line every tenth speech (the
limits' largest script is 20 MB). This rule (a speech is its cue's paragraph, found from
the cue's own line number) against the previous one (each line searched for in all the
dialogue) in one run, 3 repeats, medians. Linear shows as a time ratio 9,990 / 1,000
speeches near 10 (the previous rule's is near 100); target under 20.

    python benchmarks/bench_gender_scan.py
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import save, table

from engine import gender
from engine.core.types import Script
from engine.script import import_unchecked

SPEECHES = (1_000, 2_000, 4_000, 9_990)
ROLES = 990
CHARS = 1_980
REPEATS = 3
TARGET_RATIO = 20.0
SENTENCE = "She walked to the harbour and he followed her without a word, slowly. "


def _script(folder: Path, speeches: int) -> Script:
    body = (SENTENCE * (CHARS // len(SENTENCE) + 1))[:CHARS]
    parts = ["INT. HALL - DAY", ""]
    for k in range(speeches):
        parts += [f"ROLE{k % ROLES:03d}", f"Number {k}. {body}"[:CHARS], ""]
        if k % 10 == 0:
            parts += [f"ROLE{k % ROLES:03d} looks at her. She nods.", ""]
    path = folder / f"big_{speeches}.fountain"
    path.write_text("\n".join(parts), encoding="utf-8")
    return import_unchecked(path)  # past the line limit at 9,990 x 1,980: no matter here


def _previous(script: Script) -> list[str]:
    """The previous rule: every candidate line searched for in all the dialogue."""
    text = Path(script.path).read_text(encoding="utf-8")
    spoken = "\n".join({" ".join(c.text.split()) for c in script.cues})
    names = set(script.roles)
    out = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line or line.startswith("(") or ":" in line[:30]:
            continue
        if line.upper() == line and re.sub(r"\s*\(.*\)|\s*\^$", "", line).strip() in names:
            continue
        out.append(line)
    return [line for line in out if line not in spoken]


def _time(fn: Callable[[Script], list[str]], script: Script) -> tuple[float, int]:
    runs, found = [], 0
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        found = len(fn(script))
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), found


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in SPEECHES:
            script = _script(Path(d), n)
            now_s, now_lines = _time(gender.action_lines, script)
            before_s, before_lines = _time(_previous, script)
            rows.append({"speeches": n, "mb": round(Path(script.path).stat().st_size / 1e6, 1),
                         "action_lines": now_lines, "same_lines_as_before": now_lines == before_lines,
                         "this_rule_s": round(now_s, 4), "previous_rule_s": round(before_s, 3)})  # fmt: skip
            print(rows[-1], flush=True)
    first, last = rows[0], rows[-1]
    ratio = last["this_rule_s"] / max(first["this_rule_s"], 1e-6)
    summary = {"time_ratio_9990_to_1000": round(ratio, 1), "target_ratio": TARGET_RATIO,
               "previous_ratio": round(last["previous_rule_s"] / max(first["previous_rule_s"], 1e-6), 1),
               "ok": ratio < TARGET_RATIO and all(r["same_lines_as_before"] for r in rows)}  # fmt: skip
    print(table(rows, list(rows[0])))
    print(table([summary], list(summary)))
    print(f"wrote {save('bench_gender_scan', {'repeats': REPEATS, 'rows': rows, 'summary': summary})}")


if __name__ == "__main__":
    main()
