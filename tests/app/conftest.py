"""Fixtures for the director window: a real engine, a window with its settings and data in
a temporary folder, and a fake snapshot source for drawing tests."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from app.main_window import MainWindow
from engine.service import Engine, EngineSettings, EngineSnapshot


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine(EngineSettings())
    yield e
    e.close()


@pytest.fixture
def make_window(qtbot, tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(engine: Engine, source: object | None = None, data_dir: Path | None = None) -> MainWindow:
        settings = QSettings(str(tmp_path / "troupe.ini"), QSettings.Format.IniFormat)
        w = MainWindow(engine, settings, data_dir or tmp_path / "data", source)  # type: ignore[arg-type]
        qtbot.addWidget(w)
        return w

    return make


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
