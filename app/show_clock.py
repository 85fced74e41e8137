"""The show clock: elapsed and remaining time large enough to read from the desk, the cue
being heard, the next one (standby), and a GO button that names the cue it starts."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QSizePolicy, QWidget

from app.axes import clock_text
from app.meters import LevelBar
from engine.control import CueView, EngineSnapshot

STATUS_COLOURS = {"playing": "#22c55e", "waiting for GO": "#facc15", "audio lost": "#ef4444",
                  "preparing": "#38bdf8",
                  "ended": "#94a3b8", "paused": "#f59e0b", "stopped": "#94a3b8"}  # fmt: skip


def cue_line(cue: CueView | None) -> str:
    """'12  IRIS: the line' for a cue, or a dash."""
    return "–" if cue is None else f"{cue.index + 1}  {cue.role}: {cue.text}"


GO_WIDTH = 190
"""The GO button's fixed width: a long role name is elided, never widens the transport."""


def now_and_next(snap: EngineSnapshot) -> tuple[CueView | None, CueView | None]:
    """The cue being heard (if any) and the Standby cue: the one GO fires, as the engine
    says (`go_cue`), in every mode."""
    now = next((c for c in snap.cues if c.state == "playing"), None)
    standby = next((c for c in snap.cues if c.index == snap.go_cue), None) if snap.go_cue >= 0 else None
    return now, standby


class ShowClock(QWidget):
    """Redrawn from each snapshot; `go_clicked` when the director presses GO."""

    go_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.elapsed = QLabel("0:00.0")
        self.elapsed.setStyleSheet("font-size: 30px; font-weight: 700; font-family: monospace;")
        self.remaining = QLabel("-0:00")
        self.remaining.setStyleSheet("font-size: 20px; font-family: monospace; color: #64748b;")
        self.status = QLabel("stopped")
        self.now = QLabel("–")
        self.next = QLabel("–")
        for label in (self.now, self.next):
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.next.setStyleSheet("color: #a16207; font-weight: 600;")
        self.go = QPushButton("GO")
        self.go.setFixedSize(GO_WIDTH, 56)
        self.go.setStyleSheet("QPushButton { background: #15803d; color: white; font-size: 16px; "
                              "font-weight: 700; border-radius: 6px; padding: 4px 10px; }"
                              "QPushButton:disabled { background: #4b5563; color: #cbd5e1; }")  # fmt: skip
        self.go.clicked.connect(self.go_clicked)
        self.master = LevelBar(show_clip=True)
        self.master.setToolTip("master level")
        grid = QGridLayout(self)
        grid.setContentsMargins(4, 2, 4, 2)
        grid.addWidget(self.elapsed, 0, 0)
        grid.addWidget(self.remaining, 1, 0)
        grid.addWidget(self.status, 2, 0)
        grid.addWidget(QLabel("Now:"), 0, 1, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.now, 0, 2)
        grid.addWidget(QLabel("Standby:"), 1, 1, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.next, 1, 2)
        grid.addWidget(QLabel("Master:"), 2, 1, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.master, 2, 2)
        grid.addWidget(self.go, 0, 3, 3, 1)
        grid.setColumnStretch(2, 1)

    def update_from(self, snap: EngineSnapshot) -> None:
        self.master.set_level(snap.master)
        self.elapsed.setText(clock_text(snap.playhead_s, tenths=True))
        self.remaining.setText("-" + clock_text(max(0.0, snap.end_s - snap.playhead_s)))
        self.status.setText(snap.status)
        self.status.setStyleSheet(f"color: {STATUS_COLOURS.get(snap.status, '#94a3b8')}; font-weight: 600;")
        now, nxt = now_and_next(snap)
        self.now.setText(cue_line(now))
        self.next.setText(cue_line(nxt))
        self.now.setToolTip(cue_line(now))
        self.next.setToolTip(cue_line(nxt))
        go = nxt  # GO fires the Standby cue: one fact, named the same in both places
        self.go.setEnabled(go is not None)
        self.go.setText("GO" if go is None else self._elided(f"GO  ▶ {go.index + 1} {go.role}"))
        self.go.setToolTip("GO fires: " + cue_line(go))

    def _elided(self, text: str) -> str:
        room = GO_WIDTH - 24  # the button's padding
        return self.go.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, room)
