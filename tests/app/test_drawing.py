"""Timeline, heatmap and monitor draw what a (fake) engine's snapshot stream says."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from engine.service import HISTORY_COLUMNS, CueView, EngineSnapshot, Figures


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
        priorities=priorities, figures=Figures(queue_depth=7, underruns=2, ring_fill_ms=180.0),
        latency_points=((0.0, 0.0, False), (1.5, 40.0, True)),
    )  # fmt: skip


def test_timeline_and_heatmap_follow_the_snapshots(qtbot, engine, make_window, fake_source) -> None:
    w = make_window(engine, source=fake_source)
    w.bridge.stop()  # the test drives the polls
    pr = np.zeros((3, HISTORY_COLUMNS), np.float32)
    pr[0, -10:] = 12.0
    pr[2, :] = 3.0
    fake_source.current = _snapshot(1, ["ready", "queued", "pending", "pending"], pr, 0.5)
    w.bridge.poll()
    np.testing.assert_array_equal(w.heatmap.image.image, pr)
    assert w.heatmap.image.getLevels() is not None and tuple(w.heatmap.image.getLevels()) == (0.0, 30.0)
    ticks = w.heatmap.plot.getAxis("left")._tickLevels[0]
    assert [t[1] for t in ticks] == ["HERO", "FOIL", "NARRATOR"]
    tl = w.timeline
    np.testing.assert_allclose(tl._starts, [0.0, 1.5, 3.0, 4.5])
    np.testing.assert_array_equal(tl._rows, [0, 1, 2, 0])
    assert tl.drawn == {0: ("ready", "none"), 1: ("queued", "none"), 2: ("pending", "none"),
                        3: ("pending", "none")}  # fmt: skip
    pending = tl.layers[("pending", "none")].opts
    np.testing.assert_allclose(pending["x0"], [3.0, 4.5])
    np.testing.assert_allclose(pending["y"], [2.0, 0.0])
    assert w.timeline.playhead.value() == 0.5
    assert w.cue_model.rowCount() == 4 and w.monitor.values["queue_depth"].text() == "7"
    assert "#ef4444" in w.monitor.values["underruns"].styleSheet()  # underruns are an alarm
    brushes = w.monitor.late_points.data["brush"]
    assert brushes[1].color().name() == "#ef4444" and brushes[0].color().name() != "#ef4444"

    pr2 = np.roll(pr, -1, axis=1)
    pr2[1, -1] = 25.0
    fake_source.current = _snapshot(2, ["played", "ready", "queued", "pending"], pr2, 2.0)
    w.bridge.poll()
    np.testing.assert_array_equal(w.heatmap.image.image, pr2)
    assert w.timeline.playhead.value() == 2.0
    assert tl.drawn[0] == ("played", "late") and tl.drawn[1] == ("ready", "none")
    assert len(tl.layers[("ready", "none")].opts["x0"]) == 1  # cue 0 left the ready layer
    assert w.cue_model.data(w.cue_model.index(0, 4)).startswith("played +40")


def test_unchanged_snapshot_is_not_redrawn(qtbot, engine, make_window, fake_source) -> None:
    w = make_window(engine, source=fake_source)
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
