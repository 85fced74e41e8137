"""The show clock and GO: elapsed/remaining, now and standby, a GO button naming its cue."""

from __future__ import annotations

from dataclasses import replace

from app.main_window import DEMO
from app.meters import fraction
from engine.control import Level, Troupe
from tests.app import big_show


def _draw(w, fake_source, snap) -> None:  # type: ignore[no-untyped-def]
    fake_source.current = snap
    w.bridge.poll()


def test_stopped_show_offers_the_first_cue(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    snap = replace(big_show.snapshot(1, 0.0, playing=False), go_cue=0)
    _draw(w, fake_source, snap)
    first = snap.cues[0]
    assert w.clock.elapsed.text() == "0:00.0" and w.clock.remaining.text() == "-53:20"
    assert w.clock.go.isEnabled() and w.clock.go.text() == f"GO  ▶ 1 {first.role}"
    assert w.menus.go.text() == w.clock.go.text()
    assert w.clock.next.text().startswith(f"1  {first.role}: ")


def test_cue_stack_shows_the_standby_cue_and_the_clock_holds(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    base = big_show.snapshot(1, 3725.0)
    cues = tuple(replace(c, state="standby") if c.index == 5 else c for c in base.cues)
    snap = replace(base, cues=cues, cue_stack=True, status="waiting for GO", go_cue=5, end_s=4000.0)
    _draw(w, fake_source, snap)
    assert w.clock.elapsed.text() == "1:02:05.0" and w.clock.remaining.text() == "-4:35"
    assert w.clock.status.text() == "waiting for GO"
    assert w.clock.next.text().startswith("6  ") and w.clock.go.text().startswith("GO  ▶ 6 ")


def test_playing_show_names_now_and_next(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    snap = replace(big_show.snapshot(1, 10 * big_show.LINE_S + 1.0), go_cue=11)
    _draw(w, fake_source, snap)
    assert w.clock.now.text().startswith("11  ") and w.clock.next.text().startswith("12  ")
    _draw(w, fake_source, replace(snap, version=2, go_cue=-1))
    assert not w.clock.go.isEnabled() and w.clock.go.text() == "GO"


def test_engine_publishes_the_cue_go_starts(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: w.cue_model.rowCount() > 0)
    assert troupe.monitor.snapshot().go_cue == 0  # stopped: GO starts the top
    first = troupe.monitor.snapshot().cues[0]
    qtbot.waitUntil(lambda: w.clock.go.text() == f"GO  ▶ 1 {first.role}")


def test_meters_show_the_snapshot_levels(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    base = big_show.snapshot(1)
    loud = Level(peak_db=-0.05, rms_db=-3.0, hold_db=0.0, clip=True)
    levels = {r: Level() for r in base.roles} | {base.roles[3]: Level(-9.0, -12.0, -6.0)}
    _draw(w, fake_source, replace(base, levels=levels, master=loud))
    bar = w.cast.meters[base.roles[3]]
    assert bar.level == Level(-9.0, -12.0, -6.0) and "peak -9.0 dBFS" in bar.toolTip()
    assert w.clock.master.level.clip and "CLIP" in w.clock.master.toolTip()
    image = w.clock.master.grab().toImage()  # the clip light is drawn red
    assert image.pixelColor(image.width() - 3, image.height() // 2).name() == "#ef4444"
    assert fraction(-60.0) == 0.0 and fraction(-30.0) == 0.5 and fraction(3.0) == 1.0
