"""The latency monitor: big numbers and rolling plots from the snapshot's figures."""

from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.axes import TimeAxis
from engine.control import EngineSnapshot, Figures

LATE_SCALE_MS = 50.0
"""The lateness plot shows at least 0..50 ms."""
HISTORY_POINTS = 900
"""30 s of figures at the bridge's 30 Hz."""

_NUMBERS = (  # (label, format, figures attribute or callable)
    ("ad-lib → ring p50", "{:.0f} ms", "adlib_p50_ms"),
    ("ad-lib → ring p95", "{:.0f} ms", "adlib_p95_ms"),
    ("ad-lib → audible p50", "{:.0f} ms", "audible_p50_ms"),
    ("ad-lib → audible p95", "{:.0f} ms", "audible_p95_ms"),
    ("queue wait p50", "{:.0f} ms", "queue_wait_p50_ms"),
    ("queue wait p95", "{:.0f} ms", "queue_wait_p95_ms"),
    ("synthesis RTF", "{:.3f}", "rtf"),
    ("ring fill", "{:.0f} ms", "ring_fill_ms"),
    ("callback load", "{:.1%}", "callback_load"),
    ("underruns", "{}", "underruns"),
    ("xruns", "{}", "xruns"),
    ("queue depth", "{}", "queue_depth"),
    ("late lines", "{}", "deadline_misses"),
    ("fallbacks", "{}", "fallbacks"),
    ("anomalies", "{}", "anomalies"),
)
_ALARM = {"underruns", "xruns", "deadline_misses", "anomalies"}
NUMBER_COLUMNS = 8
"""Figures per row: two rows of numbers leave the height to the plots (a 768-line screen)."""
PLOT_MIN_HEIGHT = 120
"""Below this a plot's axis labels run into its data."""


class LatencyMonitor(QWidget):
    """Numbers update every snapshot; curves keep a preallocated 30 s history."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout()
        self.values: dict[str, QLabel] = {}
        for k, (label, _, attr) in enumerate(_NUMBERS):
            name = QLabel(label)
            name.setStyleSheet("color: #4b5563; font-size: 10px;")  # readable on the light panel
            value = QLabel("–")
            value.setStyleSheet("font-size: 18px; font-weight: 600;")
            grid.addWidget(name, 2 * (k // NUMBER_COLUMNS), k % NUMBER_COLUMNS)
            grid.addWidget(value, 2 * (k // NUMBER_COLUMNS) + 1, k % NUMBER_COLUMNS)
            self.values[attr] = value
        self.t = np.zeros(HISTORY_POINTS)
        self.fill = np.zeros(HISTORY_POINTS)
        self.depth = np.zeros(HISTORY_POINTS)
        self.n = 0
        self.t0 = time.monotonic()
        self.curves = pg.PlotWidget(background="#111827")
        self.curves.addLegend(offset=(5, 5))
        self.curves.setLabel("bottom", "seconds")
        self.curves.getAxis("bottom").enableAutoSIPrefix(False)
        self.curves.getPlotItem().hideButtons()
        self.fill_curve = self.curves.plot(pen=pg.mkPen("#38bdf8", width=2), name="ring fill (ms)")
        self.depth_curve = self.curves.plot(pen=pg.mkPen("#f59e0b", width=2), name="queue depth")
        self.late = pg.PlotWidget(background="#111827", axisItems={"bottom": TimeAxis()})
        self.late.setLabel("bottom", "show time")
        self.late.setLabel("left", "start late (ms)")
        self.late.getAxis("left").enableAutoSIPrefix(False)
        self.late.getPlotItem().hideButtons()
        self.late_points = pg.ScatterPlotItem(size=7)
        self.late.addItem(self.late_points)
        self._ok, self._red = pg.mkBrush("#22c55e"), pg.mkBrush("#ef4444")
        self._late_top = 0.0
        for plot in (self.curves, self.late):
            plot.setMinimumHeight(PLOT_MIN_HEIGHT)
        plots = QHBoxLayout()
        plots.addWidget(self.curves, 1)
        plots.addWidget(self.late, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addLayout(plots, 1)

    def update_from(self, snap: EngineSnapshot) -> None:
        self._numbers(snap.figures)
        self._push(snap.figures)
        pts = snap.latency_points
        if pts:
            xy = np.array([(x, y) for x, y, _ in pts], float)
            brushes = [self._red if missed else self._ok for _, _, missed in pts]
            self.late_points.setData(x=xy[:, 0], y=xy[:, 1], brush=brushes)
            top = max(LATE_SCALE_MS, float(xy[:, 1].max()) * 1.1)
        else:
            self.late_points.setData(x=[], y=[])
            top = LATE_SCALE_MS
        if self._late_top != top:  # on time reads as a flat line at 0, not noise on a +-0.4 ms scale
            self._late_top = top
            self.late.setYRange(0.0, top, padding=0.02)

    def _numbers(self, f: Figures) -> None:
        for _, fmt, attr in _NUMBERS:
            v = getattr(f, attr)
            text = "–" if isinstance(v, float) and math.isnan(v) else fmt.format(v)
            label = self.values[attr]
            if label.text() != text:
                label.setText(text)
                alarm = attr in _ALARM and v > 0
                label.setStyleSheet(
                    "font-size: 18px; font-weight: 600;" + (" color: #ef4444;" if alarm else "")
                )

    def _push(self, f: Figures) -> None:
        if self.n == HISTORY_POINTS:  # shift in place: no allocation per frame
            for a in (self.t, self.fill, self.depth):
                a[:-1] = a[1:]
            self.n -= 1
        k = self.n
        self.t[k], self.fill[k], self.depth[k] = time.monotonic() - self.t0, f.ring_fill_ms, f.queue_depth
        self.n += 1
        self.fill_curve.setData(self.t[: self.n], self.fill[: self.n], skipFiniteCheck=True)
        self.depth_curve.setData(self.t[: self.n], self.depth[: self.n], skipFiniteCheck=True)
