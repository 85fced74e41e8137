"""Axes the director reads at a real show's size: role names that are elided and thinned
so they never overlap, and a show-time ruler in m:ss (h:mm:ss past an hour)."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics

from engine.core.clock import clock_text

__all__ = ["ROLE_AXIS_PX", "TimeAxis", "clock_text"]

ROLE_AXIS_PX = 120
"""Width of the role labels beside the timeline; longer names are elided."""


class TimeAxis(pg.AxisItem):
    """A bottom axis whose ticks read m:ss; the spacing is whole seconds, minutes or hours."""

    STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)

    def __init__(self, orientation: str = "bottom") -> None:
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:
        minVal, maxVal = sorted((minVal, maxVal))
        span = maxVal - minVal
        if span <= 0 or size <= 0:
            return []
        wanted = max(2, int(size / 80))  # a label needs ~80 px
        step = next((s for s in self.STEPS_S if span / s <= wanted), self.STEPS_S[-1])
        first = math.ceil(minVal / step) * step
        return [(float(step), [first + k * step for k in range(int((maxVal - first) // step) + 1)])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        return [clock_text(v) for v in values]


class RoleAxis(pg.AxisItem):
    """A left axis naming one role per integer row. Labels are elided to the axis width and,
    when rows are closer than a line of text, only every k-th row is named."""

    def __init__(self, width_px: int = ROLE_AXIS_PX) -> None:
        super().__init__("left")
        self.names: tuple[str, ...] = ()
        self.marks: dict[str, str] = {}
        """Role -> a short prefix ('M' muted, 'S' soloed) drawn before its name."""
        self.setWidth(width_px)
        self.setStyle(tickTextWidth=width_px - 12, autoExpandTextSpace=False, hideOverlappingLabels=True)

    def set_names(self, names: tuple[str, ...], marks: dict[str, str] | None = None) -> None:
        self.names = names
        self.marks = marks or {}
        self.picture = None
        self.update()

    def _metrics(self) -> QFontMetrics:
        font = self.style.get("tickFont") or QFont()
        return QFontMetrics(font)

    def row_step(self, rows_in_view: float, size_px: float) -> int:
        """Label every k-th row so labels are at least one text line apart."""
        if size_px <= 0 or rows_in_view <= 0:
            return 1
        px_per_row = size_px / rows_in_view
        return max(1, math.ceil(self._metrics().height() / px_per_row))

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:
        minVal, maxVal = sorted((minVal, maxVal))  # an inverted view hands them high first
        lo, hi = max(0, math.ceil(minVal)), min(len(self.names) - 1, math.floor(maxVal))
        if hi < lo:
            return []
        step = self.row_step(maxVal - minVal, size)
        return [(float(step), [float(r) for r in range(lo - lo % step, hi + 1, step) if r >= lo])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        return [self.label_of(round(v)) for v in values]

    def label_of(self, row: int) -> str:
        """The text drawn for `row`: its role, elided to fit the axis."""
        if not 0 <= row < len(self.names):
            return ""
        name = self.names[row]
        text = f"{self.marks[name]} {name}" if name in self.marks else name
        return self._metrics().elidedText(text, Qt.TextElideMode.ElideRight, self.width() - 14)
