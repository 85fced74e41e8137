"""FLAC for stems: silent blocks written as CONSTANT frames, the rest by libFLAC and renumbered;
the file decodes losslessly and every frame's CRC holds."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.export import FORMATS, FileWriter
from engine.export.flac_sparse import BLOCK, SparseFlacWriter, _mend_crc16, _utf8, available, crc16
from engine.export.formats import to_int

pytestmark = pytest.mark.skipif(not available(), reason="the system's libFLAC is not installed")


def _show(frames: int, channels: int, silent: list[tuple[int, int]], seed: int = 0) -> np.ndarray:
    x = (np.random.default_rng(seed).standard_normal((frames, channels)) * 0.2).astype(np.float32)
    for a, b in silent:
        x[a:b] = 0.0
    return x


def _write(x: np.ndarray, sample_format: str, chunk: int) -> tuple[bytes, SparseFlacWriter]:
    f = io.BytesIO()
    w = SparseFlacWriter(f, x.shape[1], 48_000, sample_format, "stem.flac")
    for k in range(0, len(x), chunk):
        w.write(x[k : k + chunk])
    w.close()
    return f.getvalue(), w


def _quantised(x: np.ndarray, sample_format: str) -> np.ndarray:
    return to_int(x, 16).astype(np.int32) if sample_format == "s16" else to_int(x, 24) >> 8


@pytest.mark.parametrize(("channels", "sample_format"), [(1, "s24"), (2, "s24"), (1, "s16"), (2, "s16")])
def test_decodes_losslessly_and_encodes_only_the_blocks_with_sound(channels: int, sample_format: str) -> None:
    n = 40 * BLOCK + 1234  # a short last frame
    x = _show(n, channels, [(0, 5000), (3 * BLOCK, 30 * BLOCK + 17)])
    data, w = _write(x, sample_format, 65_536 // 3)
    got, rate = sf.read(io.BytesIO(data), dtype="int32", always_2d=True)
    assert rate == 48_000 and got.shape == (n, channels)
    np.testing.assert_array_equal(
        got >> (32 - (16 if sample_format == "s16" else 24)), _quantised(x, sample_format)
    )
    sounding = sum(bool(x[k : k + BLOCK].any()) for k in range(0, n, BLOCK))
    assert w.encoded == sounding < 41  # the silent blocks never reached libFLAC


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6 * BLOCK), st.integers(1, 2), st.sampled_from(["s16", "s24"]),
       st.lists(st.tuples(st.integers(0, 6 * BLOCK), st.integers(0, 3 * BLOCK)), max_size=4),
       st.integers(1, 3 * BLOCK))  # fmt: skip
def test_any_layout_of_silence_round_trips(n: int, channels: int, sample_format: str,
                                           gaps: list[tuple[int, int]], chunk: int) -> None:  # fmt: skip
    x = _show(n, channels, [(a, a + length) for a, length in gaps], seed=n)
    data, _ = _write(x, sample_format, chunk)
    got, _ = sf.read(io.BytesIO(data), dtype="int32", always_2d=True)
    np.testing.assert_array_equal(
        got >> (32 - (16 if sample_format == "s16" else 24)), _quantised(x, sample_format)
    )


@settings(max_examples=50, deadline=None)
@given(st.binary(min_size=1, max_size=12), st.binary(min_size=1, max_size=12), st.binary(max_size=3000))
def test_a_mended_crc_is_the_crc_of_the_new_frame(old: bytes, new: bytes, body: bytes) -> None:
    assert _mend_crc16(crc16(old + body), old, new, len(body)) == crc16(new + body)


def test_frame_numbers_are_coded_as_flac_codes_them() -> None:
    assert _utf8(0x7F) == b"\x7f"
    assert _utf8(0x80) == "\u0080".encode()
    assert _utf8(40_000) == chr(40_000).encode()
    assert _utf8(0x10FFFF) == chr(0x10FFFF).encode()  # the longest that Python's UTF-8 makes


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="checks the CRCs with ffmpeg")
def test_every_frame_checks_out(tmp_path: Path) -> None:
    """A long stem, a writer as the render opens it: ffmpeg checks each frame's CRCs."""
    x = _show(200 * BLOCK + 99, 2, [(5 * BLOCK, 150 * BLOCK), (170 * BLOCK + 3, 180 * BLOCK)])
    path = tmp_path / "stem.flac"
    w = FileWriter(path, FORMATS["flac"], 2, 48_000, "s24", sparse=True)
    for k in range(0, len(x), 65_536):
        w.write(x[k : k + 65_536])
    w.close()
    check = ["ffmpeg", "-v", "error", "-err_detect", "crccheck", "-i", str(path), "-f", "null", "-"]
    proc = subprocess.run(check, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    assert os.path.getsize(path) < 0.45 * sf.info(str(path)).frames * 6  # the silence costs next to nothing


@pytest.mark.slow
def test_a_render_writes_its_flac_stems_this_way(tmp_path: Path) -> None:
    """Stems (mostly silence) are written here (no MD5 signature in STREAMINFO, which
    libsndfile always writes), the mix through libsndfile."""
    from engine.cast import Cast
    from engine.render import render_script
    from engine.script import load_script
    from engine.synthesis.espeak import EspeakSynthesizer

    script = load_script(
        Path(__file__).resolve().parents[3] / "assets" / "demo" / "the_last_broadcast.fountain"
    )
    result = render_script(
        script, Cast.auto(script), tmp_path / "mix.flac", EspeakSynthesizer(), tmp_path / "stems"
    )

    def md5(path: Path) -> bytes:
        return path.read_bytes()[8 + 18 : 8 + 34]

    assert md5(result.path) != bytes(16)
    assert result.stems and all(md5(p) == bytes(16) for p in result.stems.values())
