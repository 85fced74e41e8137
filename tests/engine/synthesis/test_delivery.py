"""Delivery from parentheticals: the table, a project's overrides, voices and clips."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from engine.core.errors import CastError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis import delivery
from engine.synthesis.delivery import (
    Delivery,
    delivered_audio,
    delivered_voice,
    delivery_for,
    hint_key,
    parse_table,
)


@pytest.fixture(autouse=True)
def default_table() -> Iterator[None]:
    yield
    delivery.use_table({})


def test_hint_keys() -> None:
    assert hint_key("(O.S.)") == "os" and hint_key("On Phone") == "on phone"
    assert hint_key("whispering:") == "whispering"


def test_whisper_and_shout_change_the_voice() -> None:
    espeak = Voice(voice_id="en-gb+f3", rate_wpm=170, pitch=50)
    whisper = delivered_voice(espeak, ("whispering",))
    assert whisper.voice_id == "en-gb+whisper" and whisper.rate_wpm < 170
    shout = delivered_voice(espeak, ("Shouting",))
    assert shout.rate_wpm > 170 and shout.pitch > 50 and shout.voice_id == "en-gb+f3"
    piper = Voice(backend="piper", voice_id="en_US-joe-medium")
    assert delivered_voice(piper, ("whispers",)).voice_id == "en_US-joe-medium"  # no whisper variant
    assert delivered_voice(espeak, ("beer raised", "V.O.")) is espeak  # nothing to change


def test_clips_get_gain_filter_and_pause() -> None:
    t = np.arange(SAMPLE_RATE_HZ // 2) / SAMPLE_RATE_HZ
    tone = (0.2 * np.sin(2 * np.pi * 100.0 * t)).astype(np.float32)
    beat = delivered_audio(tone, ("beat",), SAMPLE_RATE_HZ)
    assert len(beat) == len(tone) + int(0.6 * SAMPLE_RATE_HZ) and not beat[: SAMPLE_RATE_HZ // 2].any()
    assert len(delivered_audio(tone, ("beat",), SAMPLE_RATE_HZ, first=False)) == len(tone)
    soft = delivered_audio(tone, ("softly",), SAMPLE_RATE_HZ)
    assert np.allclose(soft, tone * 10 ** (-4 / 20), atol=1e-6)
    phone = delivered_audio(tone, ("on phone",), SAMPLE_RATE_HZ)
    assert np.sqrt(np.mean(phone[4800:] ** 2)) < 0.3 * np.sqrt(np.mean(tone**2))  # 100 Hz is cut


def test_project_overrides_and_bad_entries() -> None:
    delivery.use_table(parse_table({"(whispering)": {"rate": 0.5}, "Robot": {"filter": "telephone"}}))
    assert delivery_for(["whispering"]) == Delivery(rate=0.5)
    assert delivery_for(["robot", "beat"]) == Delivery(filter="telephone", pause_s=0.6)
    with pytest.raises(CastError, match=r"hint 'x': unknown setting\(s\) speed"):
        parse_table({"x": {"speed": 2}})
    with pytest.raises(CastError, match="filter = 'echo'"):
        parse_table({"x": {"filter": "echo"}})
    with pytest.raises(CastError, match="rate = 9"):
        parse_table({"x": {"rate": 9}})
