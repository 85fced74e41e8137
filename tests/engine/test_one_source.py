"""One source of truth: the spoken-length estimate, the role-name key and the voice limits
are each one function or table that every user shares."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cast import Cast, validate_voice
from engine.control import EngineSettings, Troupe
from engine.core.errors import CastError
from engine.core.limits import VOICE_LIMITS
from engine.core.timing import SPEEDS, TAIL_S, spoken_length_s
from engine.core.types import Cue, Voice
from engine.scheduler import Request
from engine.script.common import normalise_role
from engine.server.http import RolePatch
from engine.show.tracks import CueTrack

DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo" / "the_last_broadcast.fountain"


@given(text=st.text(min_size=1, max_size=200), rate=st.integers(80, 450))
def test_show_plans_and_scheduler_budgets_the_same_length(text: str, rate: int) -> None:
    voice = Voice(rate_wpm=rate)
    planned = CueTrack(Cue(0, "A", text, 0, 1), [text], rate, voice.backend).est_duration_s
    budgeted = Request("A", text, voice, 0.0).est_audio_s
    assert planned == budgeted == spoken_length_s(text, rate, voice.backend)


def test_a_fast_role_is_planned_shorter() -> None:
    text = "one two three four five six seven eight nine ten"
    assert spoken_length_s(text, 175) == pytest.approx(len(text) / 15 + 0.2)
    assert spoken_length_s(text, 300) == pytest.approx(len(text) / 15 * 175 / 300 + 0.2)


def test_the_estimate_learns_each_backend_speed_from_its_takes() -> None:
    text = "A line of some forty characters, or so."
    slow = (len(text.strip()) / 10) + TAIL_S  # a backend that says 10 characters a second at 175 wpm
    for _ in range(40):
        SPEEDS.learn("kokoro", text, 175, slow)
    assert spoken_length_s(text, 175, "kokoro") == pytest.approx(slow, rel=0.01)
    assert spoken_length_s(text, 175, "espeak") == pytest.approx(
        len(text) / 15 + TAIL_S
    )  # the others keep theirs
    assert spoken_length_s(text, 350, "kokoro") == pytest.approx((slow - TAIL_S) / 2 + TAIL_S, rel=0.01)
    before = SPEEDS.version
    SPEEDS.learn("kokoro", "Hi.", 175, 9.0)  # too short to tell a speed from
    SPEEDS.learn("kokoro", text, 175, 600.0)  # a runaway take is held to the speed range
    assert SPEEDS.version == before + 1 and SPEEDS.s_per_char("kokoro") <= 3 / 15


def test_a_plan_follows_the_learnt_speed_without_being_told() -> None:
    from engine.mixer import Pacing
    from engine.show.planner import Planner
    from engine.show.tracks import Changes

    changes = Changes()
    text = "Every line here is forty-odd characters long."
    tracks = [CueTrack(Cue(k, "A", text, 0, k + 1), [text], 175, "kokoro", changes=changes) for k in range(3)]
    planner = Planner(lambda: tracks, Pacing(), changes)
    first = dict(planner.starts)
    for _ in range(40):
        SPEEDS.learn("kokoro", text, 175, 2 * spoken_length_s(text, 175, "kokoro"))
    assert planner.starts[2] > first[2] + 1.0  # the third line starts later: the first two are longer
    tracks[0].audio = [None]  # its take is asked for...
    tracks[0].set_chunk(0, np.zeros(48_000, np.float32))  # ...and comes back: 1 s
    assert planner.starts[1] == pytest.approx(planner.starts[0] + 1.0 + Pacing().gap_s, abs=0.01)


@pytest.mark.parametrize("spelled", ["Brick (V.O.)", "brick", "BRICK (CONT'D)", "  Brick  "])
def test_one_role_key_everywhere(spelled: str) -> None:
    assert normalise_role(spelled) == "BRICK"
    assert list(Cast.from_dict({spelled: {"pitch": 20}}).voices) == ["BRICK"]


def test_adlib_for_a_spelled_role_finds_the_cast_role() -> None:
    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.load(DEMO).result(60)
        troupe.casting.set_voice("IRIS", pitch=11)
        r = troupe.lines.adlib("Iris (V.O.)", "The tower is dark.").result(20)
        assert r.role == "IRIS" and r.voice.pitch == 11
    finally:
        troupe.close()


@pytest.mark.parametrize("name", sorted(VOICE_LIMITS))
def test_voice_limits_one_table(name: str) -> None:
    lo, hi = VOICE_LIMITS[name]
    validate_voice(Voice(**{name: hi}), "here")  # type: ignore[arg-type]
    with pytest.raises(CastError, match=f"{name} = "):
        validate_voice(Voice(**{name: hi + 1}), "here")  # type: ignore[arg-type]
    field = RolePatch.model_fields.get(name)
    if field is not None:  # the HTTP API checks the same range
        bounds = {type(m).__name__: m for m in field.metadata}
        assert bounds["Ge"].ge == lo and bounds["Le"].le == hi
