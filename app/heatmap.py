"""The priority heatmap: roles by time (the last 30 s, one column per 50 ms scheduler
tick), colour = each role's current priority, with a colour bar and role labels."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.axes import RoleAxis
from app.rows import RowViewBox
from engine.service import HISTORY_COLUMNS

TICK_S = 0.05
MIN_TOP, MAX_TOP = 4.0, 30.0
"""The colour scale's top follows the busiest role in view, between these: a weight-1 role
waiting stays visible, and an ad-lib (+100) saturates instead of washing out the rest."""


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
            values=(0.0, MAX_TOP), colorMap=pg.colormap.get("viridis"), label="priority", interactive=False
        )
        self.colorbar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self.roles: tuple[str, ...] = ()
        self.data: NDArray[np.float32] = np.zeros((0, HISTORY_COLUMNS), np.float32)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def set_priorities(self, priorities: NDArray[np.float32], roles: tuple[str, ...]) -> None:
        """Show a roles x HISTORY_COLUMNS array (newest column last), one row per role."""
        reshaped = roles != self.roles or priorities.shape != self.data.shape
        if reshaped:
            if roles != self.roles:
                self.role_axis.set_names(roles)
                self.view.set_row_count(len(roles))
            self.roles = roles
            self.data = np.zeros(priorities.shape, np.float32)
        np.copyto(self.data, priorities)
        if self.data.size:
            levels = (0.0, min(MAX_TOP, max(MIN_TOP, float(self.data.max()))))
            self.image.setImage(self.data, autoLevels=False, levels=levels)
            if reshaped:  # NB: after setImage: the rect maps the image's own size onto the axes
                span_s = priorities.shape[1] * TICK_S
                self.image.setRect(QRectF(-span_s, -0.5, span_s, len(roles)))
                self.plot.setXRange(-span_s, 0, padding=0)
            if tuple(self.colorbar.levels()) != levels:
                self.colorbar.setLevels(levels)
