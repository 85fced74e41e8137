"""The voice browser: grouped by language and gender, search, favourites, preview, cast;
the weight slider shows its value."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

from app.main_window import DEMO
from app.voice_browser import FAVOURITES, VOICE_ID
from engine.control import Troupe


def _open(qtbot, troupe: Troupe, make_window):  # type: ignore[no-untyped-def]
    w = make_window(troupe)
    w.files.open_script(DEMO)
    qtbot.waitUntil(lambda: "IRIS" in w.cast.shown)
    return w


def _groups(browser) -> list[str]:  # type: ignore[no-untyped-def]
    return [browser.tree.topLevelItem(k).text(0) for k in range(browser.tree.topLevelItemCount())]


def test_voices_are_grouped_by_language_and_gender(qtbot, troupe: Troupe, make_window) -> None:
    w = _open(qtbot, troupe, make_window)
    b = w.browse_voices("IRIS")
    groups = _groups(b)
    assert any(g.startswith("English (America)") for g in groups) and len(groups) > 50
    k = next(k for k, g in enumerate(groups) if g.startswith("English (America)"))
    america = b.tree.topLevelItem(k)
    genders = {america.child(k).text(0) for k in range(america.childCount())}
    assert {"female", "male"} <= genders
    assert b.selected_voice() == w.cast.shown["IRIS"].voice_id  # the role's voice is selected
    assert b.sample.text() == next(c.text for c in w.cue_model.cues if c.role == "IRIS")  # its next line


def test_search_narrows_to_matching_voices(qtbot, troupe: Troupe, make_window) -> None:
    w = _open(qtbot, troupe, make_window)
    b = w.browse_voices("OWEN")
    b.search.setText("caribbean alicia")
    shown = [i.data(0, VOICE_ID) for i in b.voice_items()]
    assert shown == ["en-029+Alicia"]
    b.search.setText("no such voice anywhere")
    assert b.voice_items() == [] and not b.cast.isEnabled()


def test_favourites_come_first_and_are_kept(qtbot, troupe: Troupe, make_window, tmp_path: Path) -> None:
    w = _open(qtbot, troupe, make_window)
    b = w.browse_voices("OWEN")
    assert b.select("en+f3")
    b.favourite.click()
    assert _groups(b)[0] == FAVOURITES and b.favourite.text().startswith("★")
    again = w.browse_voices("IRIS")  # a new browser, the same settings
    assert _groups(again)[0] == FAVOURITES
    fav = again.tree.topLevelItem(0)
    assert [fav.child(k).data(0, VOICE_ID) for k in range(fav.childCount())] == ["en+f3"]
    settings = QSettings(str(tmp_path / "troupe.ini"), QSettings.Format.IniFormat)
    assert "en+f3" in str(settings.value("voices/favourites"))


def test_preview_speaks_the_chosen_voice_and_cast_recasts(qtbot, troupe: Troupe, make_window,
                                                           monkeypatch) -> None:  # fmt: skip
    w = _open(qtbot, troupe, make_window)
    asked: list[tuple[str, str]] = []
    real = troupe.casting.preview

    def preview(voice_id: str, text: str):  # type: ignore[no-untyped-def]
        asked.append((voice_id, text))
        return real(voice_id, text)

    monkeypatch.setattr(troupe.casting, "preview", preview)
    b = w.browse_voices("OWEN")
    assert b.select("en-us+m3")
    b.preview.click()
    assert asked == [("en-us+m3", b.sample.text())]
    qtbot.waitUntil(lambda: w.pending.idle, timeout=20_000)  # voiced (played, or a clear banner)
    assert "Traceback" not in w.banner.text
    b.cast.click()
    qtbot.waitUntil(lambda: troupe.engine.cast["OWEN"].voice_id == "en-us+m3")
    assert w.undo.canUndo()  # a cast change from the browser is undoable like any other


def test_weight_slider_shows_its_value(qtbot, troupe: Troupe, make_window) -> None:
    w = _open(qtbot, troupe, make_window)
    w.cast.editor("OWEN", "weight").setValue(37)  # type: ignore[attr-defined]
    assert w.cast.weight_labels["OWEN"].text() == "3.7"
