"""Director commands judged by ear: each scenario plays the radio play on virtual time
(tests/engine/scenario.py), gives its commands at exact listening times and checks who is
heard when, from the audio alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario import Heard, Stretch, run_show

RADIO = "radio_play.txt"
MARGIN_S = 0.06
"""A command is heard within this: the block it lands in (21 ms), the remix margin (8 ms),
and the 20 ms window the ear reads."""


@pytest.fixture(scope="module")
def plain(testdata: Path) -> Heard:
    """The first 24 s of the radio play with no command: what the others are judged against."""
    return run_show(testdata / RADIO, seconds=24.0)


def _turn(heard: Heard, role: str, k: int = 0) -> Stretch:
    return [s for s in heard.stretches if s.role == role][k]


def test_the_lines_are_heard_in_script_order_each_in_its_own_voice(plain: Heard) -> None:
    # radio_play.txt: the narrator, then Elsa and Papa in turn, then the narrator again
    assert plain.roles()[:6] == ["NARRATOR", "ELSA", "PAPA", "ELSA", "PAPA", "NARRATOR"], plain.log()
    first = _turn(plain, "NARRATOR")
    assert first.start_s < 1.0  # Play is heard at once (the voice is warm after the first line)
    plain.expect([("NARRATOR", first.start_s + 0.1, first.end_s - 0.1)])


def test_mute_is_heard_at_once_and_unmute_brings_the_role_back(plain: Heard, testdata: Path) -> None:
    papa = _turn(plain, "PAPA")
    at = papa.start_s + 1.0  # in the middle of his first line
    heard = run_show(testdata / RADIO, [(at, "mute", "PAPA"), (14.0, "unmute", "PAPA")], seconds=24.0)
    cut = [s for s in heard.stretches if s.role == "PAPA" and s.start_s < at]
    assert cut and at - 0.1 < max(s.end_s for s in cut) <= at + MARGIN_S, heard.log()
    assert "PAPA" not in heard.during(at + MARGIN_S, 14.0), heard.log()
    assert heard.roles()[:3] == ["NARRATOR", "ELSA", "PAPA"]
    elsa = _turn(plain, "ELSA", 1)  # the others play on, on their times
    assert _turn(heard, "ELSA", 1).start_s == pytest.approx(elsa.start_s, abs=0.05), heard.log()
    later = [s for s in plain.stretches if s.role == "PAPA" and s.start_s > 14.0 + MARGIN_S]
    assert later  # his next line after the unmute is heard where it was planned
    assert "PAPA" in heard.during(later[0].start_s, later[0].end_s), heard.log()


def test_stop_silences_at_once_and_play_starts_from_the_top(plain: Heard, testdata: Path) -> None:
    papa = _turn(plain, "PAPA")
    at = papa.start_s + 0.5
    heard = run_show(testdata / RADIO, [(at, "stop"), (at + 2.0, "play")], seconds=at + 6.0)
    assert heard.silent(at + MARGIN_S, at + 2.0), heard.log()
    again = [s for s in heard.stretches if s.start_s >= at + 2.0]
    assert again and again[0].role == "NARRATOR", heard.log()  # the top, not where it stopped
    narrator = _turn(plain, "NARRATOR")
    assert again[0].start_s - (at + 2.0) < narrator.start_s + 1.0  # as soon as Play was at the top


def test_pause_holds_the_show_and_play_goes_on_from_there(plain: Heard, testdata: Path) -> None:
    elsa = _turn(plain, "ELSA")
    at = elsa.end_s + 0.05  # between her line and Papa's answer
    heard = run_show(testdata / RADIO, [(at, "pause"), (at + 3.0, "play")], seconds=at + 8.0)
    assert heard.silent(at + MARGIN_S, at + 3.0), heard.log()
    after = [s for s in heard.stretches if s.start_s >= at + 3.0]
    assert after and after[0].role == "PAPA", heard.log()  # the next line, not the top
    # the gap before Papa is the one the plan had, shifted by the pause
    gap = _turn(plain, "PAPA").start_s - at
    assert after[0].start_s - (at + 3.0) == pytest.approx(gap, abs=0.1), heard.log()


def test_cue_stack_each_line_waits_for_go(testdata: Path) -> None:
    heard = run_show(testdata / RADIO, [(0.0, "cue_stack", True), (0.1, "go"), (8.0, "go")], seconds=14.0)
    narrator = _turn(heard, "NARRATOR")
    assert narrator.start_s < 1.0, heard.log()
    assert heard.silent(narrator.end_s + MARGIN_S, 8.0), heard.log()  # Elsa waits for the second GO
    elsa = _turn(heard, "ELSA")
    assert 8.0 <= elsa.start_s <= 8.0 + 0.5, heard.log()  # GO is heard at once
    assert heard.silent(elsa.end_s + MARGIN_S, 14.0), heard.log()  # and Papa waits for the third


def test_go_in_free_play_jumps_to_the_standby_line(plain: Heard, testdata: Path) -> None:
    # stopped at the top the standby line is the first; after a seek past Papa's first
    # line, GO plays from the line there
    papa = _turn(plain, "PAPA")
    heard = run_show(testdata / RADIO, [(0.5, "stop"), (1.0, "seek", papa.start_s - 0.05), (1.5, "go")],
                     seconds=6.0)  # fmt: skip
    after = [s for s in heard.stretches if s.start_s >= 1.5]
    assert after and after[0].role == "PAPA" and after[0].start_s < 1.5 + 0.4, heard.log()


def test_an_adlib_is_heard_over_the_show_in_its_roles_voice(plain: Heard, testdata: Path) -> None:
    # in the pause after the narrator's first line, Papa is asked to speak at once
    narrator = _turn(plain, "NARRATOR")
    at = narrator.end_s + 0.02
    heard = run_show(testdata / RADIO, [(at, "adlib", "PAPA", "Hush now.")], seconds=at + 3.0)
    papa = _turn(heard, "PAPA")
    assert at <= papa.start_s <= at + 1.0, heard.log()  # at once, before his scripted line
    assert papa.start_s < _turn(plain, "PAPA").start_s - 1.0


def test_solo_leaves_only_that_role(plain: Heard, testdata: Path) -> None:
    heard = run_show(testdata / RADIO, [(0.2, "solo", "PAPA")], seconds=16.0)
    assert set(heard.roles()) == {"PAPA"}, heard.log()
    for s in [s for s in plain.stretches if s.role == "PAPA" and s.end_s < 15.5]:
        assert "PAPA" in heard.during(s.start_s, s.end_s)


def test_an_unknown_command_is_named() -> None:
    with pytest.raises(ValueError, match="unknown command 'jump'"):
        run_show(Path(__file__).parents[1] / "data" / "samples" / RADIO, [(0.5, "jump")], seconds=1.0)
