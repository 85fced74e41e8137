"""The engine's notion of time: seconds on a monotonic clock, injected so that tests and
benchmarks control it; and a show time written as a clock, as the window and the terminal
show it."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]
"""Seconds on a monotonic clock; injected so tests and benchmarks control time."""

monotonic: Clock = time.monotonic


def clock_text(show_s: float, tenths: bool = False) -> str:
    """A show time as m:ss (h:mm:ss from one hour), with tenths if asked; negative times
    keep their sign."""
    sign = "-" if show_s < 0 else ""
    s = abs(show_s)
    if tenths:
        s = round(s, 1)
        whole, frac = int(s), f".{round((s - int(s)) * 10) % 10}"
    else:
        whole, frac = round(s), ""
    h, rem = divmod(whole, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{sign}{h}:{m:02d}:{sec:02d}{frac}"
    return f"{sign}{m}:{sec:02d}{frac}"
