"""Live levelling, heard: two roles on a voice 12 dB quieter than the other two (a quieter
voice model) are heard at the same loudness as the others in what the show plays. The show
runs on virtual time through the real audio callback (the scenario stage); each role's
speech is taken back out of the stereo mix by its pan and measured with pyloudnorm's
BS.1770 meter (not the leveller's own measure)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyloudnorm
from scenario import SR, Stage

from engine.mixer.mixer import equal_power
from engine.scheduler import Backend
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak import EspeakSynthesizer

QUIET = {"ANNA", "BEN"}
SCRIPT = "".join(
    f"{role}: {text}\n"
    for role, text in [
        ("ANNA", "The lamp has gone out again, and the sea is rising fast."),
        ("CARL", "Then light it, and keep it burning until the boats are home."),
        ("BEN", "I have no more oil, and the storm will not wait for us."),
        ("DORA", "There is a can in the cellar, behind the old coats and the nets."),
        ("ANNA", "I will go down and fetch it before the wind takes the door."),
        ("CARL", "Take the lantern with you, the stairs are wet and steep."),
        ("BEN", "Hurry, I can see their lights out past the rocks already."),
        ("DORA", "Then we have a little time, but not much more than that."),
    ]
)


class QuieterVoices:
    """espeak-ng, with the voices of `QUIET`'s roles 12 dB down."""

    name = "espeak"

    def __init__(self) -> None:
        self.inner = EspeakSynthesizer()
        self.sample_rate_hz = self.inner.sample_rate_hz
        self.max_batch = self.inner.max_batch

    def voices(self) -> list[VoiceInfo]:
        return self.inner.voices()

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        out = self.inner.synthesize(batch)
        return [a * np.float32(0.25) if r.role in QUIET else a for a, r in zip(out, batch, strict=True)]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        self.inner.close()


def _loudness_by_role(tmp_path: Path, level: bool) -> dict[str, float]:
    script = tmp_path / "levels.txt"
    script.write_text(SCRIPT)
    stage = Stage(script, backends={"espeak": Backend(QuieterVoices())})
    if not level:
        stage.show._levels.gain = lambda role, level_db: 1.0  # type: ignore[method-assign]
    try:
        stage.command("play")
        stage.listen(40.0)
        heard = stage.heard()
    finally:
        stage.close()
    speech: dict[str, list[np.ndarray]] = {}
    for s in heard.stretches:
        gl, gr = equal_power(stage.pans[s.role])
        part = heard.audio[round(s.start_s * SR) : round(s.end_s * SR)].astype(np.float64)
        speech.setdefault(s.role, []).append(part[:, 0] * gl + part[:, 1] * gr)  # the role's own signal
    meter = pyloudnorm.Meter(SR)
    return {role: meter.integrated_loudness(np.concatenate(parts)) for role, parts in speech.items()}


def test_quieter_voices_are_heard_at_the_others_level(tmp_path: Path) -> None:
    levelled = _loudness_by_role(tmp_path, level=True)
    assert set(levelled) == {"ANNA", "BEN", "CARL", "DORA"}
    assert max(levelled.values()) - min(levelled.values()) <= 1.5, levelled  # the target


def test_without_levelling_the_quieter_voices_stand_out(tmp_path: Path) -> None:
    """The check above can fail: the same show unlevelled."""
    raw = _loudness_by_role(tmp_path, level=False)
    quiet = max(raw[r] for r in QUIET)
    assert min(raw[r] for r in raw if r not in QUIET) - quiet >= 8.0, raw
