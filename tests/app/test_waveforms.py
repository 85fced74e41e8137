"""Voiced lines show their waveform inside their timeline bar; muted roles are dimmed."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from app.timeline import BAR_HEIGHT, SILENT_ALPHA
from engine.control import BUCKETS_PER_S
from engine.core.types import Voice
from tests.app import big_show


def test_envelopes_are_drawn_in_their_bars(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    env = {k: np.linspace(0.1, 1.0, 60, dtype=np.float32) for k in range(0, 40, 2)}
    fake_source.current = replace(big_show.snapshot(1), envelopes=env)
    w.bridge.poll()
    x, y = w.timeline.wave.getData()
    assert len(x) == 2 * 60 * len(env)  # one vertical stroke per bucket
    cue = w.timeline.cues[0]
    row = w.timeline.roles.index(cue.role)
    first = slice(0, 120)
    assert np.all(x[first] >= cue.start_s) and np.all(x[first] <= cue.start_s + 60 / BUCKETS_PER_S)
    assert np.all(np.abs(y[first] - row) <= BAR_HEIGHT / 2)
    fake_source.current = replace(big_show.snapshot(2), envelopes=env)
    w.bridge.poll()
    assert len(w.timeline.wave.getData()[0]) == len(x)  # unchanged envelopes: same strokes


def test_muted_and_soloed_roles_look_different(qtbot, troupe, make_window, fake_source) -> None:
    w = make_window(troupe, source=fake_source)
    w.bridge.stop()
    base = big_show.snapshot(1)
    voices = {r: Voice() for r in base.roles} | {
        base.roles[0]: Voice(mute=True),
        base.roles[7]: Voice(solo=True),
    }
    fake_source.current = replace(base, voices=voices)
    w.bridge.poll()
    assert w.timeline.silent == frozenset(r for r in base.roles if r != base.roles[7])  # the solo wins
    assert w.timeline.role_axis.label_of(0).startswith("M ") and w.timeline.role_axis.label_of(7).startswith(
        "S "
    )
    dim = [item for key, item in w.timeline.layers.items() if key[2]]
    assert dim and all(item.opts["brush"].color().alpha() == SILENT_ALPHA for item in dim)
    assert "muted" in w.show_view.legend.text()
