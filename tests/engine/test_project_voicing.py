"""A project file's lexicon and delivery tables: read, checked, used, and kept on save."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cast import save_project
from engine.core.errors import CastError
from engine.project import read_project, use_voicing
from engine.synthesis import delivery, lexicon

SCRIPT = "BRICK\nTo Worcester, then.\n"


def _project(tmp_path: Path, **extra: object) -> Path:
    (tmp_path / "show.fountain").write_text(SCRIPT, encoding="utf-8")
    path = tmp_path / "show.json"
    path.write_text(json.dumps({"troupe_project": 1, "script": "show.fountain", "cast": {}, **extra}))
    return path


def test_a_projects_lexicon_and_delivery_are_used_and_survive_a_save(tmp_path: Path) -> None:
    path = _project(tmp_path, lexicon={"Worcester": "/ˈwʊstər/"}, delivery={"robot": {"filter": "telephone"}})
    project = read_project(path)
    try:
        use_voicing(project)
        assert lexicon.prepare("To Worcester.") == "To [Worcester](/ˈwʊstər/)."
        assert "robot" in delivery.parse_table({"robot": {"filter": "telephone"}})
        save_project(
            tmp_path / "again.json", str(project.script), project.cast, project.edits, project.extras
        )
        again = read_project(tmp_path / "again.json")
        assert again.lexicon.to_dict() == project.lexicon.to_dict() and set(again.delivery) == {"robot"}
    finally:
        use_voicing(None)
    assert lexicon.prepare("To Worcester.") == "To Worcester."  # the next script does not inherit it


@pytest.mark.parametrize(("extra", "says"), [
    ({"lexicon": {"two words!": "x"}}, "'lexicon'"),
    ({"lexicon": 3}, "'lexicon'"),
    ({"delivery": {"robot": {"rate": "fast"}}}, "'delivery'"),
])  # fmt: skip
def test_bad_tables_name_the_file_and_the_key(tmp_path: Path, extra: dict[str, object], says: str) -> None:
    with pytest.raises(CastError) as err:
        read_project(_project(tmp_path, **extra))
    assert "show.json" in str(err.value) and says in str(err.value)


def test_opening_another_script_drops_the_projects_lexicon(tmp_path: Path) -> None:
    from engine.control import EngineSettings, Troupe

    path = _project(tmp_path, lexicon={"Worcester": "/ˈwʊstər/"})
    other = tmp_path / "other.fountain"
    other.write_text("MARA\nTo Worcester, then.\n", encoding="utf-8")
    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.open(path).result(60)
        assert lexicon.prepare("Worcester") == "[Worcester](/ˈwʊstər/)"
        troupe.projects.load(other).result(60)
        assert lexicon.prepare("Worcester") == "Worcester"
    finally:
        troupe.close()
        use_voicing(None)
