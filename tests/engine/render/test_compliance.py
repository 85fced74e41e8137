"""The encoded file is what is delivered: its loudness, range and true peak measured after
encoding (checked against ffmpeg's own EBU R128 meter), limited and encoded again while
it peaks over, and the ACX preset's whole list of checks passing on an M4B audiobook."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.export import FORMATS, available_formats
from engine.export.compliance import measure
from engine.export.loudness import PRESETS, LoudnessTarget
from engine.render import render_script
from engine.script import load_script
from engine.synthesis.espeak import EspeakSynthesizer

pytest.importorskip("pyloudnorm")
ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")


def ebur128(path: Path) -> dict[str, float]:
    """ffmpeg's own measurement: integrated loudness, loudness range, true peak."""
    err = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-i", str(path), "-af", "ebur128=peak=true",
                          "-f", "null", "-"], capture_output=True, text=True, check=True).stderr  # fmt: skip
    summary = err[err.rindex("Summary:") :]
    get = lambda key: float(re.search(rf"{key}:\s+(-?[\d.]+|-inf)", summary).group(1))  # noqa: E731
    return {"lufs": get("I"), "lra": get("LRA"), "tp": get("Peak")}


@needs_ffmpeg
def test_the_measure_agrees_with_ffmpeg_ebu_r128(tmp_path: Path) -> None:
    rate = 48_000
    t = np.arange(rate * 20) / rate
    rng = np.random.default_rng(3)
    level = np.where((t % 4) < 2.5, 0.3, 0.05) * (1 + 0.2 * np.sin(2 * np.pi * 0.1 * t))  # speech-like bursts
    x = (level * np.sin(2 * np.pi * 997 * t) + 0.01 * rng.standard_normal(len(t))).astype(np.float32)
    x[rate * 5 + 17] = 0.95  # one sharp peak between samples
    path = tmp_path / "probe.wav"
    sf.write(path, np.stack([x, 0.7 * x], axis=1), rate, subtype="FLOAT")
    ours = measure(path, FORMATS["wav"], 2, rate, LoudnessTarget(-20.0, -1.0))
    theirs = ebur128(path)
    assert ours.integrated_lufs == pytest.approx(theirs["lufs"], abs=0.2)
    assert ours.true_peak_db == pytest.approx(theirs["tp"], abs=0.3)
    assert ours.loudness_range_lu == pytest.approx(theirs["lra"], abs=1.5)
    assert ours.duration_s == pytest.approx(20.0, abs=0.001)
    assert ours.noise_floor_db < -30  # the quietest half second: the noise under the bursts


@pytest.mark.slow
@needs_ffmpeg
@pytest.mark.skipif("m4a" not in available_formats(), reason="needs ffmpeg with AAC")
def test_an_acx_audiobook_passes_acx_after_encoding(tmp_path: Path) -> None:
    script = load_script(DEMO)
    out = tmp_path / "book.m4b"
    result = render_script(script, Cast.auto(script), out, EspeakSynthesizer(), loudness=PRESETS["acx"],
                           sample_rate_hz=44_100)  # fmt: skip
    assert result.compliance is not None and result.compliance.passed, result.compliance
    theirs = ebur128(out)  # measured independently on the delivered file
    assert theirs["tp"] <= -3.0
    report = json.loads((tmp_path / "book.loudness.json").read_text())
    assert report["passed"] and report["path"] == str(out) and report["target"] == "ACX audiobook"
    names = {c["name"]: c for c in report["checks"]}
    assert set(names) == {"RMS", "true peak", "noise floor", "room tone, not digital silence",
                          "room tone at the head", "room tone at the tail"}  # fmt: skip
    assert -75 <= report["noise_floor_db"] <= -65  # the bed of room tone, under ACX's -60
    assert -23 <= report["rms_db"] <= -18 and 0.5 <= report["head_room_tone_s"] <= 1.05
    assert 1 <= report["tail_room_tone_s"] <= 5
    assert report["chapters"] and report["chapters"][0]["start_s"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.loudness.json", "book.m4b", "book.srt"]


@pytest.mark.slow
def test_a_file_that_peaks_over_once_encoded_is_encoded_again_lower(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The measure of the first encode reads 0.8 dB over: the mix is limited again with the
    ceiling lowered by the excess and 0.2 dB, and encoded again; the stems follow it."""
    real = measure
    ceilings: list[float] = []
    calls = []

    def over_once(path, fmt, channels, rate, target, marks=()):  # type: ignore[no-untyped-def]
        got = real(path, fmt, channels, rate, target, marks)
        calls.append(got.true_peak_db)
        if len(calls) == 1:
            got.true_peak_db = target.true_peak_db + 0.8
        return got

    import engine.export.compliance as compliance
    import engine.render.finishing as finishing

    monkeypatch.setattr(compliance, "measure", over_once)
    normalise = finishing.normalise_into

    def spy(out, premaster, files, lufs, target, *a, **k):  # type: ignore[no-untyped-def]
        ceilings.append(target.true_peak_db)
        return normalise(out, premaster, files, lufs, target, *a, **k)

    monkeypatch.setattr(finishing, "normalise_into", spy)
    script = load_script(DEMO)
    result = render_script(script, Cast.auto(script), tmp_path / "mix.flac", EspeakSynthesizer(),
                           tmp_path / "stems", loudness=PRESETS["ebu"])  # fmt: skip
    assert ceilings == [pytest.approx(-1.0), pytest.approx(-2.0)]
    assert result.compliance is not None and result.compliance.encodes == 2 and result.compliance.passed
    mix, _ = sf.read(result.path, always_2d=True)
    summed = sum(sf.read(p, always_2d=True)[0] for p in result.stems.values())
    assert np.abs(mix - summed).max() < 1e-3  # the stems took the second pass's gain too
    assert not list(tmp_path.rglob("*.partial")) and not list(tmp_path.rglob("*premaster*"))


def test_the_acx_head_is_the_lead_in_whatever_silence_the_first_take_opens_with(tmp_path: Path) -> None:
    """A first line with a `(beat)` (0.6 s of silence before it, as a voice's own leading
    silence would be): its speech still starts 0.75 s in, inside ACX's 0.5-1 s."""
    path = tmp_path / "book.fountain"
    path.write_text("INT. ROOM - DAY\n\nANNA\n(beat)\nAre you there?\n\nBEN\nI am here.\n", encoding="utf-8")
    script = load_script(path)
    result = render_script(script, Cast.auto(script), tmp_path / "book.wav", EspeakSynthesizer(),
                           loudness=PRESETS["acx"], sample_rate_hz=44_100)  # fmt: skip
    assert result.compliance is not None
    assert result.compliance.head_room_tone_s == pytest.approx(0.75, abs=0.02)
    head = next(c for c in result.compliance.checks if c.name == "room tone at the head")
    assert head.passed
