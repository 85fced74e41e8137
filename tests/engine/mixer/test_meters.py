"""Level meters read known levels from a test signal played through the ring."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing
from engine.core.types import SAMPLE_RATE_HZ as SR
from engine.core.types import Voice
from engine.mixer import Clip, MixControls, Mixer
from engine.mixer.meters import CLIP_HOLD_S, FLOOR_DB, HOLD_S, Meters, measure, to_db
from engine.snapshot import measure_levels


def _sine(amplitude: float, seconds: float, hz: float = 1000.0) -> np.ndarray:
    t = np.arange(round(seconds * SR)) / SR
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_measure_reads_a_sine() -> None:
    peak, rms = measure(_sine(0.5, 0.05))
    assert peak == pytest.approx(0.5, abs=1e-3) and rms == pytest.approx(0.5 / math.sqrt(2), rel=1e-3)
    assert to_db(0.0) == FLOOR_DB and to_db(1.0) == 0.0


def test_hold_and_clip_light_keep_their_time() -> None:
    m = Meters()
    loud, quiet = _sine(1.0, 0.05), _sine(0.1, 0.05)
    m.update(loud, {}, ("A",), now_s=0.0)
    assert m.master.clip and m.master.hold_db == pytest.approx(0.0, abs=0.01)
    m.update(quiet, {}, ("A",), now_s=HOLD_S - 0.1)
    assert m.master.hold_db == pytest.approx(0.0, abs=0.01) and m.master.peak_db == pytest.approx(
        -20, abs=0.1
    )
    m.update(quiet, {}, ("A",), now_s=HOLD_S + 0.1)  # the hold falls back to the current peak
    assert m.master.hold_db == pytest.approx(-20, abs=0.1) and m.master.clip
    m.update(quiet, {}, ("A",), now_s=CLIP_HOLD_S + 0.1)
    assert not m.master.clip
    assert m.roles["A"].peak_db == FLOOR_DB  # a role with nothing playing reads silence


def _played_tone(gain_db: float, pan: float) -> tuple[SimpleNamespace, MixRing]:
    """TONE plays a 0.5-amplitude sine and QUIET plays silence; 0.5 s goes through the ring
    and the callback, as the listener would hear it."""
    mixer = Mixer(MixControls.from_voices({"TONE": Voice(gain_db=gain_db, pan=pan), "QUIET": Voice()}))
    mixer.add(Clip(0, "TONE", _sine(0.5, 2.0), 0))
    mixer.add(Clip(0, "QUIET", np.zeros(SR, np.float32), 1))
    ring = MixRing(1 << 14)
    out, block = np.zeros((256, 2), np.float32), np.zeros((1024, 2), np.float32)
    written = 0
    while ring.read_pos < SR // 2:
        while ring.free_frames >= len(block):
            mixer.render(written, block)
            written += ring.write(block)
        render(out, ring, RenderState(True))
    show = SimpleNamespace(origin=0, mixer=mixer, adlibs=SimpleNamespace(tracks=[]),
                           script=SimpleNamespace(roles=["TONE", "QUIET"]))  # fmt: skip
    return show, ring


@pytest.mark.parametrize(("gain_db", "pan"), [(0.0, 0.0), (-6.0, 1.0)])
def test_meters_read_the_level_heard(gain_db: float, pan: float) -> None:
    show, ring = _played_tone(gain_db, pan)
    try:
        meters = Meters()
        measure_levels(show, ring, meters, heard=True, now_s=1.0)  # type: ignore[arg-type]
        louder = max(math.cos((pan + 1) * math.pi / 4), math.sin((pan + 1) * math.pi / 4))
        amplitude = 0.5 * 10 ** (gain_db / 20) * louder
        expect_peak, expect_rms = to_db(amplitude), to_db(amplitude / math.sqrt(2))
        for level in (meters.master, meters.roles["TONE"]):
            assert level.peak_db == pytest.approx(expect_peak, abs=0.1)
            assert level.rms_db == pytest.approx(expect_rms, abs=0.1)
        assert meters.roles["QUIET"].peak_db == FLOOR_DB and not meters.master.clip
        measure_levels(show, ring, meters, heard=False, now_s=1.1)  # type: ignore[arg-type]
        assert meters.master.peak_db == FLOOR_DB  # paused: nothing heard
    finally:
        ring.close()
