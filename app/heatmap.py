"""The scheduler heatmap: roles by time (the last 30 s, one column per 50 ms scheduler
tick), colour = each role's urgency (0..1, from the slack the scheduler computes to its
deadlines: 1 means a line is due now or will be late); hovering a cell tells its queued
synthesis work. Rows are the timeline's (one shared, scrollable row axis)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.axes import RoleAxis
from app.rows import RowViewBox
from engine.control import HISTORY_COLUMNS

TICK_S = 0.05
LEVELS = (0.0, 1.0)
"""Urgency is 0..1 by definition: a fixed scale, comparable across shows and moments."""


class HeatmapWidget(QWidget):
    """An ImageItem over a preallocated array; `setImage(..., autoLevels=False)` each frame."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = RowViewBox()
        self.view.setMouseEnabled(x=False, y=False)
        self.view.pan_time = False
        self.role_axis = RoleAxis()
        self.plot = pg.PlotWidget(background="#111827", viewBox=self.view, axisItems={"left": self.role_axis})
        self.plot.getPlotItem().hideButtons()
        self.plot.setLabel("bottom", "seconds ago")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(
            values=LEVELS, colorMap=pg.colormap.get("inferno"), label="urgency", interactive=False
        )
        self.colorbar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self.roles: tuple[str, ...] = ()
        self.data: NDArray[np.float32] = np.zeros((0, HISTORY_COLUMNS), np.float32)
        self.work: NDArray[np.float32] = np.zeros((0, HISTORY_COLUMNS), np.float32)
        self.plot.scene().sigMouseMoved.connect(self._hovered)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def set_priorities(self, urgency: NDArray[np.float32], roles: tuple[str, ...],
                       work: NDArray[np.float32] | None = None) -> None:  # fmt: skip
        """Show a roles x HISTORY_COLUMNS urgency array (newest column last), one row per
        role, and keep the queued work (same shape) for the hover text."""
        reshaped = roles != self.roles or urgency.shape != self.data.shape
        if reshaped:
            if roles != self.roles:
                self.role_axis.set_names(roles)
                self.view.set_row_count(len(roles))
            self.roles = roles
            self.data = np.zeros(urgency.shape, np.float32)
        np.copyto(self.data, urgency)
        self.work = work if work is not None and work.shape == urgency.shape else np.zeros_like(self.data)
        if self.data.size:
            self.image.setImage(self.data, autoLevels=False, levels=LEVELS)
            if reshaped:  # NB: after setImage: the rect maps the image's own size onto the axes
                span_s = urgency.shape[1] * TICK_S
                self.image.setRect(QRectF(-span_s, -0.5, span_s, len(roles)))
                self.plot.setXRange(-span_s, 0, padding=0)

    def cell_text(self, x_s: float, y: float) -> str:
        """What hovering at (seconds ago, row) says: role, urgency, queued work."""
        row, col = round(y), self.data.shape[1] - 1 + round(x_s / TICK_S)
        if not (0 <= row < len(self.roles) and 0 <= col < self.data.shape[1]):
            return ""
        return (f"{self.roles[row]} at {-x_s:.1f} s ago: urgency {self.data[row, col]:.2f}, "
                f"queued work {self.work[row, col]:.2f} s")  # fmt: skip

    def _hovered(self, pos: QPointF) -> None:
        if not self.view.sceneBoundingRect().contains(pos):
            return
        p = self.view.mapSceneToView(pos)
        self.plot.setToolTip(self.cell_text(p.x(), p.y()))
