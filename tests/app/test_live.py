"""The window on the JACK dummy device: GO, the --smoke run, and the review screenshot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.main_window import DEMO
from engine.audio_io.output import OutputSettings
from engine.control import EngineSettings, Troupe

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
pytestmark = pytest.mark.jack


@pytest.fixture
def live_troupe(jack_device: int):  # type: ignore[no-untyped-def]
    e = Troupe(EngineSettings(output=OutputSettings(device=jack_device)))
    yield e
    e.close()


def test_go_releases_the_next_cue(qtbot, live_troupe: Troupe, make_window) -> None:
    w = make_window(live_troupe)
    w.files.open_script(DEMO)
    w.menus.stack.trigger()
    qtbot.waitUntil(lambda: live_troupe.engine.show is not None and live_troupe.engine.show.cue_stack)
    show = live_troupe.engine.show
    assert show is not None and show.go_index == -1
    w.menus.go.trigger()
    qtbot.waitUntil(lambda: show.go_index == 0 and live_troupe.output.is_open)
    qtbot.waitUntil(
        lambda: show.tracks[0].start_s is not None, timeout=30_000
    )  # generous: a first line on a busy 2-core machine
    assert show.tracks[1].start_s is None  # held until the next GO
    qtbot.waitUntil(lambda: show.next_place == 1)
    w.menus.go.trigger()
    qtbot.waitUntil(lambda: show.go_index == 1)
    qtbot.waitUntil(
        lambda: show.tracks[1].start_s is not None, timeout=30_000
    )  # generous: a first line on a busy 2-core machine


def test_smoke_run_exits_cleanly_every_time(jack_device: int) -> None:
    """Five runs in a row, each exit 0 (benchmarks/bench_smoke.py runs twenty)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    for run in range(5):
        done = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), "--smoke", "--device", str(jack_device)],
            capture_output=True, text=True, timeout=90, env=env, cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, f"run {run + 1}: exit {done.returncode}\n{done.stderr[-2000:]}"
        assert "smoke:" in done.stdout and "13 cues" in done.stdout


def test_screenshot_of_a_playing_show(qtbot, live_troupe: Troupe, make_window) -> None:
    """Saves tests/artifacts/main_window.png for review: cues, timeline, heatmap, monitor
    (with the PortAudio xrun count beside the ring underruns)."""
    w = make_window(live_troupe)
    w.resize(1600, 1000)
    w.show()
    w.files.open_script(DEMO)
    if (
        "kokoro" in live_troupe.engine.scheduler.backends
    ):  # neural voices keep the queue busy: a fuller heatmap
        live_troupe.casting.set_voice("IRIS", voice_id="kokoro:jf_alpha")
        live_troupe.casting.set_voice("CALLER", voice_id="kokoro:0.5*jf_nezumi+0.5*jm_kumo")
    w.play()  # the natural cast: the show prepares (voices its opening) before the clock starts
    qtbot.waitUntil(
        lambda: live_troupe.monitor.snapshot().status not in ("preparing", "stopped"), timeout=60_000
    )
    qtbot.wait(2500)
    w.adlib_role.setCurrentText("OWEN")
    w.adlib_text.setText("Iris, the tower lights just went out!")
    w.speak_adlib()
    qtbot.wait(2500)
    w.select_cue(3)
    qtbot.waitUntil(lambda: live_troupe.monitor.snapshot().master.hold_db > -60.0, timeout=20_000)  # heard
    assert any(lv.hold_db > -60.0 for lv in live_troupe.monitor.snapshot().levels.values())
    snap = live_troupe.monitor.snapshot()
    assert snap.playhead_s > 1.0 and snap.priorities.shape[0] == len(snap.roles)
    assert float(snap.priorities.max()) > 0.0  # the heatmap has something to show
    w.bridge.poll()
    drawn = w.bridge.last  # the snapshot the window drew (the engine publishes newer ones meanwhile)
    assert drawn is not None and w.monitor.values["xruns"].text() == str(drawn.figures.xruns)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "main_window.png"
    image = w.grab().toImage()
    assert image.save(str(path))
    assert path.stat().st_size > 20_000
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 37)
               for y in range(0, image.height(), 37)}  # fmt: skip
    assert len(colours) > 20  # a drawn window, not a blank one


def test_screenshot_of_fifty_roles(qtbot, live_troupe: Troupe, make_window, tmp_path: Path) -> None:
    """Saves tests/artifacts/main_window_50_roles.png for review: a generated 50-role,
    800-line script playing (rows scrolled and labelled, meters, waveforms, clock)."""
    from tests.app import big_show

    w = make_window(live_troupe)
    w.resize(1600, 1000)
    w.show()
    w.files.open_script(big_show.write_script(tmp_path))
    qtbot.waitUntil(lambda: len(w.cue_model.cues) == big_show.N_LINES, timeout=20_000)
    w.play()
    qtbot.waitUntil(lambda: live_troupe.monitor.snapshot().playhead_s > 6.0, timeout=30_000)
    qtbot.waitUntil(
        lambda: len(live_troupe.monitor.snapshot().envelopes) >= 3, timeout=30_000
    )  # waveforms to draw
    w.bridge.poll()
    snap = w.bridge.last
    assert snap is not None and len(snap.roles) == big_show.N_ROLES
    assert w.timeline.view.visible_rows()[1] <= 16  # readable rows, not 50 slivers
    assert w.clock.go.isEnabled() and w.clock.elapsed.text() != "0:00.0"
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "main_window_50_roles.png"
    assert w.grab().toImage().save(str(path))
    assert path.stat().st_size > 20_000
