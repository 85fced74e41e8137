"""A non-blocking message strip at the top of the window (errors never open a dialog)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

SHOW_MS = 15_000
STYLES = {
    "error": "#banner { background: #7f1d1d; border-radius: 4px; } QLabel { color: white; }",
    "success": "#banner { background: #14532d; border-radius: 4px; } QLabel { color: white; }",
}


class Banner(QFrame):
    """Shows the latest message (the importer's file, line and reason) until dismissed."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.kind = "error"
        self.serial = 0
        """Counts messages shown, so a success clears only errors that came before it."""
        self.setStyleSheet(STYLES["error"])
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.action = QPushButton()
        self.action.hide()
        close = QPushButton("Dismiss")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.action)
        layout.addWidget(close)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self._on_action: Callable[[], None] | None = None
        self.action.clicked.connect(self._act)
        self.hide()

    def show_message(self, text: str, action: str = "", on_action: Callable[[], None] | None = None,
                     kind: str = "error") -> None:  # fmt: skip
        """Show `text`; `kind` 'error' (red) or 'success' (green)."""
        self.serial += 1
        if kind != self.kind:
            self.kind = kind
            self.setStyleSheet(STYLES[kind])
        self.label.setText(text)
        self._on_action = on_action
        self.action.setText(action)
        self.action.setVisible(bool(action and on_action))
        self.show()
        if not action:
            self._timer.start(SHOW_MS)

    def clear_error(self, before: int) -> None:
        """Hide the error shown, once a command started after it (at serial `before`)
        succeeded; a newer message or a success message stays."""
        if self.kind == "error" and self.serial <= before:
            self.hide()

    @property
    def text(self) -> str:
        return self.label.text()

    def _act(self) -> None:
        self.hide()
        if self._on_action is not None:
            self._on_action()
