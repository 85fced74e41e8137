"""The director window on a real engine, offscreen (pytest-qt)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QObject, QPoint, QPointF, Qt, QUrl, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent

from app.main_window import DEMO, MainWindow
from engine.audio_io.callback import RenderState, render
from engine.control import EngineSettings, Troupe
from engine.core.errors import EngineBusy
from engine.core.limits import VOICE_LIMITS


def _drop(window: MainWindow, *paths: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    pos = QPointF(window.width() / 2, window.height() / 2)
    enter = QDragEnterEvent(pos.toPoint(), Qt.DropAction.CopyAction, mime,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)  # fmt: skip
    window.dragEnterEvent(enter)
    assert enter.isAccepted()
    drop = QDropEvent(pos, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)  # fmt: skip
    window.dropEvent(drop)


def test_dropped_script_shows_its_cues_and_roles(qtbot, troupe: Troupe, make_window, testdata: Path) -> None:
    w = make_window(troupe)
    _drop(w, testdata / "brick_and_steel.fountain")
    qtbot.waitUntil(lambda: w.pending.idle)
    script = troupe.engine.script
    assert script is not None and Path(script.path).name == "brick_and_steel.fountain"
    qtbot.waitUntil(lambda: w.cue_model.rowCount() == len(script.cues))
    assert w.cast.roles == tuple(script.roles)
    assert [w.adlib_role.itemText(k) for k in range(w.adlib_role.count())] == list(script.roles)
    assert w.cue_model.data(w.cue_model.index(0, 3)) == script.cues[0].text
    assert w.session.recent()[0].name == "brick_and_steel.fountain"


def test_bad_file_shows_banner_and_keeps_the_show(qtbot, troupe: Troupe, make_window, testdata: Path) -> None:
    w = make_window(troupe)
    assert w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: w.pending.idle)
    before = troupe.engine.script
    _drop(w, testdata / "bad_encoding.fountain")
    assert w.banner.isVisibleTo(w) and "bad_encoding.fountain" in w.banner.text
    assert troupe.engine.script is before
    qtbot.waitUntil(lambda: w.cue_model.rowCount() == len(before.cues))  # type: ignore[union-attr]


def test_edit_requeues_only_that_line(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: w.pending.idle)
    show = troupe.engine.show
    assert show is not None
    qtbot.waitUntil(lambda: all(c.state == "ready" for c in w.cue_model.cues[:4]), timeout=20_000)
    generations = [t.generation for t in show.tracks]
    assert w.cue_model.setData(w.cue_model.index(2, 3), "A completely new line.")
    qtbot.waitUntil(lambda: show.tracks[2].cue.text == "A completely new line.")
    after = [t.generation for t in show.tracks]
    assert after[2] == generations[2] + 1
    assert after[:2] + after[3:] == generations[:2] + generations[3:]
    qtbot.waitUntil(lambda: w.cue_model.cues[2].text == "A completely new line.")
    qtbot.waitUntil(lambda: w.cue_model.cues[2].state == "ready", timeout=20_000)


def test_empty_adlib_and_bad_setting_reach_the_banner(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: w.adlib_role.count() > 0)
    w.adlib_text.setText("   ")
    w.speak_adlib()
    assert "needs some text" in w.banner.text
    w.banner.hide()
    troupe.casting.set_voice("IRIS", rate_wpm=5000)
    qtbot.waitUntil(lambda: w.banner.isVisibleTo(w))
    assert "rate_wpm" in w.banner.text and "IRIS" in w.banner.text


def _rms(troupe: Troupe, seconds: float) -> float:
    """Act as the audio callback for `seconds` of audio; the RMS of what came out."""
    out = np.zeros((256, 2), np.float32)
    total, n = 0.0, 0
    state = RenderState(playing=True)
    for _ in range(int(seconds * 48_000 / 256)):
        while troupe.engine.ring.fill_frames < 256:
            troupe.engine._wake.set()
            troupe.engine._stop.wait(0.001)
        render(out, troupe.engine.ring, state)
        total += float(np.square(out).sum())
        n += out.size
    return (total / n) ** 0.5


def test_mute_and_solo_change_the_mix(qtbot, troupe: Troupe, make_window, tmp_path: Path) -> None:
    script = tmp_path / "duo.txt"
    lines = [f"ANNA: This is line number {k} of the long speech." for k in range(30)]
    script.write_text("\n".join([*lines, "BORIS: And I speak only at the very end."]) + "\n")
    w = make_window(troupe)
    assert w.files.open_script(script)
    qtbot.waitUntil(lambda: w.cast.roles == ("ANNA", "BORIS"))
    troupe.transport.play()
    qtbot.waitUntil(lambda: troupe.engine.ring.controls.playing)  # the callback plays only once the show does
    assert _rms(troupe, 2.0) > 1e-3
    w.cast.editor("ANNA", "mute").setChecked(True)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: troupe.engine.cast["ANNA"].mute)
    _rms(troupe, 0.5)  # what was mixed before the change
    assert _rms(troupe, 1.5) == 0.0
    w.cast.editor("ANNA", "mute").setChecked(False)  # type: ignore[attr-defined]
    w.cast.editor("BORIS", "solo").setChecked(True)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: troupe.engine.cast["BORIS"].solo and not troupe.engine.cast["ANNA"].mute)
    _rms(troupe, 0.5)
    assert _rms(troupe, 1.5) == 0.0  # only BORIS may sound, and he is silent here
    w.cast.editor("BORIS", "solo").setChecked(False)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: not troupe.engine.cast["BORIS"].solo)
    _rms(troupe, 0.5)
    assert _rms(troupe, 1.5) > 1e-3


def test_weight_slider_reaches_the_scheduler(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: "OWEN" in w.cast.roles)
    w.cast.editor("OWEN", "weight").setValue(125)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: troupe.engine.scheduler.weights.get("OWEN") == 12.5)
    qtbot.waitUntil(lambda: w.cast.shown["OWEN"].weight == 12.5)
    slider = w.cast.editor("IRIS", "weight")
    slider.setValue(slider.maximum())  # type: ignore[attr-defined]
    top = VOICE_LIMITS["weight"][1]  # the slider spans the engine's whole range
    qtbot.waitUntil(lambda: troupe.engine.scheduler.weights.get("IRIS") == top)


def test_render_job_writes_the_mix(
    qtbot, troupe: Troupe, make_window, tmp_path: Path, testdata: Path
) -> None:
    w = make_window(troupe)
    w.files.open_script(testdata / "radio_play.txt")
    out = tmp_path / "show.wav"
    job = w.start_render(out, tmp_path / "stems")
    with qtbot.waitSignal(job.succeeded, timeout=60_000) as got:
        pass
    assert got.args[0].path == out and out.stat().st_size > 1000
    assert any((tmp_path / "stems").iterdir())


def test_render_fault_reaches_the_banner(qtbot, troupe: Troupe, make_window, tmp_path: Path) -> None:
    w = make_window(troupe)
    w.files.open_script(DEMO)
    (tmp_path / "not_a_folder").write_text("")
    w.start_render(tmp_path / "not_a_folder" / "show.wav", None)
    qtbot.waitUntil(lambda: "it is a file, not a folder" in w.banner.text, timeout=60_000)
    assert w.banner.isVisibleTo(w) and "not_a_folder" in w.banner.text


def test_render_with_stand_ins_tells_the_director(qtbot, troupe: Troupe, make_window, tmp_path: Path) -> None:
    from engine.render import LineTiming, RenderResult

    w = make_window(troupe)
    lines = [LineTiming(0, "IRIS", "Hold the line.", 0.0, 1.0),
             LineTiming(3, "OWEN", "Go.", 1.5, 0.5, fallback="kokoro: no kokoro voices here")]  # fmt: skip
    w.render_flow.done(RenderResult(tmp_path / "show.wav", 2.0, lines))
    assert w.banner.isVisibleTo(w) and "stood in for cue(s) 4" in w.banner.text
    assert "no kokoro voices here" in w.banner.text


def test_autosave_and_recovery_after_a_crash(qtbot, troupe: Troupe, make_window, tmp_path: Path) -> None:
    data = tmp_path / "data"
    w = make_window(troupe, data_dir=data)
    w.files.open_script(DEMO)
    troupe.casting.set_voice("IRIS", pitch=77)
    qtbot.waitUntil(lambda: troupe.engine.cast["IRIS"].pitch == 77)
    saved = w.session.autosave()
    assert saved is not None
    saved.result(10)
    assert troupe.engine.project_path is None  # an autosave is not the director's project file
    w.bridge.stop()  # the window "crashes": no closeEvent, the lock file stays
    assert (data / "running.lock").exists()
    second = Troupe(EngineSettings(neural=False))
    try:
        w2 = make_window(second, data_dir=data)
        assert w2.recovery.isVisibleTo(w2) and w2.recovery.current is not None
        w2.banner.show_message("a later message")  # the offer stays pinned whatever comes after
        assert w2.recovery.isVisibleTo(w2)
        kept = w2.recovery.current
        w2.recovery.recover.click()
        qtbot.waitUntil(lambda: second.engine.script is not None and second.engine.cast["IRIS"].pitch == 77)
        qtbot.waitUntil(lambda: not kept.exists())  # recovered: the file goes
        qtbot.waitUntil(
            lambda: second.engine.project_path is None
        )  # Save asks where: never the recovery file
        assert not w2.recovery.isVisibleTo(w2)
        assert not w2.undo.isClean()  # the recovered edits are saved nowhere yet: Quit asks first
        w2.close()
        assert not (data / "running.lock").exists()
    finally:
        second.close()


def test_every_crash_keeps_its_own_recovery_file_until_answered(
    troupe: Troupe, make_window, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    project = tmp_path / "mine.troupe.json"
    for _ in range(2):  # two crashes in a row, the offer not answered in between
        (data / "recovered").mkdir(parents=True, exist_ok=True)
        (data / "running.lock").write_text("1")
        (data / "autosave.troupe.json").write_text('{"script": "x.fountain", "cast": {}}')
        (data / "autosave.origin").write_text(str(project))
        w = make_window(troupe, data_dir=data)
        w.bridge.stop()  # and it crashes again
    files = w.session.recoveries()
    assert len(files) == 2 and all(w.session.origin(f) == project for f in files)
    w.recovery.discard.click()
    assert w.recovery.current == files[1] and not files[0].exists()


def test_qt_signals_keep_reference_counts() -> None:
    """PySide6 6.12.0 dropped a reference to True on every emission, aborting the app."""

    class Emitter(QObject):
        fired = Signal(object)

    e = Emitter()
    e.fired.connect(lambda _v: None)
    before = sys.getrefcount(True)
    for _ in range(5000):
        e.fired.emit(1)
    assert sys.getrefcount(True) > before - 100


def test_timeline_click_selects_the_cue(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: len(w.timeline.cues) > 3)
    cue = w.timeline.cues[3]
    row = w.timeline.roles.index(cue.role)
    assert w.timeline.cue_at(cue.start_s + cue.duration_s / 2, row) == cue.index
    assert w.timeline.cue_at(cue.start_s + cue.duration_s / 2, row + 0.45) is None
    w.timeline.cue_clicked.emit(cue.index)
    assert w.selected_cue() == cue.index and w.timeline.selected == cue.index
    assert QPoint  # keeps the import used where pyqtgraph maps scene points


def test_no_slot_waits_for_a_busy_engine(qtbot, troupe: Troupe, make_window, tmp_path: Path) -> None:
    """With the engine thread stuck, opening a script, saving and Play return at once with a
    busy indicator; they complete when it is free; a command that must wait says so."""
    w = make_window(troupe)
    gate = threading.Event()

    def stuck() -> None:
        gate.wait(30)

    troupe.engine.command(stuck)  # the troupe thread is busy
    assert w.files.open_script(DEMO)
    assert w.busy.isVisibleTo(w) and "opening the_last_broadcast.fountain" in w.busy.text()
    w.files._save(tmp_path / "p.troupe.json", None)
    with pytest.raises(EngineBusy, match=r"did not answer within 0\.2 s"):
        troupe.engine.call(lambda: None, timeout_s=0.2)  # what the CLI would get: a message
    gate.set()
    qtbot.waitUntil(lambda: w.pending.idle)
    assert troupe.engine.script is not None and not w.busy.isVisibleTo(w)
    assert (tmp_path / "p.troupe.json").exists()
