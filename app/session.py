"""What outlives one run of the window: layout and recent files (QSettings), autosave of
the project every 30 s, and recovery after a run that did not close cleanly."""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths, QTimer
from PySide6.QtWidgets import QMainWindow

from app.recovery import RecoveryOffer
from engine.control.project import Projects

AUTOSAVE_MS = 30_000
MAX_RECENT = 10


def _ignore_errors(future: Future[None]) -> None:
    future.exception()


class Session:
    def __init__(self, projects: Projects, settings: QSettings, data_dir: Path | None = None) -> None:
        self.projects = projects
        self.settings = settings
        base = data_dir or Path(
            QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation) or "."
        )
        self.data_dir = base
        self.autosave_path = base / "autosave.troupe.json"
        self.origin_path = base / "autosave.origin"
        """The director's project file at the last autosave ('' for none): where Save goes
        after a recovery."""
        self.recovery_dir = base / "recovered"
        self.lock_path = base / "running.lock"
        self.timer = QTimer()
        self.timer.setInterval(AUTOSAVE_MS)
        self.timer.timeout.connect(self.autosave)

    def start(self, offer: RecoveryOffer, recover: Callable[[Path], None]) -> None:
        """Keep the last run's autosave if it did not close cleanly (one file per crash,
        never overwritten), offer every kept one, then mark this run running."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        crashed = self.lock_path.exists() and self.autosave_path.exists()
        self.lock_path.write_text(str(os.getpid()))
        if crashed:
            self.recovery_dir.mkdir(exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            kept = self.recovery_dir / f"recovered-{stamp}-{secrets.token_hex(3)}.troupe.json"
            self.autosave_path.replace(kept)  # this run's autosave must not overwrite it
            if self.origin_path.exists():
                self.origin_path.replace(kept.with_suffix(".origin"))
        if self.recoveries():
            offer.offer(self.recoveries(), recover, self.discard)
        self.timer.start()

    def recoveries(self) -> list[Path]:
        """Recovery files not yet recovered or discarded, newest first."""
        if not self.recovery_dir.is_dir():
            return []
        return sorted(self.recovery_dir.glob("recovered-*.troupe.json"), reverse=True)

    def origin(self, recovery: Path) -> Path | None:
        """The project file the crashed session was saving to, if it had one."""
        try:
            text = recovery.with_suffix(".origin").read_text().strip()
        except OSError:
            return None
        return Path(text) if text else None

    def discard(self, recovery: Path) -> None:
        """Forget a recovery file (recovered or discarded by the director)."""
        recovery.unlink(missing_ok=True)
        recovery.with_suffix(".origin").unlink(missing_ok=True)

    def autosave(self) -> Future[None] | None:
        """Save the project (script path, cast, edits) to the autosave file, on the engine
        thread (the window does not wait); never raises. The future, or None with no script."""
        if self.projects.script is None:
            return None
        origin = self.projects.path  # NB: one reference read
        with contextlib.suppress(OSError):  # the next autosave tries again
            self.origin_path.write_text(str(origin or ""))
        future = self.projects.save(self.autosave_path, as_current=False)
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
