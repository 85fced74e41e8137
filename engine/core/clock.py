"""The engine's notion of time: seconds on a monotonic clock, injected so that tests and
benchmarks control it."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]
"""Seconds on a monotonic clock; injected so tests and benchmarks control time."""

monotonic: Clock = time.monotonic
