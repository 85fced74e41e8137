"""The cue list as a director reads it: scenes as heading rows, the Line column taking the
free width (full text in a tooltip), the state always in view, the playing cue followed,
and column widths kept between runs."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QSettings, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from app.cue_groups import SceneGroups
from app.cue_model import LINE_COLUMN, CueTableModel
from engine.control import CueView

SCENE_COLUMN = 1
STATE_COLUMN = 4
WIDTHS = ((0, 40), (2, 120), (STATE_COLUMN, 120))
HEADER_KEY = "cues/header"


class CueList(QTableView):
    """A table over `CueTableModel` through `SceneGroups`; emits `cue_selected(cue index)`."""

    cue_selected = Signal(int)

    def __init__(self, on_edit: Callable[[int, str], None] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.model_ = CueTableModel(on_edit=on_edit)
        self.groups = SceneGroups(self.model_)
        self.setModel(self.groups)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ContiguousSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # State stays in view
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        self.setColumnHidden(SCENE_COLUMN, True)  # the heading rows name the scene
        header = self.horizontalHeader()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(30)
        for col, width in WIDTHS:
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, width)
        header.setSectionResizeMode(LINE_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.follow = True
        """Keep the playing cue in view while the show plays."""
        self._followed = -1
        self.groups.groups_changed.connect(self._spans)
        self.selectionModel().currentRowChanged.connect(self._current)

    def _spans(self) -> None:
        self.clearSpans()
        for row in self.groups.heading_rows():
            self.setSpan(row, 0, 1, self.groups.columnCount())

    def _current(self, cur: QModelIndex, _prev: QModelIndex) -> None:
        cue = self.cue_at(cur.row())
        if cue is not None:
            self.cue_selected.emit(cue.index)

    def cue_at(self, view_row: int) -> CueView | None:
        src = self.groups.source_row(view_row)
        return self.model_.cues[src] if src >= 0 else None

    def selected(self) -> CueView | None:
        return self.cue_at(self.currentIndex().row())

    def selected_cues(self) -> list[int]:
        """The cue indices of the selected rows (headings left out), in order."""
        rows = sorted({i.row() for i in self.selectionModel().selectedRows()})
        return [c.index for c in (self.cue_at(r) for r in rows) if c is not None]

    def select_cue(self, cue_index: int) -> None:
        src = self.model_.row_of(cue_index)
        if src >= 0:
            index = self.groups.mapFromSource(self.model_.index(src, 0))
            self.selectRow(index.row())
            self.scrollTo(index)

    def follow_playhead(self, playhead_s: float, playing: bool) -> None:
        """Scroll the cue being heard (else the last one started) into view."""
        if not (self.follow and playing) or not self.model_.cues:
            return
        cues = self.model_.cues
        src = next((k for k, c in enumerate(cues) if c.state == "playing"), -1)
        if src < 0:
            started = (k for k, c in enumerate(cues) if c.kind == "line" and c.start_s <= playhead_s)
            src = max(started, default=-1)
        if src < 0 or src == self._followed:
            return
        self._followed = src
        index = self.groups.mapFromSource(self.model_.index(src, LINE_COLUMN))
        self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)

    def visible_cue_rows(self) -> range:
        """Source rows at least partly in view (for tests and follow checks)."""
        first = self.rowAt(0)
        last = self.rowAt(self.viewport().height() - 1)
        last = self.groups.rowCount() - 1 if last < 0 else last
        rows = [self.groups.source_row(r) for r in range(max(0, first), last + 1)]
        cues = [r for r in rows if r >= 0]
        return range(cues[0], cues[-1] + 1) if cues else range(0)

    def save_state(self, settings: QSettings) -> None:
        settings.setValue(HEADER_KEY, self.horizontalHeader().saveState())

    def restore_state(self, settings: QSettings) -> None:
        state = settings.value(HEADER_KEY)
        if state is not None:
            self.horizontalHeader().restoreState(state)  # type: ignore[arg-type]
            self.horizontalHeader().setSectionResizeMode(LINE_COLUMN, QHeaderView.ResizeMode.Stretch)
