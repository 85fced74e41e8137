"""Starting the window: `python main.py` (with a script, default the demo), signals that
close it as its close button does, and the `--smoke` self-test."""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app.main_window import DEMO, MainWindow
from engine.control import EngineSettings, Troupe
from engine.core.process import start_resource_tracker


def run_gui(args: argparse.Namespace) -> int:
    """`python main.py`: the window with a script (default: the demo) loaded."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Troupe")
    app.setOrganizationName("Troupe")
    start_resource_tracker()  # before the engine's children: see `_quit_on_signals`
    settings = EngineSettings(
        processes=getattr(args, "processes", 1) or 1,
        audio_process=not getattr(args, "in_process_audio", False),
    )
    if getattr(args, "device", None) is not None:
        settings = replace(settings, output=replace(settings.output, device=args.device))
    troupe = Troupe(settings)
    window = MainWindow(troupe)
    given = getattr(args, "gui_script", None)
    if given is not None:  # a double-click in the file manager: a script or a project
        window.files.open_paths([Path(given)])
    else:
        window.files.open_script(DEMO)
    window.show()
    _quit_on_signals(app)
    code = _smoke(app, window) if getattr(args, "smoke", False) else app.exec()
    window.ask_on_close = False  # a signal ended the loop: the window asked already if it could
    window.close()
    troupe.close()
    return code


def _quit_on_signals(app: QApplication) -> None:
    """Ctrl+C, SIGTERM and SIGHUP close the window as its close button does (the engine
    and its child processes close with it). Qt's loop runs no Python, so a timer lets
    Python's signal handlers run."""

    def quit_(_signum: int, _frame: object) -> None:
        app.quit()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, quit_)
    timer = QTimer(app)
    timer.timeout.connect(lambda: None)
    timer.start(200)


SMOKE_PREPARE_S = 60.0
"""How long the self-test lets the show prepare (the natural voices voicing the opening on
a cold take cache) before its 2 s of play."""


def _smoke(app: QApplication, window: MainWindow) -> int:
    """Self-test: play 2 s to the output device (once the show has prepared), then report
    whether audio flowed."""
    import time

    if not window.output.open_and_wait():
        print("troupe --smoke: could not open the audio output", file=sys.stderr)
        return 1
    window.play()
    started = time.monotonic()

    def poll() -> None:  # 2 s of play from when the clock starts
        if (
            window.troupe.monitor.snapshot().status == "preparing"
            and time.monotonic() - started < SMOKE_PREPARE_S
        ):
            QTimer.singleShot(50, poll)
        else:
            QTimer.singleShot(2000, app.quit)

    QTimer.singleShot(50, poll)
    app.exec()
    snap = window.troupe.monitor.snapshot()
    callbacks = window.troupe.monitor.callbacks()  # the ring header's own count
    f = snap.figures
    print(f"smoke: {snap.title!r}, {len(snap.cues)} cues, playhead {snap.playhead_s:.2f} s, "
          f"{callbacks} callbacks, {f.underruns} underruns, {f.xruns} xruns")  # fmt: skip
    return 0 if callbacks > 0 and snap.playhead_s > 0 else 1
