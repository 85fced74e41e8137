"""The real-time show driven by hand: the test plays the callback's part on numpy arrays,
so show time advances only when the test consumes audio from the ring."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from show_harness import SR, Harness

from engine.cast import Cast
from engine.scheduler import RequestClass
from engine.script import load_script
from engine.show import CueState


@pytest.fixture
def radio(testdata: Path):  # type: ignore[no-untyped-def]
    h = Harness(testdata / "radio_play.txt")
    yield h
    h.close()


def test_every_line_plays_in_order_on_time(radio: Harness) -> None:
    audio = radio.play_to_end()
    show = radio.show
    assert show.stats.placed == len(radio.script.cues) and not show.stats.failed
    starts = [t.start_s for t in show.tracks]
    assert starts == sorted(starts)
    assert show.stats.late == 0  # synthesized ahead of the playhead: nothing late
    for s in starts:
        k = round(s * SR)
        assert np.abs(audio[k : k + SR // 2]).max() > 0.01
    assert all(t.state is CueState.PLAYED for t in show.tracks)


def test_ring_filled_only_to_render_ahead(radio: Harness) -> None:
    radio.show.tick()
    assert radio.ring.fill_frames == round(0.1 * SR)
    radio.show.tick()
    assert radio.ring.fill_frames == round(0.1 * SR)


def test_deadlines_follow_the_show_clock(radio: Harness) -> None:
    radio.show.tick()
    first = radio.show.tracks[0].requests[0]
    assert first.klass is RequestClass.SCRIPTED
    # the first line starts at the 0.25 s lead-in; the writer is 0.1 s ahead of the playhead
    assert first.deadline_s - radio.sched.clock() == pytest.approx(0.25 - 0.1, abs=0.05)


def test_long_lines_stream_chunk_by_chunk(testdata: Path) -> None:
    h = Harness(testdata / "lighthouse.fountain")
    try:
        t = h.show.tracks[1]  # "Then the light stays lit. That is all we can do for him."
        assert len(t.chunks) == 2
        while t.placed_chunks < 2:  # (clips leave the mixer once heard: look before that)
            h.play(0.25)
        clips = [c for c in h.show.mixer.clips if c.cue_index == 1]
        assert len(clips) == 2 and clips[1].start_frame == clips[0].end_frame  # seamless
    finally:
        h.close()


def test_adlib_is_spliced_a_margin_ahead_of_the_listener(radio: Harness) -> None:
    for role in ("NARRATOR", "PAPA"):
        radio.show.recast(role, mute=True)  # only ELSA can be heard; she has no line before ~4 s
    radio.play(1.0)
    heard_at = len(radio.played) * len(radio.out)  # the next frame the listener hears
    r = radio.show.adlib("ELSA", "Wait, someone is at the door!")
    radio.settle()
    assert r.state.value == "ready" and r.fallback is False
    t = radio.show.adlibs.tracks[0]
    assert t.adlib and t.cue.index == len(radio.script.cues)  # an item of its own
    # spliced into the queued audio 15 ms ahead of the listener, not after the render-ahead
    assert t.start_s == pytest.approx(heard_at / SR + 0.015, abs=1e-3)
    audio = radio.play(1.0)
    k = round(t.start_s * SR) - heard_at
    assert not audio[:k].any() and np.abs(audio[k : k + SR // 4]).max() > 0.01


def test_seek_recomputes_and_skips(radio: Harness) -> None:
    radio.play(0.5)
    target = radio.show.times.planned_start_s(5)
    radio.show.seek(target)
    assert radio.ring.fill_frames == 0  # queued audio dropped
    radio.play(0.5)
    assert radio.show.times.playhead_s == pytest.approx(target + 0.5, abs=0.05)
    audio = radio.play_to_end()
    assert np.abs(audio).max() > 0.05
    played = [t for t in radio.show.tracks if t.start_s is not None]
    assert min(t.cue.index for t in played if t.start_s >= target - 1e-6) == 5


def test_edit_retakes_only_that_line(radio: Harness) -> None:
    radio.play(0.5)
    radio.settle()
    before = {t.cue.index: t.requests[0] for t in radio.show.tracks if t.requests}
    radio.show.retake(6, "Did you hear that bell, Papa?")
    radio.settle()
    after = {t.cue.index: t.requests[0] for t in radio.show.tracks if t.requests}
    changed = [i for i in before if before[i] is not after[i]]
    assert changed == [6]
    assert after[6].klass is RequestClass.RETAKE
    assert radio.show.tracks[6].cue.text == "Did you hear that bell, Papa?"


def test_recast_requeues_the_roles_lines(radio: Harness) -> None:
    radio.play(0.5)
    radio.settle()
    papa = [t.cue.index for t in radio.show.tracks if t.cue.role == "PAPA"]
    old = {i: radio.show.tracks[i].requests[0] for i in papa if radio.show.tracks[i].requests}
    radio.show.recast("PAPA", voice_id="en-gb-x-rp+m7", pitch=20)
    radio.settle()
    for i, r in old.items():
        t = radio.show.tracks[i]
        if t.start_s is None or t.start_s >= radio.show.times.write_s:
            assert t.requests[0] is not r and t.requests[0].voice.voice_id == "en-gb-x-rp+m7"
    elsa = next(t for t in radio.show.tracks if t.cue.role == "ELSA")
    assert elsa.requests[0].voice.voice_id != "en-gb-x-rp+m7"


def test_mute_changes_the_mix_live(radio: Harness) -> None:
    radio.show.recast("NARRATOR", mute=True)
    audio = radio.play(2.0)  # the narrator opens the show
    assert np.abs(audio).max() == 0.0
    assert radio.show.tracks[0].requests[0].voice.mute  # no re-take needed for a mute


def test_failed_line_marks_and_goes_on(testdata: Path) -> None:
    h = Harness(testdata / "radio_play.txt")
    try:
        h.show.cast.set("ELSA", voice_id="xx-nowhere")  # espeak has no such voice
        h.play_to_end()
        failed = [t for t in h.show.tracks if t.state is CueState.FAILED]
        assert failed and all(t.cue.role == "ELSA" for t in failed)
        assert "no voice 'xx-nowhere'" in failed[0].error
        assert all(t.state is CueState.PLAYED for t in h.show.tracks if t.cue.role != "ELSA")
    finally:
        h.close()


def test_loop_scene_replays_it(testdata: Path) -> None:
    h = Harness(testdata / "lighthouse.fountain")
    try:
        h.show.loop_scene(1)  # ".THE ROCKS": one HALE line
        start, end = h.show.loop
        h.show.seek(start)
        h.play(2 * (end - start) + 0.5)
        assert start <= h.show.times.write_s <= end + 0.1  # still inside the scene
    finally:
        h.close()


def test_project_cast_to_a_missing_backend_plays_with_stand_ins(tmp_path: Path) -> None:
    """A project whose role is cast to Kokoro, opened where Kokoro is not available: the
    cast is kept as saved, the director is told, and the role's lines are voiced by an
    espeak-ng stand-in and marked fallback."""
    import queue
    import time
    from dataclasses import replace

    from engine.cast import save_project
    from engine.control import EngineSettings, Troupe

    demo = Path(__file__).resolve().parents[2] / "assets" / "demo" / "the_last_broadcast.fountain"
    script = load_script(demo)
    voices = dict(Cast.auto(script).voices)
    voices["CALLER"] = replace(voices["CALLER"], backend="kokoro", voice_id="jm_kumo")
    save_project(tmp_path / "p.troupe.json", str(demo), Cast(voices))
    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.open(tmp_path / "p.troupe.json").result(60)
        troupe.transport.play()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            cues = [c for c in troupe.monitor.snapshot().cues if c.role == "CALLER"]
            if cues and all(c.state in ("ready", "playing", "played") for c in cues):
                break
            time.sleep(0.05)
        snap = troupe.monitor.snapshot()
        assert snap.voices["CALLER"].backend == "kokoro"  # the cast is kept
        caller = [c for c in snap.cues if c.role == "CALLER"]
        assert caller and all(c.state in ("ready", "playing", "played") and c.fallback for c in caller)
        assert not any(c.fallback for c in snap.cues if c.role != "CALLER")
        said = []
        while True:
            try:
                said.append(troupe.engine.messages.get_nowait())
            except queue.Empty:
                break
        assert any("CALLER: cast to kokoro voices, which are not available here" in m for m in said)
    finally:
        troupe.close()
