"""Auto-casting: gender from the script and first names, natural voices for the leads, and a
cast that depends on the script alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine import gender
from engine.cast import Cast
from engine.core.types import Role
from engine.gender import from_first_name, from_pronouns, guess, guess_all
from engine.script import load_script
from engine.synthesis.base import VoiceInfo

DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo" / "the_last_broadcast.fountain"
JOE = VoiceInfo("piper", "en_US-joe-medium", "joe", "en_US", "male")
_MALE = {"adam", "john", "david", "robert", "max"}


def _gender_of(voice_id: str) -> str:
    variant = voice_id.split("+")[1]
    return "m" if variant.startswith("m") or variant in _MALE else "f"


def test_demo_and_shared_scripts_guess_gender(testdata: Path) -> None:
    assert guess_all(load_script(DEMO)) == {"IRIS": "f", "OWEN": "m", "CALLER": None, "NARRATOR": None}
    lighthouse = guess_all(load_script(testdata / "lighthouse.fountain"))
    assert lighthouse["MARA"] == "f" and lighthouse["TOM"] == "m"
    radio = guess_all(load_script(testdata / "radio_play.txt"))
    assert radio["ELSA"] == "f" and radio["PAPA"] == "m" and radio["NARRATOR"] is None


def test_names_titles_and_pronouns() -> None:
    names = (("MIKE", "m"), ("KATE", "f"), ("MATTHEW", "m"), ("IRIS VALE", "f"), ("INTERCOM", None))
    for name, want in names:
        assert from_first_name(name) == want, name
    assert guess(Role("QUEEN", "QUEEN", "f")) == "f"  # a title in the name wins
    lines = ["The door opens.", "ROBIN (30s) drops her keys on the desk.", "ROBIN's brother waves."]
    assert from_pronouns("ROBIN", lines) == "f"
    assert from_pronouns("ROBIN", ["ROBIN hands her the phone; he waits."]) is None  # both: no guess
    assert guess(Role("SAM", "SAM"), ["SAM (50s) rubs his eyes."]) == "m"


def test_espeak_voices_match_the_guessed_gender() -> None:
    cast = Cast.auto(load_script(DEMO))
    assert _gender_of(cast["IRIS"].voice_id) == "f"
    assert _gender_of(cast["OWEN"].voice_id) == "m"


def test_every_role_gets_a_natural_voice_where_one_is_installed() -> None:
    script = load_script(DEMO)
    cast = Cast.auto(script, natural=[JOE])
    assert {v.backend for v in cast.voices.values()} == {"piper"}
    pitches = [v.pitch for v in cast.voices.values()]
    assert len(set(pitches)) == len(pitches) == 4  # one voice, four distinct characters
    assert cast["IRIS"].pitch > 60 and cast["IRIS"].pitch_range > 50  # a woman on a male voice
    two = Cast.auto(script, natural=[JOE], leads=2)
    assert {r for r, v in two.voices.items() if v.backend == "piper"} == {"IRIS", "CALLER"}  # most lines
    assert two["OWEN"].backend == "espeak" and two["NARRATOR"].backend == "espeak"
    assert Cast.auto(script, natural=[JOE], leads=0).voices == Cast.auto(script).voices
    japanese = VoiceInfo("kokoro", "jf_alpha", "jf_alpha", "ja", "female")
    assert Cast.auto(script, natural=[japanese]).voices == Cast.auto(script).voices


def test_cast_depends_on_the_script_and_its_saved_cast(testdata: Path) -> None:
    demo = load_script(DEMO)
    fresh = Cast.auto(demo)
    assert Cast.auto(demo).voices == fresh.voices
    saved = dict(fresh.voices)
    saved["IRIS"] = Cast.auto(load_script(testdata / "lighthouse.fountain"))["TOM"]
    again = Cast.auto(demo, keep=saved)
    assert again["IRIS"] == saved["IRIS"] and again.voices == saved  # the saved cast wins


def test_opening_another_script_never_inherits_its_cast(testdata: Path) -> None:
    from engine.control import EngineSettings, Troupe

    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.load(testdata / "lighthouse.fountain").result(60)
        troupe.projects.load(DEMO).result(60)
        first = dict(troupe.engine.cast.voices)
        troupe.projects.load(testdata / "brick_and_steel.fountain").result(60)
        troupe.projects.load(DEMO).result(60)
        assert troupe.engine.cast.voices == first == Cast.auto(load_script(DEMO)).voices
    finally:
        troupe.close()


def test_a_saved_cast_is_not_guessed_again(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Roles the saved cast already voices need no gender: the name list (a sixth of a
    second to read) and the script's action are not read at all; a new role still is."""
    import engine.gender as gender

    script = load_script(DEMO)
    saved = Cast.auto(script).voices
    asked: list[str] = []
    real = gender.guess_with_evidence
    monkeypatch.setattr(gender, "guess_with_evidence",
                        lambda role, found=(): asked.append(role.name) or real(role, found))  # fmt: skip
    monkeypatch.setattr(gender, "action_lines", lambda s: asked.append("<action>") or [])
    assert Cast.auto(script, saved).voices == saved
    assert asked == []
    partial = {k: v for k, v in saved.items() if k != "OWEN"}
    assert Cast.auto(script, partial).voices["OWEN"].voice_id == saved["OWEN"].voice_id
    assert asked == ["<action>", "OWEN"]
    assert guess_all(script, ["OWEN", "NOBODY"]) == {"OWEN": "m"}


def test_first_names_read_from_their_own_lines_guess_as_the_whole_list_does(monkeypatch) -> None:
    """Only the lines of the names asked for are read (the whole list costs 26 MB for a whole
    render): the guesses match gender-guesser's own detector over every name, one pass for
    many names or a name at a time, joined names ('Anne+Marie') and unknown words alike."""
    detector = pytest.importorskip("gender_guesser.detector")
    lines = (Path(detector.__file__).with_name("data") / "nam_dict.txt").read_text(encoding="utf-8")
    listed = [ln.split()[1] for ln in lines.splitlines() if ln and ln[0] not in "#="]
    sample = listed[::400] + [n.replace("+", "") for n in listed if "+" in n][:20] + ["Zzyzx", "Intercom"]
    whole = detector.Detector(case_sensitive=False)

    def want(name: str) -> str | None:  # the first word of letters, as a role's name is read
        words = re.findall(r"[A-Za-z]+", name)
        return gender._NAME_GENDER.get(whole.get_gender(words[0])) if words else None

    monkeypatch.setattr(gender, "_FIRST_NAMES", {})
    gender.look_up_first_names(n.upper() for n in sample)
    assert {n: gender.from_first_name(n.upper()) for n in sample} == {n: want(n) for n in sample}
    assert any(gender._FIRST_NAMES.values()) and len(gender._FIRST_NAMES) < 2 * len(sample)
    monkeypatch.setattr(gender, "_FIRST_NAMES", {})
    assert [gender.from_first_name(f"{n} SMITH") for n in sample[:30]] == [want(n) for n in sample[:30]]
