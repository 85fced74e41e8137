"""The director window: cue list with GO, role timeline, priority heatmap, latency monitor,
cast panel, ad-lib box, transport and export. It reaches the engine only through
the facades of `engine.control.Troupe` and draws the snapshots `EngineBridge` hands it.
Opening and saving the show's files are `Files` (app/files.py), the audio output
`OutputChoice` (app/output_choice.py)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QResizeEvent, QUndoStack
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

import assets
from app.axes import clock_text
from app.banner import Banner
from app.bridge import EngineBridge, SnapshotSource
from app.cast_panel import CastPanel
from app.cue_list import CueList
from app.editing import DeleteAdlib, EditLine, KeepAdlib, Recast, voice_fields
from app.files import Files
from app.flows import RenderFlow, VoiceFlow
from app.jobs import RenderJob
from app.menus import Commands, build_menus
from app.monitor import LatencyMonitor
from app.output_choice import OutputChoice
from app.pending import Pending
from app.recovery import RecoveryOffer
from app.session import Session
from app.show_clock import ShowClock
from app.show_view import ShowView
from app.voice_browser import VoiceBrowser
from engine.control import EngineSnapshot, Troupe
from engine.core.errors import TroupeError

DEMO = assets.DEMO
DOCK_SHARE, DOCK_MIN_PX, DOCK_MAX_PX = 0.3, 200, 320
"""The docks' share of the window's height, and its bounds."""


class MainWindow(QMainWindow):
    """The one window; `troupe` takes commands, `source` (default: its monitor) gives snapshots."""

    def __init__(
        self,
        troupe: Troupe,
        settings: QSettings | None = None,
        data_dir: Path | None = None,
        source: SnapshotSource | None = None,
    ) -> None:
        super().__init__()
        self.troupe = troupe
        self.settings = settings or QSettings("Troupe", "Troupe")
        self.session = Session(troupe.projects, self.settings, data_dir)
        self.setWindowTitle("Troupe")
        self.setAcceptDrops(True)
        self.resize(1500, 920)
        self.banner = Banner()
        self.recovery = RecoveryOffer()
        self.cues = CueList(on_edit=self._edit_line)
        self.cue_model = self.cues.model_
        self.cues.cue_selected.connect(self._selected)
        self.clock = ShowClock()
        self.clock.go_clicked.connect(self.go)
        self.show_view = ShowView()
        self.timeline = self.show_view.timeline
        self.heatmap = self.show_view.heatmap
        self.timeline.cue_clicked.connect(self.select_cue)
        self.show_view.follow_changed.connect(lambda on: setattr(self.cues, "follow", on))
        self.monitor = LatencyMonitor()
        self.cast = CastPanel(self._voice_ids())
        self.cast.voice_changed.connect(self._recast)
        self.cast.browse_requested.connect(self.browse_voices)
        self.render_flow = RenderFlow(self)
        self.files = Files(self)
        self.voice_flow = VoiceFlow(self, self._recast)
        self.adlib_role = QComboBox()
        self.adlib_text = QLineEdit()
        self.adlib_text.setPlaceholderText("Ad-lib: type a line and press Enter to speak it now")
        self.adlib_text.returnPressed.connect(self.speak_adlib)
        self.status = QLabel()
        self.busy = QLabel()
        self.busy.setStyleSheet("color: #f59e0b;")
        self.statusBar().addPermanentWidget(self.busy)
        self.statusBar().addPermanentWidget(self.status)
        self.pending = Pending(self.busy, self)
        self.output = OutputChoice(troupe.output, self.pending, self.banner)
        self._build_layout()
        self.undo = QUndoStack(self)
        self.ask_on_close = True
        """Ask about unsaved changes on close (not once the application is quitting)."""
        commands = Commands(
            open_script=self.files.open_script_dialog,
            open_project=self.files.open_project_dialog,
            fill_recent=self.files.fill_recent,
            save=self.files.save,
            save_as=self.files.save_as,
            render=lambda stems: self.render_dialog(stems=stems),
            quit=self._quit,
            find_role=self.show_view.filter.setFocus,
            go=self.go,
            play=self.play,
            jump_to_selected=self.jump_to_selected,
            loop=self._loop,
            cue_stack=self._cue_stack,
            keep_adlib=self._keep_adlib,
            delete_adlib=self._delete_adlib,
            device_chosen=self._device_chosen,
        )
        follow = self.show_view.follow
        self.menus = build_menus(self, commands, troupe.transport, self.undo, self.docks, follow,
                                 self.output.devices(), self.output.default_label())  # fmt: skip
        self.bridge = EngineBridge(source or troupe.monitor, parent=self)
        self.bridge.snapshot_changed.connect(self.apply_snapshot)
        self.bridge.message_posted.connect(self.banner.show_message)
        self.bridge.start()
        self.session.restore_window(self)
        self.cues.restore_state(self.settings)
        self.session.start(self.recovery, self.files.recover)

    # --- layout ---------------------------------------------------------------------
    def _build_layout(self) -> None:
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.clock)
        lv.addWidget(self.cues, 1)
        adlib = QHBoxLayout()
        adlib.addWidget(self.adlib_role)
        adlib.addWidget(self.adlib_text, 1)
        lv.addLayout(adlib)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(self.show_view)
        split.setSizes([560, 940])
        central = QWidget()
        cv = QVBoxLayout(central)
        cv.setContentsMargins(4, 4, 4, 4)
        cv.addWidget(self.recovery)
        cv.addWidget(split, 1)
        self.setCentralWidget(central)
        self.banner.float_over(central)  # over the content: never moves a row under the pointer
        self.docks: list[QDockWidget] = []
        for title, widget in (("Cast", self.cast), ("Latency monitor", self.monitor)):
            dock = QDockWidget(title, self)
            dock.setObjectName(title.replace(" ", "_"))
            dock.setWidget(widget)
            self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
            self.docks.append(dock)
        self.tabifyDockWidget(self.docks[0], self.docks[1])  # the show view gets the width
        self.docks[0].raise_()
        self._docks_for = 0
        self._fit_docks()

    def _fit_docks(self) -> None:
        """The docks take a share of the height (the cue list keeps most of a small screen),
        set again when the window's height changes a lot (not on every small drag)."""
        height = self.height()
        if abs(height - self._docks_for) < 0.1 * max(1, self._docks_for):
            return
        self._docks_for = height
        share = round(min(DOCK_MAX_PX, max(DOCK_MIN_PX, DOCK_SHARE * height)))
        self.resizeDocks([self.docks[0]], [share], Qt.Orientation.Vertical)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if hasattr(self, "docks"):
            self._fit_docks()

    # --- snapshots --------------------------------------------------------------------
    def apply_snapshot(self, snap: EngineSnapshot) -> None:
        """Draw one engine snapshot (called by the bridge on the GUI thread)."""
        self.cue_model.update(snap.cues, snap.scenes)
        self.cues.follow_playhead(snap.playhead_s, snap.playing)
        self.show_view.apply(snap)
        self.clock.update_from(snap)
        self.menus.go.setText(self.clock.go.text())
        self.monitor.update_from(snap)
        self.cast.set_cast(snap.roles, snap.voices, snap.cast_why)
        self.cast.set_levels(snap.levels)
        if [self.adlib_role.itemText(k) for k in range(self.adlib_role.count())] != list(snap.roles):
            self.adlib_role.clear()
            self.adlib_role.addItems(list(snap.roles))
        head, end = clock_text(snap.playhead_s, True), clock_text(snap.end_s, True)
        self.status.setText(f"{snap.title or 'no script'}  ·  {snap.status}  ·  {head} / {end}")
        self.setWindowTitle(f"Troupe — {snap.title}" if snap.title else "Troupe")

    # --- dropped files (opened by `files`) ----------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if any(u.isLocalFile() for u in urls):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        event.acceptProposedAction()
        self.files.open_paths(paths)

    # --- director commands ------------------------------------------------------------
    def play(self) -> None:
        self.output.when_open(self.troupe.transport.play)

    def go(self) -> None:
        self.output.when_open(self.troupe.transport.go)

    def _device_chosen(self, index: int) -> None:
        self.output.choose(self.menus.devices.itemData(index))

    def speak_adlib(self) -> None:
        role, text = self.adlib_role.currentText(), self.adlib_text.text()
        if not role:
            self.banner.show_message("load a script first: an ad-lib is spoken by one of its roles")
            return
        try:
            self.troupe.lines.adlib(role, text)
        except TroupeError as exc:
            self.banner.show_message(str(exc))
            return
        self.adlib_text.clear()
        self.cues.setFocus()  # spoken: the keys are the show's again (Space is GO, not a space)

    def _edit_line(self, index: int, text: str) -> None:
        row = self.cue_model.row_of(index)
        old = self.cue_model.cues[row].text if row >= 0 else ""
        try:
            self.troupe.lines.edit_line(index, text)
        except TroupeError as exc:
            self.banner.show_message(str(exc))
            return
        self.undo.push(EditLine(self.troupe.lines, index, old, text))

    def _recast(self, role: str, changes: dict[str, object]) -> None:
        voice = self.cast.shown.get(role)
        if voice is None:
            self.troupe.casting.set_voice(role, **changes)
            return
        self.undo.push(Recast(self.troupe.casting, role, voice_fields(voice, changes), dict(changes)))

    def selected_cue(self) -> int | None:
        cue = self.cues.selected()
        return cue.index if cue is not None else None

    def select_cue(self, cue_index: int) -> None:
        self.cues.select_cue(cue_index)

    def _selected(self, cue_index: int) -> None:
        self.timeline.select(cue_index)

    def jump_to_selected(self) -> None:
        cue = self.selected_cue()
        if cue is not None:
            self.troupe.transport.jump_to_cue(cue)

    def _loop(self, on: bool) -> None:
        cue = self.selected_cue()
        if on and cue is None:
            self.menus.loop.setChecked(False)
            self.banner.show_message("select a cue of the scene to loop")
            return
        selected = self.cues.selected()
        scene = selected.scene if on and selected is not None else None
        self.troupe.transport.loop_scene(scene)

    def _cue_stack(self, on: bool) -> None:
        self.troupe.transport.set_cue_stack(on)

    def _selected_adlib(self) -> int | None:
        cue = self.cues.selected()
        if cue is not None and cue.kind != "line":
            return cue.index
        self.banner.show_message("select an ad-lib in the cue list first")
        return None

    def _keep_adlib(self) -> None:
        index = self._selected_adlib()
        if index is not None:
            self.undo.push(KeepAdlib(self.troupe.lines, index))

    def _delete_adlib(self) -> None:
        index = self._selected_adlib()
        if index is not None:
            self.undo.push(DeleteAdlib(self.troupe.lines, index))

    # --- export and voices (flows of their own) -------------------------------------------
    def render_dialog(self, stems: bool = False) -> RenderJob | None:
        """Ask what to render (format, stems, range, where) and render it in the background."""
        return self.render_flow.ask(stems)

    def start_render(self, out: Path, stems: Path | None, cues: tuple[int, ...] | None = None) -> RenderJob:
        return self.render_flow.start(out, stems, cues)

    def browse_voices(self, role: str) -> VoiceBrowser:
        """Open the voice browser for `role`, its current voice selected."""
        return self.voice_flow.browse(role)

    # --- engine lists -------------------------------------------------------------------
    def _voice_ids(self) -> list[str]:
        try:
            return self.troupe.casting.voice_ids()
        except TroupeError:
            return []

    def _quit(self) -> None:
        self.close()  # NB: a slot that returns None; QWidget.close's bool upsets PySide6's refcounts

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.ask_on_close and not self.files.confirm_unsaved(self.close):
            event.ignore()
            return
        self.bridge.stop()
        self.cues.save_state(self.settings)
        self.session.close(self)
        super().closeEvent(event)
