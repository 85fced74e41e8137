"""The heatmap's look-ahead: a role turns urgent before its line is late, from its backend's
speed and the work queued ahead of it on that backend."""

from __future__ import annotations

import numpy as np

from engine.core.types import Cue
from engine.mixer import Pacing
from engine.scheduler.urgency import urgency
from engine.show.planner import plan
from engine.show.prepare import predicted_slack
from engine.show.tracks import CueTrack

RTF = {"kokoro": 0.9, "espeak": 0.02}
"""Backend seconds per second of speech: a natural voice near real time on a busy machine."""
CAST = {"LEAD": "kokoro", "FOIL": "espeak"}


def _tracks(n: int) -> list[CueTrack]:
    text = "A line of about fifty characters, said at an even pace."
    roles = ["LEAD", "FOIL"]
    return [CueTrack(Cue(k, roles[k % 2], text, 0, k + 1), [text], 175, CAST[roles[k % 2]]) for k in range(n)]


def _cost(t: CueTrack) -> tuple[str, float]:
    return t.backend, RTF[t.backend] * t.est_duration_s


def test_a_slow_backend_s_role_reads_urgent_before_any_line_is_late() -> None:
    tracks = _tracks(40)
    starts = plan(tracks, Pacing())
    slack = predicted_slack(tracks, starts.__getitem__, 0.0, 120.0, _cost)
    assert slack["LEAD"] < 1.0 < slack["FOIL"]  # the same lines: the backend makes the difference
    assert urgency(slack["LEAD"]) > 0.9 and urgency(slack["FOIL"]) < urgency(slack["LEAD"])
    for t in tracks[:20]:  # the first half voiced: the lead's coming lines have time to spare
        t.audio = [np.zeros(round(t.est_duration_s * 48_000), np.float32)]
    later = predicted_slack(tracks, starts.__getitem__, 0.0, 120.0, _cost)
    assert later["LEAD"] > slack["LEAD"] + 10


def test_a_jump_to_lines_not_voiced_reads_late_at_once() -> None:
    tracks = _tracks(200)
    starts = plan(tracks, Pacing())
    for t in tracks[:20]:
        t.audio = [np.zeros(round(t.est_duration_s * 48_000), np.float32)]
    here = predicted_slack(tracks, starts.__getitem__, 0.0, 30.0, _cost)
    jump = starts[150]  # far past what was voiced
    there = predicted_slack(tracks, starts.__getitem__, jump, 30.0, _cost)
    assert there["LEAD"] <= 0.0 < here.get("LEAD", 1e9)  # the late start after a jump shows before it
    assert "LEAD" not in predicted_slack(tracks, starts.__getitem__, starts[199] + 60, 30.0, _cost)
