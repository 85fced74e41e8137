"""The stall threshold follows the callback cadence: a loaded machine's bursty callbacks are
not a lost device, and a device that stops is still noticed within half a second."""

from __future__ import annotations

import time

from engine.audio_io.watch import MAX_STALL_S, STALL_S, StallWatch


class FakeStats:
    callbacks = 0


def _run(watch: StallWatch, stats: FakeStats, gaps_s: list[float]) -> bool:
    """Callbacks `gaps_s` apart; True if any wait between them read as stopped."""
    stalled = False
    for gap in gaps_s:
        end = time.monotonic() + gap
        while time.monotonic() < end:
            stalled |= watch.stalled()
            time.sleep(0.005)
        stats.callbacks += 1
        watch.stalled()
    return stalled


def test_a_quiet_device_uses_the_short_threshold_and_a_stop_is_noticed() -> None:
    stats = FakeStats()
    watch = StallWatch(stats)  # type: ignore[arg-type]
    assert not _run(watch, stats, [0.005] * 20)
    assert watch.stall_s == STALL_S
    t0 = time.monotonic()
    while not watch.stalled():
        time.sleep(0.005)
    assert time.monotonic() - t0 < STALL_S + 0.1


def test_bursty_callbacks_under_load_raise_the_threshold_but_not_past_half_a_second() -> None:
    stats = FakeStats()
    watch = StallWatch(stats)  # type: ignore[arg-type]
    _run(watch, stats, [0.005, 0.09, 0.005])  # one long gap: the machine is loaded
    assert watch.stall_s > 0.25
    assert not _run(watch, stats, [0.1, 0.005, 0.11, 0.005])  # more of the same: not lost
    _run(watch, stats, [0.4])
    assert watch.stall_s == MAX_STALL_S  # never longer: a real loss still shows within 0.5 s
    t0 = time.monotonic()
    while not watch.stalled():
        time.sleep(0.005)
    assert time.monotonic() - t0 < 0.5
