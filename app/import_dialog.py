"""The import report before anything is voiced: what the file holds, what was skipped,
guessed or split, the encoding (with the first telling line) and, for ASS/SSA, which
styles are spoken. The director may choose another encoding or other dialogue styles and
read the file again; "Voice it" makes it the show with those choices."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.control import ImportOptions, preview_import, report_text
from engine.core.errors import NoDialogueStyle, TroupeError
from engine.core.types import Script, StyleUse

AUTOMATIC = "automatic"
ENCODINGS = (AUTOMATIC, "utf-8", "cp1252", "latin-1", "iso8859-15", "cp1250", "cp1251", "koi8-r",
             "shift_jis", "euc-jp", "gb18030", "big5", "euc-kr", "utf-16")  # fmt: skip


def needs_review(script: Script) -> bool:
    """Worth a look before voicing: a guessed encoding, styles to choose, or notes."""
    facts = script.facts
    return facts.how == "guessed" or bool(facts.styles) or bool(facts.notes)


class ImportDialog(QDialog):
    """Window-modal, not blocking: `on_accept(options)` runs when the director says go."""

    def __init__(
        self,
        parent: QWidget,
        path: Path,
        script: Script | NoDialogueStyle,
        on_accept: Callable[[ImportOptions], None],
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Import report: {path.name}")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.path, self._on_accept = path, on_accept
        self.text = QPlainTextEdit(readOnly=True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.encoding = QComboBox(editable=True)
        self.encoding.addItems(ENCODINGS)
        self.styles = QListWidget()
        self.styles.setMaximumHeight(120)
        reread = QPushButton("Read again")
        reread.setToolTip("Read the file again with the encoding and styles chosen here")
        reread.clicked.connect(self.reread)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c0392b")
        form = QFormLayout()
        form.addRow("Encoding", self.encoding)
        form.addRow("Dialogue styles", self.styles)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.go = self.buttons.addButton("Voice it", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.addButton(reread, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text, 1)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        self.resize(760, 520)
        if isinstance(script, NoDialogueStyle):
            self._no_style(script)
        else:
            self._show(script)

    def _show(self, script: Script) -> None:
        self.text.setPlainText(report_text(script))
        facts = script.facts
        # a guess stays "automatic" (the report shows it): only a choice is kept as one
        self.encoding.setCurrentText(facts.encoding if facts.how == "chosen" else AUTOMATIC)
        self._list_styles(facts.styles)
        self.error.clear()
        self.go.setEnabled(True)

    def _no_style(self, exc: NoDialogueStyle) -> None:
        """Every style read as not dialogue (songs, signs): choose, then read again."""
        self.text.setPlainText(f"{exc}\n\nTick the styles that are dialogue and read the file again.")
        self._list_styles(tuple(s for s in exc.styles if isinstance(s, StyleUse)))
        self.error.setText("no style is dialogue: choose the dialogue styles")
        self.go.setEnabled(False)

    def _list_styles(self, styles: tuple[StyleUse, ...]) -> None:
        self.styles.clear()
        for use in styles:
            item = QListWidgetItem(f"{use.name}  ({use.events} events; {use.reason})")
            item.setData(Qt.ItemDataRole.UserRole, use.name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if use.dialogue else Qt.CheckState.Unchecked)
            self.styles.addItem(item)
        self.styles.setEnabled(bool(styles))

    def options(self) -> ImportOptions:
        """The choices as shown: the encoding unless automatic; the styles if any are listed."""
        enc = self.encoding.currentText().strip()
        styles = None
        if self.styles.count():
            checked = [self.styles.item(k) for k in range(self.styles.count())]
            styles = frozenset(
                str(i.data(Qt.ItemDataRole.UserRole))
                for i in checked
                if i.checkState() == Qt.CheckState.Checked
            )
        try:
            return ImportOptions(None if enc in ("", AUTOMATIC) else enc, styles)
        except TroupeError as exc:
            self.error.setText(str(exc))
            raise

    def reread(self) -> bool:
        try:
            self._show(preview_import(self.path, self.options()))
            return True
        except NoDialogueStyle as exc:
            self._no_style(exc)
            return False
        except TroupeError as exc:
            self.error.setText(str(exc))
            self.go.setEnabled(False)
            return False

    def accept(self) -> None:
        try:
            options = self.options()
        except TroupeError:
            return
        super().accept()
        self._on_accept(options)


def review_import(
    parent: QWidget, path: Path, on_accept: Callable[[ImportOptions], None]
) -> ImportDialog | None:
    """Read `path`; a clean file goes straight on (`on_accept` at once, None returned); one
    with something to check opens the report (returned). Raises `TroupeError` on a bad file."""
    read: Script | NoDialogueStyle
    try:
        read = preview_import(path)
    except NoDialogueStyle as exc:
        read = exc
    if isinstance(read, Script) and not needs_review(read):
        on_accept(ImportOptions())
        return None
    dialog = ImportDialog(parent, path, read, on_accept)
    dialog.open()
    return dialog
