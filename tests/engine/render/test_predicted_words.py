"""A backend's own word times (Kokoro's durations) in the render's captions, and the line
check verifying them against what was heard (no model needed)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from engine.asr import DRIFT_BOUND_S, LineCheck, Word, word_drift_s
from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.render import render_script
from engine.render.listening import notes_for
from engine.script import load_script
from engine.synthesis.base import Mono, SynthRequest, Take, VoiceInfo, retimed
from engine.synthesis.espeak import EspeakSynthesizer

SRT = """1
00:00:01,000 --> 00:00:04,000
IRIS: I left the letter on the table.

2
00:00:06,000 --> 00:00:09,000
OWEN: (beat) Call the doctor now.
"""


class TimedVoice:
    """espeak-ng that says where its words are: evenly over the clip (as a duration model would)."""

    name, max_batch, sample_rate_hz = "espeak", 1, SAMPLE_RATE_HZ

    def __init__(self) -> None:
        self.inner = EspeakSynthesizer()

    def voices(self) -> list[VoiceInfo]:
        return self.inner.voices()

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        return [t.audio for t in self.synthesize_takes(batch)]

    def synthesize_takes(self, batch: Sequence[SynthRequest]) -> list[Take]:
        out = []
        for r in batch:
            audio = self.inner.synthesize([r])[0]
            words = r.text.split()
            step = len(audio) / SAMPLE_RATE_HZ / len(words)
            out.append(Take(audio, tuple((w, k * step, (k + 1) * step) for k, w in enumerate(words))))
        return out

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        self.inner.close()


def test_a_render_without_a_check_captions_the_predicted_times(tmp_path: Path) -> None:
    path = tmp_path / "scene.srt"
    path.write_text(SRT, encoding="utf-8")
    script = load_script(path)
    result = render_script(
        script, Cast({r: Voice() for r in script.roles}), tmp_path / "mix.wav", TimedVoice()
    )
    assert [p.name for p in result.captions][-1] == "mix.cues.json"
    rows = json.loads((tmp_path / "mix.cues.json").read_text())
    for ln, row in zip(sorted(result.lines, key=lambda ln: ln.start_s), rows, strict=True):
        assert row["words_from"] == "model" and [w["text"] for w in row["words"]] == ln.text.split()
        assert row["words"][-1]["end_s"] == pytest.approx(ln.start_s + ln.duration_s, abs=2e-3)
    owen = next(ln for ln in result.lines if ln.role == "OWEN")
    assert owen.notes.words[0][1] == pytest.approx(0.6, abs=1e-3)  # after the (beat)'s pause
    srt = (tmp_path / "mix.words.srt").read_text()
    assert srt.count("-->") == sum(len(ln.text.split()) for ln in result.lines)


def _heard(words: tuple[tuple[str, float, float], ...]) -> LineCheck:
    return LineCheck(0.0, " ".join(w for w, _, _ in words), tuple(Word(*w) for w in words), 0.3)


TRUE = (("Call", 0.05, 0.32), ("the", 0.34, 0.45), ("doctor", 0.47, 0.9), ("now.", 0.95, 1.3))


def test_predicted_times_that_match_what_was_heard_pass() -> None:
    heard = _heard(tuple((w, a + 0.03, b - 0.02) for w, a, b in TRUE))  # the recogniser's own error
    notes = notes_for(None, heard, predicted=TRUE)
    assert notes.words == TRUE and notes.words_from == "model"
    assert notes.word_drift_s == pytest.approx(0.025) and not notes.words_disagree


def test_predicted_times_shifted_from_what_was_heard_are_flagged() -> None:
    shifted = retimed(TRUE, shift_s=DRIFT_BOUND_S + 0.1)
    assert shifted is not None
    notes = notes_for(None, _heard(TRUE), predicted=shifted)
    assert notes.word_drift_s is not None and notes.word_drift_s > DRIFT_BOUND_S and notes.words_disagree
    assert notes.words == shifted  # still the times the audio was made from


def test_drift_is_none_where_the_words_do_not_pair() -> None:
    assert word_drift_s(TRUE, [Word(*w) for w in TRUE[:2]]) is None
    assert word_drift_s(TRUE, [Word(*w) for w in TRUE]) == 0.0


def test_without_predicted_times_the_heard_ones_stand() -> None:
    notes = notes_for(None, _heard(TRUE))
    assert notes.words_from == "asr" and notes.word_drift_s is None and notes.words == TRUE


def test_a_stretch_scales_and_a_trim_cuts_the_times() -> None:
    assert retimed(TRUE, scale=0.5, end_s=0.6) == (("Call", 0.025, 0.16), ("the", 0.17, 0.225),
                                                   ("doctor", 0.235, 0.45), ("now.", 0.475, 0.6))  # fmt: skip
