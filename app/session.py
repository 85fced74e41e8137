"""What outlives one run of the window: layout and recent files (QSettings), autosave of
the project every 30 s, and recovery after a run that did not close cleanly."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths, QTimer
from PySide6.QtWidgets import QMainWindow

from app.banner import Banner
from engine.service import Engine

AUTOSAVE_MS = 30_000
MAX_RECENT = 10


def _ignore_errors(future: Future[None]) -> None:
    future.exception()


class Session:
    def __init__(self, engine: Engine, settings: QSettings, data_dir: Path | None = None) -> None:
        self.engine = engine
        self.settings = settings
        base = data_dir or Path(
            QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation) or "."
        )
        self.data_dir = base
        self.autosave_path = base / "autosave.troupe.json"
        self.lock_path = base / "running.lock"
        self.timer = QTimer()
        self.timer.setInterval(AUTOSAVE_MS)
        self.timer.timeout.connect(self.autosave)

    def start(self, banner: Banner, recover: Callable[[Path], None]) -> None:
        """Offer recovery if the last run did not close cleanly, then mark this one running."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        crashed = self.lock_path.exists() and self.autosave_path.exists()
        self.lock_path.write_text(str(os.getpid()))
        if crashed:
            path = self.data_dir / "recovered.troupe.json"
            self.autosave_path.replace(path)  # this run's autosave must not overwrite it
            banner.show_message(
                "Troupe did not close cleanly last time; its cast and line edits were autosaved.",
                "Recover", lambda: recover(path),
            )  # fmt: skip
        self.timer.start()

    def autosave(self) -> Future[None] | None:
        """Save the project (script path, cast, edits) to the autosave file, on the engine
        thread (the window does not wait); never raises. The future, or None with no script."""
        if self.engine.script is None:
            return None
        future = self.engine.begin_save_project(self.autosave_path, as_current=False)
        future.add_done_callback(_ignore_errors)  # a failed autosave waits for the next one
        return future

    def close(self, window: QMainWindow) -> None:
        self.timer.stop()
        self.settings.setValue("window/geometry", window.saveGeometry())
        self.settings.setValue("window/state", window.saveState())
        self.settings.sync()
        self.lock_path.unlink(missing_ok=True)  # a clean exit: nothing to recover next time

    def restore_window(self, window: QMainWindow) -> None:
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if geometry is not None:
            window.restoreGeometry(geometry)  # type: ignore[arg-type]
        if state is not None:
            window.restoreState(state)  # type: ignore[arg-type]

    def recent(self) -> list[Path]:
        raw = self.settings.value("recent", [])
        items = [raw] if isinstance(raw, str) else list(raw or [])  # type: ignore[call-overload]
        return [Path(p) for p in items if p]

    def add_recent(self, path: Path) -> None:
        items = [str(path.resolve())] + [str(p) for p in self.recent() if p != path.resolve()]
        self.settings.setValue("recent", items[:MAX_RECENT])
