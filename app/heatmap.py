"""The priority heatmap: roles by time (the last 30 s, one column per 50 ms scheduler
tick), colour = each role's current priority, with a colour bar and role labels."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QVBoxLayout, QWidget

from engine.service import HISTORY_COLUMNS

TICK_S = 0.05
LEVELS = (0.0, 30.0)
"""Fixed colour levels: weights run 0..20 and age adds on top; ad-libs (+100) saturate."""


class HeatmapWidget(QWidget):
    """An ImageItem over a preallocated array; `setImage(..., autoLevels=False)` each frame."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget(background="#111827")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.getPlotItem().hideButtons()
        self.plot.setLabel("bottom", "seconds ago")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(
            values=LEVELS, colorMap=pg.colormap.get("viridis"), label="priority", interactive=False
        )
        self.colorbar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self.roles: tuple[str, ...] = ()
        self.data: NDArray[np.float32] = np.zeros((0, HISTORY_COLUMNS), np.float32)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def set_priorities(self, priorities: NDArray[np.float32], roles: tuple[str, ...]) -> None:
        """Show a roles x HISTORY_COLUMNS array (newest column last)."""
        if roles != self.roles or priorities.shape != self.data.shape:
            self.roles = roles
            self.data = np.zeros(priorities.shape, np.float32)
            span_s = priorities.shape[1] * TICK_S
            self.image.setRect(QRectF(-span_s, -0.5, span_s, max(1, len(roles))))
            self.plot.getAxis("left").setTicks([[(k, r) for k, r in enumerate(roles)]])
            self.plot.setRange(xRange=(-span_s, 0), yRange=(-0.5, max(1, len(roles)) - 0.5), padding=0)
        np.copyto(self.data, priorities)
        if self.data.size:
            self.image.setImage(self.data, autoLevels=False, levels=LEVELS)
