"""The vertical axis the timeline and the heatmap share: one row per role, scrolled and
zoomed together, with a scroll bar, so a show with fifty roles stays readable."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt

DEFAULT_ROWS = 16
"""Rows in view when a script opens (all of them when it has fewer roles)."""
MIN_ROWS = 3
WHEEL_ROWS = 3
"""Rows one wheel notch scrolls."""


class RowViewBox(pg.ViewBox):
    """A view whose y axis is role rows (row 0 at the top).

    Wheel: scroll rows. Ctrl+wheel: zoom time. Shift+wheel: scroll time.
    Ctrl+Shift+wheel: zoom rows. Dragging pans time.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setMouseEnabled(x=True, y=False)
        self.invertY(True)
        self.n_rows = 0
        self.pan_time = True
        """Shift+wheel scrolls time (off where the time span is fixed)."""

    def set_row_count(self, n_rows: int) -> None:
        """Take a new number of rows and show the first ones (at most DEFAULT_ROWS)."""
        self.n_rows = n_rows
        span = max(1, n_rows)
        self.setLimits(yMin=-0.5, yMax=span - 0.5, minYRange=min(MIN_ROWS, span), maxYRange=span)
        self.show_rows(0, min(span, DEFAULT_ROWS))

    def show_rows(self, top: float, count: float) -> None:
        """Show `count` rows from row `top` (clamped to the rows there are)."""
        span = max(1, self.n_rows)
        count = min(max(count, min(MIN_ROWS, span)), span)
        top = min(max(top, 0.0), span - count)
        self.setYRange(top - 0.5, top + count - 0.5, padding=0)

    def visible_rows(self) -> tuple[float, float]:
        """(first row in view, rows in view)."""
        _, (y0, y1) = self.viewRange()
        return y0 + 0.5, y1 - y0

    def scroll_rows(self, delta: float) -> None:
        top, count = self.visible_rows()
        self.show_rows(top + delta, count)

    def zoom_rows(self, factor: float) -> None:
        """Show `factor` times as many rows, keeping the middle row where it is."""
        top, count = self.visible_rows()
        new = count * factor
        self.show_rows(top + (count - new) / 2, new)

    def wheelEvent(self, ev: Any, axis: int | None = None) -> None:
        mods = ev.modifiers()
        notches = ev.delta() / 120
        ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
        shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
        if ctrl and shift:
            self.zoom_rows(0.8**notches)
        elif ctrl:
            if self.pan_time:
                super().wheelEvent(ev, axis=0)
        elif shift and self.pan_time:
            (x0, x1), _ = self.viewRange()
            step = -(x1 - x0) * 0.1 * notches
            self.setXRange(x0 + step, x1 + step, padding=0)
        else:
            self.scroll_rows(-WHEEL_ROWS * notches)
        ev.accept()
