"""The GUI's one link to the engine: polls immutable snapshots on a QTimer and re-emits
them as Qt signals, so audio rate and frame rate stay decoupled (see DESIGN.md)."""

from __future__ import annotations

import queue
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from engine.control import EngineSnapshot


class SnapshotSource(Protocol):
    """What the bridge reads: the engine, or a fake one in tests."""

    messages: queue.SimpleQueue[str]

    def snapshot(self) -> EngineSnapshot: ...


class EngineBridge(QObject):
    """Emits `snapshot_changed` when the engine published a newer snapshot, and
    `message_posted` for each error or notice the engine queued for the banner."""

    snapshot_changed = Signal(object)
    message_posted = Signal(str)

    def __init__(self, source: SnapshotSource, rate_hz: float = 30.0, parent: QObject | None = None):
        super().__init__(parent)
        self.source = source
        self.last: EngineSnapshot | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(max(1, round(1000 / rate_hz)))
        self.timer.timeout.connect(self.poll)

    def start(self) -> None:
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def poll(self) -> None:
        """Read the latest snapshot and messages once (the timer calls this)."""
        snap = self.source.snapshot()
        if self.last is None or snap.version != self.last.version:
            self.last = snap
            self.snapshot_changed.emit(snap)
        while True:
            try:
                self.message_posted.emit(self.source.messages.get_nowait())
            except queue.Empty:
                break
