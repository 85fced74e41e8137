"""The role timeline: one row per role, one bar per line at its show time, coloured by
state, with a moving playhead; zoom and scroll with the mouse; a click selects a cue."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.cue_model import ADLIB_COLOUR, STATE_COLOURS, shown_state
from engine.service import CueView

BAR_HEIGHT = 0.7


class TimelineWidget(QWidget):
    """Bars are redrawn only when a cue changes; the playhead moves every frame.

    Bars are grouped into one BarGraphItem per (state, outline): an item with a single
    brush and pen paints all its rectangles in one `drawRects` call, which keeps 2,000
    cues well inside a frame.
    """

    cue_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget(background="#111827")
        self.plot.setMouseEnabled(x=True, y=False)
        # no grid: its translucent lines cost ~14 ms a frame over 2,000 bars (bench_gui_load.py)
        self.plot.setLabel("bottom", "show time", units="s")
        self.plot.getPlotItem().hideButtons()
        self.layers: dict[tuple[str, str], pg.BarGraphItem] = {}
        self._layouts: dict[tuple[str, str], tuple[bytes, bytes, bytes]] = {}
        self.drawn: dict[int, tuple[str, str]] = {}
        """Cue index -> (state colour, outline) as last drawn."""
        self.playhead = pg.InfiniteLine(0.0, angle=90, pen=pg.mkPen("#f8fafc", width=2))
        self.plot.addItem(self.playhead)
        self.follow = True
        """Scroll so the playhead stays in view while the show plays."""
        self.roles: tuple[str, ...] = ()
        self.cues: tuple[CueView, ...] = ()
        self._starts = np.zeros(0)
        self._ends = np.zeros(0)
        self._rows = np.zeros(0, np.int32)
        self._pens = {"none": pg.mkPen(None), "late": pg.mkPen("#ef4444", width=1),
                      "selected": pg.mkPen("#fde047", width=2)}  # fmt: skip
        self.selected = -1
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def set_cues(self, cues: tuple[CueView, ...], roles: tuple[str, ...]) -> None:
        """Redraw the bars if anything about the cues changed."""
        if cues == self.cues and roles == self.roles:
            return
        if roles != self.roles:
            self.roles = roles
            axis = self.plot.getAxis("left")
            axis.setTicks([[(k, r) for k, r in enumerate(roles)]])
            self.plot.setYRange(-0.6, max(1, len(roles)) - 0.4, padding=0)
        self.cues = cues
        row_of = {r: k for k, r in enumerate(roles)}
        self._rows = np.array([row_of.get(c.role, 0) for c in cues], np.int32)
        self._starts = np.array([c.start_s for c in cues], float)
        self._ends = self._starts + np.array([max(0.05, c.duration_s) for c in cues], float)
        keys = [(_state(c), _outline(c, self.selected)) for c in cues]
        self.drawn = {c.index: k for c, k in zip(cues, keys, strict=True)}
        groups: dict[tuple[str, str], list[int]] = {}
        for k, key in enumerate(keys):
            groups.setdefault(key, []).append(k)
        for key in set(self.layers) | set(groups):
            idx = np.array(groups.get(key, []), np.int64)
            layout = (idx.tobytes(), self._starts[idx].tobytes(), self._ends[idx].tobytes())
            if self._layouts.get(key) == layout:
                continue  # this layer's bars did not move or change colour
            self._layouts[key] = layout
            self._layer(key).setOpts(
                x0=self._starts[idx], y=self._rows[idx].astype(float),
                width=self._ends[idx] - self._starts[idx], height=BAR_HEIGHT,
            )  # fmt: skip

    def _layer(self, key: tuple[str, str]) -> pg.BarGraphItem:
        if key not in self.layers:
            state, outline = key
            brush = pg.mkBrush(ADLIB_COLOUR if state == "adlib" else STATE_COLOURS[state])
            item = pg.BarGraphItem(
                x0=[], y=[], width=[], height=BAR_HEIGHT, brush=brush, pen=self._pens[outline]
            )
            item.setZValue(1 if outline == "selected" else 0)
            self.plot.addItem(item)
            self.layers[key] = item
        return self.layers[key]

    def set_playhead(self, show_s: float, playing: bool) -> None:
        self.playhead.setValue(show_s)
        if self.follow and playing:
            (x0, x1), _ = self.plot.viewRange()
            if not x0 <= show_s <= x1:
                width = x1 - x0
                self.plot.setXRange(show_s - 0.1 * width, show_s + 0.9 * width, padding=0)

    def select(self, cue_index: int) -> None:
        self.selected = cue_index
        cues, self.cues = self.cues, ()
        self.set_cues(cues, self.roles)

    def cue_at(self, x_s: float, y: float) -> int | None:
        """The cue whose bar covers the point (show time, row), if any."""
        row = round(y)
        if abs(y - row) > BAR_HEIGHT / 2:
            return None
        hit = np.nonzero((self._rows == row) & (self._starts <= x_s) & (x_s <= self._ends))[0]
        return int(self.cues[int(hit[-1])].index) if hit.size else None

    def _clicked(self, event: object) -> None:
        pos = event.scenePos()  # type: ignore[attr-defined]
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            return
        p = vb.mapSceneToView(pos)
        cue = self.cue_at(p.x(), p.y())
        if cue is not None:
            self.cue_clicked.emit(cue)


def _state(c: CueView) -> str:
    if c.kind == "adlib":
        return "adlib"
    state = shown_state(c)
    return state if state in STATE_COLOURS else "pending"


def _outline(c: CueView, selected: int) -> str:
    if c.index == selected:
        return "selected"
    return "late" if c.late_ms > 0 else "none"
