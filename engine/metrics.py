"""Rolling statistics and anomaly flags for the latency monitor, the server and benchmarks."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from engine.core.clock import Clock, monotonic


class Rolling:
    """Samples of the last `window_s` seconds, with percentiles on demand."""

    def __init__(self, window_s: float = 60.0, clock: Clock = monotonic, max_samples: int = 100_000):
        self.window_s = window_s
        self.clock = clock
        self._q: deque[tuple[float, float]] = deque(maxlen=max_samples)

    def add(self, value: float) -> None:
        if math.isfinite(value):
            self._q.append((self.clock(), value))

    def _trim(self) -> None:
        cutoff = self.clock() - self.window_s
        while self._q and self._q[0][0] < cutoff:
            self._q.popleft()

    def values(self) -> list[float]:
        self._trim()
        return [v for _, v in self._q]

    def timed(self) -> list[tuple[float, float]]:
        """(time, value) of the samples in the window."""
        self._trim()
        return list(self._q)

    def percentile(self, q: float) -> float:
        vals = self.values()
        return float(np.percentile(vals, q)) if vals else float("nan")

    def __len__(self) -> int:
        self._trim()
        return len(self._q)


@dataclass(frozen=True)
class Anomaly:
    """A sample that stood out from its stage's recent baseline."""

    stage: str
    value_ms: float
    baseline_p99_ms: float
    trace_id: str = ""


class AnomalyDetector:
    """Flags a sample slower than `factor` x the stage's rolling p99 and over `floor_ms`.

    The baseline is the p99 of the samples *before* this one (so an outlier does not raise
    its own bar), over a sliding window; with fewer than `min_samples` nothing is flagged.
    It is recomputed at most every `REFRESH_S` or once the samples grew by 5%: a percentile
    over a minute of samples on every request took a third of a busy server's engine thread.
    """

    REFRESH_S = 0.5

    def __init__(self, window_s: float = 60.0, factor: float = 1.8, floor_ms: float = 200.0,
                 min_samples: int = 20, clock: Clock = monotonic) -> None:  # fmt: skip
        self.factor, self.floor_ms, self.min_samples = factor, floor_ms, min_samples
        self.window_s, self.clock = window_s, clock
        self._stages: dict[str, Rolling] = {}
        self._baselines: dict[str, tuple[float, int, float]] = {}
        """Per stage: when the p99 was computed, over how many samples, and its value."""
        self.flagged: deque[Anomaly] = deque(maxlen=1000)

    def _p99(self, stage: str, rolling: Rolling, n: int) -> float:
        now = self.clock()
        at, count, p99 = self._baselines.get(stage, (-math.inf, 0, math.nan))
        if now - at >= self.REFRESH_S or n > count * 1.05 + 8 or n < count // 2:
            p99 = rolling.percentile(99)
            self._baselines[stage] = (now, n, p99)
        return p99

    def observe(self, stage: str, value_ms: float, trace_id: str = "") -> Anomaly | None:
        rolling = self._stages.setdefault(stage, Rolling(self.window_s, self.clock))
        anomaly = None
        n = len(rolling)
        if n >= self.min_samples:
            p99 = self._p99(stage, rolling, n)
            if value_ms > self.factor * p99 and value_ms > self.floor_ms:
                anomaly = Anomaly(stage, value_ms, p99, trace_id)
                self.flagged.append(anomaly)
        rolling.add(value_ms)
        return anomaly

    def baseline_ms(self, stage: str) -> float:
        r = self._stages.get(stage)
        return r.percentile(99) if r is not None else float("nan")
