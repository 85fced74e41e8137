"""Fixtures for the director window: a real engine, a window with its settings and data in
a temporary folder, and a fake snapshot source for drawing tests."""

from __future__ import annotations

import gc
import queue
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QSettings
from PySide6.QtWidgets import QMessageBox

from app.main_window import MainWindow
from engine.control import EngineSettings, EngineSnapshot, Troupe


@pytest.fixture(autouse=True)
def no_modal_prompts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """An unsaved-changes prompt answers Discard (a modal box would wait forever offscreen);
    tests that answer otherwise patch it again. The list records the prompts' titles."""
    asked: list[str] = []

    def discard(_parent: object, title: str, *_args: object) -> QMessageBox.StandardButton:
        asked.append(title)
        return QMessageBox.StandardButton.Discard

    monkeypatch.setattr(QMessageBox, "question", discard)
    return asked


@pytest.fixture
def troupe() -> Iterator[Troupe]:
    e = Troupe(EngineSettings(neural=False))  # the window's tests need no neural model loading
    yield e
    e.close()


@pytest.fixture
def make_window(qtbot, tmp_path: Path):  # type: ignore[no-untyped-def]
    made: list[MainWindow] = []

    def make(troupe: Troupe, source: object | None = None, data_dir: Path | None = None) -> MainWindow:
        settings = QSettings(str(tmp_path / "troupe.ini"), QSettings.Format.IniFormat)
        w = MainWindow(troupe, settings, data_dir or tmp_path / "data", source)  # type: ignore[arg-type]
        made.append(w)
        return w

    yield make
    # Destroy the windows here, on the GUI thread. Left to Python's garbage collector, a
    # window can be collected on an engine thread; PySide then defers the C++ deletion to
    # the GUI thread at an arbitrary later point, where it was seen to deadlock in ~QObject.
    for w in made:
        w.close()
        w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    made.clear()
    gc.collect()


class FakeSource:
    """Hands the bridge whatever snapshot a test sets."""

    def __init__(self) -> None:
        self.messages: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.current = EngineSnapshot(version=0)

    def snapshot(self) -> EngineSnapshot:
        return self.current


@pytest.fixture
def fake_source() -> FakeSource:
    return FakeSource()
