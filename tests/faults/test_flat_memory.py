"""Memory stays flat however long the show: lines and ad-libs the listener has passed leave
the mixer and their audio is let go; a jump back voices them again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from show_harness import SR, Harness

from engine.core.errors import TroupeError
from engine.show import RELEASE_AFTER_S, CueState
from engine.show.adlibs import KEEPABLE


@pytest.fixture
def radio(testdata: Path):  # type: ignore[no-untyped-def]
    h = Harness(testdata / "radio_play.txt")
    yield h
    h.close()


def test_heard_lines_leave_the_mixer_and_come_back_after_a_jump(radio: Harness) -> None:
    show = radio.show
    radio.play_to_end()
    radio.play(1.5)
    show._release_heard()
    head = show.times.playhead_s  # the show ended: its clock stopped at the end
    recent = [t for t in show.tracks if t.start_s + t.est_duration_s > head - RELEASE_AFTER_S]  # type: ignore[operator]
    assert {c.cue_index for c in show.mixer.clips} == {t.cue.index for t in recent}
    assert len(recent) <= 2
    assert all(t.released and not t.audio and not t.requests for t in show.tracks if t not in recent)
    ends = {t.cue.index: t.start_s + t.est_duration_s for t in show.tracks if t.start_s is not None}
    assert show.times.end_s == pytest.approx(max(ends.values()))  # lengths are kept

    show.seek(0.0)  # back to the top: every line is voiced again
    first = show.tracks[0]
    assert first.state is CueState.PENDING and not first.released
    audio = radio.play(2.0)
    assert first.known and first.state in (CueState.PLAYING, CueState.PLAYED)
    k = round(first.start_s * SR)  # type: ignore[operator]
    assert np.abs(audio[k : k + SR // 2]).max() > 0.01


def test_adlib_audio_is_let_go_once_heard_but_the_latest_can_still_be_kept(radio: Harness) -> None:
    show = radio.show
    n = KEEPABLE + 4
    for k in range(n):
        show.adlib("ELSA", f"Aside number {k}.")
        radio.play(0.8)  # a director's pace: the ad-libs ahead stay under what the show takes
    radio.play(3.0)
    show._release_heard()
    tracks = show.adlibs.tracks
    assert all(t.state is CueState.PLAYED for t in tracks)
    assert not any(c.cue_index in {t.cue.index for t in tracks} for c in show.mixer.clips)
    assert [t.released for t in tracks] == [True] * (n - KEEPABLE) + [False] * KEEPABLE
    assert all(not t.audio for t in tracks[: n - KEEPABLE])
    assert all(r.audio is None for r in show.stats.adlibs[: n - KEEPABLE])
    with pytest.raises(TroupeError, match="latest"):
        show.adlibs.keep(tracks[0].cue.index)
    kept = show.adlibs.keep(tracks[-1].cue.index)
    assert kept.kept
