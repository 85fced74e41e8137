"""Fountain to the spec: reference parsers' own test suites and reproductions of real-file
failures (two-space lines, lyrics, emphasis, parentheticals, page breaks, alphabets)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.core.errors import ScriptError
from engine.script import load_script
from engine.script.common import normalise_role, strip_markup

DATA = Path(__file__).resolve().parents[2] / "data" / "fountain"


def _write(tmp_path: Path, text: str, name: str = "x.fountain") -> Path:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


def _expected_cues(tokens: list[str]) -> list[tuple[str, str]]:
    """Jouvence's expected tokens ('@NAME', '=speech', '_(paren)') as (role, spoken text)."""
    cues: list[tuple[str, list[str]]] = []
    for tok in tokens:
        if tok.startswith("@"):
            cues.append((normalise_role(tok[1:]), []))
        elif tok.startswith("=") and cues:
            cues[-1][1].append(tok[1:])
    return [(role, strip_markup(" ".join(parts))) for role, parts in cues if parts]


def _jouvence_cases() -> list[tuple[str, int, dict[str, object]]]:
    cases = []
    for f in sorted((DATA / "jouvence").glob("*.yaml")):
        for k, case in enumerate(yaml.safe_load_all(f.read_text(encoding="utf-8"))):
            if case:
                cases.append((f.stem, k, case))
    return cases


@pytest.mark.parametrize(("suite", "k", "case"), _jouvence_cases(), ids=lambda v: str(v)[:20])
def test_jouvence_suite(tmp_path: Path, suite: str, k: int, case: dict[str, object]) -> None:
    """Every case of the jouvence parser's suite: the same speakers say the same words."""
    expected = _expected_cues(list(case["out"]))  # type: ignore[call-overload]
    f = _write(tmp_path, str(case["in"]))
    if not expected:
        with pytest.raises(ScriptError, match="no dialogue found"):
            load_script(f)
        return
    s = load_script(f)
    assert [(c.role, c.text) for c in s.cues] == expected
    if "title" in case:
        assert s.metadata == case["title"]


def test_two_space_line_keeps_the_speech(tmp_path: Path) -> None:
    s = load_script(DATA / "screenplain_dialogue-with-blank-line.fountain")
    assert [(c.role, c.text) for c in s.cues] == [("DEALER", "Dealer gets a seven. Hit or stand sir?")]
    # the same in a longer speech, with action after it: nothing of the speech is lost
    speech = "\n".join(f"Line {n} of the speech.\n  " for n in range(40))
    s = load_script(_write(tmp_path, f"INT. ROOM - DAY\n\nHALE\n{speech}\nLast line.\n\nHe leaves.\n"))
    assert len(s.cues) == 1
    assert (
        s.cues[0].text.split()
        == " ".join([f"Line {n} of the speech." for n in range(40)] + ["Last line."]).split()
    )


def test_screenplain_files() -> None:
    s = load_script(DATA / "screenplain_character-at.fountain")
    assert [(c.role, c.text) for c in s.cues] == [("ALICE", "Hello Bob!"), ("BOB", "Hello Alice!")]
    assert s.roles["BOB"].display_name == "Bob"
    s = load_script(DATA / "screenplain_dialogue-parentheticals.fountain")
    assert [(c.role, c.hints, c.text) for c in s.cues] == [
        ("GIRL", (), "Let me tell you something."), ("GUY", ("On the phone",), "I don't wanna."),
    ]  # fmt: skip
    with pytest.raises(ScriptError, match="no dialogue found"):
        load_script(DATA / "screenplain_extended-characters.fountain")


def test_lyrics_emphasis_and_escapes_never_spoken(tmp_path: Path) -> None:
    text = (
        "WONKA\n~Willy Wonka! Willy Wonka!\n~The amazing chocolatier!\n\n"
        "ANNA\n_Nested *emphasis* here_ and ***bold italic*** and \\*escaped\\* stars.\n\n"
        "BEN\nAn *unclosed emphasis and a stray_ underscore ~ and \\ backslash.\n"
    )
    s = load_script(_write(tmp_path, text))
    assert [c.text for c in s.cues] == [
        "Willy Wonka! Willy Wonka! The amazing chocolatier!",
        "Nested emphasis here and bold italic and escaped stars.",
        "An unclosed emphasis and a stray underscore and backslash.",
    ]
    for c in s.cues:
        assert not set(c.text) & set("*_~\\^@#<>{}")


def test_multiline_parenthetical_more_and_contd(tmp_path: Path) -> None:
    text = (
        "MARA\n(turning from the window,\nslowly)\nHe is not coming back.\n(MORE)\n\n===\n\n"
        "MARA (CONT'D)\nNot tonight.\n\nTOM (cont’d) (O.S.)\n(beat)\n(laughing) but he said so.\n"
    )
    s = load_script(_write(tmp_path, text))
    assert [(c.role, c.hints, c.text) for c in s.cues] == [
        ("MARA", ("turning from the window, slowly",), "He is not coming back."),
        ("MARA", (), "Not tonight."),
        ("TOM", ("O.S.", "beat"), "(laughing) but he said so."),
    ]


@pytest.mark.parametrize(
    ("text", "roles"),
    [
        ("ИВАН\nДобрый вечер.\n\nМАРИЯ (З.К.)\nЗдравствуй, Иван.\n", ["ИВАН", "МАРИЯ"]),
        ("ΝΙΚΟΣ\nΚαλησπέρα.\n\nΕΛΕΝΗ\nΓεια σου.\n", ["ΝΙΚΟΣ", "ΕΛΕΝΗ"]),
        ("ZOË\nBonsoir.\n\nÉMILE\nSalut.\n", ["ZOË", "ÉMILE"]),
        ("@李雷\n你好。\n\n@韩梅梅\n你好，李雷。\n", ["李雷", "韩梅梅"]),
    ],
)
def test_names_in_any_alphabet(tmp_path: Path, text: str, roles: list[str]) -> None:
    s = load_script(_write(tmp_path, "INT. ROOM - NIGHT\n\n" + text))
    assert list(s.roles) == roles
    assert len(s.cues) == 2


def test_lowercase_cyrillic_line_is_action(tmp_path: Path) -> None:
    s = load_script(_write(tmp_path, "Иван входит.\nОн молчит.\n\nИВАН\nДа.\n"))
    assert [(c.role, c.text) for c in s.cues] == [("ИВАН", "Да.")]


def test_caseless_script_says_to_use_at(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="must be marked with '@'") as err:
        load_script(_write(tmp_path, "内景。房间 - 夜\n\n李雷\n你好。\n\n韩梅梅\n你好。\n"))
    assert err.value.line == 3


def test_notes_and_boneyard_unclosed(tmp_path: Path) -> None:
    text = "BOB\nHello [[a note]] there.\n\nANN\nA /* kept because never closed.\n\nBOB\n[[open note\n"
    s = load_script(_write(tmp_path, text))
    assert [c.text for c in s.cues] == ["Hello there.", "A / kept because never closed.", "[[open note"]


def test_afterwriting_cyrillic_file() -> None:
    s = load_script(DATA / "afterwriting_cyrillic.fountain")
    assert list(s.roles) == ["МАШA"]
    assert s.title == "Лорем ипсум"
    (cue,) = s.cues
    assert cue.hints == ("солута",)
    assert len(cue.text.split()) == 23  # screenplain 0.12 reads the same 23 words
