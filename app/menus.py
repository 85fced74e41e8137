"""The window's menus and transport toolbar: File, Edit (undo/redo), Show (director
commands), View (every dock and bar, follow playhead)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QComboBox, QLabel, QToolBar

if TYPE_CHECKING:
    from app.main_window import MainWindow


def _action(w: MainWindow, text: str, slot: Callable[..., object],
            shortcut: str | QKeySequence | Qt.Key | None = None) -> QAction:  # fmt: skip
    act = QAction(text, w)
    if shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
    act.triggered.connect(slot)
    w.addAction(act)
    return act


def build_menus(w: MainWindow) -> None:
    _file_menu(w)
    _edit_menu(w)
    _show_menu(w)
    _toolbar(w)
    _view_menu(w)


def _file_menu(w: MainWindow) -> None:
    file = w.menuBar().addMenu("&File")
    file.addAction(_action(w, "&Open script…", w.open_dialog, QKeySequence.StandardKey.Open))
    w.recent_menu = file.addMenu("Open &recent")
    w.recent_menu.aboutToShow.connect(w._fill_recent)
    file.addAction(_action(w, "Open &project…", w.open_project_dialog, "Ctrl+Shift+O"))
    file.addAction(_action(w, "&Save project", w.save_project, QKeySequence.StandardKey.Save))
    file.addAction(_action(w, "Save project &as…", w.save_project_as, "Ctrl+Shift+S"))
    file.addAction(_action(w, "&Render to file…", w.render_dialog, "Ctrl+R"))
    file.addAction(_action(w, "Render with s&tems…", lambda: w.render_dialog(stems=True), "Ctrl+Shift+R"))
    file.addAction(_action(w, "&Quit", w._quit, QKeySequence.StandardKey.Quit))


def _edit_menu(w: MainWindow) -> None:
    edit = w.menuBar().addMenu("&Edit")
    w.undo_action = w.undo.createUndoAction(w, "&Undo")
    w.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
    w.redo_action = w.undo.createRedoAction(w, "&Redo")
    w.redo_action.setShortcut(QKeySequence.StandardKey.Redo)
    edit.addAction(w.undo_action)
    edit.addAction(w.redo_action)
    edit.addSeparator()
    edit.addAction(_action(w, "Find &role…", w.show_view.filter.setFocus, QKeySequence.StandardKey.Find))


def _show_menu(w: MainWindow) -> None:
    a = _action
    show = w.menuBar().addMenu("&Show")
    w.go_action = a(w, "GO", w.go, Qt.Key.Key_Space)
    w.play_action = a(w, "Play", w.play, "Ctrl+P")
    w.pause_action = a(w, "Pause / resume", w.engine.toggle, Qt.Key.Key_P)
    w.stop_action = a(w, "Stop", w.engine.stop, "Ctrl+.")
    w.panic_action = a(w, "Panic (silence now)", w.engine.panic, Qt.Key.Key_Escape)
    nxt = a(w, "Next cue", lambda: w.engine.skip(1), "Ctrl+Right")
    prev = a(w, "Previous cue", lambda: w.engine.skip(-1), "Ctrl+Left")
    jump = a(w, "Jump to selected cue", w.jump_to_selected, "Ctrl+J")
    w.loop_action = a(w, "Loop scene of selected cue", w._loop, "Ctrl+L")
    w.loop_action.setCheckable(True)
    w.stack_action = a(w, "Cue-stack mode (each cue waits for GO)", w._cue_stack, "Ctrl+G")
    w.stack_action.setCheckable(True)
    w.keep_action = a(w, "Keep selected ad-lib in the show", w._keep_adlib, "Ctrl+K")
    w.delete_action = a(w, "Delete selected ad-lib", w._delete_adlib, "Ctrl+Delete")
    for act in (w.go_action, w.play_action, w.pause_action, w.stop_action, w.panic_action, nxt, prev,
                jump, w.loop_action, w.stack_action, w.keep_action, w.delete_action):  # fmt: skip
        show.addAction(act)


def _toolbar(w: MainWindow) -> None:
    bar = QToolBar("Transport")
    bar.setObjectName("transport")
    for act in (w.play_action, w.pause_action, w.stop_action, w.go_action, w.panic_action):
        bar.addAction(act)
    bar.addSeparator()
    bar.addWidget(QLabel(" Output: "))
    w.device_box = QComboBox()
    w.device_box.addItem(w.default_device_label(), None)
    for d in w._devices():
        w.device_box.addItem(d, int(d.split(":", 1)[0]))
    w.device_box.activated.connect(w._device_chosen)
    bar.addWidget(w.device_box)
    w.addToolBar(bar)
    w.transport_bar = bar


def _view_menu(w: MainWindow) -> None:
    view = w.menuBar().addMenu("&View")
    for dock in w.docks:
        view.addAction(dock.toggleViewAction())
    view.addAction(w.transport_bar.toggleViewAction())
    view.addSeparator()
    follow = QAction("&Follow playhead", w)
    follow.setCheckable(True)
    follow.setChecked(w.show_view.follow.isChecked())
    follow.toggled.connect(w.show_view.follow.setChecked)
    w.show_view.follow.toggled.connect(follow.setChecked)
    view.addAction(follow)
    w.follow_action = follow
