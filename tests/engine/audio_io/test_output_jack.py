"""A real PortAudio stream on the JACK dummy driver, which paces callbacks in real time."""

from __future__ import annotations

import time

import numpy as np
import pytest

from engine.audio_io.output import (
    AudioOutput,
    AudioProcess,
    OutputSettings,
    list_output_devices,
    resolve_device,
)
from engine.audio_io.ring import MixRing
from engine.core.errors import AudioDeviceError

RATE = 48_000
BLOCK = 256


def _mix(seconds: float) -> np.ndarray:
    # whole blocks, so the last callback is not a (legitimate) partial read
    n = -(-int(seconds * RATE) // BLOCK) * BLOCK
    t = np.arange(n, dtype=np.float64) / RATE
    left = 0.3 * np.sin(2 * np.pi * 440 * t)
    right = 0.3 * np.sin(2 * np.pi * 660 * t)
    return np.stack([left, right], axis=1).astype(np.float32)


def _play(out: AudioOutput | AudioProcess, ring: MixRing, mix: np.ndarray) -> dict[str, float]:
    """Feed `mix` into the ring while the stream plays it; return what the callback saw.
    Silence follows the mix, so the stream does not run dry before the loop sees the end
    (on a loaded machine the loop may look a few callbacks late)."""
    mix = np.concatenate([mix, np.zeros((RATE // 2, mix.shape[1]), np.float32)])
    written = ring.write(mix)
    c0 = ring.stats.callbacks
    out.start()
    t0 = time.monotonic()
    deadline = t0 + 3 * len(mix) / RATE + 10
    while ring.read_pos < len(mix) - RATE // 2 and time.monotonic() < deadline:
        written += ring.write(mix[written:])
        out.sync_controls()
        time.sleep(0.002)
    wall = time.monotonic() - t0
    underruns = ring.stats.underruns  # before the stream runs dry at the end
    callbacks = ring.stats.callbacks - c0
    out.stop()
    return {"wall": wall, "callbacks": callbacks, "underruns": underruns, "written": written}


@pytest.mark.jack
@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "audio-process"])
def test_plays_three_seconds_paced(jack_device: int, in_process: bool) -> None:
    mix = _mix(3.0)
    ring = MixRing(1 << 14)
    settings = OutputSettings(device=jack_device, block_frames=BLOCK)
    out = AudioOutput(ring, settings) if in_process else AudioProcess(ring, settings)
    try:
        seen = _play(out, ring, mix)
    finally:
        ring_read = ring.read_pos
        ring.close()
    expected_callbacks = len(mix) / BLOCK  # 563
    assert seen["written"] >= len(mix)
    assert ring_read >= len(mix)  # every frame written was read
    assert seen["underruns"] == 0
    # paced at the block period: 3 s of audio takes about 3 s, one callback per 256 frames
    assert 2.5 < seen["wall"] < 6.0
    assert expected_callbacks - 2 <= seen["callbacks"] <= expected_callbacks + 40


@pytest.mark.jack
def test_callback_timing_and_stamps(jack_device: int) -> None:
    ring = MixRing(1 << 14)
    out = AudioOutput(ring, OutputSettings(device=jack_device, block_frames=BLOCK))
    try:
        _play(out, ring, _mix(1.0))
        times = ring.stats.callback_times_ns()
        assert times.size == ring.stats.callbacks > 100 and np.median(times) > 0
        frame, dac, now = ring.clock.last_stamp() or (0, 0.0, 0.0)
        assert frame > 0 and dac >= now  # a frame is heard after its callback returns
    finally:
        ring.close()


@pytest.mark.jack
def test_device_selection(jack_device: int) -> None:
    names = {d["hostapi"] for d in list_output_devices()}
    assert any("JACK" in n for n in names)
    assert resolve_device("JACK") == jack_device
    assert resolve_device(jack_device) == jack_device
    with pytest.raises(AudioDeviceError, match="no output device matching 'no-such-card'"):
        resolve_device("no-such-card")
    with pytest.raises(AudioDeviceError, match="no output device with index 999"):
        resolve_device(999)


@pytest.mark.jack
def test_bad_stream_settings_give_a_clear_error(jack_device: int) -> None:
    ring = MixRing(1024)
    try:
        out = AudioOutput(ring, OutputSettings(device=jack_device, sample_rate_hz=12_345))
        with pytest.raises(AudioDeviceError, match="cannot open the audio output"):
            out.start()
        proc = AudioProcess(ring, OutputSettings(device="no-such-card"))
        with pytest.raises(AudioDeviceError, match="no output device matching"):
            proc.start()
    finally:
        ring.close()
