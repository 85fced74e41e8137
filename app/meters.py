"""A level meter bar: RMS (solid), peak (lighter), the held peak (a tick) and a clip
light, on a -60..0 dBFS scale; it repaints only when its reading changes."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from engine.control import Level

BOTTOM_DB = -60.0
CLIP_PX = 8


def fraction(db: float) -> float:
    """Where `db` sits on the bar (0 at BOTTOM_DB, 1 at 0 dBFS)."""
    return min(1.0, max(0.0, (db - BOTTOM_DB) / -BOTTOM_DB))


def _zone(db: float) -> QColor:
    return QColor("#ef4444" if db > -3 else "#facc15" if db > -12 else "#22c55e")


class LevelBar(QWidget):
    """Horizontal meter; `set_level` with each snapshot's reading."""

    def __init__(self, show_clip: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.level = Level()
        self.show_clip = show_clip
        self.setMinimumSize(80, 10)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(120, 14)

    def set_level(self, level: Level) -> None:
        if level != self.level:
            self.level = level
            clip = "  · CLIP" if level.clip else ""
            self.setToolTip(f"peak {level.peak_db:.1f} dBFS · RMS {level.rms_db:.1f} dBFS · "
                            f"hold {level.hold_db:.1f} dBFS{clip}")  # fmt: skip
            self.update()

    def paintEvent(self, _event: QPaintEvent) -> None:
        p = QPainter(self)
        w, h = self.width() - (CLIP_PX + 2 if self.show_clip else 0), self.height()
        p.fillRect(0, 0, w, h, QColor("#1f2937"))
        lv = self.level
        peak = _zone(lv.peak_db)
        peak.setAlpha(110)
        p.fillRect(QRectF(0, 0, w * fraction(lv.peak_db), h), peak)
        p.fillRect(QRectF(0, 0, w * fraction(lv.rms_db), h), _zone(lv.rms_db))
        if lv.hold_db > BOTTOM_DB:
            x = w * fraction(lv.hold_db)
            p.fillRect(QRectF(max(0.0, x - 2), 0, 2, h), QColor("#f8fafc"))
        if self.show_clip:
            p.fillRect(w + 2, 0, CLIP_PX, h, QColor("#ef4444" if lv.clip else "#374151"))
        p.end()
