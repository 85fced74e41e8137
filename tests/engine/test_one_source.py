"""One source of truth: the spoken-length estimate, the role-name key and the voice limits
are each one function or table that every user shares."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cast import Cast, validate_voice
from engine.core.errors import CastError
from engine.core.limits import VOICE_LIMITS
from engine.core.timing import spoken_length_s
from engine.core.types import Cue, Voice
from engine.scheduler import Request
from engine.script.common import normalise_role
from engine.server.http import RolePatch
from engine.service import Engine, EngineSettings
from engine.show_tracks import CueTrack

DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo" / "the_last_broadcast.fountain"


@given(text=st.text(min_size=1, max_size=200), rate=st.integers(80, 450))
def test_show_plans_and_scheduler_budgets_the_same_length(text: str, rate: int) -> None:
    voice = Voice(rate_wpm=rate)
    planned = CueTrack(Cue(0, "A", text, 0, 1), [text], rate).est_duration_s
    budgeted = Request("A", text, voice, 0.0).est_audio_s
    assert planned == budgeted == spoken_length_s(text, rate)


def test_a_fast_role_is_planned_shorter() -> None:
    text = "one two three four five six seven eight nine ten"
    assert spoken_length_s(text, 300) == pytest.approx(10 * 60 / 300 + 0.2)
    assert spoken_length_s(text, 300) < spoken_length_s(text, 175)


@pytest.mark.parametrize("spelled", ["Brick (V.O.)", "brick", "BRICK (CONT'D)", "  Brick  "])
def test_one_role_key_everywhere(spelled: str) -> None:
    assert normalise_role(spelled) == "BRICK"
    assert list(Cast.from_dict({spelled: {"pitch": 20}}).voices) == ["BRICK"]


def test_adlib_for_a_spelled_role_finds_the_cast_role() -> None:
    engine = Engine(EngineSettings(neural=False))
    try:
        engine.load(DEMO)
        engine.set_voice("IRIS", pitch=11)
        r = engine.adlib("Iris (V.O.)", "The tower is dark.").result(20)
        assert r.role == "IRIS" and r.voice.pitch == 11
    finally:
        engine.close()


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
