"""The cue list: a table model over the snapshot's cues, with state colours and editing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from engine.control import CueView

STATE_COLOURS = {
    "pending": "#6b7280",
    "queued": "#a78bfa",
    "synthesizing": "#f59e0b",
    "ready": "#22c55e",
    "standby": "#facc15",
    "playing": "#38bdf8",
    "played": "#475569",
    "failed": "#ef4444",
    "fallback": "#fb923c",
    "check": "#f472b6",
}
"""One colour per cue state, shared by the cue list and the timeline."""
HEARD_STATES = ("ready", "playing", "played")


def shown_state(cue: CueView) -> str:
    """The state the director sees: 'check' (the line check marked the take) or 'fallback'
    (an espeak-ng stand-in) over ready/playing, else the engine's own."""
    if cue.check and cue.state in HEARD_STATES:
        return "check"
    return "fallback" if cue.fallback and cue.state in ("ready", "playing") else cue.state


ADLIB_COLOUR = "#e879f9"
"""Ad-libs (heard once) are drawn in their own colour whatever their state."""

COLUMNS = ("#", "Scene", "Role", "Line", "State")
LINE_COLUMN = 3
Index = QModelIndex | QPersistentModelIndex


class CueTableModel(QAbstractTableModel):
    """Rows are cues; the Line column is editable and an edit calls `on_edit(index, text)`."""

    def __init__(self, on_edit: Callable[[int, str], None] | None = None) -> None:
        super().__init__()
        self.cues: tuple[CueView, ...] = ()
        self.scenes: tuple[str, ...] = ()
        self.on_edit = on_edit
        self._brushes = {k: QBrush(QColor(v)) for k, v in STATE_COLOURS.items()}
        self._adlib = QBrush(QColor(ADLIB_COLOUR))

    def update(self, cues: tuple[CueView, ...], scenes: tuple[str, ...]) -> None:
        """Take the snapshot's cues; only rows that changed are repainted."""
        if len(cues) != len(self.cues) or scenes != self.scenes:
            self.beginResetModel()
            self.cues, self.scenes = cues, scenes
            self.endResetModel()
            return
        old, self.cues = self.cues, cues
        changed = [k for k, (a, b) in enumerate(zip(old, cues, strict=True)) if a != b]
        if changed:
            self.dataChanged.emit(self.index(changed[0], 0), self.index(changed[-1], len(COLUMNS) - 1))

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.cues)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = 0) -> Any:
        if not index.isValid():
            return None
        cue = self.cues[index.row()]
        col = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return self._text(cue, col)
        if role == Qt.ItemDataRole.ForegroundRole and col == 4:
            shown = "check" if shown_state(cue) == "check" else cue.state
            return self._adlib if cue.kind == "adlib" else self._brushes.get(shown)
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = f"{cue.role}: {cue.text}"
            if cue.hints:
                tip += f"\n({', '.join(cue.hints)})"
            if cue.error:
                tip += f"\nfailed: {cue.error}"
            if cue.late_ms > 0:
                tip += f"\nstarted {cue.late_ms:.0f} ms late"
            if cue.fit:
                tip += f"\nslot: {cue.fit} against its end"
            return tip
        return None

    def _text(self, cue: CueView, col: int) -> str:
        if col == 0:
            return str(cue.index + 1)
        if col == 1:
            return self.scenes[cue.scene] if 0 <= cue.scene < len(self.scenes) else ""
        if col == 2:
            return cue.role
        if col == 3:
            return cue.text
        state = shown_state(cue)
        if state == "check" and cue.wer is not None:
            state += f" (WER {cue.wer:.2f})"
        kind = {"adlib": "ad-lib · ", "kept": "kept ad-lib · "}.get(cue.kind, "")
        fit = f" · {cue.fit.split(',')[0]}" if cue.fit and not cue.fit.startswith("fits") else ""
        return kind + state + (f" +{cue.late_ms:.0f} ms" if cue.late_ms > 0 else "") + fit

    def row_of(self, cue_index: int) -> int:
        """The row showing cue `cue_index` (ad-libs follow the script's cues), or -1."""
        return next((k for k, c in enumerate(self.cues) if c.index == cue_index), -1)

    def flags(self, index: Index) -> Qt.ItemFlag:
        base = super().flags(index)
        if index.isValid() and index.column() == LINE_COLUMN and self.cues[index.row()].kind == "line":
            return base | Qt.ItemFlag.ItemIsEditable
        return base

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or index.column() != LINE_COLUMN or self.on_edit is None:
            return False
        text = str(value).strip()
        cue = self.cues[index.row()]
        if not text or text == cue.text:
            return False
        self.on_edit(cue.index, text)
        return True
