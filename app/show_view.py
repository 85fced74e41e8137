"""The show view: the role timeline and the scheduler heatmap side by side on one shared,
scrollable row axis, with a role filter, 'follow playhead' and a colour legend."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollBar,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.cue_model import ADLIB_COLOUR, STATE_COLOURS
from app.heatmap import HeatmapWidget
from app.timeline import TimelineWidget
from engine.control import EngineSnapshot
from engine.core.types import Voice

SCROLL_STEPS = 10
"""Scroll bar positions per row."""


def silent_roles(voices: dict[str, Voice]) -> frozenset[str]:
    """Roles the audience does not hear: muted, or not soloed while another role is."""
    soloing = any(v.solo for v in voices.values())
    return frozenset(r for r, v in voices.items() if v.mute or (soloing and not v.solo))


def role_marks(voices: dict[str, Voice]) -> dict[str, str]:
    return {r: "S" if v.solo else "M" for r, v in voices.items() if v.solo or v.mute}


def legend_html() -> str:
    """One coloured square per bar colour, and what dimming and outlines mean."""
    items = [(c, s) for s, c in STATE_COLOURS.items()] + [(ADLIB_COLOUR, "ad-lib")]
    swatches = "  ".join(f"<span style='color:{c}'>■</span> {name}" for c, name in items)
    return f"{swatches}  ·  dim: muted / not soloed  ·  <span style='color:#ef4444'>□</span> late"


class ShowView(QWidget):
    """Draws the snapshot's cues and heatmap for the roles that match the filter."""

    follow_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.timeline = TimelineWidget()
        self.heatmap = HeatmapWidget()
        self.heatmap.plot.setYLink(self.timeline.plot)
        self.heatmap.role_axis.setWidth(8)  # the timeline names the rows; they line up
        self.heatmap.role_axis.setStyle(showValues=False)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter roles")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(lambda _t: self._redraw())
        self.follow = QCheckBox("Follow playhead")
        self.follow.setChecked(True)
        self.follow.toggled.connect(self._follow_toggled)
        self.scroll = QScrollBar(Qt.Orientation.Vertical)
        self.scroll.valueChanged.connect(self._scrolled)
        self.timeline.view.sigYRangeChanged.connect(lambda *_: self._sync_scroll())
        self.legend = QLabel(legend_html())
        self.legend.setStyleSheet("font-size: 11px;")
        self.legend.setWordWrap(True)
        self.roles: tuple[str, ...] = ()
        self.shown_roles: tuple[str, ...] = ()
        self._snap: EngineSnapshot | None = None
        self._build()

    def _build(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.follow)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.timeline)
        split.addWidget(self.heatmap)
        split.setSizes([640, 300])
        middle = QHBoxLayout()
        middle.addWidget(split, 1)
        middle.addWidget(self.scroll)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(middle, 1)
        layout.addWidget(self.legend)

    def apply(self, snap: EngineSnapshot) -> None:
        """Draw one snapshot."""
        self._snap = snap
        self._draw(snap)

    def _redraw(self) -> None:
        if self._snap is not None:
            self._draw(self._snap)

    def _draw(self, snap: EngineSnapshot) -> None:
        self.roles = snap.roles
        needle = self.filter.text().strip().casefold()
        keep = [k for k, r in enumerate(snap.roles) if needle in r.casefold()]
        shown = tuple(snap.roles[k] for k in keep)
        marks = role_marks(snap.voices)
        if shown != self.shown_roles or marks != self.timeline.role_axis.marks:
            self.timeline.role_axis.set_names(shown, marks)
        self.shown_roles = shown
        self.timeline.set_cues(snap.cues, shown, silent_roles(snap.voices), snap.envelopes)
        self.timeline.set_playhead(snap.playhead_s, snap.playing)
        if self.follow.isChecked() and snap.playing:
            self._follow_row(snap, shown)
        urgency, work = snap.priorities, snap.queued_work
        if len(keep) != urgency.shape[0]:
            urgency = urgency[keep]
            work = work[keep] if work.shape[0] == snap.priorities.shape[0] else work
        self.heatmap.set_priorities(np.ascontiguousarray(urgency), shown, work)

    def _follow_row(self, snap: EngineSnapshot, shown: tuple[str, ...]) -> None:
        """Scroll the rows so the role being heard is in view (the time axis follows in
        `TimelineWidget.set_playhead`)."""
        playing = next((c for c in snap.cues if c.state == "playing" and c.role in shown), None)
        if playing is None:
            return
        row = shown.index(playing.role)
        top, count = self.timeline.view.visible_rows()
        if not top - 0.01 <= row <= top + count - 1 + 0.01:
            self.timeline.view.show_rows(row - count / 2 + 0.5, count)

    def _follow_toggled(self, on: bool) -> None:
        self.timeline.follow = on
        self.follow_changed.emit(on)

    def _sync_scroll(self) -> None:
        top, count = self.timeline.view.visible_rows()
        n = max(1, self.timeline.view.n_rows)
        self.scroll.blockSignals(True)
        self.scroll.setRange(0, max(0, round((n - count) * SCROLL_STEPS)))
        self.scroll.setPageStep(max(1, round(count * SCROLL_STEPS)))
        self.scroll.setValue(round(top * SCROLL_STEPS))
        self.scroll.blockSignals(False)

    def _scrolled(self, value: int) -> None:
        _, count = self.timeline.view.visible_rows()
        self.timeline.view.show_rows(value / SCROLL_STEPS, count)
