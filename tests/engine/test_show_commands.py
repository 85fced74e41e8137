"""Director commands with exact semantics, on the hand-driven show (the test plays the
callback, so show time moves only when the test consumes audio): Stop, the end of the
show, cue-stack GO, and the ad-lib lifecycle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from show_harness import SR, Harness

from engine.core.errors import TroupeError
from engine.scheduler import State
from engine.script.common import normalise_role
from engine.show import CueState


@pytest.fixture
def radio(testdata: Path):  # type: ignore[no-untyped-def]
    h = Harness(testdata / "radio_play.txt")
    yield h
    h.close()


def _states(h: Harness) -> set[str]:
    return {t.state.value for t in h.show.tracks}


def test_stop_returns_to_the_top_and_play_replays_it(radio: Harness) -> None:
    first = radio.play(5.0)  # the narrator's line (0.25-3.65 s), then ELSA's from ~4 s
    assert radio.show.tracks[0].state is CueState.PLAYED and radio.show.tracks[1].state is CueState.PLAYING
    radio.show.stop()
    radio.settle()
    assert radio.show.status == "stopped" and radio.show.times.playhead_s == 0.0
    assert _states(radio) == {"pending"}  # nothing left "played" or "playing"
    assert not radio.play(0.5).any()  # stopped: silence, and the clock holds
    assert radio.show.times.playhead_s == 0.0
    radio.show.pause(False)
    assert radio.show.status == "playing"
    again = radio.play(5.0)
    np.testing.assert_array_equal(again, first)  # the same show from the top, sample for sample
    assert radio.show.tracks[0].state is CueState.PLAYED  # states follow the replay live
    assert radio.show.tracks[1].state is CueState.PLAYING
    assert radio.show.tracks[5].state in (CueState.READY, CueState.PENDING)


def test_end_of_show_stops_the_clock_at_the_real_length(testdata: Path) -> None:
    h = Harness(testdata / "lighthouse.fountain")
    try:
        heard = np.concatenate([h.play_to_end(), h.play(1.0)])
        show = h.show
        assert show.status == "ended"
        # Each take's real length: its audio, or (once heard and released, which may already
        # have happened here) the length kept from that audio.
        lengths = {t.cue.index: t.est_duration_s for t in show.tracks}
        assert all(t.known or t.released for t in show.tracks)
        last = max(show.tracks, key=lambda t: (t.start_s or 0) + lengths[t.cue.index])
        real_end = (last.start_s or 0) + lengths[last.cue.index]
        assert show.times.end_s == pytest.approx(real_end, abs=1e-6)
        loud = np.flatnonzero(np.abs(heard).reshape(len(heard), -1).max(axis=1) > 1e-3)
        assert real_end - 1.0 < loud[-1] / SR <= real_end + 1e-3  # what was heard ends there too
        assert show.times.playhead_s == pytest.approx(real_end, abs=1e-6)
        held = show.times.playhead_s
        assert not h.play(0.5).any() and show.times.playhead_s == held  # the clock has stopped
        show.pause(False)  # Play after the end: from the top
        assert show.status == "playing" and show.times.playhead_s == 0.0
    finally:
        h.close()


def test_cue_stack_every_cue_waits_for_go_and_the_clock_holds(radio: Harness) -> None:
    show = radio.show
    show.set_cue_stack(True)
    radio.settle()
    radio.play(1.0)
    assert show.status == "waiting for GO" and show.times.playhead_s == 0.0
    assert show.tracks[0].state is CueState.STANDBY and show.tracks[1].state is CueState.READY
    show.go()
    radio.settle()
    audio = radio.play(0.3)
    assert np.abs(audio).max() > 0.01  # GO starts it at once
    assert show.tracks[0].start_s == pytest.approx(0.0, abs=0.05)
    end0 = show.tracks[0].start_s + show.tracks[0].est_duration_s
    radio.play(end0 + 1.0)  # cue 1 is voiced already, yet it waits
    assert show.status == "waiting for GO" and show.tracks[1].start_s is None
    assert show.times.playhead_s == pytest.approx(end0, abs=0.1)
    assert show.tracks[1].state is CueState.STANDBY
    held = show.times.playhead_s
    radio.play(0.5)
    assert show.times.playhead_s == held  # the clock holds while it waits
    show.go()
    radio.settle()
    radio.play(0.2)
    assert show.tracks[1].start_s == pytest.approx(held, abs=0.05)
    assert show.tracks[1].state is CueState.PLAYING


def test_cue_stack_takes_back_lines_already_placed(radio: Harness) -> None:
    radio.play(0.1)  # the first lines are voiced and placed ahead of the playhead
    radio.settle()
    assert radio.show.tracks[1].start_s is not None or radio.show.tracks[0].start_s is not None
    radio.show.set_cue_stack(True)
    placed = [t.cue.index for t in radio.show.tracks if t.start_s is not None]
    assert all(radio.show.tracks[i].start_s <= radio.show.times.playhead_s for i in placed)


def _mute_all_but(h: Harness, role: str) -> None:
    for r in h.script.roles:
        if r != role:
            h.show.recast(r, mute=True)


def test_adlib_is_heard_once_unless_kept(radio: Harness) -> None:
    _mute_all_but(radio, "OWEN")  # no such role in the script: only the ad-lib is audible
    radio.play(0.5)
    radio.show.adlib("OWEN", "Someone is at the door!")
    radio.settle()
    t = radio.show.adlibs.tracks[0]
    first = radio.play(3.0)
    assert np.abs(first).max() > 0.01 and t.state is CueState.PLAYED
    radio.show.stop()
    radio.show.pause(False)
    assert not radio.play(4.0).any()  # Stop and Play: not heard again
    radio.show.seek(0.0)
    assert not radio.play(4.0).any()  # nor after a jump back
    radio.show.adlibs.keep(t.cue.index)
    radio.show.stop()
    radio.show.pause(False)
    assert np.abs(radio.play(4.0)).max() > 0.01  # kept: part of the show at its time
    assert t.state is CueState.PLAYED and t.cue.index in radio.show.planner.starts
    radio.show.adlibs.delete(t.cue.index)
    radio.show.stop()
    radio.show.pause(False)
    assert not radio.play(4.0).any()  # deleted: gone from the mix
    assert t.cue.index not in radio.show.planner.starts


def test_a_jump_after_the_end_plays_on(testdata: Path) -> None:
    h = Harness(testdata / "lighthouse.fountain")
    try:
        h.play_to_end()
        h.play(0.5)
        assert h.show.status == "ended"
        h.show.seek(1.0)
        assert h.show.status == "playing"
        h.play(1.0)
        assert h.show.times.playhead_s == pytest.approx(2.0, abs=0.05)
    finally:
        h.close()


def test_an_adlib_cannot_be_retaken(radio: Harness) -> None:
    radio.show.adlib("ELSA", "Wait!")
    with pytest.raises(TroupeError, match="not a line of the script"):
        radio.show.retake(len(radio.script.cues))


def test_keep_and_delete_of_an_adlib_can_be_undone(radio: Harness) -> None:
    _mute_all_but(radio, "OWEN")
    radio.play(0.5)
    radio.show.adlib("OWEN", "Someone is at the door!")
    radio.settle()
    t = radio.show.adlibs.tracks[0]
    radio.play(3.0)
    radio.show.adlibs.keep(t.cue.index)
    radio.show.adlibs.unkeep(t.cue.index)  # undo keep: heard once again, not replayed
    radio.show.stop()
    radio.show.pause(False)
    assert not radio.play(4.0).any() and not t.kept
    radio.show.adlibs.keep(t.cue.index)
    radio.show.adlibs.delete(t.cue.index)
    radio.show.adlibs.restore(t.cue.index)  # undo delete: the kept ad-lib is back in the show
    radio.show.stop()
    radio.show.pause(False)
    assert np.abs(radio.play(4.0)).max() > 0.01 and t.cue.index in radio.show.planner.starts
    with pytest.raises(TroupeError, match="no deleted ad-lib"):
        radio.show.adlibs.restore(t.cue.index)


def test_voice_preview_is_heard_over_the_show_without_a_cue(radio: Harness) -> None:
    from engine.core.types import Voice
    from engine.show.adlibs import PREVIEW_ROLE

    _mute_all_but(radio, "NOBODY")  # the script is silent: only the preview can sound
    radio.play(0.5)
    voiced = []
    radio.show.adlibs.preview(Voice(voice_id="en-us+f3"), "This is how I sound.", voiced.append)
    radio.settle()
    assert voiced and voiced[0].state.value == "ready" and voiced[0].audio.size
    radio.show.adlibs.splice(PREVIEW_ROLE, voiced[0].audio, -1)
    heard = radio.play(3.0)
    assert np.abs(heard).max() > 0.01
    np.testing.assert_allclose(heard[:, 0], heard[:, 1], atol=1e-6)  # centred
    assert not radio.show.adlibs.tracks  # no cue item


def test_go_fires_the_standby_cue_in_free_play(radio: Harness) -> None:
    show = radio.show
    radio.play(0.3)
    assert show.tracks[0].state is CueState.PLAYING and show.times.standby == 1
    start1 = show.times.planned_start_s(1)
    assert show.go() == 1  # the playhead jumps to cue 2's start: what GO named
    assert show.times.playhead_s == pytest.approx(start1, abs=0.01)
    radio.play(0.3)
    assert show.tracks[1].state in (CueState.PLAYING, CueState.PLAYED) and show.times.standby == 2


def test_a_jump_while_stopped_moves_standby_and_go_starts_there(radio: Harness) -> None:
    show = radio.show
    radio.play(0.5)
    show.stop()
    assert show.times.standby == 0
    show.seek(show.times.planned_start_s(3))
    assert show.times.standby == 3
    assert show.go() == 3
    radio.play(0.5)
    assert show.tracks[3].state is CueState.PLAYING
    assert all(t.state is not CueState.PLAYING for t in show.tracks[:3])


def test_go_after_the_last_line_does_nothing(radio: Harness) -> None:
    show = radio.show
    show.seek(show.times.end_s + 1.0)
    radio.play(0.2)
    assert show.times.standby == -1 and show.go() == -1


def test_an_adlib_flood_is_refused_past_what_the_voice_can_voice_in_time(radio: Harness) -> None:
    # 500 ad-libs typed at once (a script, a stuck key): ADLIB_AHEAD_S of them are queued,
    # the rest refused with one message (numbers aside, so the banner counts them in one
    # line); the show's own lines still play on time
    import re

    from engine.show.adlibs import ADLIB_AHEAD_S

    radio.play(0.5)
    queued, said = [], set()
    for k in range(500):
        try:
            queued.append(radio.show.adlib(normalise_role("PAPA"), f"Not now, {k}, not like this."))
        except TroupeError as exc:
            said.add(re.sub(r"\d+(?:[.,]\d+)?", "#", str(exc)))
    assert 0 < len(queued) < 500 and len(said) == 1, (len(queued), said)
    assert "the ad-libs before it still take # s to voice and hear" in said.pop()
    one = max(radio.show.scheduler.backends["espeak"].cost_s(r) + r.est_audio_s for r in queued)
    assert radio.show.adlibs.backlog_s() <= ADLIB_AHEAD_S + one
    radio.play(8.0)
    assert all(r.state is State.DONE for r in queued), [(r.state, r.error) for r in queued]  # all voiced
    heard = [t for t in radio.show.tracks if t.state is CueState.PLAYED]
    assert heard and all(t.late_ms == 0 for t in heard)  # the show's lines were not made late
    radio.show.adlib(normalise_role("PAPA"), "And now I may speak again.")  # the voice is free again
