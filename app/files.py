"""The show's files: opening a script (through the import report where it has something
to check), a project, what was dropped or picked from the recent list, a recovery file
after a crash; saving the project without blocking; and the unsaved-changes question
before anything replaces the show. The undo stack's clean state is 'saved'."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtGui import QUndoStack
from PySide6.QtWidgets import QFileDialog, QMessageBox, QStatusBar, QWidget

from app.banner import Banner
from app.bridge import EngineBridge
from app.import_dialog import ImportDialog, review_import
from app.menus import Menus
from app.pending import Pending
from app.session import Session
from engine.control import SCRIPT_SUFFIXES, ImportOptions, Troupe
from engine.core.errors import TroupeError
from engine.core.types import Script

PROJECT_SUFFIXES = {".json", ".toml", ".troupe"}
PROJECT_FILTER = "Troupe projects (*.json *.toml *.troupe);;All files (*)"
SCRIPT_FILTER = f"Scripts ({' '.join('*' + s for s in sorted(SCRIPT_SUFFIXES))});;All files (*)"


class Host(Protocol):
    """What `Files` uses of the window."""

    troupe: Troupe
    session: Session
    undo: QUndoStack
    banner: Banner
    pending: Pending
    bridge: EngineBridge
    menus: Menus

    def window(self) -> QWidget: ...

    def statusBar(self) -> QStatusBar: ...


class Files:
    """Open and save the show's files for the window; nothing here waits on the engine."""

    def __init__(self, window: Host) -> None:
        self.w = window
        self.import_dialog: ImportDialog | None = None
        """The import report open for a script with something to check (None: none open)."""
        self.saving_then = False
        """True while an action the director confirmed runs after its save."""

    # --- opening ------------------------------------------------------------------------
    def open_script(self, path: str | Path) -> bool:
        """Import a script; on a bad file show the importer's message and keep the show.
        True when the file read cleanly (it becomes the show a moment later)."""
        w = self.w
        if not self.confirm_unsaved(lambda: self.open_script(path)):
            return False
        serial = w.banner.serial

        def opened(script: Script) -> None:
            w.session.add_recent(Path(path))
            self._opened(serial)
            w.statusBar().showMessage(f"opened {script.title}: {len(script.cues)} lines", 5000)

        def load(options: ImportOptions) -> None:
            try:
                future = w.troupe.projects.load(path, options=options)
            except TroupeError as exc:
                w.banner.show_message(str(exc))
                return
            w.pending.watch(future, f"opening {Path(path).name}", w.banner.show_message, opened)

        try:  # the import report first where the file has something to check
            self.import_dialog = review_import(w.window(), Path(path), load)
        except TroupeError as exc:
            w.banner.show_message(str(exc))
            return False
        return True

    def open_project(self, path: str | Path) -> bool:
        w = self.w
        if not self.confirm_unsaved(lambda: self.open_project(path)):
            return False
        serial = w.banner.serial
        try:
            future = w.troupe.projects.open(path)
        except TroupeError as exc:
            w.banner.show_message(str(exc))
            return False

        def opened(_script: Script) -> None:
            w.session.add_recent(Path(path))
            self._opened(serial)

        w.pending.watch(future, f"opening {Path(path).name}", w.banner.show_message, opened)
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

    def open_script_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.w.window(), "Open script", "", SCRIPT_FILTER)
        if path:
            self.open_script(path)

    def open_project_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.w.window(), "Open project", "", PROJECT_FILTER)
        if path:
            self.open_project(path)

    def fill_recent(self) -> None:
        """List the recent files in the File menu (as it is about to show)."""
        recent = self.w.menus.recent
        recent.clear()
        for p in self.w.session.recent():
            act = recent.addAction(str(p))
            act.triggered.connect(lambda _=False, path=p: self.open_paths([path]))
        if not recent.actions():
            recent.addAction("(none)").setEnabled(False)

    def recover(self, path: Path) -> None:
        """Open a recovery file; Save then goes to the crashed session's own project file
        (or asks where, if it had none), never into the recovery file."""
        w = self.w
        origin = w.session.origin(path)
        serial = w.banner.serial
        try:
            future = w.troupe.projects.recover(path, origin)
        except TroupeError as exc:
            w.banner.show_message(str(exc))
            return

        def opened(_script: Script) -> None:
            w.session.discard(path)
            self._opened(serial)
            w.undo.resetClean()  # recovered edits are not saved anywhere yet: Quit asks
            where = f"Save goes to {origin}" if origin else "Save asks where to save it"
            w.banner.show_message(
                f"recovered the cast and edits of the session that did not close; {where}", kind="success"
            )

        w.pending.watch(future, "recovering", w.banner.show_message, opened)

    def _opened(self, banner_serial: int) -> None:
        """A script or project became the show: old edits cannot be undone into it, and an
        error shown before the command started no longer applies."""
        w = self.w
        w.undo.clear()
        w.undo.setClean()
        w.banner.clear_error(banner_serial)
        w.bridge.poll()

    # --- saving -------------------------------------------------------------------------
    def save(self, then: Callable[[], None] | None = None) -> bool:
        """Save to the project's file (asking where if it has none); False if the director
        cancelled. `then` runs once the save succeeded."""
        path = self.w.troupe.projects.path  # NB: one reference read
        if path is None:
            return self.save_as(then)
        self._save(path, then)
        return True

    def save_as(self, then: Callable[[], None] | None = None) -> bool:
        path, _ = QFileDialog.getSaveFileName(
            self.w.window(), "Save project", "show.troupe.json", PROJECT_FILTER
        )
        if path:
            self._save(Path(path), then)
        return bool(path)

    def _save(self, path: Path, then: Callable[[], None] | None) -> None:
        w = self.w
        mark = w.undo.index()

        def saved(_: object) -> None:
            if w.undo.index() == mark:
                w.undo.setClean()
            w.statusBar().showMessage(f"saved {path}", 5000)
            if then is not None:
                then()

        w.pending.watch(w.troupe.projects.save(path), "saving the project",
                        lambda msg: w.banner.show_message(f"could not save: {msg}"), saved)  # fmt: skip

    def confirm_unsaved(self, retry: Callable[[], object]) -> bool:
        """True to go on now. With unsaved edits, ask: Save (then `retry` once saved),
        Discard (go on), or Cancel (stay)."""
        w = self.w
        if w.undo.isClean() or self.saving_then:
            return True
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(
            w.window(), "Unsaved changes",
            f"The show has unsaved changes ({w.undo.undoText() or 'edits'}…). Save them first?",
            buttons.Save | buttons.Discard | buttons.Cancel, buttons.Save,
        )  # fmt: skip
        if answer == buttons.Discard:
            return True
        if answer == buttons.Save:

            def after() -> None:
                self.saving_then = True
                try:
                    retry()
                finally:
                    self.saving_then = False

            self.save(after)
        return False
