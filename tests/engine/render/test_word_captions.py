"""Word-level captions and the listening report from known word times (no model needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pysubs2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.asr import Word
from engine.asr.align import word_times
from engine.render.captions import karaoke_ass, word_srt, word_vtt, write_captions
from engine.render.report import build_report, summary_lines
from engine.render.result import LineNotes, LineTiming

LINES = [
    LineTiming(0, "IRIS", "Hold the line.", 1.0, 1.2,
               notes=LineNotes(wer=0.0, heard="Hold the line.",
                               words=(("Hold", 0.1, 0.4), ("the", 0.45, 0.6), ("line.", 0.6, 1.1)))),
    LineTiming(1, "OWEN", "Go <now>.", 3.0, 0.8,
               notes=LineNotes(wer=0.5, heard="Go.", check=True,
                               words=(("Go", 0.0, 0.3), ("<now>.", 0.3, 0.7)),
                               fit="stretch", misfit_before_s=0.4, misfit_after_s=-0.01, rate=1.3,
                               stretch=1.1)),
    LineTiming(2, "OWEN", "Lost.", 5.0, 0.0, error="backend failed"),
]  # fmt: skip


def test_word_srt_has_a_cue_per_word_on_the_show_timeline() -> None:
    srt = word_srt(LINES)
    subs = pysubs2.SSAFile.from_string(srt, format_="srt")
    assert [e.text for e in subs][:4] == ["Hold", "the", "line.", "Go"] and len(subs) == 5
    assert "00:00:03,300 --> 00:00:03,700\n<now>.\n" in srt
    assert [(e.start, e.end) for e in subs][:2] == [(1100, 1400), (1450, 1600)]


def test_vtt_words_carry_their_timestamps_inside_the_line() -> None:
    vtt = word_vtt(LINES)
    assert vtt.startswith("WEBVTT")
    assert (
        "00:00:01.000 --> 00:00:02.200\n<v IRIS><00:00:01.100>Hold <00:00:01.450>the <00:00:01.600>line."
        in vtt
    )
    assert "&lt;now&gt;." in vtt  # markup in the script is escaped
    assert "Lost." not in vtt


def test_ass_karaoke_syllables_add_up_to_the_last_word_end() -> None:
    events = list(karaoke_ass(LINES))
    assert [e.name for e in events] == ["IRIS", "OWEN"]
    ks = [int(k) for k in re.findall(r"\\k(\d+)", events[0].text)]
    assert sum(ks) == 110 and events[0].text.startswith("{\\k10}{\\k30}Hold")


def test_cue_sheet_json_and_report(tmp_path: Path) -> None:
    paths = write_captions(tmp_path / "mix.wav", LINES, tmp_path / "script.fountain")
    assert [p.name for p in paths] == ["mix.words.srt", "mix.words.vtt", "mix.karaoke.ass", "mix.cues.json"]
    rows = json.loads(paths[3].read_text())
    assert rows[1]["words"][1] == {"text": "<now>.", "start_s": 3.3, "end_s": 3.7}
    assert rows[1]["check"] is True and rows[1]["fit"] == "stretch"
    report = build_report(LINES)
    assert report["wer_by_role"]["OWEN"] == {"mean": 0.5, "max": 0.5, "lines": 1}
    assert [f["cue"] for f in report["flagged"]] == [1]
    assert report["slots"]["misfit_before"]["max_ms"] == 400.0 and report["slots"]["stretch_max"] == 1.1
    assert any(row.startswith("CHECK cue 1") for row in summary_lines(report))


times = st.floats(min_value=-1.0, max_value=6.0, allow_nan=False)
heard_words = st.lists(st.builds(lambda t, a, d: Word(t, a, a + d), st.sampled_from(["a", "b", "12th", "c."]),
                                 times, st.floats(0.0, 1.0)), max_size=8)  # fmt: skip


@given(st.lists(st.sampled_from(["A", "b,", "12th", "—", "c."]), min_size=1, max_size=10), heard_words,
       st.floats(0.1, 5.0))  # fmt: skip
def test_word_times_are_monotonic_and_inside_the_line(
    shown: list[str], heard: list[Word], dur: float
) -> None:
    out = word_times(" ".join(shown), sorted(heard, key=lambda w: w.start_s), dur)
    assert [w.text for w in out] == shown
    t = 0.0
    for w in out:
        assert t - 1e-9 <= w.start_s <= w.end_s <= dur + 1e-9
        t = w.end_s


def test_a_word_missed_at_the_start_gets_time_from_the_line_start() -> None:
    out = word_times("Nowhere you know", [Word("you", 0.5, 0.7), Word("know", 0.7, 1.0)], 1.2)
    assert out[0].start_s == 0.0 and out[0].end_s == pytest.approx(0.5)


def test_a_cue_starts_where_its_speech_starts_not_at_its_pause(tmp_path: Path) -> None:
    """`(beat)` puts 0.6 s of silence before a line: the cue sheet's time is the speech's
    onset, and the mix is silent before it and speaking just after it."""
    import soundfile as sf

    from engine.cast import Cast
    from engine.render import render_script
    from engine.script import load_script
    from engine.synthesis.espeak import EspeakSynthesizer

    path = tmp_path / "beat.fountain"
    path.write_text("INT. ROOM - DAY\n\nANNA\nAre you there?\n\nBEN\n(beat)\nI am here.\n", encoding="utf-8")
    script = load_script(path)
    result = render_script(script, Cast.auto(script), tmp_path / "mix.wav", EspeakSynthesizer())
    ben = next(ln for ln in result.lines if ln.role == "BEN")
    assert ben.lead_s == pytest.approx(0.6, abs=0.08)  # the beat, and espeak-ng's own few ms
    sheet = (tmp_path / "mix.srt").read_text().split("\n\n")[1].split("\n")[1]
    start = sheet.split(" --> ")[0]
    h, m, rest = start.split(":")
    onset = int(h) * 3600 + int(m) * 60 + float(rest.replace(",", "."))
    assert onset == pytest.approx(ben.start_s + ben.lead_s, abs=0.0011) and onset > ben.start_s + 0.5
    mix, rate = sf.read(tmp_path / "mix.wav", always_2d=True)
    k = round(onset * rate)
    before, after = mix[k - round(0.3 * rate) : k - round(0.01 * rate)], mix[k : k + round(0.2 * rate)]
    assert np.abs(before).max() < 0.01 < np.abs(after).max()
