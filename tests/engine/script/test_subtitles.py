"""Subtitles as real tools write them: yt-dlp WebVTT, SDH SRT, ASS, SBV, MicroDVD; speaker
conventions, sound descriptions and markup that must never be spoken."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script import load_script

DATA = Path(__file__).resolve().parents[2] / "data" / "subtitles"


def _load(tmp_path: Path, name: str, text: str) -> Script:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return load_script(f)


def _said(s: Script) -> list[tuple[str, str]]:
    return [(c.role, c.text) for c in s.cues]


def _srt(*cues: str) -> str:
    return "\n".join(
        f"{k}\n00:00:{k:02d},000 --> 00:00:{k:02d},900\n{text}\n" for k, text in enumerate(cues, 1)
    )


def test_ytdlp_auto_captions(tmp_path: Path) -> None:
    """Header lines, inline word timings, rolling repeats and 10 ms flashes: said once."""
    vtt = (
        "WEBVTT\nKind: captions\nLanguage: en\n\n"
        "00:00:00.320 --> 00:00:02.800 align:start position:0%\n"
        "today<00:00:00.560><c> we</c><00:00:01.040><c> tune</c><00:00:01.300><c> the</c>\n\n"
        "00:00:02.800 --> 00:00:02.810 align:start position:0%\ntoday we tune the\n\n\n"
        "00:00:02.810 --> 00:00:05.200 align:start position:0%\ntoday we tune the\n"
        "old<00:00:03.200><c> radio</c><00:00:03.680><c> &amp;</c><00:00:03.900><c> antenna</c>\n"
    )
    s = _load(tmp_path, "talk.en.vtt", vtt)
    assert _said(s) == [("NARRATOR", "today we tune the"), ("NARRATOR", "old radio & antenna")]
    assert [c.line for c in s.cues] == [6, 13]


def test_vtt_structure_is_not_spoken(tmp_path: Path) -> None:
    vtt = (
        "WEBVTT - a title\n\nSTYLE\n::cue { color: yellow }\n\nNOTE written by hand\nover two lines\n\n"
        "intro\n00:01.000 --> 00:02.000\n<v Ada>Hello.\n00:02.000 --> 00:03.000\n<v Bob>Hi, Ada.\n"
    )  # the second timing line follows text without a blank line
    s = _load(tmp_path, "x.vtt", vtt)
    assert _said(s) == [("ADA", "Hello."), ("BOB", "Hi, Ada.")]


def test_two_voices_in_one_cue_and_labels(tmp_path: Path) -> None:
    vtt = "WEBVTT\n\n00:00:01.000 --> 00:00:05.000\n<v Ada>Are you there?</v> <v.loud Bob>Yes!</v>\n"
    s = _load(tmp_path, "x.vtt", vtt)
    assert _said(s) == [("ADA", "Are you there?"), ("BOB", "Yes!")]
    assert [(c.start_s, c.end_s) for c in s.cues] == [(1.0, 4.0), (4.0, 5.0)]  # slot shared by words
    srt = _srt(
        "John: Where were you?", "SPEAKER_00: Out.", "John: Out where?", "JOHN (V.O.): I never asked again.",
        ">> MARY: Good evening.", "Иван: Добрый вечер.", "Иван: Как дела?", "李雷：你好。",
    )  # fmt: skip
    s = _load(tmp_path, "x.srt", srt)
    assert _said(s) == [
        ("JOHN", "Where were you?"), ("SPEAKER_00", "Out."), ("JOHN", "Out where?"),
        ("JOHN", "I never asked again."),
        ("MARY", "Good evening."), ("ИВАН", "Добрый вечер."), ("ИВАН", "Как дела?"), ("李雷", "你好。"),
    ]  # fmt: skip
    assert s.cues[3].hints == ("V.O.",)


def test_dialogue_dashes_are_turns(tmp_path: Path) -> None:
    srt = _srt("[ANN] Coming?", "- Where to?\n- The lake.", "- Now? - Yes, now.", "- KAI: Wait.\n- ANN: No.")
    s = _load(tmp_path, "x.srt", srt)
    assert _said(s) == [
        ("ANN", "Coming?"),
        ("NARRATOR", "Where to?"), ("ANN", "The lake."),
        ("NARRATOR", "Now?"), ("ANN", "Yes, now."),
        ("KAI", "Wait."), ("ANN", "No."),
    ]  # fmt: skip
    assert not any(c.text.startswith("-") for c in s.cues)


def test_untagged_cue_rule(tmp_path: Path) -> None:
    """Untagged: the previous speaker only when it finishes that speaker's sentence."""
    s = _load(tmp_path, "x.srt", _srt("[KAI] If we run now,", "we make the gate.", "Gates close at nine."))
    assert _said(s) == [
        ("KAI", "If we run now,"), ("KAI", "we make the gate."), ("NARRATOR", "Gates close at nine."),
    ]  # fmt: skip
    # a file that marks each change of speaker with '>>' keeps the speaker until the next one
    s = _load(tmp_path, "y.srt", _srt(">> KAI: Run.", "The gate closes.", ">> Why?", ">> KAI: Nine."))
    assert _said(s) == [("KAI", "Run."), ("KAI", "The gate closes."), ("VOICE 2", "Why?"), ("KAI", "Nine.")]


