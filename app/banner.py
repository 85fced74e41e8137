"""A non-blocking message strip over the top of the window (errors never open a dialog). It
floats over the window's content, so showing or hiding it never moves a row under the
director's pointer; a message repeated while shown is counted, not stacked."""

from __future__ import annotations

import re
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from engine.core.errors import message_shape

SHOW_MS = 15_000
STYLES = {
    "error": "#banner { background: #7f1d1d; border-radius: 4px; } QLabel { color: white; }",
    "success": "#banner { background: #14532d; border-radius: 4px; } QLabel { color: white; }",
    "notice": "#banner { background: #92400e; border-radius: 4px; } QLabel { color: white; }",
}
RECOVERED = re.compile(r"\bis back\b|\brecovered\b", re.IGNORECASE)
RECOVERING = re.compile(r"\breopen|\bheld\b|\bstands? in\b|\bstood in\b", re.IGNORECASE)


def kind_of(text: str) -> str:
    """How a message from the engine is shown: 'success' (green) when something came back,
    'notice' (amber) while Troupe recovers on its own, else 'error' (red)."""
    if RECOVERED.search(text):
        return "success"
    return "notice" if RECOVERING.search(text) else "error"


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
        self.repeats = 1
        """How many times the message shown came (numbers aside) while it was shown."""
        self._shown = ""
        self.hide()

    def float_over(self, host: QWidget) -> None:
        """Float over the top of `host` (its width, over whatever is there) instead of taking
        a place in a layout."""
        self.setParent(host)
        host.installEventFilter(self)
        self._fit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and watched is self.parent():
            self._fit()
        return False

    def _fit(self) -> None:
        host = self.parentWidget()
        if host is not None:
            width = max(200, host.width() - 8)
            self.setFixedWidth(width)
            self.adjustSize()
            self.move(4, 4)
            self.raise_()

    def show_message(self, text: str, action: str = "", on_action: Callable[[], None] | None = None,
                     kind: str = "") -> None:  # fmt: skip
        """Show `text`; `kind` 'error' (red), 'notice' (amber) or 'success' (green); by
        default what the text says (`kind_of`). The same message again while it is shown
        (numbers aside) counts up on the one banner."""
        self.serial += 1
        kind = kind or kind_of(text)
        if kind != self.kind:
            self.kind = kind
            self.setStyleSheet(STYLES[kind])
        same = self.isVisible() and message_shape(text) == message_shape(self._shown)
        self.repeats = self.repeats + 1 if same else 1
        self._shown = text
        self.label.setText(text if self.repeats == 1 else f"{text}  (×{self.repeats})")
        self._on_action = on_action
        self.action.setText(action)
        self.action.setVisible(bool(action and on_action))
        self.show()
        self._fit()
        if not action:
            self._timer.start(SHOW_MS)

    def clear_error(self, before: int) -> None:
        """Hide the error shown, once a command started after it (at serial `before`)
        succeeded; a newer message or a success message stays."""
        if self.kind == "error" and self.serial <= before:
            self.hide()

    @property
    def text(self) -> str:
        """The message shown (without its repeat count)."""
        return self._shown

    def _act(self) -> None:
        self.hide()
        if self._on_action is not None:
            self._on_action()
