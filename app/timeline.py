"""The role timeline: one row per role, one bar per line at its show time, coloured by
state (muted or silenced-by-solo roles dimmed), with a moving playhead; a ruler in m:ss;
rows scroll and zoom (see `RowViewBox`); a click selects a cue."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.axes import RoleAxis, TimeAxis
from app.cue_model import ADLIB_COLOUR, STATE_COLOURS, shown_state
from app.rows import RowViewBox
from engine.control import BUCKETS_PER_S, CueView

BAR_HEIGHT = 0.7
FIRST_VIEW_S = 180.0
"""Show time in view when a script opens (the whole show when shorter)."""
SILENT_ALPHA = 60
"""Opacity (of 255) of the bars of a role that is muted or silenced by another's solo."""


class TimelineWidget(QWidget):
    """Bars are redrawn only when a cue changes; the playhead moves every frame.

    Bars are grouped into one BarGraphItem per (state, outline): an item with a single
    brush and pen paints all its rectangles in one `drawRects` call, which keeps 2,000
    cues well inside a frame.
    """

    cue_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = RowViewBox()
        self.role_axis = RoleAxis()
        self.plot = pg.PlotWidget(background="#111827", viewBox=self.view,
                                  axisItems={"left": self.role_axis, "bottom": TimeAxis()})  # fmt: skip
        # no grid: its translucent lines cost ~14 ms a frame over 2,000 bars (bench_gui_load.py)
        self.plot.setLabel("bottom", "show time")
        self.plot.getPlotItem().hideButtons()
        self.layers: dict[tuple[str, str, bool], pg.BarGraphItem] = {}
        self._layouts: dict[tuple[str, str, bool], tuple[bytes, bytes, bytes]] = {}
        self.drawn: dict[int, tuple[str, str]] = {}
        """Cue index -> (state colour, outline) as last drawn."""
        self.silent: frozenset[str] = frozenset()
        """Roles not heard (muted, or silenced by another role's solo): drawn dimmed."""
        self.wave = pg.PlotCurveItem(connect="pairs", pen=pg.mkPen("#0f172a", width=1))
        self.wave.setZValue(2)  # over the bars it lies in
        self.plot.addItem(self.wave)
        self._wave_key: tuple[object, ...] = ()
        self.envelopes: Mapping[int, NDArray[np.float32]] = {}
        self.playhead = pg.InfiniteLine(0.0, angle=90, pen=pg.mkPen("#f8fafc", width=2))
        self.plot.addItem(self.playhead)
        self.follow = True
        """Scroll so the playhead stays in view while the show plays."""
        self.roles: tuple[str, ...] = ()
        self.cues: tuple[CueView, ...] = ()
        """The cues drawn (those of the roles shown)."""
        self._given: tuple[CueView, ...] = ()
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

    def set_cues(
        self, cues: tuple[CueView, ...], roles: tuple[str, ...], silent: frozenset[str] = frozenset(),
        envelopes: Mapping[int, NDArray[np.float32]] | None = None,
    ) -> None:  # fmt: skip
        """Redraw the bars if anything about the cues changed; one row per role in `roles`
        (cues of other roles are not drawn), `silent` roles dimmed, each voiced line's
        waveform `envelopes` (cue index -> peaks per 1/BUCKETS_PER_S s) drawn in its bar."""
        if envelopes is not None:
            self.envelopes = envelopes
        self._draw_waves()
        if cues == self._given and roles == self.roles and silent == self.silent:
            return
        self._given = cues
        if roles != self.roles:
            self.roles = roles
            self.role_axis.set_names(roles, self.role_axis.marks)
            self.view.set_row_count(len(roles))
            last = max((c.start_s + c.duration_s for c in cues), default=0.0)
            self.plot.setXRange(0.0, min(FIRST_VIEW_S, max(10.0, last)), padding=0.02)
        self.silent = silent
        row_of = {r: k for k, r in enumerate(roles)}
        cues = tuple(c for c in cues if c.role in row_of)
        self.cues = cues
        self._rows = np.array([row_of[c.role] for c in cues], np.int32)
        self._starts = np.array([c.start_s for c in cues], float)
        self._ends = self._starts + np.array([max(0.05, c.duration_s) for c in cues], float)
        keys = [(_state(c), _outline(c, self.selected), c.role in silent) for c in cues]
        self.drawn = {c.index: k[:2] for c, k in zip(cues, keys, strict=True)}
        groups: dict[tuple[str, str, bool], list[int]] = {}
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
        self._draw_waves()

    def _draw_waves(self) -> None:
        """Rebuild the waveform strokes when the envelopes or the rows drawn changed: one
        vertical stroke per envelope bucket, all in one item (one path)."""
        key = (id(self.envelopes), self.roles, len(self.cues), self._layouts_id())
        if key == self._wave_key:
            return
        self._wave_key = key
        xs, ys = [], []
        half = BAR_HEIGHT / 2 * 0.9
        for c, row in zip(self.cues, self._rows, strict=True):
            env = self.envelopes.get(c.index)
            if env is None or not env.size:
                continue
            x = c.start_s + (np.arange(env.size) + 0.5) / BUCKETS_PER_S
            xs.append(np.repeat(x, 2))
            ys.append(np.ravel(np.column_stack((row - env * half, row + env * half))))
        if xs:
            self.wave.setData(np.concatenate(xs), np.concatenate(ys))
        else:
            self.wave.setData([], [])

    def _layouts_id(self) -> int:
        return hash(self._starts.tobytes())

    def _layer(self, key: tuple[str, str, bool]) -> pg.BarGraphItem:
        if key not in self.layers:
            state, outline, dim = key
            colour = pg.mkColor(ADLIB_COLOUR if state == "adlib" else STATE_COLOURS[state])
            if dim:
                colour.setAlpha(SILENT_ALPHA)
            brush = pg.mkBrush(colour)
            item = pg.BarGraphItem(
                x0=[], y=[], width=[], height=BAR_HEIGHT, brush=brush, pen=self._pens[outline]
            )
            item.setZValue(1 if outline == "selected" else 0.5 if state == "adlib" else 0)  # over the line
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
        cues, self._given = self._given, ()
        self.set_cues(cues, self.roles, self.silent)

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
