"""The line check in a live show: voiced lines are checked on a low-priority thread, never
waited for; a marked take shows as "check" in the snapshot and is cleared by a re-take."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from show_harness import Harness

from engine.asr import LineCheck
from engine.show.listen import LiveListener
from engine.snapshot import CueView


def _check_flagging(word: str):  # type: ignore[no-untyped-def]
    """A checker that marks any line containing `word` (the listener's logic, not the model's)."""

    def check(audio: np.ndarray, text: str, backend: str) -> LineCheck:
        assert audio.size > 0 and backend == "espeak"
        wer = 0.9 if word in text else 0.0
        return LineCheck(wer, text, (), 0.6)

    return check


def test_offers_are_declined_while_the_thread_is_busy() -> None:
    gate = threading.Event()

    def slow(audio: np.ndarray, text: str, backend: str) -> LineCheck:
        gate.wait(30)
        return LineCheck(0.0, text, (), 0.3)

    listener = LiveListener(slow, depth=1)
    clip = [np.ones(100, np.float32)]
    assert listener.offer(0, 0, clip, "a", "espeak")
    accepted = [listener.offer(k, 0, clip, "b", "espeak") for k in range(1, 4)]
    assert accepted.count(True) <= 2 and accepted[-1] is False and listener.declined >= 1
    gate.set()
    assert listener.wait_idle(30)
    assert {h.cue_index for h in listener.results()} >= {0}
    listener.close()


def test_a_marked_line_shows_as_check_until_retaken(testdata: Path) -> None:
    h = Harness(testdata / "radio_play.txt")
    try:
        target = h.script.cues[2]
        word = target.text.split()[0]
        others = [c.index for c in h.script.cues if word in c.text and c.index != target.index]
        h.show.listener = LiveListener(_check_flagging(word), depth=64)
        h.play(1.0)
        assert h.show.listener.wait_idle(60)
        h.show.tick()
        marked = {t.cue.index for t in h.show.tracks if t.check}
        voiced = {t.cue.index for t in h.show.tracks if t.known}
        assert target.index in voiced and target.index in marked
        assert marked <= {target.index, *others}
        assert h.show.tracks[target.index].wer == pytest.approx(0.9)
        h.show.retake(target.index, "A different line now.")
        assert not h.show.tracks[target.index].check
    finally:
        h.close()


def test_cue_view_shows_check_over_ready_and_played() -> None:
    pytest.importorskip("PySide6")
    from app.cue_model import shown_state

    view = CueView(0, "A", "x", 0, "played", 0.0, 1.0, 0.0, False, "", (), check=True, wer=0.7)
    assert shown_state(view) == "check"
    assert (
        shown_state(CueView(0, "A", "x", 0, "queued", 0.0, 1.0, 0.0, False, "", (), check=True)) == "queued"
    )
    assert shown_state(CueView(0, "A", "x", 0, "playing", 0.0, 1.0, 0.0, True, "", ())) == "fallback"
