"""The render dialog: format, stems off by default, range, a sensible folder; a render of
a range; a cancel that says what it removed."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialog

from app.main_window import DEMO
from app.render_dialog import RenderDialog, default_folder
from engine.control import Troupe
from tests.app import big_show


def test_defaults_and_choices(qtbot, tmp_path: Path) -> None:
    cues = big_show.cues()
    script = tmp_path / "fifty.fountain"
    d = RenderDialog("Fifty Voices", str(script), [f"S{k}" for k in range(20)], cues, [5, 6, 7])
    qtbot.addWidget(d)
    assert Path(d.path.text()) == tmp_path / "Fifty Voices.wav"  # beside the script
    assert not d.stems.isChecked() and d.whole.isChecked()
    req = d.request()
    assert req.stems is None and req.cues is None
    k = d.format.findData(".flac")
    d.format.setCurrentIndex(k)
    assert d.path.text().endswith("Fifty Voices.flac")
    d.stems.setChecked(True)
    d.scene.setCurrentIndex(2)  # choosing a scene picks the scene range
    req = d.request()
    assert req.stems == tmp_path / "Fifty Voices_stems"
    assert req.cues == tuple(c.index for c in cues if c.scene == 2) and len(req.cues) == 40
    d.selection.setChecked(True)
    assert d.request().cues == (5, 6, 7)


def test_the_demo_renders_to_documents_not_the_install() -> None:
    assert not default_folder(str(DEMO)).is_relative_to(DEMO.parent.parent)


def test_window_renders_the_chosen_range(qtbot, troupe: Troupe, make_window, tmp_path: Path,
                                         monkeypatch, testdata: Path) -> None:  # fmt: skip
    w = make_window(troupe)
    w.files.open_script(testdata / "radio_play.txt")
    qtbot.waitUntil(lambda: w.cue_model.rowCount() > 2)
    w.bridge.poll()
    w.cues.select_cue(1)
    out = tmp_path / "range.wav"

    def accept(dialog: RenderDialog) -> int:
        dialog.path.setText(str(out))
        dialog.selection.setChecked(True)
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(RenderDialog, "exec", accept)
    job = w.render_dialog()
    assert job is not None and job.cues == (1,)
    with qtbot.waitSignal(job.succeeded, timeout=60_000) as got:
        pass
    assert [line.cue_index for line in got.args[0].lines] == [1] and out.stat().st_size > 1000


def test_cancel_removes_partial_files_and_says_so(qtbot, troupe: Troupe, make_window, tmp_path: Path,
                                                 testdata: Path) -> None:  # fmt: skip
    w = make_window(troupe)
    w.files.open_script(testdata / "radio_play.txt")
    qtbot.waitUntil(lambda: w.cue_model.rowCount() > 2)
    job = w.start_render(tmp_path / "show.wav", tmp_path / "stems")
    job.cancel()
    with qtbot.waitSignal(job.failed, timeout=60_000) as got:
        pass
    message = got.args[0]
    assert message.startswith("render cancelled") and ("removed" in message or "nothing was left" in message)
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob("stems/*.partial"))
    assert w.banner.text == message
