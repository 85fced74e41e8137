"""Import round 2 on real files nobody here wrote (tests/data/SOURCES.md): a legacy
code-page film SRT, Aegisub karaoke, SDH in two languages, a YouTube SBV with [br], a
speech longer than one line may be; strictness where a file is broken; the import report
(CLI and JSON) that says what was skipped, guessed and split before anything is voiced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pysubs2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.errors import CastError, ScriptError
from engine.core.types import Script
from engine.project import read_project
from engine.script import ImportOptions, load_script
from engine.script.limits import MAX_LINE_CHARS, split_long
from engine.script.options import chosen_options

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
SUBS = DATA / "subtitles"


def _said(s: Script) -> list[tuple[str, str]]:
    return [(c.role, c.text) for c in s.cues]


def _load(tmp_path: Path, name: str, text: str, **options: object) -> Script:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return load_script(f, ImportOptions(**options) if options else None)  # type: ignore[arg-type]


def _srt(*cues: str) -> str:
    return "\n".join(
        f"{k}\n00:00:{k:02d},000 --> 00:00:{k:02d},900\n{text}\n" for k, text in enumerate(cues, 1)
    )


# --- encodings -----------------------------------------------------------------------


def test_windows_1252_film_srt_is_read_with_its_guess_reported() -> None:
    path = SUBS / "pysrt_windows-1252.srt"
    raw = path.read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")  # the file really is in a legacy code page
    s = load_script(path)
    assert (s.facts.encoding, s.facts.how) == ("cp1252", "guessed")
    assert 0 < s.facts.confidence <= 1
    assert s.facts.first_line == "CE FILM RELATE DES ÉVÉNEMENTS"
    reference = pysubs2.load(str(path), encoding="cp1252").events
    assert len(reference) == 153
    # every event is a line; the 9 with two dialogue dashes are two lines each
    two_turns = [e for e in reference if sum(ln.startswith("-") for ln in e.plaintext.split("\n")) == 2]
    assert len(two_turns) == 9 and len(s.cues) == 153 + 9
    dashes = sum(e.plaintext.count("- ") for e in two_turns)
    words = sum(len(e.plaintext.split()) for e in reference) - dashes
    assert sum(len(c.text.split()) for c in s.cues) == words
    assert "Ça" in " ".join(c.text for c in s.cues) and "\ufffd" not in " ".join(c.text for c in s.cues)


def test_a_chosen_encoding_wins_and_a_wrong_one_names_the_line(tmp_path: Path) -> None:
    path = SUBS / "pysrt_windows-1252.srt"
    chosen = load_script(path, ImportOptions(encoding="latin-1"))
    assert (chosen.facts.encoding, chosen.facts.how, chosen.facts.confidence) == ("latin-1", "chosen", 1.0)
    assert _said(chosen) == _said(load_script(path))  # no cp1252-only byte in this file
    with pytest.raises(ScriptError, match=r"pysrt_windows-1252.srt, line \d+: bytes .* are not valid utf-8"):
        load_script(path, ImportOptions(encoding="utf-8"))
    with pytest.raises(CastError, match="unknown encoding 'klingon'"):
        ImportOptions(encoding="klingon")


def test_a_utf8_file_is_not_guessed(tmp_path: Path) -> None:
    s = _load(tmp_path, "x.srt", _srt("Ça va, Zoë?"))
    assert (s.facts.encoding, s.facts.how, s.facts.confidence) == ("utf-8", "utf-8", 1.0)


# --- ASS/SSA: karaoke, signs, styles ---------------------------------------------------


def test_aegisub_karaoke_is_never_voiced() -> None:
    """PyonFX's Dango Daikazoku ED: romaji karaoke (\\k) and its English translation, both
    song styles: nothing to voice, and the message says how to choose styles."""
    path = SUBS / "pyonfx_dangos_ed_karaoke.ass"
    with pytest.raises(ScriptError, match="no dialogue style found among ED Romaji, ED English; choose"):
        load_script(path)
    s = load_script(path, ImportOptions(styles=frozenset({"ED English"})))
    events = pysubs2.load(str(path)).events
    reference = [e for e in events if e.style == "ED English" and e.type == "Dialogue"]
    assert len(s.cues) == len(reference) == 9
    assert not any("\\k" in e.text for e in reference)
    assert {u.name: (u.events, u.dialogue, u.reason) for u in s.facts.styles} == {
        "ED Romaji": (9, False, "chosen"), "ED English": (9, True, "chosen"),
    }  # fmt: skip
    skipped = [n.reason for n in s.facts.notes if n.kind == "skipped"]
    assert skipped.count("karaoke") == 9  # the \k lines stay out even when chosen by style


def test_karaoke_romaji_kanji_and_translation_styles() -> None:
    path = SUBS / "pyonfx_romaji_kanji_translation.ass"
    with pytest.raises(ScriptError, match="no dialogue style found among Romaji, Kanji, Translation"):
        load_script(path)
    s = load_script(path, ImportOptions(styles=frozenset({"translation"})))  # any case
    reference = [e for e in pysubs2.load(str(path)).events if e.style == "Translation"]
    assert [c.text for c in s.cues] == [e.plaintext.replace("\n", " ") for e in reference]
    assert len(s.cues) == 2


ASS_HEAD = (
    "[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname, Fontsize\n"
    "Style: Default,Arial,20\nStyle: Title1,Arial,20\nStyle: Place,Arial,20\nStyle: Flashback,Arial,20\n\n"
    "[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
)


def test_ass_events_are_classified_and_reported(tmp_path: Path) -> None:
    ass = ASS_HEAD + (
        "Dialogue: 0,0:00:01.00,0:00:02.00,Default,Rin,0,0,0,,Where were you?\n"  # line 13
        "Dialogue: 0,0:00:01.00,0:00:02.00,Title1,,0,0,0,,EPISODE ONE\n"  # 14: a title style
        "Dialogue: 0,0:00:02.00,0:00:03.00,Default,,0,0,0,,{\\k20}Kan{\\k15}chi{\\k30}ga\n"  # 15
        "Dialogue: 0,0:00:02.00,0:00:03.00,Default,,0,0,0,fx,Kanchiga\n"  # 16: templater output
        "Dialogue: 0,0:00:03.00,0:00:04.00,Place,,0,0,0,,{\\pos(320,40)}NORTH STATION\n"  # 17
        "Dialogue: 0,0:00:03.00,0:00:04.00,Place,,0,0,0,,{\\move(0,0,10,10)}PLATFORM 9\n"  # 18
        "Comment: 0,0:00:03.00,0:00:04.00,Default,,0,0,0,,check timing\n"  # 19
        "Dialogue: 0,0:00:04.00,0:00:05.00,Flashback,Kai,0,0,0,,Out.\n"  # 20
    )
    s = _load(tmp_path, "x.ass", ass)
    assert _said(s) == [("RIN", "Where were you?"), ("KAI", "Out.")]
    styles = {u.name: (u.events, u.dialogue, u.reason) for u in s.facts.styles}
    assert styles == {
        "Default": (3, True, "its name"),
        "Title1": (1, False, "its name ('title')"),
        "Place": (2, False, "placed on screen (2 of 2 lines): signs"),
        "Flashback": (1, True, "speaker names (1 of 1 lines)"),
    }
    skipped = sorted((n.line, n.reason) for n in s.facts.notes if n.kind == "skipped")
    other = "not a dialogue style"
    assert skipped == [
        (14, other),
        (15, "karaoke"),
        (16, "karaoke"),
        (17, other),
        (18, other),
        (19, "comment"),
    ]
    chosen = _load(tmp_path, "x.ass", ass, styles=frozenset({"Default", "Place"}))
    signs = [("NARRATOR", "NORTH STATION"), ("NARRATOR", "PLATFORM 9")]
    assert _said(chosen) == [("RIN", "Where were you?"), *signs]
    assert chosen_options(chosen.facts) == ImportOptions(None, frozenset({"Default", "Place"}))


def test_ass_errors_name_the_line(tmp_path: Path) -> None:
    ass = ASS_HEAD + (
        "Dialogue: 0,0:00:01.00,0:00:02.00,Default,Rin,0,0,0,,Fine.\n"
        "Dialogue: 0,0:0x:01.00,0:00:02.00,Default,Rin,0,0,0,,Broken.\n"
    )
    with pytest.raises(ScriptError, match=r"x.ass, line 14: not a readable ASS file"):
        _load(tmp_path, "x.ass", ass)


# --- SDH -------------------------------------------------------------------------------


def test_sdh_english_streaming_lines() -> None:
    """subby's SDH test lines: a label alone on its line, sounds in brackets and capitals,
    songs, an inline label after a dash. '(Alice)' names no label the file uses elsewhere:
    a delivery note, not a speaker (a name in parentheses counts only when it is one)."""
    s = load_script(SUBS / "subby_sdh_example_1.srt")
    assert [(c.line, c.role, c.text) for c in s.cues] == [
        (3, "RADIO ANNOUNCER", '"W" who?'),
        (26, "NARRATOR", "It's zoo time!"),
        (31, "NARRATOR", "Spooky!"),
        (35, "JOHN", "Hmm? Hello!"),
        (40, "NARRATOR", "I did on magnets this summer."),
        (45, "NARRATOR", "Boo!"),
        (45, "STUDENT", "No, thanks."),
    ]
    sounds = [a.text for a in s.annotations]
    assert "continuous gunfire" in sounds and "Kids cheering" in sounds and "ELECTRICITY ZAPS" in sounds
    assert s.facts.notes == ()


def test_sdh_spanish_sounds_signs_and_labels() -> None:
    s = load_script(SUBS / "sdh_es.srt")
    assert [(c.role, c.text, c.hints) for c in s.cues] == [
        ("NARRATOR", "¡Al suelo!", ()),
        ("VICTORIA", "¿Dónde estás?", ()),
        ("MARÍA", "¡Corre!", ()),
        ("ALBA", "Aquí estoy.", ("joven",)),
        ("HOMBRE", "¿Quién anda ahí?", ()),
        ("NARRATOR", "¿Vienes?", ()),
        ("HOMBRE", "Sí, ahora.", ()),
    ]
    assert [a.text for a in s.annotations] == [
        "CRISTAL SE ROMPE", "ADVERTENCIA: no entrar.", "SUSPIRA", "RISAS", "♪ Bajo el mar ♪",
    ]  # fmt: skip
    guesses = [(n.line, n.kind) for n in s.facts.notes]
    assert guesses == [(8, "guess"), (22, "guess"), (26, "guess")]  # sign, qualified, person word


def test_sdh_english_sounds_signs_and_labels(tmp_path: Path) -> None:
    srt = _srt(
        "[GLASS SHATTERS] Get down!", "WARNING: do not enter.", "[Victoria]\nWhere are you?", "MARY:\nRun!",
        "[young Alba] I'm here.", "[man] Who goes there?", "[WATER DRIPPING] Quiet.", "(Angrily) Out!",
    )  # fmt: skip
    s = _load(tmp_path, "x.srt", srt)
    assert [(c.role, c.text, c.hints) for c in s.cues] == [
        ("NARRATOR", "Get down!", ()), ("VICTORIA", "Where are you?", ()), ("MARY", "Run!", ()),
        ("ALBA", "I'm here.", ("young",)), ("MAN", "Who goes there?", ()), ("NARRATOR", "Quiet.", ()),
        ("NARRATOR", "Out!", ("Angrily",)),
    ]  # fmt: skip
    assert set(s.roles) == {"NARRATOR", "VICTORIA", "MARY", "ALBA", "MAN"}
    assert "WARNING: do not enter." in [a.text for a in s.annotations]


def test_a_label_alone_at_a_cue_end_names_the_next_cue(tmp_path: Path) -> None:
    s = _load(tmp_path, "x.srt", _srt("[KAI] Listen.\n[Ann]", "I hear it.", "[young Kai]", "Me too."))
    assert [(c.role, c.text, c.hints) for c in s.cues] == [
        ("KAI", "Listen.", ()), ("ANN", "I hear it.", ()), ("KAI", "Me too.", ("young",)),
    ]  # fmt: skip


def test_sentences_and_descriptions_are_not_labels(tmp_path: Path) -> None:
    """What the label rules must leave alone: a shouted sentence ending in a colon, a lone
    sound gerund, a delivery adjective in parentheses, gerund and prepositional asides."""
    srt = _srt(
        "AND THE WINNER IS:\nMARGARET!", "[SNIFFING]\nI'm fine.", "(Sarcastic) Oh, great.",
        "Well, I (sniffing) think so.", "He said it (in Spanish) twice.", "[Ann] (Ann) Hi.",
    )  # fmt: skip
    s = _load(tmp_path, "x.srt", srt)
    assert [(c.role, c.text) for c in s.cues] == [
        ("NARRATOR", "AND THE WINNER IS: MARGARET!"), ("NARRATOR", "I'm fine."), ("NARRATOR", "Oh, great."),
        ("NARRATOR", "Well, I think so."), ("NARRATOR", "He said it twice."), ("ANN", "Hi."),
    ]  # fmt: skip
    assert s.cues[2].hints == ("Sarcastic",)
    assert "SNIFFING" not in s.roles and "SARCASTIC" not in s.roles


def test_a_style_named_like_a_song_with_speaker_names_is_dialogue(tmp_path: Path) -> None:
    ass = ASS_HEAD.replace("Style: Place,Arial,20", "Style: Ed,Arial,20") + (
        "Dialogue: 0,0:00:01.00,0:00:02.00,Ed,Ed,0,0,0,,My name is Ed.\n"
        "Dialogue: 0,0:00:02.00,0:00:03.00,Ed,Ed,0,0,0,,Hello.\n"
    )
    s = _load(tmp_path, "x.ass", ass)
    assert _said(s) == [("ED", "My name is Ed."), ("ED", "Hello.")]


def test_odd_encodings_and_marks_are_script_errors(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("ALICE: Hello.\n", encoding="utf-8")
    for codec in ("punycode", "idna", "base64"):
        with pytest.raises(CastError, match="unknown encoding"):
            ImportOptions(encoding=codec)
    f.write_bytes(b"\xef\xbb\xbfALICE: Caf\xe9.\n")  # a UTF-8 mark on cp1252 bytes
    with pytest.raises(ScriptError, match="marked UTF-8 but bytes e9"):
        load_script(f)
    ass = tmp_path / "y.ass"
    ass.write_text("[Script Info]\n\n[V4+ Styles]\nFormat: Name\nStyle: Default\n\n[Events]\n"
                   "Format: Text\nDialogue: hello\n", encoding="utf-8")  # fmt: skip
    with pytest.raises(ScriptError):
        load_script(ass)


# --- strictness ------------------------------------------------------------------------


def test_a_cue_without_timing_is_an_error_never_spoken(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"x.srt, line 6: cue 2 has no timing line"):
        _load(tmp_path, "x.srt", "1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\n2\nBye now.\n")
    with pytest.raises(ScriptError, match=r"line 2: bad timing '00:00:01,000 -> 00:00:02,000'"):
        _load(tmp_path, "x.srt", "1\n00:00:01,000 -> 00:00:02,000\nHello there.\n")
    with pytest.raises(ScriptError, match=r"x.sbv, line 4: bad timing '0:00:04.000;0:00:05.000'"):
        _load(tmp_path, "x.sbv", "0:00:01.000,0:00:03.000\nHi.\n\n0:00:04.000;0:00:05.000\nBad.\n")


def test_arrows_in_words_zero_length_and_markup_lookalikes(tmp_path: Path) -> None:
    srt = _srt("Trains run London --> Paris.", "Is 2<3,5>1 true?", "I was (fully) aware.", "I (sighs) know.")
    srt += "\n5\n00:00:09,000 --> 00:00:09,000\nNever heard.\n"
    s = _load(tmp_path, "x.srt", srt)
    assert [c.text for c in s.cues] == [
        "Trains run London --> Paris.", "Is 2<3,5>1 true?", "I was fully aware.", "I know.",
    ]  # fmt: skip
    assert [(n.line, n.reason) for n in s.facts.notes] == [(19, "zero length")]


def test_text_after_a_stray_blank_line_joins_its_cue_with_a_warning(tmp_path: Path) -> None:
    s = _load(tmp_path, "x.srt", "1\n00:00:01,000 --> 00:00:02,000\nHello\n\nthere.\n")
    assert _said(s) == [("NARRATOR", "Hello there.")]
    assert [(n.line, n.kind) for n in s.facts.notes] == [(5, "warning")]


def test_sbv_line_breaks_are_spaces() -> None:
    """subsrt's fixture, YouTube's own SBV example: `[br]` between two words."""
    s = load_script(SUBS / "subsrt_sample.sbv")
    assert [(c.line, c.role, c.text) for c in s.cues] == [
        (2, "ALICE", "Hi, my name is Alice Miller and this is John Brown"),
        (5, "JOHN", "and we're the owners of Miller Bakery."),
        (8, "ALICE", "Today we'll be teaching you how to make our famous chocolate chip cookies!"),
        (15, "ALICE", "Okay, so we have all the ingredients laid out here"),
    ]
    assert [a.text for a in s.annotations] == ["intro music"]


def test_webvtt_words_after_a_closed_voice_are_not_that_voice(tmp_path: Path) -> None:
    vtt = "WEBVTT\n\n00:01.000 --> 00:03.000\n<v Ada>Hello.</v> <i>Who is there?</i>\n"
    assert _said(_load(tmp_path, "x.vtt", vtt)) == [("ADA", "Hello."), ("VOICE 2", "Who is there?")]


def test_fountain_full_width_parenthetical_and_space_only_lines(tmp_path: Path) -> None:
    text = (
        "INT. ROOM - DAY\n\nANNA\n（小声で）\nHello there.\n   \nBOB\nHi, Anna.\n\n"
        "CARL\nOne.\n\t\nTwo.\n\nDANA\nKeep\n  \ntogether.\n"
    )
    s = _load(tmp_path, "x.fountain", text)
    assert [(c.role, c.text, c.hints) for c in s.cues] == [
        ("ANNA", "Hello there.", ("小声で",)), ("BOB", "Hi, Anna.", ()), ("CARL", "One. Two.", ()),
        ("DANA", "Keep together.", ()),
    ]  # fmt: skip
    assert [(n.line, n.kind) for n in s.facts.notes] == [(6, "warning"), (12, "warning")]


# --- long paragraphs -------------------------------------------------------------------


def test_a_speech_longer_than_a_line_is_split_never_refused() -> None:
    """A 7,026-character speech (the GPL's preamble, verbatim, as one paragraph)."""
    path = DATA / "fountain" / "long_speech.fountain"
    paragraph = path.read_text(encoding="utf-8").split("\n\n")[3].split("\n", 2)[2]
    assert len(paragraph) == 7026
    s = load_script(path)
    assert [c.role for c in s.cues] == ["CLERK", "READER", "READER", "CLERK"]
    pieces = [c.text for c in s.cues if c.role == "READER"]
    assert all(len(p) <= MAX_LINE_CHARS for p in pieces) and " ".join(pieces) == paragraph
    assert all(p.endswith(".") for p in pieces)  # cut at a sentence end
    assert [(n.line, n.kind) for n in s.facts.notes] == [(9, "split")]
    assert [c.index for c in s.cues] == [0, 1, 2, 3]


def test_timed_pieces_share_the_slot(tmp_path: Path) -> None:
    words = " ".join(f"Sentence number {k} is here." for k in range(300))  # ~8,000 characters
    s = _load(tmp_path, "x.srt", f"1\n00:00:10,000 --> 00:01:10,000\n{words}\n")
    assert len(s.cues) == 2 and s.cues[0].start_s == 10.0 and s.cues[-1].end_s == pytest.approx(70.0)
    assert s.cues[0].end_s == pytest.approx(s.cues[1].start_s)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(st.sampled_from([*"ab .,!?。;", "xyz ", "longwordwithout"]), max_size=120).map("".join),
    limit=st.integers(8, 60),
)
def test_split_long_keeps_every_word_within_the_limit(text: str, limit: int) -> None:
    pieces = split_long(text.strip(), limit) if text.strip() else []
    assert all(len(p) <= limit for p in pieces)
    assert "".join("".join(pieces).split()) == "".join(text.split())


