"""`python main.py --smoke` run N times in a row: how many exit 0 (target: all of them).

jackd --no-realtime -d dummy -r 48000 -p 256 &   # if none is running
python benchmarks/bench_smoke.py [--runs 20] [--device JACK]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from _common import ROOT, save, table


def run_once(device: str, extra: list[str]) -> dict[str, object]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "--smoke", "--device", device, *extra],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)  # fmt: skip
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("smoke:")), "")
    return {"exit": done.returncode, "wall_s": time.perf_counter() - t0, "line": line,
            "stderr_tail": done.stderr[-300:] if done.returncode else ""}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--device", default="JACK")
    ap.add_argument("--in-process-audio", action="store_true", help="pass it on to main.py")
    args = ap.parse_args()
    extra = ["--in-process-audio"] if args.in_process_audio else []
    runs = [run_once(args.device, extra) for _ in range(args.runs)]
    ok = sum(r["exit"] == 0 for r in runs)
    codes = sorted({int(str(r["exit"])) for r in runs})
    mode = "in_process" if extra else "default"
    rows = [{"mode": mode, "runs": len(runs), "exit_0": ok, "exit_codes": codes, "target": len(runs)}]
    print(table(rows, ["mode", "runs", "exit_0", "exit_codes", "target"]))
    print(f"wrote {save('bench_smoke', {'rows': rows, 'runs': runs})}")


if __name__ == "__main__":
    main()
