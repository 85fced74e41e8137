"""`troupe voices fit`: a voice fitted to a speaker's clips comes closer to them than where
it started, is saved where Kokoro reads extra voices, and bad clips are refused clearly."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.core.errors import TroupeError
from engine.voicelib.fit import read_clips

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("resemblyzer", "speechmos", "faster_whisper")),
        reason="needs the design and asr extras (.ci/run installs them)",
    ),
]


def test_bad_clips_are_refused(tmp_path: Path) -> None:
    short = tmp_path / "short.wav"
    sf.write(short, np.zeros(16_000 * 3, np.float32), 16_000)
    with pytest.raises(TroupeError, match="needs 10 s at least"):
        read_clips([short])
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF nonsense")
    with pytest.raises(TroupeError, match="not a readable audio file"):
        read_clips([junk])


@pytest.mark.timeout(900)  # a 150 s search, and the start's scoring before it, on 2 busy cores
def test_fit_moves_toward_the_speaker_and_saves_a_usable_voice(tmp_path: Path) -> None:
    from engine.synthesis.kokoro.library import Recipe, build_style
    from engine.voicelib.design import kokoro_voicer
    from engine.voicelib.fit import fit, save
    from engine.voicelib.lines import JUDGE_LINES

    voicer = kokoro_voicer()
    voice, packs = voicer
    speaker = Recipe({"jf_alpha": 0.5, "jf_nezumi": 0.5}, {"jf_gongitsune": 1.0}, formant_st=-1.0)
    takes = voice(build_style(speaker, packs), speaker, JUDGE_LINES[10:16])
    clip = tmp_path / "speaker.wav"
    sf.write(clip, np.concatenate(takes), 48_000)
    result = fit("mara", read_clips([clip]), budget_s=150, voicer=voicer, lines=JUDGE_LINES[5:7],
                 say=lambda _m: None)  # fmt: skip
    assert result.similarity > result.similarity_start  # the walk found a closer voice
    assert result.evaluations > 10 and result.wer < 0.5
    path = save(result, tmp_path / "voices")
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["similarity"] == result.similarity and meta["recipe"]["timbre"]

    from engine.synthesis.kokoro.voices import VoiceBank

    bank = VoiceBank(tmp_path / "voices")
    assert np.array_equal(bank.get("mara"), result.style)
    assert bank.shifts["mara"] == result.recipe.shift
