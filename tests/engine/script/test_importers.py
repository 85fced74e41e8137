"""Importers against the real scripts in tests/data/samples, and their bad-input errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import ScriptError
from engine.script import load_script, sniff
from engine.script.common import normalise_role, split_extension

BRICK_ROLES = ["STEEL", "BRICK", "JACK", "DAN", "COGNITO", "MINION", "HANDSOME MAN"]


@pytest.mark.parametrize("name", ["brick_and_steel.fountain", "brick_and_steel_crlf.fountain"])
def test_brick_and_steel(testdata: Path, name: str) -> None:
    s = load_script(testdata / name)
    assert s.format == "fountain"
    assert len(s.cues) == 20
    assert list(s.roles) == BRICK_ROLES
    assert s.title == "BRICK & STEEL — FULL RETIRED"
    assert s.metadata["author"] == "Stu Maschwitz"
    assert "Solvang, CA 93463" in s.metadata["contact"]
    # dual dialogue: BRICK's second "Screw retirement." overlaps STEEL's
    dual = [c for c in s.cues if c.overlaps_previous]
    assert len(dual) == 1
    assert (dual[0].role, dual[0].text) == ("BRICK", "Screw retirement.")
    prev = s.cues[dual[0].index - 1]
    assert (prev.role, prev.text) == ("STEEL", "Screw retirement.")
    # one STEEL block with two (pause) parentheticals, spoken text without them
    pause = next(c for c in s.cues if c.hints == ("pause", "pause"))
    assert pause.role == "STEEL"
    assert pause.text == (
        "They're coming out of the woodwork! No, everybody we've put away! Point Blank Sniper?"
    )
    # tab-indented cue with a parenthetical and emphasis markup stripped
    jack = next(c for c in s.cues if c.role == "JACK")
    assert jack.hints == ("in Vietnamese, subtitled",)
    assert jack.text == "Did you know Brick and Steel are retired?"
    dan = next(c for c in s.cues if c.role == "DAN")
    assert dan.text == "Then let's retire them. Permanently."
    headings = [sc.heading for sc in s.scenes]
    assert headings[:3] == [
        "EXT. BRICK'S PATIO - DAY",
        "INT. TRAILER HOME - DAY",
        "EXT. BRICK'S POOL - DAY",
    ]
    assert "SNIPER SCOPE POV" in headings  # forced scene heading, '.' removed
    assert len(s.scenes) == 8
    # transitions and centered text are not dialogue
    assert not any("CUT TO" in c.text or "THE END" in c.text for c in s.cues)
    assert s.cues[0].line == 19


def test_crlf_matches_lf(testdata: Path) -> None:
    a = load_script(testdata / "brick_and_steel.fountain")
    b = load_script(testdata / "brick_and_steel_crlf.fountain")
    assert [(c.role, c.text, c.hints, c.line) for c in a.cues] == [
        (c.role, c.text, c.hints, c.line) for c in b.cues
    ]


def test_lighthouse(testdata: Path) -> None:
    s = load_script(testdata / "lighthouse.fountain")
    assert list(s.roles) == ["TOM", "MARA", "HALE"]
    assert len(s.cues) == 12
    hale = [c for c in s.cues if c.role == "HALE"]
    assert [c.hints for c in hale] == [("V.O.",), ("O.S.",), ("V.O.",)]
    dual = [c for c in s.cues if c.overlaps_previous]
    assert [(c.role, c.text) for c in dual] == [("MARA", "He hears me. He always has.")]
    assert not any("Director" in c.text for c in s.cues)  # the note is ignored
    assert [sc.heading for sc in s.scenes] == [
        "INT. LIGHTHOUSE LAMP ROOM - NIGHT", "THE ROCKS - CONTINUOUS",
        "INT. LIGHTHOUSE LAMP ROOM - LATER",
    ]  # fmt: skip
    assert s.title == "The Last Lighthouse"
    assert s.cues[1].hints == ("not turning",)


def test_radio_play(testdata: Path) -> None:
    s = load_script(testdata / "radio_play.txt")
    assert s.format == "text"
    assert list(s.roles) == ["NARRATOR", "ELSA", "PAPA"]
    assert len(s.cues) == 8
    softly = s.cues[4]
    assert (softly.role, softly.hints) == ("PAPA", ("softly",))
    assert softly.text == "Snow does not run out in January, little one."
    assert s.cues[0].line == 2  # the comment on line 1 is skipped


def test_dub_episode_srt(testdata: Path) -> None:
    s = load_script(testdata / "dub_episode.srt")
    assert s.format == "srt"
    assert [c.role for c in s.cues] == ["KAI", "RIN", "KAI", "GUARD", "RIN"]
    assert [(c.start_s, c.end_s) for c in s.cues] == [
        (1.0, 3.2), (3.6, 5.1), (5.4, 8.9), (9.3, 10.2), (10.3, 12.0),
    ]  # fmt: skip
    assert s.cues[2].text == (
        "Easy for you to say, you're not carrying the map, the compass, and your lunch."
    )


def test_lines_csv(testdata: Path) -> None:
    s = load_script(testdata / "lines.csv")
    assert [c.role for c in s.cues] == ["ANNOUNCER", "HOST", "CALLER", "HOST"]
    assert [c.start_s for c in s.cues] == [0.0, 4.5, 9.0, 13.2]
    assert [c.hints for c in s.cues] == [("calm",), ("warm",), ("nervous",), ("dry",)]
    assert s.roles["HOST"].display_name == "Host"


def test_bad_encoding(testdata: Path) -> None:
    with pytest.raises(ScriptError) as err:
        load_script(testdata / "bad_encoding.fountain")
    assert err.value.line == 2
    assert "bad_encoding.fountain, line 2" in str(err.value)
    assert "UTF-8" in str(err.value)


def test_bad_times(testdata: Path) -> None:
    with pytest.raises(ScriptError) as err:
        load_script(testdata / "bad_times.srt")
    assert err.value.line == 2
    assert "ends (00:00:01,000) before it starts (00:00:05,000)" in str(err.value)


def test_empty(testdata: Path) -> None:
    with pytest.raises(ScriptError, match=r"empty\.fountain: file is empty"):
        load_script(testdata / "empty.fountain")


def test_unknown_format(tmp_path: Path) -> None:
    f = tmp_path / "show.docx"
    f.write_bytes(b"PK\x03\x04")
    with pytest.raises(
        ScriptError,
        match=r"cannot read '\.docx' files; export it from your writing app as "
        r"Fountain \(\.fountain\) or Final Draft \(\.fdx\)",
    ):
        load_script(f)


def test_junk_50_mb(tmp_path: Path) -> None:
    f = tmp_path / "junk.txt"
    f.write_bytes(b"\xde\xad\xbe\xef" * (50 * 2**20 // 4))
    with pytest.raises(ScriptError, match=r"52\.4 MB; a script must be under 20 MB"):
        load_script(f)


def test_binary_and_unrecognised(tmp_path: Path) -> None:
    f = tmp_path / "nul.txt"
    f.write_text("HERO: hi\n\x00\x00", encoding="utf-8")
    with pytest.raises(ScriptError, match="NUL bytes") as err:
        load_script(f)
    assert err.value.line == 2
    g = tmp_path / "prose"
    g.write_text("just some prose without any speaker at all\nand more of it\n")
    with pytest.raises(ScriptError, match="could not recognise the format"):
        load_script(g)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot open the file"):
        load_script(tmp_path / "nope.fountain")


def test_plaintext_bad_line(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("HERO: one\n\nthis has no speaker\n")
    with pytest.raises(ScriptError, match=r"line 3: expected 'NAME: line'"):
        load_script(f)


def test_csv_errors(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_text('role,text,emotion,start_s\nA,"hi",,1.0\nB,"there",,soon\n')
    with pytest.raises(ScriptError, match=r"x\.csv, line 3: start_s 'soon' is not a number"):
        load_script(f)
    f.write_text("role,text\nA,\n")
    with pytest.raises(ScriptError, match=r"line 2: expected 'role,text"):
        load_script(f)


def test_tsv_and_vtt(tmp_path: Path) -> None:
    t = tmp_path / "x.tsv"
    t.write_text("role\ttext\nHero\tHello there.\nvillain\tGoodbye.\n")
    s = load_script(t)
    assert s.format == "tsv" and list(s.roles) == ["HERO", "VILLAIN"]
    v = tmp_path / "x.vtt"
    v.write_text(
        "WEBVTT\n\nNOTE a comment\n\n1\n00:01.000 --> 00:02.500 align:start\n"
        "<v Ada>Hello, <i>world</i>.</v>\n\n"
        "00:00:03.000 --> 00:00:04.000\nBOB: Hi Ada.\n"
    )
    s = load_script(v)
    assert [(c.role, c.text, c.start_s, c.end_s) for c in s.cues] == [
        ("ADA", "Hello, world.", 1.0, 2.5), ("BOB", "Hi Ada.", 3.0, 4.0),
    ]  # fmt: skip
    bad = tmp_path / "bad.vtt"
    bad.write_text("00:01.000 --> 00:02.000\nhi\n")
    with pytest.raises(ScriptError, match="line 1: a WebVTT file must start with 'WEBVTT'"):
        load_script(bad)


def test_fountain_boneyard_notes_and_forced_character(tmp_path: Path) -> None:
    f = tmp_path / "x.fountain"
    f.write_text(
        "INT. ROOM - DAY\n\n/* an old\n\nscene\n\nBOB\nCut line.\n*/\n\n@McCLANE\nYippee.\n\n"
        "ANN (CONT'D)\nHi [[a note]] there.\n\nCUT TO:\n\n> THE END <\n"
    )
    s = load_script(f)
    assert [(c.role, c.text, c.hints, c.line) for c in s.cues] == [
        ("MCCLANE", "Yippee.", (), 11), ("ANN", "Hi there.", (), 14),
    ]  # fmt: skip


def test_role_normalisation() -> None:
    assert normalise_role("Brick") == normalise_role("BRICK (CONT'D)") == "BRICK"
    assert normalise_role("  hale  (V.O.) ") == "HALE"
    assert split_extension("MOM (O.S.) (CONT'D)") == ("MOM", ("O.S.", "CONT'D"))


def test_sniff_by_content(testdata: Path, tmp_path: Path) -> None:
    for name, fmt in [("dub_episode.srt", "srt"), ("radio_play.txt", "text"),
                      ("lighthouse.fountain", "fountain")]:  # fmt: skip
        copy = tmp_path / Path(name).stem  # no extension: content decides
        copy.write_bytes((testdata / name).read_bytes())
        assert sniff(copy.read_text()) == fmt
        assert load_script(copy).format == fmt


def test_role_label_forms_normalise_alike() -> None:
    forms = ["Brick", "BRICK (CONT'D)", "@Brick^", "[BRICK]", "Brick:", ">> BRICK:", "- BRICK (V.O.):"]
    assert {normalise_role(f) for f in forms} == {"BRICK"}
    assert normalise_role("иван (з.к.)") == "ИВАН"
    assert split_extension("BOB " + "(" * 5000) == ("BOB " + "(" * 5000, ())


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("WEBVTT\nKind: captions\n\n00:01.000 --> 00:02.000\nhi\n", "vtt"),
        ("[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\n", "ass"),
        ("[Script Info]\nScriptType: v4.00\n\n[V4 Styles]\n", "ssa"),
        ("0:00:01.000,0:00:02.000\nhi\n", "sbv"),
        ("{1}{1}25\n{25}{50}hi\n", "microdvd"),
        ('<?xml version="1.0"?>\n<FinalDraft DocumentType="Script">', "fdx"),
        ("\n" * 8000 + "HERO: hi\n", "text"),
        ("ИВАН\nДобрый вечер.\n", "fountain"),
        ("EXT. PIER - NIGHT\n\nRain.\n", "fountain"),
    ],
)
def test_sniff_every_format(text: str, fmt: str) -> None:
    assert sniff(text) == fmt
