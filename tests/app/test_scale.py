"""The window at a real show's size: 50 roles and 800 lines stay readable."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6.QtCore import QSettings, Qt

from app.axes import TimeAxis, clock_text
from app.cue_list import STATE_COLUMN
from app.cue_model import LINE_COLUMN
from app.rows import DEFAULT_ROWS
from tests.app import big_show


def _window(make_window, troupe, fake_source, qtbot, snap=None):  # type: ignore[no-untyped-def]
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    w.resize(1600, 1000)
    w.show()
    qtbot.waitExposed(w)
    fake_source.current = snap or big_show.snapshot(1)
    w.bridge.poll()
    return w


def _wheel(delta: int, mods: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> SimpleNamespace:
    return SimpleNamespace(modifiers=lambda: mods, delta=lambda: delta, accept=lambda: None,
                           pos=lambda: None)  # fmt: skip


def _label_rows(w) -> list[float]:  # type: ignore[no-untyped-def]
    axis = w.timeline.role_axis
    (y0, y1) = w.timeline.view.viewRange()[1]
    levels = axis.tickValues(y0, y1, axis.geometry().height())
    return levels[0][1] if levels else []


def test_fifty_roles_open_at_a_readable_row_height(qtbot, troupe, make_window, fake_source) -> None:
    w = _window(make_window, troupe, fake_source, qtbot)
    view = w.timeline.view
    assert view.visible_rows() == pytest.approx((0.0, DEFAULT_ROWS))
    assert w.heatmap.view.viewRange()[1] == view.viewRange()[1]  # one shared row axis
    axis = w.timeline.role_axis
    rows = _label_rows(w)
    assert rows == list(range(DEFAULT_ROWS))  # every row in view is named
    metrics = axis._metrics()
    for r in rows:  # elided to the axis, never wider
        assert metrics.horizontalAdvance(axis.label_of(int(r))) <= axis.width() - 14
    assert axis.label_of(3).endswith("…")  # a long name is elided


def test_zooming_out_thins_labels_so_they_never_overlap(qtbot, troupe, make_window, fake_source) -> None:
    w = _window(make_window, troupe, fake_source, qtbot)
    view, axis = w.timeline.view, w.timeline.role_axis
    view.wheelEvent(_wheel(-120 * 8, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier))
    assert view.visible_rows()[1] == pytest.approx(big_show.N_ROLES)  # all rows, clamped
    rows = _label_rows(w)
    px_per_row = axis.geometry().height() / big_show.N_ROLES
    gaps = [b - a for a, b in itertools.pairwise(rows)]
    assert rows and min(gaps) * px_per_row >= axis._metrics().height()
    view.wheelEvent(_wheel(120 * 20, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier))
    assert view.visible_rows()[1] == pytest.approx(3.0)  # zoomed in to the minimum


def test_wheel_scrolls_rows_and_the_scroll_bar_follows(qtbot, troupe, make_window, fake_source) -> None:
    w = _window(make_window, troupe, fake_source, qtbot)
    view, bar = w.timeline.view, w.show_view.scroll
    view.wheelEvent(_wheel(-120 * 2))
    assert view.visible_rows()[0] == pytest.approx(6.0)
    assert bar.value() == 60 and bar.maximum() == (big_show.N_ROLES - DEFAULT_ROWS) * 10
    assert w.heatmap.view.viewRange()[1] == view.viewRange()[1]
    bar.setValue(bar.maximum())
    assert view.visible_rows()[0] == pytest.approx(big_show.N_ROLES - DEFAULT_ROWS)
    view.wheelEvent(_wheel(-120 * 50))  # past the end: clamped
    assert view.visible_rows()[0] == pytest.approx(big_show.N_ROLES - DEFAULT_ROWS)
    (x0, x1), _ = view.viewRange()
    view.wheelEvent(_wheel(-120, Qt.KeyboardModifier.ShiftModifier))  # Shift: time, not rows
    assert view.viewRange()[0][0] == pytest.approx(x0 + 0.1 * (x1 - x0))


def test_role_filter_keeps_matching_rows_in_both_views(qtbot, troupe, make_window, fake_source) -> None:
    w = _window(make_window, troupe, fake_source, qtbot)
    w.show_view.filter.setText("harbourmaster")
    shown = w.show_view.shown_roles
    assert shown and all("HARBOURMASTER" in r for r in shown)
    assert w.heatmap.image.image.shape[0] == len(shown)
    assert {c.role for c in w.timeline.cues} == set(shown)
    w.show_view.filter.clear()
    assert len(w.show_view.shown_roles) == big_show.N_ROLES


def test_follow_mode_keeps_the_playhead_in_view(qtbot, troupe, make_window, fake_source) -> None:
    w = _window(make_window, troupe, fake_source, qtbot)
    playhead = 503 * big_show.LINE_S + 1.0  # cue 503 is playing, its role on row 21 (out of view)
    fake_source.current = big_show.snapshot(2, playhead)
    w.bridge.poll()
    (x0, x1), _ = w.timeline.view.viewRange()
    assert x0 <= playhead <= x1
    assert 503 in w.cues.visible_cue_rows()
    top, count = w.timeline.view.visible_rows()
    row = w.timeline.roles.index(big_show.role_names()[(503 * 7) % big_show.N_ROLES])
    assert row >= 16 and top <= row <= top + count - 1  # the role being heard is scrolled into view
    w.show_view.follow.setChecked(False)  # off: neither moves
    before = w.cues.visible_cue_rows()
    fake_source.current = big_show.snapshot(3, 100 * big_show.LINE_S + 1.0)
    w.bridge.poll()
    assert w.cues.visible_cue_rows() == before and w.timeline.view.viewRange()[0] == [x0, x1]


def test_ruler_reads_minutes_and_seconds() -> None:
    assert clock_text(65) == "1:05" and clock_text(3725) == "1:02:05" and clock_text(5.25, True) == "0:05.2"
    axis = TimeAxis()
    ((step, values),) = axis.tickValues(0, 3000, 800)
    assert step == 300 and axis.tickStrings(values, 1, step)[:3] == ["0:00", "5:00", "10:00"]


def test_cue_list_groups_scenes_and_keeps_state_in_view(qtbot, troupe, make_window, fake_source,
                                                        tmp_path: Path) -> None:  # fmt: skip
    w = _window(make_window, troupe, fake_source, qtbot)
    groups = w.cues.groups
    assert len(groups.heading_rows()) == big_show.N_SCENES
    assert groups.data(groups.index(0, 0)) == "INT. STUDIO 1 - NIGHT"
    header = w.cues.horizontalHeader()
    line_w = header.sectionSize(LINE_COLUMN)
    assert all(line_w > header.sectionSize(c) for c in (0, 2, STATE_COLUMN))
    state_right = header.sectionViewportPosition(STATE_COLUMN) + header.sectionSize(STATE_COLUMN)
    assert state_right <= w.cues.viewport().width()  # no horizontal scroll needed
    cue = w.cue_model.cues[7]
    assert cue.text in w.cues.groups.data(groups.mapFromSource(w.cue_model.index(7, LINE_COLUMN)),
                                          Qt.ItemDataRole.ToolTipRole)  # fmt: skip
    header.resizeSection(2, 201)
    w.close()
    settings = QSettings(str(tmp_path / "troupe.ini"), QSettings.Format.IniFormat)
    again = make_window(troupe, source=fake_source)
    assert settings.value("cues/header") is not None
    assert again.cues.horizontalHeader().sectionSize(2) == 201  # widths come back


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)])
def test_the_window_fits_a_laptop_screen(qtbot, troupe, make_window, fake_source, size) -> None:  # type: ignore[no-untyped-def]
    """Screenshots at both sizes in tests/artifacts; on a 1366x768 screen the cue list still
    shows a dozen lines, and the latency plots have room for their axes."""
    w = _window(make_window, troupe, fake_source, qtbot, big_show.snapshot(1, 600.0))
    w.resize(*size)
    qtbot.wait(100)
    table = w.cues
    view = table.viewport().rect()
    rows = sum(
        table.visualRect(table.model().index(r, 0)).intersects(view) for r in range(table.model().rowCount())
    )
    assert rows >= 12, rows
    w.docks[1].raise_()  # the latency monitor's tab
    qtbot.wait(100)
    assert min(w.monitor.curves.height(), w.monitor.late.height()) >= 100
    artifacts = Path(__file__).resolve().parents[1] / "artifacts"
    artifacts.mkdir(exist_ok=True)
    w.docks[0].raise_()
    qtbot.wait(50)
    assert w.grab().toImage().save(str(artifacts / f"main_window_{size[0]}x{size[1]}.png"))
