"""Ensemble cues are spoken by each known role together, not by a new role."""

from __future__ import annotations

from pathlib import Path

from engine.script import load_script

SCENE = (
    "INT. STUDY - NIGHT\n\nEDWARD\nReady?\n\nWILL\nReady.\n\nEDWARD AND WILL\nOne, two, three!\n\n"
    "MOTHER\nBoys!\n\nBOTH\nSorry!\n\nALL\nGoodnight.\n\nWILL & MOTHER\nHush.\n\n"
    "EDWARD / WILL\nNo.\n\nGHOST AND WILL\nBoo.\n"
)


def test_ensemble_cues_overlap_per_role(tmp_path: Path) -> None:
    f = tmp_path / "x.fountain"
    f.write_text(SCENE, encoding="utf-8")
    s = load_script(f)
    got = [(c.role, c.text, c.overlaps_previous) for c in s.cues]
    assert got == [
        ("EDWARD", "Ready?", False), ("WILL", "Ready.", False),
        ("EDWARD", "One, two, three!", False), ("WILL", "One, two, three!", True),
        ("MOTHER", "Boys!", False),
        ("WILL", "Sorry!", False), ("MOTHER", "Sorry!", True),  # the last two who spoke
        ("EDWARD", "Goodnight.", False), ("WILL", "Goodnight.", True), ("MOTHER", "Goodnight.", True),
        ("WILL", "Hush.", False), ("MOTHER", "Hush.", True),
        ("EDWARD", "No.", False), ("WILL", "No.", True),
        ("GHOST AND WILL", "Boo.", False),  # GHOST never speaks alone: stays its own role
    ]  # fmt: skip
    assert list(s.roles) == ["EDWARD", "WILL", "MOTHER", "GHOST AND WILL"]
    assert [c.index for c in s.cues] == list(range(len(s.cues)))


def test_both_without_two_speakers_stays_a_role(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("BOTH: Hello!\nANN: Hi.\n", encoding="utf-8")
    s = load_script(f)
    assert [c.role for c in s.cues] == ["BOTH", "ANN"]


def test_ensemble_in_subtitles_shares_the_slot(tmp_path: Path) -> None:
    f = tmp_path / "x.srt"
    f.write_text(
        "1\n00:00:01,000 --> 00:00:02,000\n[ANN] Ready?\n\n2\n00:00:02,000 --> 00:00:03,000\n"
        "[BOB] Ready.\n\n3\n00:00:03,000 --> 00:00:04,500\n[BOTH] Go!\n",
        encoding="utf-8",
    )
    s = load_script(f)
    assert [(c.role, c.text, c.start_s, c.overlaps_previous) for c in s.cues][2:] == [
        ("ANN", "Go!", 3.0, False), ("BOB", "Go!", 3.0, True),
    ]  # fmt: skip
