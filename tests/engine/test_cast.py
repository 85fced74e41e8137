"""Automatic casting and the project file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cast import Cast, save_project
from engine.core.errors import CastError
from engine.project import read_project
from engine.script import load_script


def test_auto_cast_distinct_and_stable(testdata: Path) -> None:
    script = load_script(testdata / "brick_and_steel.fountain")
    a = Cast.auto(script)
    b = Cast.auto(script)
    assert a.voices == b.voices  # stable across runs
    ids = [v.voice_id for v in a.voices.values()]
    assert len(set(ids)) == len(ids) == 7  # distinct
    assert set(a.voices) == set(script.roles)


def test_gender_hint_picks_matching_variant(testdata: Path) -> None:
    script = load_script(testdata / "radio_play.txt")  # PAPA is a father
    cast = Cast.auto(script)
    variant = cast["PAPA"].voice_id.split("+")[1]
    assert variant.startswith("m") or variant in {"adam", "john", "david", "robert", "max"}


def test_saved_cast_survives_restart(tmp_path: Path, testdata: Path) -> None:
    script = load_script(testdata / "lighthouse.fountain")
    cast = Cast.auto(script)
    cast.set("MARA", voice_id="en-gb-x-rp+f4", rate_wpm=150, pan=-0.5, weight=3.0, solo=True)
    project = tmp_path / "show.troupe.json"
    save_project(project, script.path, cast, {3: "An edited line."})
    read = read_project(project)
    loaded, edits = read.cast, read.edits
    assert read.script == Path(script.path).resolve() and edits == {3: "An edited line."}
    assert loaded.voices == cast.voices
    again = Cast.auto(script, loaded.voices)
    assert again["MARA"].voice_id == "en-gb-x-rp+f4"


def test_toml_project(tmp_path: Path) -> None:
    p = tmp_path / "show.toml"
    p.write_text('script = "x.fountain"\n[cast.HERO]\nvoice_id = "en-us+m1"\npitch = 40\n')
    cast = read_project(p).cast
    assert cast["HERO"].voice_id == "en-us+m1" and cast["HERO"].pitch == 40


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"cast": {"HERO": {"pitch": 400}}}', "pitch = 400; expected a number from 0 to 100"),
        ('{"cast": {"HERO": {"colour": "red"}}}', "unknown setting(s) colour"),
        ('{"cast": {"HERO": 3}}', "expected a table of voice settings"),
        ('{"nothing": 1}', "not a Troupe project"),
        ('{"cast": {', "line 1: invalid JSON"),
    ],
)
def test_bad_project_files(tmp_path: Path, body: str, message: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(body)
    with pytest.raises(CastError) as err:
        read_project(p)
    assert message in str(err.value) and str(p) in str(err.value)


def test_set_rejects_bad_values(testdata: Path) -> None:
    cast = Cast.auto(load_script(testdata / "radio_play.txt"))
    before = cast["ELSA"]
    with pytest.raises(CastError, match="pan = 2"):
        cast.set("ELSA", pan=2)
    assert cast["ELSA"] == before


def test_save_is_atomic_json(tmp_path: Path, testdata: Path) -> None:
    script = load_script(testdata / "radio_play.txt")
    p = tmp_path / "p.json"
    save_project(p, script.path, Cast.auto(script))
    assert json.loads(p.read_text())["troupe_project"] == 1
    assert not list(tmp_path.glob("*.tmp"))
