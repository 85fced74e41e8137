"""The render dialog: format, stems (off by default), range (whole show, a scene, the
selected cues) and where to write, defaulting to the script's folder (else Documents)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QWidget,
)

import assets
from engine.control import CueView, available_formats

FORMAT_CHOICES = (("WAV", "wav", ".wav"), ("FLAC", "flac", ".flac"), ("MP3", "mp3", ".mp3"),
                  ("Opus", "opus", ".opus"), ("Audiobook (M4B, scenes as chapters)", "m4a", ".m4b"),
                  ("AAC (M4A)", "m4a", ".m4a"))  # fmt: skip
"""(label, engine format name, file suffix) in the order offered."""


@dataclass(frozen=True)
class RenderRequest:
    """What the director asked for: the file, the stems folder (or None), the cues (or None
    for the whole show)."""

    out: Path
    stems: Path | None
    cues: tuple[int, ...] | None


BUNDLED = assets.HERE
"""Scripts shipped with Troupe (the demo): renders of them go to Documents, not the install."""


def default_folder(script_path: str) -> Path:
    """The script's folder if it can be written (and is not Troupe's own), else the user's
    Documents (else home)."""
    folder = Path(script_path).resolve().parent if script_path else None
    ours = folder is not None and folder.is_relative_to(BUNDLED)
    if folder is not None and not ours and folder.is_dir() and os.access(folder, os.W_OK):
        return folder
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(docs) if docs else Path.home()


class RenderDialog(QDialog):
    def __init__(self, title: str, script_path: str, scenes: Sequence[str], cues: Sequence[CueView],
                 selected: Sequence[int], parent: QWidget | None = None) -> None:  # fmt: skip
        super().__init__(parent)
        self.setWindowTitle("Render show")
        self.cues, self.selected = list(cues), list(selected)
        self.format = QComboBox()
        usable = set(available_formats())
        for label, name, suffix in FORMAT_CHOICES:
            if name in usable:
                self.format.addItem(label, suffix)
        self.format.currentIndexChanged.connect(lambda _i: self._suffix())
        stem = (
            "".join(ch if ch.isalnum() or ch in " -_" else "_" for ch in (title or "show")).strip() or "show"
        )
        self.path = QLineEdit(str(default_folder(script_path) / f"{stem}.wav"))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.stems = QCheckBox("Also one file per role (stems, in a folder beside it)")
        self.whole = QRadioButton("Whole show")
        self.whole.setChecked(True)
        self.by_scene = QRadioButton("Scene:")
        self.scene = QComboBox()
        self.scene.addItems(list(scenes))
        self.scene.currentIndexChanged.connect(lambda _i: self.by_scene.setChecked(True))
        self.selection = QRadioButton(f"Selected cues ({len(self.selected)})")
        self.selection.setEnabled(bool(self.selected))
        self.by_scene.setEnabled(bool(scenes))
        self._layout(browse)

    def _layout(self, browse: QPushButton) -> None:
        form = QFormLayout(self)
        where = QHBoxLayout()
        where.addWidget(self.path, 1)
        where.addWidget(browse)
        form.addRow("File:", where)
        form.addRow("Format:", self.format)
        form.addRow("", self.stems)
        scene = QHBoxLayout()
        scene.addWidget(self.by_scene)
        scene.addWidget(self.scene, 1)
        form.addRow("Range:", self.whole)
        form.addRow("", scene)
        form.addRow("", self.selection)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Render")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _suffix(self) -> None:
        path = Path(self.path.text())
        self.path.setText(str(path.with_suffix(self.format.currentData())))

    def _browse(self) -> None:
        chosen, _ = QFileDialog.getSaveFileName(self, "Render to", self.path.text())
        if chosen:
            self.path.setText(chosen)
            self._match_format()

    def _match_format(self) -> None:
        suffix = Path(self.path.text()).suffix.lower()
        k = self.format.findData(suffix)
        if k >= 0:
            self.format.blockSignals(True)
            self.format.setCurrentIndex(k)
            self.format.blockSignals(False)

    def request(self) -> RenderRequest:
        """The render the dialog describes."""
        out = Path(self.path.text()).expanduser()
        stems = out.with_name(out.stem + "_stems") if self.stems.isChecked() else None
        cues: tuple[int, ...] | None = None
        if self.by_scene.isChecked():
            scene = self.scene.currentIndex()
            cues = tuple(c.index for c in self.cues if c.scene == scene and c.kind != "adlib")
        elif self.selection.isChecked():
            cues = tuple(self.selected)
        return RenderRequest(out, stems, cues)