def test_sdh_descriptions_never_spoken_nor_roles(tmp_path: Path) -> None:
    srt = _srt(
        "[laughs]", "[RIN] [door slams] Who's there?", "(door creaks)\n[DOOR SLAMS]",
        "♪ Oh, the road is long ♪", "[ríen emocionadas] ¡Sí!", "[KAI] (whispering) Over here.",
        "#sobbing# I can't.", "[MUSIC PLAYING]",
    )  # fmt: skip
    s = _load(tmp_path, "x.srt", srt)
    assert _said(s) == [
        ("RIN", "Who's there?"), ("NARRATOR", "¡Sí!"), ("KAI", "Over here."), ("NARRATOR", "I can't."),
    ]  # fmt: skip
    assert s.cues[2].hints == ("whispering",)
    assert list(s.roles) == ["RIN", "NARRATOR", "KAI"]
    notes = [(a.text, a.start_s) for a in s.annotations]
    assert ("laughs", 1.0) in notes and ("DOOR SLAMS", 3.0) in notes and ("MUSIC PLAYING", 8.0) in notes
    assert ("♪ Oh, the road is long ♪", 4.0) in notes


def test_markup_and_entities_not_spoken(tmp_path: Path) -> None:
    srt = _srt(
        "{\\an8}[ANN] Up here!", "Line one\\Nline two\\hend.", "Tom &amp; Jerry &gt; cats.",
        "<i>Soft</i> <font color=\"#fff\">words</font>.",
    )  # fmt: skip
    s = _load(tmp_path, "x.srt", srt)
    assert [c.text for c in s.cues] == [
        "Up here!",
        "Line one line two end.",
        "Tom & Jerry > cats.",
        "Soft words.",
    ]


def test_ass_from_pysubs2_suite() -> None:
    s = load_script(DATA / "pysubs2_ttml_example.ass")
    assert s.format == "ass"
    assert len(s.cues) == 11 and list(s.roles) == ["NARRATOR"]
    assert s.cues[1].text == "that the image formed on the Retina should be inverted?"
    assert (s.cues[0].line, s.cues[0].start_s, s.cues[0].end_s) == (15, 0.76, 3.45)


