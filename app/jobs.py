"""Work the GUI thread must not wait for: the offline render, on a QThread."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QThread, Signal

from engine.core.errors import TroupeError
from engine.service import Engine


class RenderJob(QThread):
    """Renders the current show to a file (and stems); cancellable between lines."""

    progressed = Signal(float, str)
    succeeded = Signal(object)
    failed = Signal(str)

    def __init__(
        self, engine: Engine, out: Path, stems: Path | None, cues: tuple[int, ...] | None = None
    ) -> None:
        super().__init__()
        self.engine, self.out, self.stems, self.cues = engine, out, stems, cues
        self.cancel_event = threading.Event()

    def cancel(self) -> None:
        self.cancel_event.set()

    def run(self) -> None:
        try:
            result = self.engine.render(
                self.out,
                self.stems,
                lambda f, msg: self.progressed.emit(f, msg),
                self.cancel_event,
                self.cues,
            )
        except TroupeError as exc:
            self.failed.emit(str(exc))
        except OSError as exc:
            self.failed.emit(f"{self.out}: cannot write ({exc.strerror or exc})")
        except Exception as exc:  # a render fault must reach the banner, never end the thread silently
            self.failed.emit(f"render failed: {exc}")
        else:
            self.succeeded.emit(result)