# --- the report, the CLI, the project ----------------------------------------------------


def _troupe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


@pytest.mark.slow
def test_import_report_cli_text_and_json(tmp_path: Path) -> None:
    path = SUBS / "pysrt_windows-1252.srt"
    proc = _troupe("import", str(path), "--report")
    assert proc.returncode == 0, proc.stderr
    assert "cp1252 (guessed, confidence" in proc.stdout
    assert "first line: 'CE FILM RELATE DES ÉVÉNEMENTS'" in proc.stdout
    assert "162 lines, 2 roles, 869 words" in proc.stdout
    proc = _troupe("import", str(SUBS / "pyonfx_dangos_ed_karaoke.ass"), "--json", "--styles", "ED English")
    report = json.loads(proc.stdout)
    assert report["cues"] == 9 and report["skipped"] == {"karaoke": 9}
    styles = [(s["name"], s["dialogue"]) for s in report["styles"]]
    assert styles == [("ED Romaji", False), ("ED English", True)]
    proc = _troupe("import", str(SUBS / "pyonfx_dangos_ed_karaoke.ass"))
    assert proc.returncode == 1 and "no dialogue style found" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = _troupe("import", str(path), "--encoding", "klingon")
    assert proc.returncode == 2 and "unknown encoding 'klingon'" in proc.stderr


