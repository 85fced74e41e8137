"""`main.py` with the scheduling policy's calls timed in the calling thread's CPU time (the
engine thread's, and the event loop's for admission and queueing), for
`bench_policy_cost.py`: SIGUSR2 writes the totals so far as JSON to the file named by
$TROUPE_POLICY_TIMES: {"calls": {call: [nanoseconds, calls]}, "threads": {name: native id}}
(the ids let the caller read each thread's CPU time from /proc).

    TROUPE_POLICY_TIMES=/tmp/t.json python benchmarks/_timed_serve.py serve --policy fifo
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from _common import ROOT

from engine.scheduler.policies import PerBackend

PARTS = ("refresh", "pop", "push", "admit", "expire")
_totals: dict[str, list[int]] = {}


def _timed(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time_ns()
        try:
            return call(*args, **kwargs)
        finally:
            total = _totals.setdefault(name, [0, 0])
            total[0] += time.thread_time_ns() - t0
            total[1] += 1

    return timed


def _write(*_: object) -> None:
    threads = {t.name: t.native_id for t in threading.enumerate()}
    path = os.environ["TROUPE_POLICY_TIMES"]
    with open(path + ".part", "w") as f:
        json.dump({"calls": _totals, "threads": threads}, f)
    os.replace(path + ".part", path)  # NB: the reader never sees half a file


if __name__ == "__main__":
    for part in PARTS:
        setattr(PerBackend, part, _timed(part, getattr(PerBackend, part)))
    signal.signal(signal.SIGUSR2, _write)
    sys.argv = [str(ROOT / "main.py"), *sys.argv[1:]]
    runpy.run_path(str(ROOT / "main.py"), run_name="__main__")
