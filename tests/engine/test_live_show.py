"""The live show as it is heard: the engine plays on the JACK dummy device (output stream in
the audio process, the default), a JACK client records the output port, and each test says
which role sounds when. HERO is panned hard left and FOIL hard right, so the left channel is
HERO and the right is FOIL."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from live_capture import WINDOW_S, Recorder, segments, wait_for

from engine.audio_io.output import OutputSettings
from engine.control import EngineSettings, EngineSnapshot, Troupe
from engine.mixer import Pacing

pytestmark = pytest.mark.jack
LEFT, RIGHT = 0, 1
DUET = (
    "HERO: The lamp is lit.\nFOIL: Then close the door.\nHERO: I hear the sea.\nFOIL: So do I, my friend.\n"
)


@pytest.fixture
def live(jack_device: int, tmp_path: Path) -> Iterator[tuple[Troupe, Recorder]]:
    script = tmp_path / "duet.txt"
    script.write_text(DUET, encoding="utf-8")
    recorder = Recorder()
    troupe = Troupe(EngineSettings(output=OutputSettings(device=jack_device), neural=False,
                                   pacing=Pacing(gap_s=0.6)))  # fmt: skip
    try:
        troupe.projects.load(script).result(60)
        troupe.casting.set_voice("HERO", pan=-1.0)
        troupe.casting.set_voice("FOIL", pan=1.0)
        troupe.output.open().result(60)
        recorder.connect()
        yield troupe, recorder
    finally:
        troupe.close()
        recorder.close()


def _snap(e: Troupe) -> EngineSnapshot:
    return e.monitor.snapshot()


def _state(e: Troupe, k: int) -> str:
    return _snap(e).cues[k].state


def _heard_roles(audio: np.ndarray) -> list[tuple[float, str]]:
    """(start s, role) of every stretch of sound, in order."""
    marks = [(a, "HERO") for a, _ in segments(audio, LEFT)] + [(a, "FOIL") for a, _ in segments(audio, RIGHT)]
    return sorted(marks)


def _window_of(t: float) -> float:
    """Where the analysis window holding time `t` starts: onsets are found a window at a time
    (`WINDOW_S`), so a sound that starts just after GO, in GO's own window, reads as that
    window's start (espeak's lead-in counts as part of the breath)."""
    return math.floor(t / WINDOW_S) * WINDOW_S


def _assert_matches_timeline(audio: np.ndarray, snap: EngineSnapshot, first_cue: int = 0) -> None:
    """The roles are heard in the planned order, each line at its planned time (to 0.15 s,
    measured from the first line heard)."""
    heard = _heard_roles(audio)
    cues = [c for c in snap.cues if c.kind == "line"][first_cue:]
    assert [r for _, r in heard] == [c.role for c in cues], heard
    offset = heard[0][0] - cues[0].start_s
    for (t, _), c in zip(heard, cues, strict=True):
        assert t - offset == pytest.approx(c.start_s, abs=0.15)


def test_stop_goes_to_the_top_and_play_replays_what_is_heard(live: tuple[Troupe, Recorder]) -> None:
    e, rec = live
    e.transport.play()
    wait_for(lambda: _state(e, 1) == "playing", what="FOIL's first line playing")
    e.transport.stop()
    wait_for(lambda: _snap(e).status == "stopped", what="status stopped")
    snap = _snap(e)
    assert snap.playhead_s == 0.0 and {c.state for c in snap.cues} == {"pending"}
    quiet = rec.frames + 4800  # 0.1 s for what was already on its way to the device
    time.sleep(0.6)  # recording what Stop sounds like
    assert not np.abs(rec.since(quiet)).max() > 0.01, "sound after Stop"
    start = rec.frames
    e.transport.play()
    seen: set[str] = set()

    def replayed() -> bool:
        seen.add(_state(e, 0))
        return _snap(e).status == "ended"

    wait_for(replayed, 60, "the end of the replay")
    assert {"playing", "played"} <= seen  # states follow the replay live
    _assert_matches_timeline(rec.since(start), _snap(e))


def test_cue_stack_each_cue_waits_for_go_and_go_starts_it_at_once(live: tuple[Troupe, Recorder]) -> None:
    e, rec = live
    e.transport.set_cue_stack(True)
    e.transport.play()
    wait_for(lambda: _snap(e).status == "waiting for GO" and _state(e, 0) == "standby", what="standby")
    start = rec.frames
    time.sleep(0.5)
    assert not np.abs(rec.since(start)).max() > 0.01 and _snap(e).playhead_s == 0.0
    t_go = time.monotonic()
    e.transport.go()
    wait_for(
        lambda: _state(e, 0) == "played" and _snap(e).status == "waiting for GO",
        what="cue 1 heard",
    )
    assert _state(e, 1) == "standby"  # voiced long ago, yet it waits
    held = _snap(e).playhead_s
    time.sleep(0.5)
    assert _snap(e).playhead_s == held  # the clock holds while it waits
    heard = _heard_roles(rec.since(start))
    assert [r for _, r in heard] == ["HERO"]
    assert 0 <= heard[0][0] - _window_of((rec.frame_at(t_go) - start) / 48_000) < 0.25  # a breath after GO
    t_go = time.monotonic()
    mark = rec.frames
    e.transport.go()
    wait_for(lambda: _state(e, 1) == "played", what="cue 2 heard")
    heard = _heard_roles(rec.since(mark))
    assert [r for _, r in heard] == ["FOIL"]
    assert 0 <= heard[0][0] - _window_of((rec.frame_at(t_go) - mark) / 48_000) < 0.25


def test_adlib_is_heard_once_kept_on_request_and_deleted(live: tuple[Troupe, Recorder]) -> None:
    e, rec = live
    e.casting.set_voice("HERO", mute=True)
    e.casting.set_voice("FOIL", mute=True)  # only the ad-lib can be heard
    e.transport.play()
    wait_for(lambda: _snap(e).playhead_s > 0.3, what="the show under way")
    start = rec.frames
    req = e.lines.adlib("EXTRA", "Someone is at the door!").result(10)
    index = req.cue_index
    wait_for(lambda: any(c.index == index and c.state == "played" for c in _snap(e).cues), what="heard")
    cues = _snap(e).cues
    view = next(c for c in cues if c.index == index)
    assert view.kind == "adlib" and view.role == "EXTRA"
    row = cues.index(view)  # listed where it was spoken, not after the last line
    assert 0 < row < len(cues) - 1 and cues[row - 1].start_s <= view.start_s < cues[row + 1].start_s
    assert len(segments(rec.since(start), LEFT)) == 1  # heard, once

    def replay() -> np.ndarray:
        e.transport.stop()
        wait_for(lambda: _snap(e).status == "stopped", what="stopped")
        mark = rec.frames
        e.transport.play()
        past = view.start_s + view.duration_s + 0.3
        wait_for(lambda: _snap(e).playhead_s > past, what="past the ad-lib")
        return rec.since(mark)

    assert not np.abs(replay()).max() > 0.01  # Stop and Play: not heard again
    e.lines.keep_adlib(index)
    wait_for(lambda: any(c.index == index and c.kind == "kept" for c in _snap(e).cues), what="kept")
    again = segments(replay(), LEFT)
    assert len(again) == 1  # kept: part of the show, at its time
    e.lines.delete_adlib(index)
    wait_for(lambda: all(c.index != index for c in _snap(e).cues), what="deleted")
    assert not np.abs(replay()).max() > 0.01


def test_solo_and_mute_are_heard(live: tuple[Troupe, Recorder]) -> None:
    e, rec = live
    e.casting.set_voice("FOIL", solo=True)
    start = rec.frames
    e.transport.play()
    wait_for(lambda: _snap(e).status == "ended", 60, "the end")
    audio = rec.since(start)
    assert not segments(audio, LEFT)  # HERO is not soloed: silent
    foil = [c for c in _snap(e).cues if c.role == "FOIL"]
    heard = segments(audio, RIGHT)
    assert len(heard) == len(foil)
    assert heard[1][0] - heard[0][0] == pytest.approx(foil[1].start_s - foil[0].start_s, abs=0.15)


def test_go_in_free_play_fires_the_standby_line_and_a_jump_while_stopped_moves_standby(
    live: tuple[Troupe, Recorder],
) -> None:
    e, rec = live
    e.transport.play()
    wait_for(lambda: _state(e, 0) == "playing", what="HERO's first line playing")
    assert _snap(e).go_cue == 1  # Standby: the next line not yet heard, as GO names it
    t_go = time.monotonic()
    e.transport.go()  # fires Standby now: FOIL's line, without waiting for HERO's to end
    wait_for(lambda: _state(e, 1) == "played", what="FOIL's first line heard")
    after = rec.frame_at(t_go) + 4800  # 0.1 s for what was already on its way to the device
    heard = _heard_roles(rec.since(after))
    assert heard and heard[0][1] == "FOIL" and heard[0][0] < 0.4, heard  # at once, not after HERO
    e.transport.stop()
    wait_for(lambda: _snap(e).status == "stopped" and _snap(e).go_cue == 0, what="stopped at the top")
    e.transport.jump_to_cue(3)  # a jump while stopped: Standby follows it
    wait_for(lambda: _snap(e).go_cue == 3, what="Standby on the jump's line")
    mark = rec.frames
    e.transport.go()
    wait_for(lambda: _snap(e).status == "ended", 30, "the end")
    assert [r for _, r in _heard_roles(rec.since(mark))] == ["FOIL"]  # cue 4 only: not from the top


def test_a_mute_is_heard_within_a_few_blocks_not_after_the_render_ahead(
    live: tuple[Troupe, Recorder],
) -> None:
    e, rec = live
    e.transport.play()
    wait_for(lambda: _state(e, 0) == "playing", what="HERO's first line playing")
    time.sleep(0.25)  # well inside the line
    t_cmd = time.monotonic()
    e.casting.set_voice("HERO", mute=True).result(5)
    time.sleep(0.4)
    after = rec.since(rec.frame_at(t_cmd))
    loud = np.flatnonzero(np.abs(after[:, LEFT]) > 0.01)
    heard_ms = (loud[-1] + 1) / 48 if loud.size else 0.0
    # the queue ahead (200 ms of render-ahead) is mixed again at once: what is heard after the
    # command is the few blocks already with the device, not the render-ahead
    assert heard_ms < 100, heard_ms
