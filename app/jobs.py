"""Work the GUI thread must not wait for: the offline render, on a QThread."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QThread, Signal

from engine.control.project import Projects
from engine.core.errors import TroupeError


class RenderJob(QThread):
    """Renders the current show to a file (and stems); cancellable between lines."""

    progressed = Signal(float, str)
    succeeded = Signal(object)
    failed = Signal(str)

    def __init__(
        self, projects: Projects, out: Path, stems: Path | None, cues: tuple[int, ...] | None = None
    ) -> None:
        super().__init__()
        self.projects, self.out, self.stems, self.cues = projects, out, stems, cues
        self.cancel_event = threading.Event()

    def cancel(self) -> None:
        self.cancel_event.set()

    def run(self) -> None:
        try:
            progress = lambda f, msg: self.progressed.emit(f, msg)  # noqa: E731
            result = self.projects.render(
                self.out, self.stems, progress, self.cancel_event, self.cues
            ).result()
        except TroupeError as exc:
            self.failed.emit(str(exc))
        except OSError as exc:
            self.failed.emit(f"{self.out}: cannot write ({exc.strerror or exc})")
        except Exception as exc:  # a render fault must reach the banner, never end the thread silently
            self.failed.emit(f"render failed: {exc}")
        else:
            self.succeeded.emit(result)