def test_ass_actor_comment_drawing_and_signs(tmp_path: Path) -> None:
    ass = (
        "[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname, Fontsize\n"
        "Style: Default,Arial,20\nStyle: Signs,Arial,20\n\n[Events]\n"
        "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
        "Dialogue: 0,0:00:01.00,0:00:02.00,Default,Haruhi,0,0,0,,{\\i1}Kyon!{\\i0}\\NListen.\n"
        "Comment: 0,0:00:02.00,0:00:03.00,Default,Kyon,0,0,0,,an editor's note\n"
        "Dialogue: 0,0:00:02.00,0:00:03.00,Default,,0,0,0,,{\\p1}m 0 0 l 100 0 100 100{\\p0}\n"
        "Dialogue: 0,0:00:02.00,0:00:03.00,Signs,,0,0,0,,NORTH HIGH SCHOOL\n"
        "Dialogue: 0,0:00:03.00,0:00:04.00,Default,Kyon,0,0,0,,What now?\n"
    )
    s = _load(tmp_path, "x.ass", ass)
    assert _said(s) == [("HARUHI", "Kyon! Listen."), ("KYON", "What now?")]
    assert [c.line for c in s.cues] == [11, 15]


def test_sbv_and_microdvd(tmp_path: Path) -> None:
    sbv = "0:00:01.000,0:00:03.500\n>> ANN: Welcome back.\n\n0:00:04.000,0:00:05.000\nThanks.\n"
    s = _load(tmp_path, "x.sbv", sbv)
    assert [(c.role, c.text, c.start_s, c.line) for c in s.cues] == [
        ("ANN", "Welcome back.", 1.0, 2), ("ANN", "Thanks.", 4.0, 5),
    ]  # fmt: skip
    s = _load(tmp_path, "x.sub", "{1}{1}25\n{25}{50}KAI: Run!|Now!\n{75}{100}- Why?|- Because.\n")
    assert [(c.role, c.text, c.start_s) for c in s.cues] == [
        ("KAI", "Run! Now!", 1.0), ("NARRATOR", "Why?", 3.0), ("KAI", "Because.", 3.5),
    ]  # fmt: skip
    with pytest.raises(ScriptError, match="MicroDVD file without a frame rate"):
        _load(tmp_path, "y.sub", "{25}{50}Run!\n")


@pytest.mark.parametrize("digits", [3, 305, 4301, 20000])
def test_huge_hours_are_script_errors(tmp_path: Path, digits: int) -> None:
    with pytest.raises(ScriptError, match="line 2: bad timing"):
        _load(tmp_path, "x.srt", f"1\n{'9' * digits}:00:01,000 --> 00:00:02,000\nHi.\n")


def test_sound_only_file_says_no_dialogue(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="no dialogue found"):
        _load(tmp_path, "x.srt", _srt("[laughs]", "♪ ♪"))


def test_srt_cue_without_blank_line_before_next(tmp_path: Path) -> None:
    srt = "1\n00:00:01,000 --> 00:00:02,000\n[ANN] Hello.\n2\n00:00:02,000 --> 00:00:03,000\n[BOB] Hi.\n"
    s = _load(tmp_path, "x.srt", srt)
    assert [(c.role, c.text, c.line) for c in s.cues] == [("ANN", "Hello.", 3), ("BOB", "Hi.", 6)]


def test_ass_style_pysubs2_warns_about_is_still_read(tmp_path: Path) -> None:
    """pysubs2 warns on a style field it cannot parse (alignment 'x'); the line is read."""
    fields = (
        "Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, "
        "Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, "
        "Alignment, MarginL, MarginR, MarginV, Encoding"
    )
    colours = "&H00FFFFFF,&H000000FF,&H00000000,&H00000000"
    style = f"Default,Arial,20,{colours},0,0,0,0,100,100,0,0,1,2,2,x,10,10,10,1"  # alignment 'x'
    ass = (
        f"[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: {fields}\nStyle: {style}\n\n"
        "[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
        "Dialogue: 0,0:00:01.00,0:00:02.00,Default,Ann,0,0,0,,Hello.\n"
    )
    assert _said(_load(tmp_path, "x.ass", ass)) == [("ANN", "Hello.")]