def test_a_project_keeps_the_import_choices(tmp_path: Path) -> None:
    project = tmp_path / "show.json"
    project.write_text(json.dumps({
        "troupe_project": 1, "script": str(SUBS / "pysrt_windows-1252.srt"), "cast": {},
        "import": {"encoding": "latin-1", "styles": ["Default"]},
    }), encoding="utf-8")  # fmt: skip
    assert read_project(project).import_options == ImportOptions("latin-1", frozenset({"Default"}))
    project.write_text(json.dumps({"script": "x.srt", "cast": {}, "import": {"encoding": 5}}))
    with pytest.raises(CastError, match=r"'import'\.encoding: expected a codec name"):
        read_project(project)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    encoding=st.sampled_from([None, "utf-8", "cp1252", "latin-1", "utf-16", "shift_jis", "cp1251"]),
    styles=st.none() | st.frozensets(st.sampled_from(["Default", "ED English", "", "x" * 300]), max_size=3),
    name=st.sampled_from(["pyonfx_dangos_ed_karaoke.ass", "pysrt_windows-1252.srt", "sdh_es.srt"]),
)
def test_any_choice_imports_or_says_why(
    encoding: str | None, styles: frozenset[str] | None, name: str
) -> None:
    try:
        assert isinstance(load_script(SUBS / name, ImportOptions(encoding, styles)), Script)
    except ScriptError as err:
        assert name in str(err)
