"""The import report in the window: a file with something to check (a guessed encoding,
ASS styles, skipped or guessed lines) shows its report before anything is voiced; the
director's choices (encoding, dialogue styles) are what the show is read with."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from app.import_dialog import AUTOMATIC, ImportDialog
from engine.control import Troupe

ROOT = Path(__file__).resolve().parents[2]
SUBS = ROOT / "tests" / "data" / "subtitles"
ARTIFACTS = ROOT / "tests" / "artifacts"


def test_a_clean_script_opens_without_a_report(qtbot, troupe: Troupe, make_window, testdata: Path) -> None:
    w = make_window(troupe)
    assert w.files.open_script(testdata / "brick_and_steel.fountain")
    assert w.files.import_dialog is None
    qtbot.waitUntil(lambda: w.pending.idle and troupe.engine.script is not None)


def test_karaoke_styles_are_chosen_in_the_report(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    w.resize(1366, 768)
    w.show()
    path = SUBS / "pyonfx_dangos_ed_karaoke.ass"
    assert w.files.open_script(path)
    dialog = w.files.import_dialog
    assert isinstance(dialog, ImportDialog) and dialog.isVisible()
    assert troupe.engine.script is None  # nothing voiced before the director says so
    styles = [dialog.styles.item(k) for k in range(dialog.styles.count())]
    assert [s.text().split("  ")[0] for s in styles] == ["ED Romaji", "ED English"]
    assert "karaoke (9 of 9 lines)" in styles[0].text()
    # no style is dialogue: nothing can be voiced until the director chooses
    assert not dialog.go.isEnabled() and "no dialogue style found" in dialog.text.toPlainText()
    dialog.styles.item(1).setCheckState(Qt.CheckState.Checked)  # ED English: the translation
    assert dialog.reread()
    assert "9 lines, 1 roles" in dialog.text.toPlainText() and "9 karaoke" in dialog.text.toPlainText()
    ARTIFACTS.mkdir(exist_ok=True)
    dialog.grab().save(str(ARTIFACTS / "import_report.png"))
    dialog.accept()
    qtbot.waitUntil(lambda: w.pending.idle and troupe.engine.script is not None)
    assert troupe.engine.script is not None and len(troupe.engine.script.cues) == 9


def test_a_guessed_encoding_can_be_changed(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    assert w.files.open_script(SUBS / "pysrt_windows-1252.srt")
    dialog = w.files.import_dialog
    assert isinstance(dialog, ImportDialog)
    assert dialog.encoding.currentText() == AUTOMATIC  # a guess is not a choice (nor saved as one)
    assert (
        "cp1252 (guessed, confidence" in dialog.text.toPlainText()
        and "ÉVÉNEMENTS" in dialog.text.toPlainText()
    )
    dialog.encoding.setCurrentText("utf-8")
    assert not dialog.reread() and "not valid utf-8" in dialog.error.text() and not dialog.go.isEnabled()
    dialog.encoding.setCurrentText("klingon")
    assert not dialog.reread() and "unknown encoding" in dialog.error.text()
    dialog.encoding.setCurrentText("latin-1")
    assert dialog.reread() and dialog.go.isEnabled()
    dialog.accept()
    qtbot.waitUntil(lambda: w.pending.idle and troupe.engine.script is not None)
    assert troupe.engine.script is not None and troupe.engine.script.facts.encoding == "latin-1"
    assert troupe.engine.script.facts.how == "chosen"


def test_cancel_voices_nothing(qtbot, troupe: Troupe, make_window) -> None:
    w = make_window(troupe)
    assert w.files.open_script(SUBS / "sdh_es.srt")
    dialog = w.files.import_dialog
    assert isinstance(dialog, ImportDialog) and "guesses (3)" in dialog.text.toPlainText()
    dialog.reject()
    qtbot.wait(200)
    assert troupe.engine.script is None
