"""Editing safety: undo/redo of line edits, cast changes and ad-lib keep/delete; the
unsaved-changes prompt on open and quit; banners cleared by success; the View menu."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.editing import DeleteAdlib, KeepAdlib, Recast
from app.main_window import DEMO
from engine.control import Troupe


def _open_demo(qtbot, w) -> None:  # type: ignore[no-untyped-def]
    assert w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: w.pending.idle and w.cue_model.rowCount() > 3)


def test_line_edit_undo_and_redo(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    _open_demo(qtbot, w)
    original = w.cue_model.cues[2].text
    assert w.undo.isClean()
    assert w.cue_model.setData(w.cue_model.index(2, 3), "A completely new line.")
    qtbot.waitUntil(lambda: troupe.engine.show.tracks[2].cue.text == "A completely new line.")  # type: ignore[union-attr]
    assert not w.undo.isClean() and w.menus.undo.isEnabled()
    w.menus.undo.trigger()
    qtbot.waitUntil(lambda: troupe.engine.show.tracks[2].cue.text == original)  # type: ignore[union-attr]
    assert w.undo.isClean()
    w.menus.redo.trigger()
    qtbot.waitUntil(lambda: troupe.engine.show.tracks[2].cue.text == "A completely new line.")  # type: ignore[union-attr]


def test_cast_change_undo_merges_a_slider_drag(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    _open_demo(qtbot, w)
    qtbot.waitUntil(lambda: "OWEN" in w.cast.shown)
    before = troupe.engine.cast["OWEN"].weight
    slider = w.cast.editor("OWEN", "weight")
    for value in (20, 40, 60):  # a drag: three changes, one undo step
        slider.setValue(value)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: troupe.engine.cast["OWEN"].weight == 6.0)
    assert w.undo.count() == 1
    pitch = w.cast.editor("OWEN", "pitch")
    pitch.setValue(pitch.value() + 10)  # type: ignore[attr-defined]
    assert w.undo.count() == 2
    w.undo.undo()
    w.undo.undo()
    qtbot.waitUntil(lambda: troupe.engine.cast["OWEN"].weight == before)
    qtbot.waitUntil(lambda: w.cast.shown["OWEN"].weight == before)  # the panel shows it too


def test_voice_change_undo_restores_backend_and_voice() -> None:
    calls: list[tuple[str, dict[str, object]]] = []

    class FakeEngine:
        def set_voice(self, role: str, **changes: object) -> None:
            calls.append((role, changes))

    cmd = Recast(FakeEngine(), "IRIS", {"backend": "espeak", "voice_id": "en-us"}, {"voice_id": "kokoro:af"})  # type: ignore[arg-type]
    cmd.redo()
    cmd.undo()
    assert calls == [
        ("IRIS", {"voice_id": "kokoro:af"}),
        ("IRIS", {"backend": "espeak", "voice_id": "en-us"}),
    ]


def test_adlib_keep_and_delete_are_undone_through_the_engine() -> None:
    calls: list[tuple[str, int, bool]] = []

    class FakeEngine:
        def keep_adlib(self, index: int, keep: bool = True) -> None:
            calls.append(("keep", index, keep))

        def delete_adlib(self, index: int, delete: bool = True) -> None:
            calls.append(("delete", index, delete))

    for cmd in (KeepAdlib(FakeEngine(), 14), DeleteAdlib(FakeEngine(), 14)):  # type: ignore[arg-type]
        cmd.redo()
        cmd.undo()
    assert calls == [("keep", 14, True), ("keep", 14, False), ("delete", 14, True), ("delete", 14, False)]


def _dirty(qtbot, w, troupe: Troupe) -> None:  # type: ignore[no-untyped-def]
    _open_demo(qtbot, w)
    w.cue_model.setData(w.cue_model.index(1, 3), "Changed.")
    assert not w.undo.isClean()


def test_open_with_unsaved_changes_asks(qtbot, troupe: Troupe, make_window, monkeypatch, testdata: Path,
                                        no_modal_prompts: list[str]) -> None:  # fmt: skip
    w = make_window(troupe)
    _dirty(qtbot, w, troupe)
    before = troupe.engine.script
    monkeypatch.setattr(QMessageBox, "question", lambda *_a: QMessageBox.StandardButton.Cancel)
    assert not w.files.open_script(testdata / "brick_and_steel.fountain")  # cancelled: the show stays
    assert troupe.engine.script is before and not w.undo.isClean()
    asked: list[str] = []

    def discard(_p: object, title: str, *_a: object) -> QMessageBox.StandardButton:
        asked.append(title)
        return QMessageBox.StandardButton.Discard

    monkeypatch.setattr(QMessageBox, "question", discard)
    assert w.files.open_script(testdata / "brick_and_steel.fountain")
    qtbot.waitUntil(lambda: troupe.engine.script is not before and w.pending.idle)
    assert asked == ["Unsaved changes"] and w.undo.isClean()


def test_save_answer_saves_then_opens(qtbot, troupe: Troupe, make_window, monkeypatch, testdata: Path,
                                      tmp_path: Path) -> None:  # fmt: skip
    w = make_window(troupe)
    _dirty(qtbot, w, troupe)
    target = tmp_path / "show.troupe.json"
    monkeypatch.setattr(QMessageBox, "question", lambda *_a: QMessageBox.StandardButton.Save)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a: (str(target), ""))
    assert not w.files.open_script(testdata / "brick_and_steel.fountain")  # not yet: saving first
    qtbot.waitUntil(
        lambda: (
            troupe.engine.script is not None
            and Path(troupe.engine.script.path).name == "brick_and_steel.fountain"
        )
    )
    assert target.exists() and "Changed." in target.read_text()


def test_quit_with_unsaved_changes_can_be_cancelled(qtbot, troupe: Troupe, make_window, monkeypatch) -> None:
    w = make_window(troupe)
    w.show()
    _dirty(qtbot, w, troupe)
    monkeypatch.setattr(QMessageBox, "question", lambda *_a: QMessageBox.StandardButton.Cancel)
    w.close()
    assert w.isVisible()  # still open, edits kept
    monkeypatch.setattr(QMessageBox, "question", lambda *_a: QMessageBox.StandardButton.Discard)
    w.close()
    assert not w.isVisible()


def test_success_clears_an_old_error_and_has_its_own_style(qtbot, troupe: Troupe, make_window,
                                                           testdata: Path) -> None:  # fmt: skip
    w = make_window(troupe)
    w.files.open_script(testdata / "bad_encoding.fountain")
    assert w.banner.isVisibleTo(w) and w.banner.kind == "error"
    _open_demo(qtbot, w)
    assert not w.banner.isVisibleTo(w)  # the later open succeeded: the old error goes
    w.banner.show_message("recovered", kind="success")
    assert "#14532d" in w.banner.styleSheet()


def test_view_menu_brings_back_every_dock(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    view = next(m.menu() for m in w.menuBar().actions() if m.text() == "&View")
    texts = [a.text() for a in view.actions()]
    for dock in w.docks:
        assert dock.windowTitle() in texts
        dock.close()
        dock.toggleViewAction().trigger()
        assert dock.isVisibleTo(w)
    assert "&Follow playhead" in texts and "Transport" in texts
    edit = next(m.menu() for m in w.menuBar().actions() if m.text() == "&Edit")
    assert [a.text() for a in edit.actions()][:2] == ["&Undo", "&Redo"]


def test_a_banner_floats_over_the_window_and_counts_repeats(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    w.show()
    qtbot.waitUntil(lambda: w.cues.isVisible())
    before = w.cues.mapTo(w, w.cues.rect().topLeft())
    for k in range(300):  # what a flood of refusals used to be: 300 banners
        w.banner.show_message(f"ad-lib refused: synthesis queue full ({k} waiting)")
    qtbot.wait(50)
    assert w.banner.isVisible() and w.cues.mapTo(w, w.cues.rect().topLeft()) == before  # nothing moved
    assert w.banner.repeats == 300 and w.banner.label.text().endswith("(×300)")
    assert w.banner.text == "ad-lib refused: synthesis queue full (299 waiting)" and w.banner.kind == "error"
    w.banner.show_message("audio output lost: the device stopped; Troupe reopens it")
    assert w.banner.kind == "notice" and w.banner.repeats == 1
    w.banner.show_message("audio output is back")
    assert w.banner.kind == "success"
    w.banner.hide()
    assert w.cues.mapTo(w, w.cues.rect().topLeft()) == before
