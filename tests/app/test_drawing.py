"""Timeline, heatmap and monitor draw what a (fake) engine's snapshot stream says."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from engine.control import HISTORY_COLUMNS, CueView, EngineSnapshot, Figures


def _cues(states: list[str]) -> tuple[CueView, ...]:
    roles = ["HERO", "FOIL", "NARRATOR"]
    late = [40.0 if s == "played" else 0.0 for s in states]
    return tuple(
        CueView(k, roles[k % 3], f"line {k}", 0, s, 1.5 * k, 1.2, late[k], False, "", ())
        for k, s in enumerate(states)
    )


def _snapshot(version: int, states: list[str], priorities: np.ndarray, playhead_s: float) -> EngineSnapshot:
    return EngineSnapshot(
        version=version, title="Fake", playing=True, playhead_s=playhead_s, end_s=20.0,
        cues=_cues(states), roles=("HERO", "FOIL", "NARRATOR"), scenes=("INT. STUDIO",),
        priorities=priorities, figures=Figures(queue_depth=7, underruns=2, xruns=3, ring_fill_ms=180.0),
        latency_points=((0.0, 0.0, False), (1.5, 40.0, True)),
    )  # fmt: skip


def test_timeline_and_heatmap_follow_the_snapshots(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()  # the test drives the polls
    pr = np.zeros((3, HISTORY_COLUMNS), np.float32)
    pr[0, -10:] = 0.9
    pr[2, :] = 0.3
    fake_source.current = _snapshot(1, ["ready", "queued", "pending", "pending"], pr, 0.5)
    w.bridge.poll()
    np.testing.assert_array_equal(w.heatmap.image.image, pr)
    assert tuple(w.heatmap.image.getLevels()) == (0.0, 1.0)  # urgency is 0..1: a fixed scale
    assert tuple(w.heatmap.colorbar.levels()) == (0.0, 1.0)
    axis = w.timeline.role_axis  # the heatmap's rows are the timeline's (one shared axis)
    assert [axis.label_of(k) for k in range(3)] == ["HERO", "FOIL", "NARRATOR"]
    assert w.heatmap.plot.getViewBox().viewRange()[1] == w.timeline.plot.getViewBox().viewRange()[1]
    tl = w.timeline
    np.testing.assert_allclose(tl._starts, [0.0, 1.5, 3.0, 4.5])
    np.testing.assert_array_equal(tl._rows, [0, 1, 2, 0])
    assert tl.drawn == {0: ("ready", "none"), 1: ("queued", "none"), 2: ("pending", "none"),
                        3: ("pending", "none")}  # fmt: skip
    pending = tl.layers[("pending", "none", False)].opts
    np.testing.assert_allclose(pending["x0"], [3.0, 4.5])
    np.testing.assert_allclose(pending["y"], [2.0, 0.0])
    assert w.timeline.playhead.value() == 0.5
    assert w.cue_model.rowCount() == 4 and w.monitor.values["queue_depth"].text() == "7"
    assert "#ef4444" in w.monitor.values["underruns"].styleSheet()  # underruns are an alarm
    xruns = w.monitor.values["xruns"]  # the device's own underflows: an alarm too
    assert xruns.text() == "3" and "#ef4444" in xruns.styleSheet()
    y0, y1 = w.monitor.late.getViewBox().viewRange()[1]
    assert y0 <= 0.0 and 50.0 <= y1 < 60.0  # ms from 0, never a +-0.4 ms scale of noise
    assert w.monitor.late.getAxis("left").labelText == "start late (ms)"
    brushes = w.monitor.late_points.data["brush"]
    assert brushes[1].color().name() == "#ef4444" and brushes[0].color().name() != "#ef4444"

    pr2 = np.roll(pr, -1, axis=1)
    pr2[1, -1] = 1.0
    fake_source.current = _snapshot(2, ["played", "ready", "queued", "pending"], pr2, 2.0)
    w.bridge.poll()
    np.testing.assert_array_equal(w.heatmap.image.image, pr2)
    assert w.heatmap.cell_text(-0.025, 1.0).startswith("FOIL at 0.0 s ago: urgency 1.00")
    assert w.timeline.playhead.value() == 2.0
    assert tl.drawn[0] == ("played", "late") and tl.drawn[1] == ("ready", "none")
    assert len(tl.layers[("ready", "none", False)].opts["x0"]) == 1  # cue 0 left the ready layer
    assert w.cue_model.data(w.cue_model.index(0, 4)).startswith("played +40")


def test_unchanged_snapshot_is_not_redrawn(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    fake_source.current = _snapshot(5, ["ready"], np.zeros((3, HISTORY_COLUMNS), np.float32), 0.0)
    seen = []
    w.bridge.snapshot_changed.connect(seen.append)
    w.bridge.poll()
    w.bridge.poll()
    assert len(seen) == 1
    fake_source.messages.put("something went wrong at line 3")
    w.bridge.poll()
    assert w.banner.text == "something went wrong at line 3"
    assert all(isinstance(item, pg.BarGraphItem) for item in w.timeline.layers.values())


def test_heatmap_maps_rows_to_roles_and_columns_to_time(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    pr = np.zeros((3, HISTORY_COLUMNS), np.float32)
    pr[2, -1] = 1.0  # NARRATOR, newest column
    fake_source.current = _snapshot(1, ["ready"], pr, 0.0)
    w.bridge.poll()
    rect = w.heatmap.image.mapRectToParent(w.heatmap.image.boundingRect())
    assert abs(rect.left() + HISTORY_COLUMNS * 0.05) < 1e-6 and abs(rect.right()) < 1e-6
    assert abs(rect.top() + 0.5) < 1e-6 and abs(rect.bottom() - 2.5) < 1e-6
    point = w.heatmap.image.mapFromParent(pg.Point(-0.025, 2.0))  # the last tick, NARRATOR's row
    assert (int(point.y()), int(point.x())) == (2, HISTORY_COLUMNS - 1)
