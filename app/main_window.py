"""The director window: cue list with GO, role timeline, priority heatmap, latency monitor,
cast panel, ad-lib box, transport and export. It reaches the engine only through
the facades of `engine.control.Troupe` and draws the snapshots `EngineBridge` hands it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QResizeEvent, QUndoStack
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFileDialog,
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
from app.flows import PROJECT_FILTER, RenderFlow, SaveFlow, VoiceFlow
from app.import_dialog import ImportDialog, review_import
from app.jobs import RenderJob
from app.menus import Commands, build_menus
from app.monitor import LatencyMonitor
from app.pending import Pending
from app.recovery import RecoveryOffer
from app.session import Session
from app.show_clock import ShowClock
from app.show_view import ShowView
from app.voice_browser import VoiceBrowser
from engine.control import SCRIPT_SUFFIXES, EngineSnapshot, ImportOptions, Troupe, wait
from engine.core.errors import TroupeError
from engine.core.types import Script

PROJECT_SUFFIXES = {".json", ".toml", ".troupe"}
SCRIPT_FILTER = f"Scripts ({' '.join('*' + s for s in sorted(SCRIPT_SUFFIXES))});;All files (*)"
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
        self.saving = SaveFlow(self)
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
        self.import_dialog: ImportDialog | None = None
        """The import report open for a script with something to check (None: none open)."""
        self._build_layout()
        self.undo = QUndoStack(self)
        self._saving_then = False
        self.ask_on_close = True
        """Ask about unsaved changes on close (not once the application is quitting)."""
        """True while an action the director confirmed runs after its save."""
        commands = Commands(
            open_script=self.open_dialog,
            open_project=self.open_project_dialog,
            fill_recent=self._fill_recent,
            save=self.save_project,
            save_as=self.save_project_as,
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
                                 self._devices(), self.default_device_label())  # fmt: skip
        self.bridge = EngineBridge(source or troupe.monitor, parent=self)
        self.bridge.snapshot_changed.connect(self.apply_snapshot)
        self.bridge.message_posted.connect(self.banner.show_message)
        self.bridge.start()
        self.session.restore_window(self)
        self.cues.restore_state(self.settings)
        self.session.start(self.recovery, self._recover)

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

    # --- scripts and projects -----------------------------------------------------------
    def open_script(self, path: str | Path) -> bool:
        """Import a script; on a bad file show the importer's message and keep the show.
        True when the file read cleanly (it becomes the show a moment later)."""
        if not self.confirm_unsaved(lambda: self.open_script(path)):
            return False
        serial = self.banner.serial

        def opened(script: Script) -> None:
            self.session.add_recent(Path(path))
            self._opened(serial)
            self.statusBar().showMessage(f"opened {script.title}: {len(script.cues)} lines", 5000)

        def load(options: ImportOptions) -> None:
            try:
                future = self.troupe.projects.load(path, options=options)
            except TroupeError as exc:
                self.banner.show_message(str(exc))
                return
            self.pending.watch(future, f"opening {Path(path).name}", self.banner.show_message, opened)

        try:  # the import report first where the file has something to check
            self.import_dialog = review_import(self, Path(path), load)
        except TroupeError as exc:
            self.banner.show_message(str(exc))
            return False
        return True

    def open_project(self, path: str | Path) -> bool:
        if not self.confirm_unsaved(lambda: self.open_project(path)):
            return False
        serial = self.banner.serial
        try:
            future = self.troupe.projects.open(path)
        except TroupeError as exc:
            self.banner.show_message(str(exc))
            return False

        def opened(_script: Script) -> None:
            self.session.add_recent(Path(path))
            self._opened(serial)

        self.pending.watch(future, f"opening {Path(path).name}", self.banner.show_message, opened)
        return True

    def open_paths(self, paths: list[Path]) -> None:
        """Open what was dropped: a project, or the first script that imports cleanly."""
        for p in paths:
            if p.suffix.lower() in PROJECT_SUFFIXES:
                self.open_project(p)
                return
        for p in paths:
            if self.open_script(p):
                return

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open script", "", SCRIPT_FILTER)
        if path:
            self.open_script(path)

    def open_project_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", "", PROJECT_FILTER)
        if path:
            self.open_project(path)

    def _fill_recent(self) -> None:
        self.menus.recent.clear()
        for p in self.session.recent():
            act = self.menus.recent.addAction(str(p))
            act.triggered.connect(lambda _=False, path=p: self.open_paths([path]))
        if not self.menus.recent.actions():
            self.menus.recent.addAction("(none)").setEnabled(False)

    def _opened(self, banner_serial: int) -> None:
        """A script or project became the show: old edits cannot be undone into it, and an
        error shown before the command started no longer applies."""
        self.undo.clear()
        self.undo.setClean()
        self.banner.clear_error(banner_serial)
        self.bridge.poll()

    def save_project(self, then: Callable[[], None] | None = None) -> bool:
        """Save to the project's file (asking where if it has none); False if the director
        cancelled. `then` runs once the save succeeded."""
        return self.saving.save(then)

    def save_project_as(self, then: Callable[[], None] | None = None) -> bool:
        return self.saving.save_as(then)

    def confirm_unsaved(self, retry: Callable[[], object]) -> bool:
        """True to go on now; with unsaved edits the director chooses (see `SaveFlow`)."""
        return self.saving.confirm(retry)

    def _recover(self, path: Path) -> None:
        """Open a recovery file; Save then goes to the crashed session's own project file
        (or asks where, if it had none), never into the recovery file."""
        origin = self.session.origin(path)
        serial = self.banner.serial
        try:
            future = self.troupe.projects.recover(path, origin)
        except TroupeError as exc:
            self.banner.show_message(str(exc))
            return

        def opened(_script: Script) -> None:
            self.session.discard(path)
            self._opened(serial)
            self.undo.resetClean()  # recovered edits are not saved anywhere yet: Quit asks
            where = f"Save goes to {origin}" if origin else "Save asks where to save it"
            self.banner.show_message(
                f"recovered the cast and edits of the session that did not close; {where}", kind="success"
            )

        self.pending.watch(future, "recovering", self.banner.show_message, opened)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if any(u.isLocalFile() for u in urls):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        event.acceptProposedAction()
        self.open_paths(paths)

    # --- director commands ------------------------------------------------------------
    def play(self) -> None:
        self.with_output(self.troupe.transport.play)

    def go(self) -> None:
        self.with_output(self.troupe.transport.go)

    def with_output(self, then: Callable[[], object]) -> None:
        """Run `then` once the audio output is open (opening it first if needed, without
        waiting on it here: the device may take a while, or fail with a message)."""
        if self.troupe.output.is_open:
            then()
            return
        self.pending.watch(self.troupe.output.open(), "opening the audio output",
                           lambda msg: self.banner.show_message(f"audio output: {msg}"),
                           lambda _: then())  # fmt: skip

    def ensure_output(self) -> bool:
        """Open the output and wait for it (the --smoke self-test; slots use `with_output`)."""
        if self.troupe.output.is_open:
            return True
        try:
            wait(self.troupe.output.open(), 30)
        except TroupeError as exc:
            self.banner.show_message(f"audio output: {exc}")
            return False
        return True

    def _device_chosen(self, index: int) -> None:
        self.pending.watch(self.troupe.output.set_device(self.menus.devices.itemData(index)),
                           "switching the audio output",
                           lambda msg: self.banner.show_message(f"audio output: {msg}"))  # fmt: skip

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

    def _devices(self) -> list[str]:
        try:
            return self.troupe.output.devices()
        except TroupeError as exc:
            self.banner.show_message(f"audio output: {exc}")
            return []

    def _quit(self) -> None:
        self.close()  # NB: a slot that returns None; QWidget.close's bool upsets PySide6's refcounts

    def default_device_label(self) -> str:
        """What the output chooser's first entry says: the device the command line chose."""
        device = self.troupe.output.device
        return "Default output" if device is None else f"{device} (as started)"

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.ask_on_close and not self.confirm_unsaved(self.close):
            event.ignore()
            return
        self.bridge.stop()
        self.cues.save_state(self.settings)
        self.session.close(self)
        super().closeEvent(event)
