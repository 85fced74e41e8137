"""Fit-to-slot in the live show, judged by what is heard: a subtitle file whose slots are
three quarters of each line's natural length, played through the show and its callback;
with fitting every line is heard inside its slot plus the allowed overrun, without it they
run on into the gap."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from show_harness import SR, Harness

from engine.cast import Cast
from engine.render.fitting import trim_tail
from engine.script import load_script
from engine.snapshot import _fit
from engine.synthesis.base import SynthRequest
from engine.synthesis.espeak import EspeakSynthesizer

LINES = [
    "The lighthouse keeper climbs the long iron stairs every single night of the year.",
    "Nobody in the harbour town has seen the old ship since the storm began.",
    "She keeps a lamp burning in the window and waits for the sound of the horn.",
    "The radio crackles with a voice that nobody on the island can recognise.",
    "By morning the fog has lifted and the whole bay is silver and still.",
]
SQUEEZE = 0.75
"""Each slot is this share of the line's natural length (beyond the rate alone: 1.3x)."""
GAP_S = 1.5
Tight = tuple[Path, list[tuple[float, float]]]
OVERRUN_S = 0.5
"""The fitting's default bound; the gaps are longer, so every line may use all of it."""


def _srt(path: Path, slots: list[tuple[float, float]]) -> None:
    def ts(s: float) -> str:
        ms = round(s * 1000)
        return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"

    path.write_text("".join(f"{k + 1}\n{ts(a)} --> {ts(b)}\n{line}\n\n"
                            for k, ((a, b), line) in enumerate(zip(slots, LINES, strict=True))),
                    encoding="utf-8")  # fmt: skip


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Tight:
    """The subtitle file, and its slots (seconds)."""
    path = tmp_path_factory.mktemp("fit") / "tight.srt"
    _srt(path, [(1.0 + 10 * k, 3.0 + 10 * k) for k in range(len(LINES))])
    voice = Cast.auto(load_script(path))["NARRATOR"]
    natural = [len(trim_tail(a, SR)) / SR
               for a in EspeakSynthesizer().synthesize([SynthRequest(t, voice) for t in LINES])]  # fmt: skip
    slots, t = [], 1.0
    for n in natural:
        slots.append((t, t + SQUEEZE * n))
        t += SQUEEZE * n + GAP_S
    _srt(path, slots)
    return path, slots


def _heard(path: Path, fit: bool) -> tuple[np.ndarray, Harness]:
    h = Harness(path, fit=fit)
    try:
        return np.abs(h.play_to_end()).max(axis=1), h
    finally:
        h.close()


def _loud(level: np.ndarray, a_s: float, b_s: float) -> bool:
    return bool(level[max(0, round(a_s * SR)) : round(b_s * SR)].max(initial=0.0) > 0.01)


def test_every_timed_line_is_heard_inside_its_slot_and_overrun(tight: Tight) -> None:
    path, slots = tight
    level, h = _heard(path, fit=True)
    assert h.show.fit is not None and not h.show.stats.failed
    for k, (start, end) in enumerate(slots):
        assert _loud(level, start - 0.01, start + 0.2), f"line {k + 1} not heard at its slot"
        assert not _loud(level, start - GAP_S + OVERRUN_S + 0.1, start - 0.02), f"line {k + 1} early"
        assert not _loud(level, end + OVERRUN_S + 0.05, end + GAP_S - 0.05), f"line {k + 1} ran past its slot"
    fits = h.show.fit.fits
    assert sorted(fits) == list(range(len(LINES)))
    for k, f in fits.items():
        assert f.strategy in ("rate", "overrun") and 1.0 < f.rate <= 1.3 + 1e-6, (k, f)
        assert f.before_s > 0.2 and f.after_s <= OVERRUN_S, (k, f)
        length_s = slots[k][1] - slots[k][0]
        assert f.before_s == pytest.approx(length_s / SQUEEZE - length_s, abs=0.35)
    shown = [_fit(h.show, t) for t in h.show.tracks]  # the cue list's words for it
    assert all(re.fullmatch(r"(rate|overrun \(rate) 1\.\d\dx\)?, [+-]\d+ ms", s) for s in shown), shown


def test_without_fitting_the_same_lines_run_into_the_gap(tight: Tight) -> None:
    path, slots = tight
    level, h = _heard(path, fit=False)
    assert h.show.fit is None
    over = [k for k, (_, end) in enumerate(slots) if _loud(level, end + OVERRUN_S + 0.05, end + GAP_S - 0.05)]
    assert len(over) >= 3, over


def test_a_line_heard_past_its_slot_is_voiced_again_faster_while_its_slot_is_ahead(
    tight: Tight,
) -> None:
    """A first take at the role's own rate (as if the voice's speed were unknown) runs past
    its slot: the show voices it once more at a higher rate, before the slot is reached."""
    path, slots = tight
    h = Harness(path)
    try:
        fit = h.show.fit
        assert fit is not None
        fit._model(h.show.cast["NARRATOR"]).s_per_char = 1e-3  # a voice thought far faster
        takes: list[int] = []
        h.show.on_request_done = lambda r: takes.append(r.cue_index) if r.cue_index == 0 else None
        level = np.abs(h.play(slots[0][1] + GAP_S)).max(axis=1)
        assert fit.fits[0].rate > 1.0 and fit.fits[0].after_s <= OVERRUN_S
        assert len(takes) >= 2 and h.show.tracks[0].generation == 1
        assert not _loud(level, slots[0][1] + OVERRUN_S + 0.05, slots[0][1] + GAP_S - 0.05)
    finally:
        h.close()
