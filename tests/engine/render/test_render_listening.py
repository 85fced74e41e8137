"""A render that listens: a line whose words were dropped is marked "check" (and a retake
keeps the better take); word captions and the report land beside the mix."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from engine.asr import asr_available, line_checker, shared_transcriber
from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.render import render_script
from engine.render.listening import Listening
from engine.script import load_script
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak import EspeakSynthesizer

WHY_NOT = asr_available()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"no speech recognition: {WHY_NOT}")
ROOT = Path(__file__).resolve().parents[3]

# Sentences the packaged model hears well from espeak-ng (WER 0.0-0.12 at 157 and 175 wpm).
SRT = """1
00:00:01,000 --> 00:00:05,000
IRIS: I left the letter on the kitchen table.

2
00:00:06,000 --> 00:00:10,000
OWEN: Call the doctor and tell him to come now.

3
00:00:11,000 --> 00:00:15,000
IRIS: She closed the door and sat down by the window.
"""


class DroppingVoice:
    """espeak-ng that drops most words of cue 1 the first `n_bad` times it voices it (as a
    neural voice sometimes does)."""

    name, max_batch, sample_rate_hz = "espeak", 1, SAMPLE_RATE_HZ

    def __init__(self, n_bad: int) -> None:
        self.inner, self.n_bad = EspeakSynthesizer(), n_bad

    def voices(self) -> list[VoiceInfo]:
        return self.inner.voices()

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        out = []
        for r in batch:
            if r.request_id == 1 and self.n_bad > 0:
                self.n_bad -= 1
                r = SynthRequest("now.", r.voice, r.request_id)
            out.append(self.inner.synthesize([r])[0])
        return out

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def script(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "scene.srt"
    path.write_text(SRT, encoding="utf-8")
    return load_script(path)


def _listen(retake: bool) -> Listening:
    return Listening(check=line_checker(shared_transcriber(), SAMPLE_RATE_HZ), retake=retake)


@pytest.mark.slow
def test_a_line_with_words_dropped_is_marked_and_listed(tmp_path: Path, script) -> None:  # type: ignore[no-untyped-def]
    cast = Cast({r: Voice() for r in script.roles})
    result = render_script(
        script, cast, tmp_path / "mix.wav", DroppingVoice(n_bad=9), listening=_listen(False)
    )
    assert [ln.cue_index for ln in result.flagged] == [1]
    assert result.report["flagged"][0]["cue"] == 1 and result.report["wer_by_role"]["IRIS"]["max"] <= 0.6
    for ln in result.lines:
        assert [w for w, _, _ in ln.notes.words] == ln.text.split()
        t = 0.0
        for _, a, b in ln.notes.words:
            assert t <= a <= b <= ln.duration_s + 1e-6
            t = b
    assert [p.name for p in result.captions][-1] == "mix.cues.json"
    rows = json.loads((tmp_path / "mix.cues.json").read_text())
    assert rows[0]["words"][0]["start_s"] >= 1.0 and rows[1]["check"] is True


@pytest.mark.slow
def test_a_retake_keeps_the_better_take(tmp_path: Path, script) -> None:  # type: ignore[no-untyped-def]
    cast = Cast({r: Voice() for r in script.roles})
    result = render_script(
        script, cast, tmp_path / "mix.wav", DroppingVoice(n_bad=1), listening=_listen(True)
    )
    line = result.lines[1]
    assert line.notes.retaken and not line.notes.check and result.flagged == []


@pytest.mark.slow
def test_render_check_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "scene.srt").write_text(SRT, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "render", str(tmp_path / "scene.srt"),
                           "-o", str(tmp_path / "mix.wav"), "--check"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "word captions: mix.words.srt, mix.words.vtt, mix.karaoke.ass, mix.cues.json" in proc.stdout
    assert "slots: 3 timed lines (fits 3)" in proc.stdout and "WER IRIS" in proc.stdout
    assert json.loads((tmp_path / "mix.report.json").read_text())["voiced"] == 3
