"""The window's menus and transport toolbar: File, Edit (undo/redo), Show (director
commands), View (every dock and bar, follow playhead). Built from the commands the window
hands over (`Commands`); the actions come back as `Menus` for the window to enable and
label."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QUndoStack
from PySide6.QtWidgets import QAbstractButton, QComboBox, QDockWidget, QLabel, QMainWindow, QMenu, QToolBar

from engine.control.transport import Transport

Slot = Callable[..., object]


@dataclass(frozen=True)
class Commands:
    """What the window does for each menu entry (besides the transport's own commands)."""

    open_script: Slot
    open_project: Slot
    fill_recent: Slot
    save: Slot
    save_as: Slot
    render: Callable[[bool], object]
    quit: Slot
    find_role: Slot
    go: Slot
    play: Slot
    jump_to_selected: Slot
    loop: Slot
    cue_stack: Slot
    keep_adlib: Slot
    delete_adlib: Slot
    device_chosen: Slot


@dataclass
class Menus:
    """The actions and widgets the window keeps."""

    recent: QMenu
    undo: QAction
    redo: QAction
    go: QAction
    play: QAction
    pause: QAction
    stop: QAction
    panic: QAction
    loop: QAction
    stack: QAction
    keep: QAction
    delete: QAction
    devices: QComboBox
    transport_bar: QToolBar
    follow: QAction


def _action(
    w: QMainWindow, text: str, slot: Slot, shortcut: str | QKeySequence | Qt.Key | None = None
) -> QAction:
    act = QAction(text, w)
    if shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
    act.triggered.connect(slot)
    w.addAction(act)
    return act


def build_menus(w: QMainWindow, do: Commands, transport: Transport, undo: QUndoStack,
                docks: Sequence[QDockWidget], follow_box: QAbstractButton | None, devices: Sequence[str],
                default_device: str) -> Menus:  # fmt: skip
    """The menus and the transport toolbar of `w`; `follow_box`: the show view's own
    follow-playhead toggle (kept in step with the View menu's)."""
    a = _action
    file = w.menuBar().addMenu("&File")
    file.addAction(a(w, "&Open script…", do.open_script, QKeySequence.StandardKey.Open))
    recent = file.addMenu("Open &recent")
    recent.aboutToShow.connect(do.fill_recent)
    file.addAction(a(w, "Open &project…", do.open_project, "Ctrl+Shift+O"))
    file.addAction(a(w, "&Save project", do.save, QKeySequence.StandardKey.Save))
    file.addAction(a(w, "Save project &as…", do.save_as, "Ctrl+Shift+S"))
    file.addAction(a(w, "&Render to file…", lambda: do.render(False), "Ctrl+R"))
    file.addAction(a(w, "Render with s&tems…", lambda: do.render(True), "Ctrl+Shift+R"))
    file.addAction(a(w, "&Quit", do.quit, QKeySequence.StandardKey.Quit))

    edit = w.menuBar().addMenu("&Edit")
    undo_action = undo.createUndoAction(w, "&Undo")
    undo_action.setShortcut(QKeySequence.StandardKey.Undo)
    redo_action = undo.createRedoAction(w, "&Redo")
    redo_action.setShortcut(QKeySequence.StandardKey.Redo)
    edit.addAction(undo_action)
    edit.addAction(redo_action)
    edit.addSeparator()
    edit.addAction(a(w, "Find &role…", do.find_role, QKeySequence.StandardKey.Find))

    show = w.menuBar().addMenu("&Show")
    go = a(w, "GO", do.go, Qt.Key.Key_Space)
    play = a(w, "Play", do.play, "Ctrl+P")
    pause = a(w, "Pause / resume", transport.toggle, Qt.Key.Key_P)
    stop = a(w, "Stop", transport.stop, "Ctrl+.")
    panic = a(w, "Panic (silence now)", transport.panic, Qt.Key.Key_Escape)
    nxt = a(w, "Next cue", lambda: transport.skip(1), "Ctrl+Right")
    prev = a(w, "Previous cue", lambda: transport.skip(-1), "Ctrl+Left")
    jump = a(w, "Jump to selected cue", do.jump_to_selected, "Ctrl+J")
    loop = a(w, "Loop scene of selected cue", do.loop, "Ctrl+L")
    loop.setCheckable(True)
    stack = a(w, "Cue-stack mode (each cue waits for GO)", do.cue_stack, "Ctrl+G")
    stack.setCheckable(True)
    keep = a(w, "Keep selected ad-lib in the show", do.keep_adlib, "Ctrl+K")
    delete = a(w, "Delete selected ad-lib", do.delete_adlib, "Ctrl+Delete")
    for act in (go, play, pause, stop, panic, nxt, prev, jump, loop, stack, keep, delete):
        show.addAction(act)
    for act in (go, play, pause, stop, panic):  # from anywhere in the window, whatever has focus
        act.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)

    bar = QToolBar("Transport")
    bar.setObjectName("transport")
    for act in (play, pause, stop, go, panic):
        bar.addAction(act)
    bar.addSeparator()
    bar.addWidget(QLabel(" Output: "))
    box = QComboBox()
    box.addItem(default_device, None)
    for d in devices:
        box.addItem(d, int(d.split(":", 1)[0]))
    box.activated.connect(do.device_chosen)
    bar.addWidget(box)
    w.addToolBar(bar)

    view = w.menuBar().addMenu("&View")
    for dock in docks:
        view.addAction(dock.toggleViewAction())
    view.addAction(bar.toggleViewAction())
    view.addSeparator()
    follow = QAction("&Follow playhead", w)
    follow.setCheckable(True)
    if follow_box is not None:
        follow.setChecked(follow_box.isChecked())
        follow.toggled.connect(follow_box.setChecked)
        follow_box.toggled.connect(follow.setChecked)
    view.addAction(follow)
    return Menus(recent, undo_action, redo_action, go, play, pause, stop, panic, loop, stack, keep, delete,
                 box, bar, follow)  # fmt: skip
