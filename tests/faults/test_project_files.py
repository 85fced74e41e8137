"""Project files are read like any untrusted input: wrong types, unknown voices, edits that
are not text, deep nesting, a missing or foreign script: each a `CastError` naming the file
and the key, never another exception; a relative script is found beside the project."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.errors import CastError, ScriptError
from engine.project import read_project
from engine.script import load_script

GOOD_VOICE = {"voice_id": "en-gb+m3", "rate_wpm": 160, "mute": False}


def _project(tmp_path: Path, data: object, name: str = "show.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        ({"script": "a.fountain", "cast": {"HERO": {"mute": "false"}}}, "'mute'", "expected true or false"),
        (
            {"script": "a.fountain", "cast": {"HERO": {"voice_id": "xx-nowhere"}}},
            "'voice_id'",
            "not an espeak",
        ),
        ({"script": "a.fountain", "cast": {"HERO": {"voice_id": 42}}}, "'voice_id'", "expected text"),
        ({"script": "a.fountain", "cast": {"HERO": {"pitch": "high"}}}, "'pitch'", "expected a number"),
        ({"script": "a.fountain", "cast": {}, "edits": {"3": None}}, "'edits'", "new text"),
        ({"script": "a.fountain", "cast": {}, "edits": {"three": "x"}}, "'edits'", "not a cue number"),
        ({"cast": {"HERO": GOOD_VOICE}}, "'script'", "must name the script"),
        ({"script": ".env", "cast": {}}, "'script'", "imports only"),
        ({"script": "a.fountain", "cast": [1, 2]}, "'cast'", "table of roles"),
        ({"script": "a.fountain", "cast": {}, "extra": 1}, "'extra'", "unknown key"),
        ({"script": "a.fountain", "cast": {}, "troupe_project": 7}, "'troupe_project'", "version 1"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, data: object, key: str, message: str) -> None:
    p = _project(tmp_path, data)
    with pytest.raises(CastError) as err:
        read_project(p)
    assert str(p) in str(err.value) and key in str(err.value) and message in str(err.value)


def test_deep_nesting_is_refused_not_a_crash(tmp_path: Path) -> None:
    p = _project(tmp_path, '{"cast": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CastError, match=r"nested too deeply|table of roles"):
        read_project(p)


def test_special_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(CastError, match="not a regular file"):
        read_project(fifo)
    with pytest.raises(CastError, match="not a regular file"):
        read_project(tmp_path)


def test_a_relative_script_is_found_beside_the_project(tmp_path: Path, testdata: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "show"
    folder.mkdir()
    (folder / "play.txt").write_text((testdata / "radio_play.txt").read_text())
    p = _project(folder, {"script": "play.txt", "cast": {"ELSA": GOOD_VOICE}, "edits": {"1": "Papa, look!"}})
    monkeypatch.chdir(tmp_path)  # not the project's folder
    project = read_project(p)
    assert project.script == folder / "play.txt"
    assert load_script(project.script).cues[1].role == "ELSA"
    assert project.edits == {1: "Papa, look!"} and project.cast["ELSA"].voice_id == "en-gb+m3"


def test_script_entry_refuses_special_files(tmp_path: Path) -> None:
    fifo = tmp_path / "script.fountain"
    os.mkfifo(fifo)
    with pytest.raises(ScriptError, match="named pipe"):
        load_script(fifo)
    with pytest.raises(ScriptError, match="not a regular file"):
        load_script("/dev/zero")
    loop = tmp_path / "loop.fountain"
    loop.symlink_to(loop)
    with pytest.raises(ScriptError, match="loop"):
        load_script(loop)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
voice_keys = st.sampled_from(["backend", "voice_id", "rate_wpm", "pitch", "gain_db", "pan", "mute", "solo"])


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    script=json_values,
    cast=st.dictionaries(st.text(max_size=6), st.dictionaries(voice_keys, json_values, max_size=4)
                         | json_values, max_size=3),
    edits=json_values,
)  # fmt: skip
def test_any_project_is_read_or_refused_clearly(
    tmp_path: Path, script: object, cast: object, edits: object
) -> None:
    p = _project(tmp_path, {"script": script, "cast": cast, "edits": edits})
    try:
        project = read_project(p)
    except CastError as exc:
        assert str(p) in str(exc)
        return
    assert isinstance(project.script, Path)
    assert all(isinstance(t, str) and t for t in project.edits.values())
