"""The cast panel: per role voice, rate, pitch, gain, pan, priority weight, mute and solo.
Every change is sent to the engine at once and applies to the role's upcoming lines."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSlider,
    QSpinBox,
    QTableWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.meters import LevelBar
from engine.control import Level
from engine.core.limits import limit
from engine.core.types import Voice

COLUMNS = ("Role", "Level", "Voice", "Rate", "Pitch", "Gain dB", "Pan", "Weight", "Mute", "Solo")
WEIGHT_STEPS = 10
"""The weight slider moves in tenths, over the engine's whole range (`VOICE_LIMITS`)."""


class CastPanel(QWidget):
    """Emits `voice_changed(role, {field: value})` for every edit the director makes."""

    voice_changed = Signal(str, dict)
    browse_requested = Signal(str)
    """The director asked for the voice browser for a role."""

    def __init__(self, voice_ids: list[str] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.voice_ids = voice_ids or []
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.roles: tuple[str, ...] = ()
        self.shown: dict[str, Voice] = {}
        self.why: dict[str, str] = {}
        self.editors: dict[str, dict[str, QWidget]] = {}
        self.meters: dict[str, LevelBar] = {}
        self.weight_labels: dict[str, QLabel] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)

    def set_cast(
        self, roles: tuple[str, ...], voices: dict[str, Voice], why: dict[str, str] | None = None
    ) -> None:
        """Show the engine's cast; rebuild only when the roles change. `why`: each role's
        gender guess and its evidence, as the role name's tooltip."""
        if roles != self.roles or (why is not None and why != self.why):
            self.roles = roles
            self.table.setRowCount(len(roles))
            self.editors = {role: self._row(k, role) for k, role in enumerate(roles)}
            self.meters = {}
            for k, role in enumerate(roles):
                self.meters[role] = LevelBar()
                self.table.setCellWidget(k, 1, self.meters[role])
            self.shown = {}
            self.why = dict(why or {})
            for k, role in enumerate(roles):
                item = self.table.item(k, 0)
                if item is not None and role in self.why:
                    item.setToolTip(f"{role}: {self.why[role]}")
        for role in roles:
            v = voices.get(role)
            if v is not None and self.shown.get(role) != v:
                self._show(role, v)
                self.shown[role] = v

    def set_levels(self, levels: dict[str, Level]) -> None:
        """Show each role's meter reading."""
        for role, level in levels.items():
            bar = self.meters.get(role)
            if bar is not None:
                bar.set_level(level)

    def _row(self, k: int, role: str) -> dict[str, QWidget]:
        from PySide6.QtWidgets import QTableWidgetItem

        item = QTableWidgetItem(role)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
        self.table.setItem(k, 0, item)
        voice = QComboBox()
        voice.setEditable(True)
        voice.addItems(self.voice_ids)
        voice.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        voice.activated.connect(lambda _i, r=role, w=voice: self._emit(r, **voice_change(w.currentText())))
        voice.lineEdit().editingFinished.connect(
            lambda r=role, w=voice: self._emit(r, **voice_change(w.currentText()))
        )
        rate = _spin(*limit("rate_wpm"), lambda v, r=role: self._emit(r, rate_wpm=v))
        pitch = _spin(*limit("pitch"), lambda v, r=role: self._emit(r, pitch=v))
        gain = _dspin(*limit("gain_db"), 0.5, lambda v, r=role: self._emit(r, gain_db=v))
        pan = _dspin(*limit("pan"), 0.1, lambda v, r=role: self._emit(r, pan=v))
        weight = QSlider(Qt.Orientation.Horizontal)
        lo, hi = limit("weight")
        weight.setRange(round(lo * WEIGHT_STEPS), round(hi * WEIGHT_STEPS))
        weight.setMinimumWidth(90)
        value = QLabel()
        value.setMinimumWidth(34)
        self.weight_labels[role] = value
        weight.valueChanged.connect(lambda v, label=value: label.setText(f"{v / WEIGHT_STEPS:.1f}"))
        weight.valueChanged.connect(lambda v, r=role: self._emit(r, weight=v / WEIGHT_STEPS))
        mute, solo = QCheckBox(), QCheckBox()
        mute.toggled.connect(lambda on, r=role: self._emit(r, mute=on))
        solo.toggled.connect(lambda on, r=role: self._emit(r, solo=on))
        editors: dict[str, QWidget] = {"voice_id": voice, "rate_wpm": rate, "pitch": pitch,
                                       "gain_db": gain, "pan": pan, "weight": weight,
                                       "mute": mute, "solo": solo}  # fmt: skip
        cells = dict(editors)
        cells["voice_id"] = _pair(voice, self._browse_button(role))
        cells["weight"] = _pair(weight, value)
        for col, w in enumerate(cells.values(), start=2):
            self.table.setCellWidget(k, col, w)
        return editors

    def _browse_button(self, role: str) -> QToolButton:
        browse = QToolButton()
        browse.setText("…")
        browse.setToolTip(f"Browse voices for {role} (by language and gender, with preview)")
        browse.clicked.connect(lambda _=False, r=role: self.browse_requested.emit(r))
        return browse

    def _show(self, role: str, v: Voice) -> None:
        ed = self.editors[role]
        for w in ed.values():
            w.blockSignals(True)
        try:
            combo = ed["voice_id"]
            assert isinstance(combo, QComboBox)
            combo.setCurrentText(voice_text(v))
            for name in ("rate_wpm", "pitch", "gain_db", "pan"):
                ed[name].setValue(getattr(v, name))  # type: ignore[attr-defined]
            ed["weight"].setValue(round(v.weight * WEIGHT_STEPS))  # type: ignore[attr-defined]
            self.weight_labels[role].setText(f"{v.weight:.1f}")
            ed["mute"].setChecked(v.mute)  # type: ignore[attr-defined]
            ed["solo"].setChecked(v.solo)  # type: ignore[attr-defined]
        finally:
            for w in ed.values():
                w.blockSignals(False)

    def _emit(self, role: str, **changes: Any) -> None:
        # NB: only the director's edits get here; `_show` blocks signals while it updates
        self.voice_changed.emit(role, changes)

    def editor(self, role: str, name: str) -> QWidget:
        """The widget that edits `name` for `role` (for tests and keyboard focus)."""
        return self.editors[role][name]


def _pair(main: QWidget, side: QWidget) -> QWidget:
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(2)
    row.addWidget(main, 1)
    row.addWidget(side)
    return box


def voice_text(v: Voice) -> str:
    """A voice as the director names it: an espeak-ng id, or `backend:voice`."""
    return v.voice_id if v.backend == "espeak" else f"{v.backend}:{v.voice_id}"


def voice_change(text: str) -> dict[str, str]:
    """A voice chosen by name: `kokoro:jf_alpha` names its backend, a bare name is espeak-ng."""
    text = text.strip()
    return {"voice_id": text} if ":" in text else {"backend": "espeak", "voice_id": text}


def _spin(lo: float, hi: float, on_change: Any) -> QSpinBox:
    w = QSpinBox()
    w.setRange(round(lo), round(hi))
    w.setKeyboardTracking(False)
    w.valueChanged.connect(on_change)
    return w


def _dspin(lo: float, hi: float, step: float, on_change: Any) -> QDoubleSpinBox:
    w = QDoubleSpinBox()
    w.setRange(lo, hi)
    w.setSingleStep(step)
    w.setDecimals(2)
    w.setKeyboardTracking(False)
    w.valueChanged.connect(on_change)
    return w
