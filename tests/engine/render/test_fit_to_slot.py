"""Fit-to-slot dubbing: a generated SRT with tight slots renders with every line inside its
slot plus the allowed overrun, rate and stretch within their bounds, no word cut."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cast import Cast
from engine.core.timecode import format_srt_time
from engine.core.types import SAMPLE_RATE_HZ, Cue, Voice
from engine.render import render_script
from engine.render.fitting import FitOptions, Slot, fit_line, plan_slots, trim_tail
from engine.render.listening import Listening
from engine.script import load_script
from engine.synthesis.base import SynthRequest
from engine.synthesis.espeak import EspeakSynthesizer

LINES = [
    ("IRIS", "I left the letter on the kitchen table this morning.", 1.25),
    ("OWEN", "Where were you on the night of the twelfth, exactly?", 1.45),
    ("IRIS", "Nowhere you would know about.", 0.7),
    ("OWEN", "Then tell me who was with you when the lights went out.", 1.62),
]
"""(role, text, how much shorter than the natural take its slot is)."""


def _tone(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def test_each_strategy_in_turn_and_nothing_cut() -> None:
    """A synthetic voice whose length is exactly 2 s / rate: each step's effect is known."""
    opts = FitOptions()
    revoice = lambda rate: _tone(2.0 / rate)  # noqa: E731
    audio, fit = fit_line(_tone(2.0), Slot(0.0, 2.5, 0.3), revoice, SAMPLE_RATE_HZ, opts)
    assert fit.strategy == "fits" and fit.before_s == pytest.approx(-0.5, abs=0.05)
    audio, fit = fit_line(_tone(2.0), Slot(0.0, 1.7, 0.3), revoice, SAMPLE_RATE_HZ, opts)
    assert fit.strategy == "rate" and 1.0 < fit.rate <= opts.max_rate and fit.after_s <= 0
    audio, fit = fit_line(_tone(2.0), Slot(0.0, 1.4, 0.3), revoice, SAMPLE_RATE_HZ, opts)
    assert fit.strategy == "stretch" and fit.rate == opts.max_rate and 1.0 < fit.stretch <= opts.max_stretch
    assert len(audio) / SAMPLE_RATE_HZ == pytest.approx(2.0 / fit.rate / fit.stretch, rel=0.02)
    audio, fit = fit_line(_tone(2.0), Slot(0.0, 1.15, 0.3), revoice, SAMPLE_RATE_HZ, opts)
    assert fit.strategy == "overrun" and 0 < fit.after_s <= 0.3
    audio, fit = fit_line(_tone(2.0), Slot(0.0, 0.8, 0.3), revoice, SAMPLE_RATE_HZ, opts)
    assert fit.strategy == "over" and fit.after_s > 0.3  # too long even so: kept whole, reported
    assert (fit.rate, fit.stretch) == (opts.max_rate, opts.max_stretch)
    assert len(audio) / SAMPLE_RATE_HZ == pytest.approx(2.0 / opts.max_rate / opts.max_stretch, rel=0.02)


def test_trailing_silence_goes_words_stay() -> None:
    audio = np.concatenate([_tone(0.5), np.zeros(SAMPLE_RATE_HZ, np.float32)])
    assert len(trim_tail(audio, SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ == pytest.approx(0.53, abs=0.005)
    assert len(trim_tail(np.zeros(100, np.float32), SAMPLE_RATE_HZ)) == 0


def test_overrun_never_reaches_the_next_slot() -> None:
    cues = [Cue(0, "A", "x", 0, 1, start_s=0.0, end_s=1.0), Cue(1, "B", "y", 0, 2, start_s=1.2, end_s=2.0),
            Cue(2, "A", "z", 0, 3, start_s=5.0, end_s=6.0), Cue(3, "B", "w", 0, 4)]  # fmt: skip
    slots = plan_slots(cues, FitOptions(max_overrun_s=0.5, min_gap_s=0.05))
    assert slots[0].overrun_s == pytest.approx(0.15) and slots[1].overrun_s == 0.5
    assert slots[2].overrun_s == 0.5 and 3 not in slots


def _natural_s(text: str) -> float:
    audio = EspeakSynthesizer().synthesize([SynthRequest(text, Voice())])[0]
    return len(trim_tail(audio, SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ


def test_tight_srt_renders_inside_its_slots(tmp_path: Path) -> None:
    blocks, t = [], 1.0
    for k, (role, text, squeeze) in enumerate(LINES, 1):
        length = _natural_s(text) / squeeze
        blocks.append(f"{k}\n{format_srt_time(t)} --> {format_srt_time(t + length)}\n{role}: {text}\n")
        t += length + 0.6
    srt = tmp_path / "tight.srt"
    srt.write_text("\n".join(blocks), encoding="utf-8")
    script = load_script(srt)
    cast = Cast({r: Voice() for r in script.roles})
    opts = FitOptions(max_overrun_s=0.4)
    slots = plan_slots(script.cues, opts)
    result = render_script(script, cast, tmp_path / "mix.wav", EspeakSynthesizer(),
                           listening=Listening(fit=opts))  # fmt: skip
    ways = {}
    for ln in result.lines:
        slot = slots[ln.cue_index]
        assert ln.start_s == slot.start_s
        assert ln.start_s + ln.duration_s <= slot.end_s + slot.overrun_s + 1e-3, ln
        assert 1.0 <= ln.notes.rate <= opts.max_rate and 1.0 <= ln.notes.stretch <= opts.max_stretch
        squeezed = LINES[ln.cue_index][2] > 1
        assert ln.notes.misfit_before_s is not None and (ln.notes.misfit_before_s > 0.05) == squeezed
        ways[ln.cue_index] = ln.notes.fit
    assert ways[2] == "fits" and ways[0] == "rate" and ways[3] in ("stretch", "overrun"), ways
    slots_report = result.report["slots"]
    assert slots_report["misfit_before"]["n_past_end"] == 3
    assert slots_report["misfit_after"]["max_ms"] <= 400 + 1
    assert (tmp_path / "mix.report.json").is_file()


@settings(max_examples=25, deadline=None)
@given(st.floats(0.4, 2.0), st.floats(0.1, 3.0), st.floats(0.0, 0.6))
def test_any_slot_gets_a_whole_line_and_an_honest_report(
    natural_s: float, slot_s: float, overrun_s: float
) -> None:
    opts = FitOptions()
    slot = Slot(1.0, 1.0 + slot_s, overrun_s)
    audio, fit = fit_line(_tone(natural_s), slot, lambda r: _tone(natural_s / r), SAMPLE_RATE_HZ, opts)
    got_s = len(audio) / SAMPLE_RATE_HZ
    assert (
        got_s >= natural_s / (opts.max_rate * opts.max_stretch) * 0.98
    )  # never shorter than the bounds allow
    assert 1.0 <= fit.rate <= opts.max_rate and 1.0 <= fit.stretch <= opts.max_stretch
    assert fit.after_s == pytest.approx(got_s - slot_s, abs=1e-6)
    limit = {"fits": 0.0, "rate": 0.0, "stretch": 1e-3, "overrun": overrun_s}.get(fit.strategy)
    if limit is None:
        assert fit.strategy == "over" and fit.after_s > overrun_s
    else:
        assert fit.after_s <= limit + 1e-9
