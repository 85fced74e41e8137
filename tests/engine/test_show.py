"""The real-time show driven by hand: the test plays the callback's part on numpy arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ
from engine.script import load_script
from engine.show import Show
from engine.synthesis.espeak import EspeakSynthesizer


def _drain_until_finished(show: Show, ring: MixRing, block: int = 2048) -> np.ndarray:
    out = np.zeros((block, 2), np.float32)
    played: list[np.ndarray] = []
    for _ in range(200_000):
        show.tick()
        for f in list(show._futures.values()):
            f.result(10)  # the test waits on synthesis instead of sleeping
        if show.finished and ring.fill_frames == 0:
            break
        render(out, ring, RenderState())
        played.append(out.copy())
    return np.concatenate(played)


def test_show_plays_every_line_in_order(testdata: Path) -> None:
    script = load_script(testdata / "radio_play.txt")
    ring = MixRing(1 << 14)
    show = Show(script, Cast.auto(script), EspeakSynthesizer(), ring, render_ahead_ms=100)
    try:
        audio = _drain_until_finished(show, ring)
    finally:
        show.close()
        ring.close()
    assert show.stats.placed == len(script.cues) and not show.stats.failed
    starts = [show.starts_s[c.index] for c in script.cues]
    assert starts == sorted(starts)
    assert len(audio) / SAMPLE_RATE_HZ > starts[-1]
    # each line is audible at its start
    for s in starts:
        k = round(s * SAMPLE_RATE_HZ)
        assert np.abs(audio[k : k + SAMPLE_RATE_HZ // 2]).max() > 0.01


def test_show_fills_ring_only_to_render_ahead(testdata: Path) -> None:
    script = load_script(testdata / "lighthouse.fountain")
    ring = MixRing(1 << 15)
    show = Show(script, Cast.auto(script), EspeakSynthesizer(), ring, render_ahead_ms=200)
    try:
        show.tick()
        assert ring.fill_frames == round(0.2 * SAMPLE_RATE_HZ)
        show.tick()
        assert ring.fill_frames == round(0.2 * SAMPLE_RATE_HZ)  # nothing consumed, nothing added
    finally:
        show.close()
        ring.close()


def test_late_line_goes_in_late_not_lost(testdata: Path) -> None:
    script = load_script(testdata / "radio_play.txt")
    ring = MixRing(1 << 14)
    show = Show(script, Cast.auto(script), EspeakSynthesizer(), ring, render_ahead_ms=100, prefetch=1)
    out = np.zeros((4800, 2), np.float32)
    try:
        # the callback runs 1 s ahead before any line is ready: the first line is late
        for _ in range(10):
            show._render_ahead()
            render(out, ring, RenderState())
        audio = _drain_until_finished(show, ring)
    finally:
        show.close()
        ring.close()
    assert show.stats.late >= 1 and show.stats.placed == len(script.cues)
    assert show.starts_s[0] >= 1.0 and np.abs(audio).max() > 0.05
