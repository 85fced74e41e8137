"""Scene group rows for the cue list: a proxy over the flat cue model that puts a heading
row before each scene's first cue (the flat model stays what tests and edits use)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractProxyModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont

from app.cue_model import CueTableModel

Index = QModelIndex | QPersistentModelIndex
Row = tuple[str, int]
"""('scene', scene number) or ('cue', source row)."""


class SceneGroups(QAbstractProxyModel):
    """Rows are the source's cues with a heading row wherever the scene changes."""

    groups_changed = Signal()
    """Emitted after the heading rows moved (the view re-applies its spans)."""

    def __init__(self, source: CueTableModel) -> None:
        super().__init__()
        self.cue_source = source
        self.rows: list[Row] = []
        self.proxy_row: list[int] = []
        """Source row -> proxy row."""
        self._bold = QFont()
        self._bold.setBold(True)
        self._heading_bg = QBrush(QColor("#1f2937"))
        self._heading_fg = QBrush(QColor("#e5e7eb"))
        self.setSourceModel(source)
        source.modelReset.connect(self._reset)
        source.dataChanged.connect(self._changed)
        self._reset()

    def _layout(self) -> list[Row]:
        rows: list[Row] = []
        scene = None
        for k, cue in enumerate(self.cue_source.cues):
            if cue.scene != scene:
                scene = cue.scene
                rows.append(("scene", cue.scene))
            rows.append(("cue", k))
        return rows

    def _reset(self) -> None:
        self.beginResetModel()
        self.rows = self._layout()
        self.proxy_row = [p for p, (kind, _) in enumerate(self.rows) if kind == "cue"]
        self.endResetModel()
        self.groups_changed.emit()

    def _changed(self, top: QModelIndex, bottom: QModelIndex, roles: Any = ()) -> None:
        if self._layout() != self.rows:
            self._reset()
            return
        self.dataChanged.emit(self.mapFromSource(top), self.mapFromSource(bottom))

    def heading_rows(self) -> list[int]:
        return [p for p, (kind, _) in enumerate(self.rows) if kind == "scene"]

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:
        if parent.isValid() or not (0 <= row < len(self.rows)) or not 0 <= column < self.columnCount():
            return QModelIndex()
        return self.createIndex(row, column)

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        return QModelIndex()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else self.cue_source.columnCount()

    def mapToSource(self, proxy: Index) -> QModelIndex:
        if not proxy.isValid() or proxy.row() >= len(self.rows):
            return QModelIndex()
        kind, value = self.rows[proxy.row()]
        return self.cue_source.index(value, proxy.column()) if kind == "cue" else QModelIndex()

    def mapFromSource(self, source: Index) -> QModelIndex:
        if not source.isValid() or source.row() >= len(self.proxy_row):
            return QModelIndex()
        return self.index(self.proxy_row[source.row()], source.column())

    def source_row(self, proxy_row: int) -> int:
        """The cue model's row shown at `proxy_row`, or -1 for a heading."""
        if not 0 <= proxy_row < len(self.rows):
            return -1
        kind, value = self.rows[proxy_row]
        return value if kind == "cue" else -1

    def data(self, index: Index, role: int = 0) -> Any:
        if not index.isValid():
            return None
        kind, value = self.rows[index.row()]
        if kind == "cue":
            return self.cue_source.data(self.mapToSource(index), role)
        if role == Qt.ItemDataRole.DisplayRole and index.column() == 0:
            scenes = self.cue_source.scenes
            return scenes[value] if 0 <= value < len(scenes) else f"scene {value + 1}"
        if role == Qt.ItemDataRole.FontRole:
            return self._bold
        if role == Qt.ItemDataRole.BackgroundRole:
            return self._heading_bg
        if role == Qt.ItemDataRole.ForegroundRole:
            return self._heading_fg
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        return self.cue_source.headerData(section, orientation, role)

    def flags(self, index: Index) -> Qt.ItemFlag:
        if index.isValid() and self.rows[index.row()][0] == "scene":
            return Qt.ItemFlag.ItemIsEnabled
        return self.cue_source.flags(self.mapToSource(index))

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        return self.cue_source.setData(self.mapToSource(index), value, role)
