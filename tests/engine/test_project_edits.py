"""A director's line edits survive a script that imports to other cue numbers (a newer
import skips a zero-length cue, a label alone on its line joins the next, the file was
edited): each edit is saved with the line it was made to, put back there on opening, and
one whose line is gone is reported with its text, never put on another line."""

from __future__ import annotations

import json
import time
from pathlib import Path

from engine.project import EditAnchor, place_edits, read_project
from engine.script import load_script

SRT = (
    "1\n00:00:01,000 --> 00:00:02,000\n[ANN] First line.\n\n"
    "2\n00:00:03,000 --> 00:00:04,000\n[BOB] Second line.\n\n"
    "3\n00:00:05,000 --> 00:00:06,000\n[ANN] Third line.\n"
)


def test_an_anchored_edit_follows_its_line(tmp_path: Path) -> None:
    f = tmp_path / "x.srt"
    f.write_text(SRT, encoding="utf-8")
    before = load_script(f)
    anchors = {2: EditAnchor(before.cues[2].text, before.cues[2].line)}
    # the file gains a cue at the top (or a new import rule drops one): indices shift
    f.write_text("0\n00:00:00,100 --> 00:00:00,500\n[BOB] Hm.\n\n" + SRT, encoding="utf-8")
    after = load_script(f)
    placed, lost = place_edits(after, {2: "Third line, louder."}, anchors)
    assert placed == {3: "Third line, louder."} and lost == []
    assert after.cues[3].text == "Third line."


def test_an_edit_whose_line_is_gone_is_reported_not_misplaced(tmp_path: Path) -> None:
    f = tmp_path / "x.srt"
    f.write_text(SRT, encoding="utf-8")
    anchors = {1: EditAnchor("A line that was cut.", 6)}
    placed, lost = place_edits(load_script(f), {1: "My rewrite."}, anchors)
    assert placed == {} and len(lost) == 1 and "My rewrite." in lost[0] and "line 6" in lost[0]


def test_an_older_project_keeps_its_cue_numbers(tmp_path: Path) -> None:
    f = tmp_path / "x.srt"
    f.write_text(SRT, encoding="utf-8")
    placed, lost = place_edits(load_script(f), {0: "New first.", 9: "Past the end."}, {})
    assert placed == {0: "New first."} and len(lost) == 1 and "Past the end." in lost[0]


def test_the_engine_saves_anchors_and_places_edits_on_reopening(tmp_path: Path) -> None:
    from engine.control import EngineSettings, Troupe

    f = tmp_path / "x.srt"
    f.write_text(SRT, encoding="utf-8")
    project = tmp_path / "show.json"
    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.load(f).result(60)
        troupe.lines.edit_line(2, "Third line, louder.")
        deadline = time.monotonic() + 10
        while troupe.engine.call(lambda: dict(troupe.engine.edits)) != {2: "Third line, louder."}:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        troupe.projects.save(project).result(60)
        saved = json.loads(project.read_text(encoding="utf-8"))["edits"]
        assert saved == {"2": {"text": "Third line, louder.", "was": "Third line.", "line": 11}}
        assert read_project(project).anchors == {2: EditAnchor("Third line.", 11)}
        f.write_text("0\n00:00:00,100 --> 00:00:00,500\n[BOB] Hm.\n\n" + SRT, encoding="utf-8")
        script = troupe.projects.open(project).result(60)
        assert troupe.engine.call(lambda: dict(troupe.engine.edits)) == {3: "Third line, louder."}
        assert script.cues[3].text == "Third line."  # the script as imported; the show has the edit
    finally:
        troupe.close()


def test_a_script_opened_by_a_relative_path_reopens_from_its_project(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Saved relative to the folder Troupe was started in, read relative to the project:
    the project named a file that was not there. Now beside the project: relative to it;
    elsewhere: absolute."""
    from engine.control import EngineSettings, Troupe

    work, elsewhere = tmp_path / "work", tmp_path / "projects"
    work.mkdir()
    elsewhere.mkdir()
    (work / "x.srt").write_text(SRT, encoding="utf-8")
    monkeypatch.chdir(work)
    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.load("x.srt").result(60)  # relative to the current folder
        troupe.projects.save(elsewhere / "show.json").result(60)
        troupe.projects.save(work / "beside.json").result(60)
        assert json.loads((elsewhere / "show.json").read_text())["script"] == str(work / "x.srt")
        assert json.loads((work / "beside.json").read_text())["script"] == "x.srt"
        monkeypatch.chdir(tmp_path)
        assert len(troupe.projects.open(elsewhere / "show.json").result(60).cues) == 3
        assert len(troupe.projects.open(work / "beside.json").result(60).cues) == 3
    finally:
        troupe.close()


def test_a_voice_set_by_any_spelling_of_a_role_reaches_that_role(tmp_path: Path) -> None:
    """'Iris (V.O.)' is IRIS: muting it mutes IRIS, and no second entry appears in the cast."""
    from engine.control import EngineSettings, Troupe

    f = tmp_path / "x.fountain"
    f.write_text("INT. ROOM - DAY\n\nIRIS (V.O.)\nHello.\n\nMARK\nHi.\n", encoding="utf-8")
    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.load(f).result(60)
        troupe.casting.set_voice("Iris (V.O.)", mute=True)
        deadline = time.monotonic() + 10
        while not troupe.engine.call(lambda: troupe.engine.cast.voices["IRIS"].mute):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert set(troupe.engine.call(lambda: dict(troupe.engine.cast.voices))) == {"IRIS", "MARK"}
        troupe.casting.set_voice("GHOST", mute=True)  # not a role of the script: refused (banner)
        time.sleep(0.3)
        assert "GHOST" not in troupe.engine.call(lambda: dict(troupe.engine.cast.voices))
    finally:
        troupe.close()
