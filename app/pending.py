"""Engine commands the window does not wait for: each returns a future, and `Pending`
calls back on the GUI thread once it is done, with a busy indicator meanwhile. No slot
blocks the GUI thread on the engine, and any error reaches the banner as a message."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel

from engine.core.errors import TroupeError

POLL_MS = 20


@dataclass
class _Job:
    future: Future[Any]
    what: str
    on_done: Callable[[Any], None] | None
    on_error: Callable[[str], None]


class Pending(QObject):
    """Futures being waited for; `busy` shows what is still running ('opening the audio
    output…'), and is hidden when nothing is."""

    def __init__(self, busy: QLabel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.busy = busy
        self.jobs: list[_Job] = []
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.poll)
        busy.hide()

    def watch(self, future: Future[Any], what: str, on_error: Callable[[str], None],
              on_done: Callable[[Any], None] | None = None) -> None:  # fmt: skip
        """Call `on_done(result)` or `on_error(message)` on the GUI thread when `future` ends."""
        self.jobs.append(_Job(future, what, on_done, on_error))
        self._show_busy()
        self.timer.start()

    def poll(self) -> None:
        done = [j for j in self.jobs if j.future.done()]
        self.jobs = [j for j in self.jobs if not j.future.done()]
        for job in done:
            self._finish(job)
        self._show_busy()
        if not self.jobs:
            self.timer.stop()

    def _finish(self, job: _Job) -> None:
        try:
            result = job.future.result()
        except (TroupeError, OSError) as exc:
            job.on_error(f"{job.what}: {exc}")
        except Exception as exc:  # a bug must still not reach the director as a traceback
            job.on_error(f"{job.what}: unexpected error ({type(exc).__name__}: {exc})")
        else:
            if job.on_done is not None:
                job.on_done(result)

    def _show_busy(self) -> None:
        if self.jobs:
            self.busy.setText(f"{self.jobs[0].what}…")
            self.busy.show()
        else:
            self.busy.hide()

    @property
    def idle(self) -> bool:
        return not self.jobs
