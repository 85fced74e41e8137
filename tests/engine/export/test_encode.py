"""Every output format encodes and decodes back to the same sound; write errors name the file."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.export import FORMATS, ExportError, FileWriter, available_formats, encode
from engine.export.formats import pcm_bytes

RATE = 48_000


def _tone(seconds: float = 1.0, channels: int = 1) -> np.ndarray:
    t = np.arange(int(RATE * seconds), dtype=np.float32) / RATE
    mono = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    return mono if channels == 1 else np.stack([mono, -mono], axis=1)


def test_every_openai_response_format_is_available_here() -> None:
    assert set(available_formats()) >= {"wav", "flac", "mp3", "opus", "aac", "pcm"}


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3", "opus"])
def test_encoded_audio_decodes_to_the_same_tone(fmt: str) -> None:
    data = encode(_tone(), RATE, fmt)
    back, rate = sf.read(io.BytesIO(data), dtype="float32")
    assert rate == RATE
    assert len(back) == pytest.approx(RATE, abs=RATE * 0.05)  # lossy codecs pad a little
    spectrum = np.abs(np.fft.rfft(back[: RATE // 2]))
    assert np.argmax(spectrum) * 2 == pytest.approx(440, abs=4)  # the tone's pitch survives
    if not FORMATS[fmt].lossy:
        np.testing.assert_allclose(back, _tone(), atol=1 / 32768)


@pytest.mark.parametrize("rate", [22_050, 24_000, 44_100])
def test_every_format_takes_any_common_rate(rate: int) -> None:
    tone = _tone(0.5)[: rate // 2]
    for fmt in available_formats():
        data = encode(tone, rate, fmt)
        assert len(data) > 100, fmt
        if fmt == "opus":  # Opus has no 22.05/44.1 kHz mode: the audio is brought to 48 kHz
            assert sf.info(io.BytesIO(data)).samplerate == (rate if rate == 24_000 else 48_000)


def test_pcm_is_raw_16_bit_and_aac_is_adts() -> None:
    tone = _tone(0.1)
    pcm = np.frombuffer(encode(tone, RATE, "pcm"), "<i2")
    np.testing.assert_allclose(pcm / 32768, tone, atol=1 / 32768)
    if "aac" in available_formats():
        assert encode(tone, RATE, "aac")[:2] == b"\xff\xf1"  # an ADTS sync word


def test_unknown_format_names_the_ones_there_are() -> None:
    with pytest.raises(ExportError, match=r"unknown audio format 'ogg2'; this install writes: wav, flac"):
        encode(_tone(0.1), RATE, "ogg2")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-4, 4, allow_nan=False, width=32), min_size=1, max_size=64),
       st.sampled_from(["s16", "s24", "f32"]))  # fmt: skip
def test_sample_conversion_clips_and_rounds(samples: list[float], sample_format: str) -> None:
    block = np.array(samples, np.float32).reshape(-1, 1)
    raw = pcm_bytes(block, sample_format)
    if sample_format == "f32":
        np.testing.assert_array_equal(np.frombuffer(raw, "<f4"), block[:, 0])
        return
    width = {"s16": 2, "s24": 3}[sample_format]
    assert len(raw) == width * len(samples)
    padded = b"".join(b"\0" * (4 - width) + raw[k : k + width] for k in range(0, len(raw), width))
    as_int = np.frombuffer(padded, "<i4") >> 8 * (4 - width)
    scale = 2 ** (8 * width - 1)
    expected = np.clip(np.rint(block[:, 0].astype(np.float64) * scale), -scale, scale - 1)
    np.testing.assert_allclose(as_int, expected, atol=1)


@pytest.mark.parametrize("frames", [0, 1, 3, 65_536, 100_003])
def test_24_bit_packing_matches_sample_by_sample(frames: int) -> None:
    """Long blocks, odd lengths: every sample is its own top three bytes, in order."""
    block = np.random.default_rng(frames).uniform(-1.2, 1.2, (frames, 2)).astype(np.float32)
    raw = pcm_bytes(block, "s24")
    wide = np.clip(block.astype(np.float64).reshape(-1) * 2**31, -(2**31), 2**31 - 256).astype(np.int64)
    expected = b"".join(int(v >> 8).to_bytes(3, "little", signed=True) for v in wide)
    assert raw == expected


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3"])
def test_disk_full_names_the_file(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/full fails every write with ENOSPC, as a full disk does."""
    real_open = open
    monkeypatch.setattr("builtins.open", lambda p, mode="r", *a, **k: real_open("/dev/full", "r+b"))
    with pytest.raises(ExportError, match=r"^/music/show\.\w+: disk full"):
        writer = FileWriter(Path("/dev/full"), FORMATS[fmt], 2, RATE, "s24", f"/music/show.{fmt}")
        try:
            for _ in range(50):
                writer.write(_tone(1.0, 2))
            writer.close()
        except ExportError:
            writer.abort()
            raise


def test_big_wav_writes_in_blocks_and_reads_back(tmp_path: Path) -> None:
    tone = _tone(3.0, 2)
    path = tmp_path / "x.wav"
    w = FileWriter(path, FORMATS["wav"], 2, RATE, "s24")
    for k in range(0, len(tone), 8193):  # an odd block size: the header counts every frame
        w.write(tone[k : k + 8193])
    w.close()
    back, rate = sf.read(path, dtype="float32")
    assert rate == RATE and back.shape == tone.shape
    np.testing.assert_allclose(back, tone, atol=2**-23)
    # the RIFF size is the file's length less its first 8 bytes (strict readers check it)
    data = path.read_bytes()
    assert int.from_bytes(data[4:8], "little") == len(data) - 8
