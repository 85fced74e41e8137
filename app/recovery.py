"""The recovery offer after a run that did not close cleanly: pinned until the director
answers it (Recover or Discard), never hidden by later messages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget


class RecoveryOffer(QFrame):
    """One recovery file at a time, newest first; Discard moves on to the next."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("recovery")
        self.setStyleSheet("#recovery { background: #78350f; border-radius: 4px; } QLabel { color: white; }")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.recover = QPushButton("Recover")
        self.discard = QPushButton("Discard")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.recover)
        layout.addWidget(self.discard)
        self.recover.clicked.connect(lambda: self._answer(self._on_recover))
        self.discard.clicked.connect(lambda: self._answer(self._on_discard))
        self._files: list[Path] = []
        self._on_recover: Callable[[Path], None] = lambda _p: None
        self._on_discard: Callable[[Path], None] = lambda _p: None
        self.hide()

    def offer(self, files: list[Path], on_recover: Callable[[Path], None],
              on_discard: Callable[[Path], None]) -> None:  # fmt: skip
        """Offer `files` (newest first) until each is recovered or discarded."""
        self._files = list(files)
        self._on_recover, self._on_discard = on_recover, on_discard
        self._show_next()

    @property
    def current(self) -> Path | None:
        return self._files[0] if self._files else None

    def _show_next(self) -> None:
        if not self._files:
            self.hide()
            return
        more = f" ({len(self._files) - 1} older one(s) kept too)" if len(self._files) > 1 else ""
        self.label.setText("Troupe did not close cleanly; the cast and line edits of that session "
                           f"were kept{more}. Recover them?")  # fmt: skip
        self.show()

    def _answer(self, act: Callable[[Path], None]) -> None:
        if not self._files:
            return
        act(self._files.pop(0))
        self._show_next()
